// Package systemdtest is the service manager's end of $NOTIFY_SOCKET, for
// tests of programs that talk sd_notify.
package systemdtest

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// waitLimit bounds every wait: a deadlock guard, not a timing assertion.
const waitLimit = 10 * time.Second

// Fake is the service manager's end of $NOTIFY_SOCKET.
type Fake struct {
	t    testing.TB
	Path string
	conn *net.UnixConn
}

// New listens on a fresh socket and points $NOTIFY_SOCKET (of
// this process, and so of children started with os.Environ) at it.
func New(t testing.TB) *Fake {
	t.Helper()
	// A short directory: unix socket paths are limited to 108 bytes and
	// t.TempDir() names can be long.
	dir, err := os.MkdirTemp("", "sdn")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "notify")
	conn, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: path, Net: "unixgram"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	t.Setenv("NOTIFY_SOCKET", path)
	return &Fake{t: t, Path: path, conn: conn}
}

// Expect reads notifications until one is want, failing the test when none
// comes within waitLimit.
func (s *Fake) Expect(want string) {
	s.t.Helper()
	for {
		if s.Next() == want {
			return
		}
	}
}

// Next returns the next notification, failing the test after waitLimit.
func (s *Fake) Next() string {
	s.t.Helper()
	buf := make([]byte, 4096)
	s.conn.SetReadDeadline(time.Now().Add(waitLimit))
	n, err := s.conn.Read(buf)
	if err != nil {
		s.t.Fatalf("no notification within %v: %v", waitLimit, err)
	}
	return string(buf[:n])
}

// Drain returns the notifications already queued on the socket. Datagrams
// to a local unix socket are queued before the sender's write returns, so
// everything sent before drain is called is seen.
func (s *Fake) Drain() []string {
	var got []string
	buf := make([]byte, 4096)
	for {
		s.conn.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		n, err := s.conn.Read(buf)
		if err != nil {
			return got
		}
		got = append(got, string(buf[:n]))
	}
}

// JournalStream creates a file standing in for a stream connected to the
// journal and returns it with the $JOURNAL_STREAM value that names it
// ("device:inode"), as systemd sets it for a service's standard error.
func JournalStream(t testing.TB) (*os.File, string) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stream"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	return f, fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}
