package audio

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"
)

// Sink is where speech goes: a sound card, a file, or nowhere.
//
// Write and Drain are meant to be called from one goroutine (the player);
// Abort and Close may be called from any goroutine at any time, in
// particular while a Write or Drain is blocked. Sinks convert each PCM to
// their own rate and channel count.
type Sink interface {
	// Write blocks until p has been accepted (by the device's buffer, the
	// file, ...), ctx ends, or Abort is called. A device that stops taking
	// audio makes Write fail (portaudio.ErrDeviceTimeout) rather than hang.
	Write(ctx context.Context, p PCM) error
	// Drain blocks until everything written so far has been played.
	Drain(ctx context.Context) error
	// Abort drops all audio not yet played, at once: "stop" means now, not
	// after the sentence. A Write it interrupts returns ErrAborted. The sink
	// stays usable.
	Abort() error
	// Close releases the sink. Audio not yet played may be dropped (Drain
	// first to hear it all). Later calls fail with ErrClosed; Close itself
	// may be called again and returns nil.
	Close() error
}

var (
	_ Sink = (*NullSink)(nil)
	_ Sink = (*WAVFileSink)(nil)
)

// NullSinkOptions configures a NullSink; nil means the defaults.
type NullSinkOptions struct {
	// Rate and Channels, when set, make the sink convert each PCM as a real
	// device would (so benchmarks pay for it). Zero keeps the PCM's own.
	Rate, Channels int
	// Pace makes Write take as long as the audio plays, so a pipeline
	// behaves as with a real device. Off by default: tests and benchmarks
	// want speed.
	Pace bool
	// Buffer, with Pace, is how far ahead of the "DAC" a Write may
	// return, as a sound card's buffer lets it: the caller's next write
	// is then queued behind what plays, and a late wake-up of the writer
	// up to Buffer leaves no gap. 0 makes Write return once its audio
	// has played.
	Buffer time.Duration
}

// NullSink discards audio, counting what it was given. It is the sink for
// benchmarks and for daemons without a sound card.
type NullSink struct {
	opts NullSinkOptions

	mu        sync.Mutex
	frames    int64
	writes    int64
	closed    bool
	busyUntil time.Time     // when the paced "device" has played everything
	abort     chan struct{} // closed by Abort to wake paced waits
}

// NewNullSink returns a NullSink.
func NewNullSink(opts *NullSinkOptions) (*NullSink, error) {
	s := &NullSink{abort: make(chan struct{})}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Rate != 0 || s.opts.Channels != 0 {
		if err := (PCM{Rate: s.opts.Rate, Channels: s.opts.Channels}).Validate(); err != nil {
			return nil, fmt.Errorf("new null sink: set both Rate and Channels or neither: %w", err)
		}
	}
	return s, nil
}

// Write implements Sink.
func (s *NullSink) Write(ctx context.Context, p PCM) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("null sink write: %w", err)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("null sink write: %w", err)
	}
	if s.opts.Rate != 0 {
		var err error
		if p, err = Convert(p, s.opts.Rate, s.opts.Channels); err != nil {
			return fmt.Errorf("null sink write: %w", err)
		}
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("null sink write: %w", ErrClosed)
	}
	s.frames += int64(p.Frames())
	s.writes++
	var wait time.Duration
	abort := s.abort
	if s.opts.Pace {
		now := time.Now()
		start := s.busyUntil
		if start.Before(now) {
			start = now
		}
		s.busyUntil = start.Add(p.Duration())
		wait = s.busyUntil.Sub(now) - s.opts.Buffer
	}
	s.mu.Unlock()
	return s.wait(ctx, wait, abort, "null sink write")
}

func (s *NullSink) wait(ctx context.Context, d time.Duration, abort chan struct{}, what string) error {
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-abort:
		return fmt.Errorf("%s: %w", what, ErrAborted)
	case <-ctx.Done():
		return fmt.Errorf("%s: %w", what, ctx.Err())
	}
}

