// Package mqtttest starts MQTT brokers for tests: a real Mosquitto on a
// free loopback port, or the embedded broker, plus a minimal paho
// subscriber and publisher. It lives in non-test files so that the tests
// of every package (daemon, cmd/mynahd) can use it.
//
// A missing mosquitto fails the test: the integration tests are part of
// the project's bar and must not pass by skipping. scripts/setup.sh
// installs it.
package mqtttest

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"
)

// How long the harness waits for mosquitto to start or stop before it
// fails the test.
const brokerWait = 15 * time.Second

// Mosquitto is a mosquitto process serving one test. Its persistence
// lives in the test's temp dir, so Restart keeps retained messages,
// persistent sessions and their queued QoS 1 messages: Stop saves them,
// and the config saves after every change so that even Kill (SIGKILL)
// loses as little as mosquitto allows.
type Mosquitto struct {
	tb   testing.TB
	bin  string
	dir  string
	conf string
	log  string
	port int

	stderr lockedBuffer

	mu     sync.Mutex
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited
}

// MosquittoOptions adjust StartMosquittoWith; the zero value is what
// StartMosquitto uses.
type MosquittoOptions struct {
	// NoAutosave saves the persistence only when mosquitto stops cleanly
	// (Stop, Restart of a running broker), not after every change, so
	// Kill loses everything since the start. For benchmarks: saving after
	// every message costs mosquitto about 0.4 ms per message on loopback,
	// which would swamp the latency being measured.
	NoAutosave bool
	// Users, when set, turns anonymous access off: only these user names
	// with their passwords may connect (URLAs makes their URLs).
	Users map[string]string
	// ACL is the content of a mosquitto acl_file (e.g. "pattern write
	// mynah/+/u/%u/#"); "" means none (every user may do anything).
	ACL string
}

// StartMosquitto starts mosquitto on 127.0.0.1 and a free port and stops
// it when the test ends. It fails the test if mosquitto is not installed
// or does not come up.
func StartMosquitto(tb testing.TB) *Mosquitto {
	tb.Helper()
	return StartMosquittoWith(tb, nil)
}

// StartMosquittoWith is StartMosquitto with options; nil means defaults.
func StartMosquittoWith(tb testing.TB, opts *MosquittoOptions) *Mosquitto {
	tb.Helper()
	var o MosquittoOptions
	if opts != nil {
		o = *opts
	}
	bin, err := findMosquitto()
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	m := &Mosquitto{
		tb:   tb,
		bin:  bin,
		dir:  dir,
		conf: filepath.Join(dir, "mosquitto.conf"),
		log:  filepath.Join(dir, "mosquitto.log"),
		port: freePort(tb),
	}
	if len(o.Users) > 0 {
		if err := m.writeUsers(o.Users); err != nil {
			tb.Fatalf("mqtttest: %v", err)
		}
	}
	if o.ACL != "" {
		if err := os.WriteFile(filepath.Join(dir, "acl"), []byte(o.ACL+"\n"), 0o600); err != nil {
			tb.Fatalf("mqtttest: write acl file: %v", err)
		}
	}
	if err := os.WriteFile(m.conf, []byte(m.config(o)), 0o600); err != nil {
		tb.Fatalf("mqtttest: write mosquitto config: %v", err)
	}
	// Registered after TempDir, so it runs before the dir is removed.
	tb.Cleanup(func() {
		m.Stop()
		if tb.Failed() {
			tb.Logf("mosquitto log (%s):\n%s", m.log, m.Log())
		}
	})
	m.start(tb)
	return m
}

func findMosquitto() (string, error) {
	if p, err := exec.LookPath("mosquitto"); err == nil {
		return p, nil
	}
	for _, p := range []string{"/usr/sbin/mosquitto", "/usr/local/sbin/mosquitto"} {
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() {
			return p, nil
		}
	}
	return "", errors.New("mqtttest: mosquitto not found on PATH or in /usr/sbin: install mosquitto (scripts/setup.sh)")
}

// config is a minimal mosquitto.conf. Logging goes to a file rather than
// stdout because mosquitto flushes its log file per line, and stdout
// buffers would be lost to SIGKILL. "user" names the current user:
// mosquitto started as root would otherwise switch to the mosquitto user,
// which cannot write the test's temp dir.
func (m *Mosquitto) config(o MosquittoOptions) string {
	name := "root"
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	// autosave_on_changes counts subscription changes, retained and
	// queued messages; an interval of 1 saves after each of them.
	autosave := "autosave_on_changes true\nautosave_interval 1"
	logTypes := "log_type all"
	if o.NoAutosave {
		autosave = "autosave_interval 0"
		logTypes = "log_type error\nlog_type warning\nlog_type notice"
	}
	access := "allow_anonymous true"
	if len(o.Users) > 0 {
		access = "allow_anonymous false\npassword_file " + filepath.Join(m.dir, "passwd")
	}
	if o.ACL != "" {
		access += "\nacl_file " + filepath.Join(m.dir, "acl")
	}
	return fmt.Sprintf(`# written by mqtttest
listener %d 127.0.0.1
%s
persistence true
persistence_location %s/
%s
max_queued_messages 10000
user %s
log_dest file %s
%s
log_timestamp_format %%H:%%M:%%S
`, m.port, access, m.dir, autosave, name, m.log, logTypes)
}

