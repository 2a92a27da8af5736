package systemd

import (
	"context"
	"github.com/mynah-tts/mynah/systemd/systemdtest"
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

func TestNotifierMessages(t *testing.T) {
	sd := systemdtest.New(t)
	n := NewNotifier(nil)
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
		if got := sd.Next(); got != s.want {
			t.Errorf("systemd got %q, want %q", got, s.want)
		}
	}
}

func TestNotifierOutsideSystemd(t *testing.T) {
	t.Setenv("NOTIFY_SOCKET", "")
	t.Setenv("WATCHDOG_USEC", "")
	n := NewNotifier(nil)
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
	if err := NewNotifier(nil).Ready(); err == nil {
		t.Error("Ready to a missing socket: want an error")
	}
}

func TestWatchdogForAnotherProcess(t *testing.T) {
	systemdtest.New(t)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()+1))
	called := false
	if err := NewNotifier(nil).RunWatchdog(context.Background(), func() bool { called = true; return true }); err != nil {
		t.Fatal(err)
	}
	if called {
		t.Error("RunWatchdog ran although WATCHDOG_PID names another process")
	}
}

func TestWatchdogBadEnvironment(t *testing.T) {
	systemdtest.New(t)
	t.Setenv("WATCHDOG_USEC", "soon")
	if err := NewNotifier(nil).RunWatchdog(context.Background(), func() bool { return true }); err == nil {
		t.Error("RunWatchdog with WATCHDOG_USEC=soon: want an error")
	}
}

// TestWatchdogPingsOnlyWhileHealthy simulates a worker that gets stuck and
// recovers: pings flow while healthy() is true, none are sent while it is
// false, and they resume afterwards. It counts; it never measures time.
func TestWatchdogPingsOnlyWhileHealthy(t *testing.T) {
	sd := systemdtest.New(t)
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
	go func() { done <- NewNotifier(nil).RunWatchdog(ctx, check) }()
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
		if got := sd.Next(); got != "WATCHDOG=1" {
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
	for _, m := range sd.Drain() {
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
	if got := sd.Next(); got != "WATCHDOG=1" {
		t.Fatalf("after recovery got %q, want WATCHDOG=1", got)
	}
}

func TestWatchdogStopsWithContext(t *testing.T) {
	systemdtest.New(t)
	t.Setenv("WATCHDOG_USEC", "200000")
	t.Setenv("WATCHDOG_PID", strconv.Itoa(os.Getpid()))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	done := make(chan error, 1)
	go func() { done <- NewNotifier(nil).RunWatchdog(ctx, func() bool { return true }) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RunWatchdog after cancel = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatal("RunWatchdog ignored a cancelled context")
	}
}