// Drain implements Sink: with pacing it waits until the audio has "played".
func (s *NullSink) Drain(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("null sink drain: %w", err)
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return fmt.Errorf("null sink drain: %w", ErrClosed)
	}
	wait := time.Until(s.busyUntil)
	abort := s.abort
	s.mu.Unlock()
	return s.wait(ctx, wait, abort, "null sink drain")
}

// Abort implements Sink.
func (s *NullSink) Abort() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("null sink abort: %w", ErrClosed)
	}
	close(s.abort)
	s.abort = make(chan struct{})
	s.busyUntil = time.Time{}
	return nil
}

// Close implements Sink.
func (s *NullSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.abort)
	}
	return nil
}

// NextDAC implements DACClock. A paced sink "plays" what it was given
// until busyUntil, so the next sample is heard then, or now when it is
// idle. An unpaced sink plays everything the instant it gets it: the next
// sample is always heard now, and a lead written to it takes no time.
func (s *NullSink) NextDAC() (time.Time, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return time.Time{}, fmt.Errorf("null sink dac clock: %w", ErrClosed)
	}
	now := time.Now()
	if s.opts.Pace && s.busyUntil.After(now) {
		return s.busyUntil, nil
	}
	return now, nil
}

// Frames returns how many frames (at the sink's format) Write accepted.
func (s *NullSink) Frames() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.frames
}

// Writes returns how many Write calls succeeded in handing over audio.
func (s *NullSink) Writes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.writes
}

// WAVFileSink writes everything it is given to one 16-bit WAV file at a
// fixed rate and channel count. It is the fallback when there is no sound
// card (`mynah say -o out.wav`) and the sink tests compare against.
//
// It is no DACClock: a file is never heard, so nothing it could answer
// would be a DAC time. Place waits on the system clock for it instead and
// writes no lead into the file.
type WAVFileSink struct {
	rate, channels int

	mu     sync.Mutex
	f      *os.File
	w      *WAVWriter
	closed bool
}

// NewWAVFileSink creates (or truncates) path and returns a sink that
// writes rate Hz, channels-channel audio to it. The file is a valid WAV
// after each Drain and after Close.
func NewWAVFileSink(path string, rate, channels int) (*WAVFileSink, error) {
	if err := (PCM{Rate: rate, Channels: channels}).Validate(); err != nil {
		return nil, fmt.Errorf("new wav file sink: %w", err)
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("new wav file sink: %w", err)
	}
	w, err := NewWAVWriter(f, rate, channels)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("new wav file sink: %w", err)
	}
	return &WAVFileSink{rate: rate, channels: channels, f: f, w: w}, nil
}

// Format returns the rate and channel count of the file.
func (s *WAVFileSink) Format() (rate, channels int) { return s.rate, s.channels }

// Write implements Sink.
func (s *WAVFileSink) Write(ctx context.Context, p PCM) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wav file sink write: %w", err)
	}
	p, err := Convert(p, s.rate, s.channels)
	if err != nil {
		return fmt.Errorf("wav file sink write: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("wav file sink write: %w", ErrClosed)
	}
	if err := s.w.Write(p.Samples); err != nil {
		return fmt.Errorf("wav file sink: %w", err)
	}
	return nil
}

// Drain implements Sink: it makes the file on disk a complete WAV of what
// was written so far.
func (s *WAVFileSink) Drain(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("wav file sink drain: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("wav file sink drain: %w", ErrClosed)
	}
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("wav file sink: %w", err)
	}
	return nil
}

// Abort implements Sink. A file holds no audio waiting to play, so there
// is nothing to drop; what was written stays written.
func (s *WAVFileSink) Abort() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("wav file sink abort: %w", ErrClosed)
	}
	return nil
}

// Close implements Sink: it finishes the header and closes the file.
func (s *WAVFileSink) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	err := s.w.Close()
	if cerr := s.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("close wav file sink: %w", err)
	}
	return nil
}
