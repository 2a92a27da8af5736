package main

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"
)

// waitLimit bounds every wait in these tests. It is a deadlock guard, not
// a timing assertion: the tests count messages, and a healthy run finishes
// in well under a second.
const waitLimit = 10 * time.Second

// fakeSystemd is the service manager's end of $NOTIFY_SOCKET.
type fakeSystemd struct {
	t    testing.TB
	path string
	conn *net.UnixConn
}

// newFakeSystemd listens on a fresh socket and points $NOTIFY_SOCKET (of
// this process, and so of children started with os.Environ) at it.
func newFakeSystemd(t testing.TB) *fakeSystemd {
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
	return &fakeSystemd{t: t, path: path, conn: conn}
}

// expect reads notifications until one is want, failing the test when none
// comes within waitLimit.
func (s *fakeSystemd) expect(want string) {
	s.t.Helper()
	for {
		if s.next() == want {
			return
		}
	}
}

// next returns the next notification, failing the test after waitLimit.
func (s *fakeSystemd) next() string {
	s.t.Helper()
	buf := make([]byte, 4096)
	s.conn.SetReadDeadline(time.Now().Add(waitLimit))
	n, err := s.conn.Read(buf)
	if err != nil {
		s.t.Fatalf("no notification within %v: %v", waitLimit, err)
	}
	return string(buf[:n])
}

// drain returns the notifications already queued on the socket. Datagrams
// to a local unix socket are queued before the sender's write returns, so
// everything sent before drain is called is seen.
func (s *fakeSystemd) drain() []string {
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

func TestNotifierMessages(t *testing.T) {
	sd := newFakeSystemd(t)
	n := newNotifier(nil)
	steps := []struct {
		send func() error
		want string
	}{
		{n.Ready, "READY=1"},
		{func() error { return n.Status("playing 2 of 3") }, "STATUS=playing 2 of 3"},
		{func() error { return n.Status("a\nREADY=1") }, "STATUS=a READY=1"},
		{func() error { return n.ExtendTimeout(90 * time.Second) }, "EXTEND_TIMEOUT_USEC=90000000"},
		{n.Stopping, "STOPPING=1"},
	}
	for _, s := range steps {
		if err := s.send(); err != nil {
			t.Fatalf("send %q: %v", s.want, err)
		}
		if got := sd.next(); got != s.want {
			t.Errorf("systemd got %q, want %q", got, s.want)
		}
	}
}

func TestNotifierOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	n := newNotifier(nil)
	for _, send := range []func() error{n.Ready, n.Stopping, func() error { return n.Status("x") }} {
		if err := send(); err != nil {
			t.Errorf("without NOTIFY_SOCKET: %v", err)
		}
	}
	called := false
	if err := n.RunWatchdog(context.Background(), func() bool { called = true; return true }); err != nil {
		t.Errorf("RunWatchdog without WATCHDOG_USEC: %v", err)
	}
	if called {
		t.Error("RunWatchdog called healthy with the watchdog off")
	}
}

func TestNotifierSocketGone(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", filepath.Join(t.TempDir(), "gone"))
	if err := newNotifier(nil).Ready(); err == nil {
		t.Error("Ready to a missing socket: want an error")
	}
}

func TestWatchdogForAnotherProcess(t *testing.T) {
	newFakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	called := false
	if err := newNotifier(nil).RunWatchdog(context.Background(), func() bool { called = true; return true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("RunWatchdog ran although WATCHDOG_PID names another process")
	}
}

func TestWatchdogBadEnvironment(t *testing.T) {
	newFakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "soon")
	if err := newNotifier(nil).RunWatchdog(context.Background(), func() bool { return true }); err == nil {
		t.Error("RunWatchdog with WATCHDOG_USEC=soon: want an error")
	}
}

// TestWatchdogPingsOnlyWhileHealthy simulates a worker that gets stuck and
// recovers: pings flow while healthy() is true, none are sent while it is
// false, and they resume afterwards. It counts; it never measures time.
func TestWatchdogPingsOnlyWhileHealthy(t *testing.T) {
	sd := newFakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "200000") // pings every 100ms
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))

	var healthy atomic.Bool
	var trueCalls, falseCalls atomic.Int64
	calls := make(chan struct{}, 1)
	check := func() bool {
		ok := healthy.Load()
		if ok {
			trueCalls.Add(1)
		} else {
			falseCalls.Add(1)
		}
		select {
		case calls <- struct{}{}:
		default:
		}
		return ok
	}
	healthy.Store(true)

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- newNotifier(nil).RunWatchdog(ctx, check) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("RunWatchdog: %v", err)
			}
		case <-time.After(waitLimit):
			t.Error("RunWatchdog did not return after cancel")
		}
	}()

	pings := 0
	for pings < 3 {
		if got := sd.next(); got != "WATCHDOG=1" {
			t.Fatalf("got %q, want WATCHDOG=1", got)
		}
		pings++
	}

	// The worker gets stuck: wait until the watchdog has asked three times.
	healthy.Store(false)
	base := falseCalls.Load()
	deadline := time.After(waitLimit)
	for falseCalls.Load() < base+3 {
		select {
		case <-calls:
		case <-deadline:
			t.Fatalf("healthy() called %d times while stuck, want 3", falseCalls.Load()-base)
		}
	}
	for _, m := range sd.drain() {
		if m != "WATCHDOG=1" {
			t.Fatalf("got %q, want WATCHDOG=1", m)
		}
		pings++
	}
	if want := trueCalls.Load(); int64(pings) != want {
		t.Fatalf("%d pings for %d healthy checks (and %d stuck ones): pings sent while stuck",
			pings, want, falseCalls.Load())
	}

	// The worker recovers: pings resume.
	healthy.Store(true)
	if got := sd.next(); got != "WATCHDOG=1" {
		t.Fatalf("after recovery got %q, want WATCHDOG=1", got)
	}
}

func TestWatchdogStopsWithContext(t *testing.T) {
	newFakeSystemd(t)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- newNotifier(nil).RunWatchdog(ctx, func() bool { return true }) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWatchdog after cancel = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("RunWatchdog ignored a cancelled context")
	}
}
