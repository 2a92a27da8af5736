package audio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrUnavailable is returned by a ReopeningSink while its device is gone
// (unplugged, not there at start): it fails at once instead of waiting,
// and tries to open the device again in the background.
var ErrUnavailable = errors.New("audio device unavailable")

// Defaults of ReopenOptions.
const (
	DefaultReopenMin = 500 * time.Millisecond
	DefaultReopenMax = 30 * time.Second
)

// ReopenOptions configures NewReopeningSink.
type ReopenOptions struct {
	// Open opens the device; required. It is called once by
	// NewReopeningSink and again, with backoff, after the device failed.
	Open func() (Sink, error)
	// MinBackoff and MaxBackoff bound the wait between attempts: it
	// doubles from the first to the second (defaults DefaultReopenMin,
	// DefaultReopenMax).
	MinBackoff, MaxBackoff time.Duration
	// OnChange is told when the device is lost and when it is back; it
	// must not block (it runs on the caller's or the sink's goroutine).
	OnChange func(SinkStatus)
	Logger   *slog.Logger
	// Now is the clock of SinkStatus.Since (default time.Now).
	Now func() time.Time
}

// SinkStatus says whether a ReopeningSink has its device.
type SinkStatus struct {
	Available bool
	Err       error     // why it is unavailable
	Since     time.Time // when it became what it is
}

// ReopeningSink is a Sink that outlives its device: when a write or a
// drain fails for the device's sake (not for the caller's context or an
// Abort), it closes the device and opens it again with backoff until it
// works; meanwhile every Write and Drain fails at once with ErrUnavailable.
// A USB speaker unplugged and plugged back in, or one that was not there
// at start, needs no restart. Write and Drain must not be called
// concurrently (the daemon's worker is one goroutine); Abort may be.
type ReopeningSink struct {
	o   ReopenOptions
	log *slog.Logger

	mu      sync.Mutex
	cur     Sink // nil while unavailable
	status  SinkStatus
	closed  bool
	retry   bool          // the reopen goroutine runs
	stop    chan struct{} // closed by Close
	stopped sync.WaitGroup
}

var _ Sink = (*ReopeningSink)(nil)

// NewReopeningSink opens the device once; if that fails the sink starts
// unavailable and keeps trying. It never returns an error for the device:
// Status says how it stands.
func NewReopeningSink(o *ReopenOptions) (*ReopeningSink, error) {
	if o == nil || o.Open == nil {
		return nil, errors.New("reopening sink: ReopenOptions.Open is required")
	}
	s := &ReopeningSink{o: *o, log: o.Logger, stop: make(chan struct{})}
	if s.o.MinBackoff <= 0 {
		s.o.MinBackoff = DefaultReopenMin
	}
	if s.o.MaxBackoff < s.o.MinBackoff {
		s.o.MaxBackoff = max(DefaultReopenMax, s.o.MinBackoff)
	}
	if s.o.Now == nil {
		s.o.Now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	cur, err := s.o.Open()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.log.Warn("audio device unavailable: retrying in the background", "err", err)
		s.status = SinkStatus{Err: err, Since: s.o.Now()}
		s.startRetryLocked()
	} else {
		s.cur, s.status = cur, SinkStatus{Available: true, Since: s.o.Now()}
	}
	return s, nil
}

// Status says whether the device is there now.
func (s *ReopeningSink) Status() SinkStatus {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.status
}

func (s *ReopeningSink) current() (Sink, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, ErrClosed
	case s.cur == nil:
		return nil, fmt.Errorf("%w: %v", ErrUnavailable, s.status.Err)
	}
	return s.cur, nil
}

// Write writes to the device; see Sink.
func (s *ReopeningSink) Write(ctx context.Context, p PCM) error {
	cur, err := s.current()
	if err != nil {
		return err
	}
	err = cur.Write(ctx, p)
	s.check(ctx, cur, err)
	return err
}

// Drain drains the device; see Sink.
func (s *ReopeningSink) Drain(ctx context.Context) error {
	cur, err := s.current()
	if err != nil {
		return err
	}
	err = cur.Drain(ctx)
	s.check(ctx, cur, err)
	return err
}

// NextDAC implements DACClock by asking the device. Without a device it
// fails with ErrUnavailable; with a device that cannot tell (a WAV file),
// with ErrNoDACClock, on which Place falls back to the system clock. A
// device that fails to answer is let go and reopened, as after a failed
// Write.
func (s *ReopeningSink) NextDAC() (time.Time, error) {
	cur, err := s.current()
	if err != nil {
		return time.Time{}, err
	}
	clock, ok := cur.(DACClock)
	if !ok {
		return time.Time{}, fmt.Errorf("reopening sink: %T: %w", cur, ErrNoDACClock)
	}
	next, err := clock.NextDAC()
	s.check(context.Background(), cur, err)
	return next, err
}

// Abort aborts the device's audio, if there is a device.
func (s *ReopeningSink) Abort() error {
	s.mu.Lock()
	cur := s.cur
	s.mu.Unlock()
	if cur == nil {
		return nil
	}
	return cur.Abort()
}

// Close stops reopening and closes the device.
func (s *ReopeningSink) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	cur := s.cur
	s.cur = nil
	s.mu.Unlock()
	s.stopped.Wait()
	if cur != nil {
		return cur.Close()
	}
	return nil
}

// check lets go of the device after a failure that is the device's: not
// the caller's cancellation, not an Abort.
func (s *ReopeningSink) check(ctx context.Context, cur Sink, err error) {
	if err == nil || errors.Is(err, ErrAborted) || ctx.Err() != nil {
		return
	}
	s.mu.Lock()
	if s.closed || s.cur != cur {
		s.mu.Unlock()
		return
	}
	s.cur = nil
	s.status = SinkStatus{Err: err, Since: s.o.Now()}
	status := s.status
	s.startRetryLocked()
	s.mu.Unlock()
	s.log.Warn("audio device lost: reopening it in the background", "err", err)
	// A device stuck in its driver may never close; do not wait for it.
	go cur.Close()
	s.changed(status)
}

func (s *ReopeningSink) changed(st SinkStatus) {
	if s.o.OnChange != nil {
		s.o.OnChange(st)
	}
}

func (s *ReopeningSink) startRetryLocked() {
	if s.retry || s.closed {
		return
	}
	s.retry = true
	s.stopped.Add(1)
	go s.reopen()
}

// reopen tries Open with doubling waits until it works or Close.
func (s *ReopeningSink) reopen() {
	defer s.stopped.Done()
	wait := s.o.MinBackoff
	for {
		select {
		case <-s.stop:
			s.mu.Lock()
			s.retry = false
			s.mu.Unlock()
			return
		case <-time.After(wait):
		}
		cur, err := s.o.Open()
		s.mu.Lock()
		if s.closed {
			s.retry = false
			s.mu.Unlock()
			if err == nil {
				cur.Close()
			}
			return
		}
		if err != nil {
			s.status.Err = err
			s.mu.Unlock()
			s.log.Debug("audio device still unavailable", "err", err, "next_try", wait)
			wait = min(2*wait, s.o.MaxBackoff)
			continue
		}
		s.cur, s.retry = cur, false
		s.status = SinkStatus{Available: true, Since: s.o.Now()}
		status := s.status
		s.mu.Unlock()
		s.log.Info("audio device back")
		s.changed(status)
		return
	}
}