// writeUsers makes the password file with mosquitto_passwd, which comes
// with mosquitto and hashes the way this mosquitto expects.
func (m *Mosquitto) writeUsers(users map[string]string) error {
	tool, err := exec.LookPath("mosquitto_passwd")
	if err != nil {
		return errors.New("mosquitto_passwd not found: install mosquitto (scripts/setup.sh)")
	}
	file := filepath.Join(m.dir, "passwd")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		return err
	}
	for user, pass := range users {
		if out, err := exec.Command(tool, "-b", file, user, pass).CombinedOutput(); err != nil {
			return fmt.Errorf("mosquitto_passwd %s: %v: %s", user, err, out)
		}
	}
	return nil
}

// URLAs is the broker URL with a user's credentials in it, which paho
// (and mqtttest's helpers) use to log in.
func (m *Mosquitto) URLAs(user, password string) string {
	return (&url.URL{Scheme: "tcp", User: url.UserPassword(user, password), Host: m.Addr()}).String()
}

// freePort asks the kernel for a free port. Another process could take it
// before mosquitto binds it; on loopback in a test run that is rare, and
// start fails loudly if it happens.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("mqtttest: find a free port: %v", err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func (m *Mosquitto) start(tb testing.TB) {
	tb.Helper()
	cmd := exec.Command(m.bin, "-c", m.conf)
	// Errors before the log file is open (a bad config) go to stderr.
	cmd.Stderr = &m.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatalf("mqtttest: start mosquitto: %v", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		close(exited)
	}()
	m.mu.Lock()
	m.cmd, m.exited = cmd, exited
	m.mu.Unlock()

	deadline := time.Now().Add(brokerWait)
	for {
		select {
		case <-exited:
			tb.Fatalf("mqtttest: mosquitto exited at start:\n%s", m.Log())
		default:
		}
		c, err := net.DialTimeout("tcp", m.Addr(), 200*time.Millisecond)
		if err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			tb.Fatalf("mqtttest: mosquitto did not accept connections on %s within %v: %v\n%s", m.Addr(), brokerWait, err, m.Log())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Addr is host:port of the listener.
func (m *Mosquitto) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(m.port)) }

// URL is the broker URL, tcp://127.0.0.1:port.
func (m *Mosquitto) URL() string { return "tcp://" + m.Addr() }

// Log returns what mosquitto has logged so far (all log types), and
// what it wrote to stderr.
func (m *Mosquitto) Log() string {
	b, err := os.ReadFile(m.log)
	if err != nil {
		b = []byte(fmt.Sprintf("(no log file: %v)\n", err))
	}
	return string(b) + m.stderr.String()
}

// lockedBuffer is a bytes.Buffer that exec's copier goroutine and Log
// may use at the same time.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Flush returns once mosquitto has processed everything it received
// before the call, and, with the default autosave after every change, has
// saved it to disk: mosquitto handles packets and saves its database on
// one thread, so the acknowledgement of a later publish comes after the
// save. Call it before Kill when the test needs the broker to remember a
// session or subscription across the SIGKILL.
func (m *Mosquitto) Flush(tb testing.TB) {
	tb.Helper()
	Publish(tb, m.URL(), "mqtttest/flush", nil, false)
}

// Kill sends SIGKILL and waits for the process to exit: nothing is saved
// and no last will is published.
func (m *Mosquitto) Kill() { m.signal(syscall.SIGKILL) }

// Stop sends SIGTERM and waits for the process to exit; mosquitto saves
// its persistence first. Stopping a stopped broker is a no-op.
func (m *Mosquitto) Stop() { m.signal(syscall.SIGTERM) }

func (m *Mosquitto) signal(sig syscall.Signal) {
	m.mu.Lock()
	cmd, exited := m.cmd, m.exited
	m.cmd = nil
	m.mu.Unlock()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(brokerWait):
		_ = cmd.Process.Kill()
		<-exited
		m.tb.Errorf("mqtttest: mosquitto did not exit within %v of %v", brokerWait, sig)
	}
}

// Restart starts mosquitto again on the same port with the same
// persistence, stopping it first if it is still running.
func (m *Mosquitto) Restart(tb testing.TB) {
	tb.Helper()
	m.Stop()
	m.start(tb)
}
