package audio

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// deviceSink is a device that works until it is unplugged.
type deviceSink struct {
	gone   atomic.Bool
	closed atomic.Bool
	writes atomic.Int32
}

var errUnplugged = errors.New("device unplugged")

func (d *deviceSink) Write(ctx context.Context, p PCM) error {
	if d.gone.Load() {
		return fmt.Errorf("write: %w", errUnplugged)
	}
	d.writes.Add(1)
	return nil
}
func (d *deviceSink) Drain(ctx context.Context) error {
	if d.gone.Load() {
		return errUnplugged
	}
	return nil
}
func (d *deviceSink) Abort() error { return nil }
func (d *deviceSink) Close() error { d.closed.Store(true); return nil }

// socket is where devices get plugged: Open succeeds while plugged.
type socket struct {
	mu      sync.Mutex
	plugged bool
	opened  []*deviceSink
	tries   int
}

func (s *socket) open() (Sink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tries++
	if !s.plugged {
		return nil, errors.New("no such device")
	}
	d := &deviceSink{}
	s.opened = append(s.opened, d)
	return d, nil
}

func (s *socket) set(plugged bool) {
	s.mu.Lock()
	s.plugged = plugged
	s.mu.Unlock()
}

func (s *socket) last() *deviceSink {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.opened[len(s.opened)-1]
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestReopeningSink(t *testing.T) {
	sock := &socket{}
	var changes []bool
	var mu sync.Mutex
	s, err := NewReopeningSink(&ReopenOptions{Open: sock.open, MinBackoff: time.Millisecond, MaxBackoff: 4 * time.Millisecond,
		OnChange: func(st SinkStatus) { mu.Lock(); changes = append(changes, st.Available); mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	pcm := PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 160)}

	// No device at start: writes fail at once, and it keeps trying.
	if st := s.Status(); st.Available || st.Err == nil {
		t.Fatalf("status without a device: %+v", st)
	}
	if err := s.Write(ctx, pcm); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("write without a device: %v", err)
	}
	eventually(t, "retries", func() bool { sock.mu.Lock(); defer sock.mu.Unlock(); return sock.tries >= 3 })

	sock.set(true)
	eventually(t, "the device to come", func() bool { return s.Status().Available })
	if err := s.Write(ctx, pcm); err != nil || sock.last().writes.Load() != 1 {
		t.Fatalf("write to the device: %v", err)
	}

	// Unplugged while playing: that write fails, the device is closed,
	// later writes fail at once until it is back.
	first := sock.last()
	sock.set(false)
	first.gone.Store(true)
	if err := s.Write(ctx, pcm); !errors.Is(err, errUnplugged) {
		t.Fatalf("write as the device goes: %v", err)
	}
	if err := s.Drain(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("drain without the device: %v", err)
	}
	eventually(t, "the broken device closed", first.closed.Load)
	sock.set(true)
	eventually(t, "the device back", func() bool { return s.Status().Available })
	if err := s.Write(ctx, pcm); err != nil || sock.last() == first {
		t.Fatalf("write after replugging: %v (same device: %v)", err, sock.last() == first)
	}
	mu.Lock()
	if fmt.Sprint(changes) != "[true false true]" {
		t.Errorf("changes %v, want back, lost, back", changes)
	}
	mu.Unlock()

	// A cancelled write is the caller's business, not the device's.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	sock.last().gone.Store(true) // whatever the device says
	s.Write(cctx, pcm)
	if !s.Status().Available {
		t.Error("a cancelled write made the device unavailable")
	}
	sock.last().gone.Store(false)

	// Close stops the retries.
	sock.set(false)
	sock.last().gone.Store(true)
	s.Write(ctx, pcm)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	sock.mu.Lock()
	tries := sock.tries
	sock.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	sock.mu.Lock()
	defer sock.mu.Unlock()
	if sock.tries != tries {
		t.Errorf("%d opens after Close", sock.tries-tries)
	}
	if err := s.Write(ctx, pcm); !errors.Is(err, ErrClosed) {
		t.Errorf("write after Close: %v", err)
	}
}
