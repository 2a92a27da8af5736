package audio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"
)

// sinkUnderTest is one sink opened for the shared suite.
type sinkUnderTest struct {
	sink           Sink
	rate, channels int // the sink's own format, which delivered audio is in
	// delivered returns the frames the sink passed on and, for sinks that
	// keep them, the samples themselves (nil for sinks that keep nothing).
	// Called after Close.
	delivered func(t *testing.T) (frames int64, samples []int16)
}

// runSinkSuite checks the Sink contract against sinks made by open. Every
// Sink implementation runs it.
func runSinkSuite(t *testing.T, open func(t *testing.T) sinkUnderTest) {
	ctx := context.Background()
	check := func(t *testing.T, s sinkUnderTest, want []int16) {
		t.Helper()
		frames, got := s.delivered(t)
		if wantFrames := int64(len(want) / s.channels); frames != wantFrames {
			t.Errorf("delivered %d frames, want %d", frames, wantFrames)
		}
		if got != nil && !slices.Equal(got, want) {
			t.Errorf("delivered samples differ from those written (%d vs %d samples)", len(got), len(want))
		}
	}

	t.Run("WritesDrainsCloses", func(t *testing.T) {
		s := open(t)
		a := sine(s.rate, s.channels, 440, 0.5, s.rate/2)
		b := sine(s.rate, s.channels, 660, 0.25, 1001) // not a whole buffer
		for _, p := range []PCM{a, b} {
			if err := s.sink.Write(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Drain(ctx); err != nil {
			t.Fatalf("second drain: %v", err)
		}
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, slices.Concat(a.Samples, b.Samples))
	})

	t.Run("ClosedSinkRefuses", func(t *testing.T) {
		s := open(t)
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		p := sine(s.rate, s.channels, 440, 0.5, 100)
		if err := s.sink.Write(ctx, p); !errors.Is(err, ErrClosed) {
			t.Errorf("write after close: %v, want ErrClosed", err)
		}
		if err := s.sink.Drain(ctx); !errors.Is(err, ErrClosed) {
			t.Errorf("drain after close: %v, want ErrClosed", err)
		}
		if err := s.sink.Abort(); !errors.Is(err, ErrClosed) {
			t.Errorf("abort after close: %v, want ErrClosed", err)
		}
		if err := s.sink.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		check(t, s, nil)
	})

	t.Run("ContextEnded", func(t *testing.T) {
		s := open(t)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel2()
		p := sine(s.rate, s.channels, 440, 0.5, 500)
		if err := s.sink.Write(canceled, p); !errors.Is(err, context.Canceled) {
			t.Errorf("write with canceled ctx: %v", err)
		}
		if err := s.sink.Write(expired, p); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("write past deadline: %v", err)
		}
		if err := s.sink.Drain(canceled); !errors.Is(err, context.Canceled) {
			t.Errorf("drain with canceled ctx: %v", err)
		}
		// The sink is still fine, and nothing of the refused writes got out.
		q := sine(s.rate, s.channels, 880, 0.5, 300)
		if err := s.sink.Write(ctx, q); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, q.Samples)
	})

	t.Run("Abort", func(t *testing.T) {
		s := open(t)
		if err := s.sink.Abort(); err != nil {
			t.Fatalf("abort when idle: %v", err)
		}
		a := sine(s.rate, s.channels, 440, 0.5, s.rate/4)
		if err := s.sink.Write(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Abort(); err != nil {
			t.Fatal(err)
		}
		// Usable after Abort; what was accepted before may or may not have
		// played, but what comes after must play whole.
		b := sine(s.rate, s.channels, 660, 0.5, 700)
		if err := s.sink.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		frames, got := s.delivered(t)
		aFrames, bFrames := int64(a.Frames()), int64(b.Frames())
		if frames < bFrames || frames > aFrames+bFrames {
			t.Fatalf("delivered %d frames, want %d..%d", frames, bFrames, aFrames+bFrames)
		}
		if got != nil {
			n := len(got) - len(b.Samples)
			if !slices.Equal(got[n:], b.Samples) || !slices.Equal(got[:n], a.Samples[:n]) {
				t.Error("delivered audio is not a prefix of the aborted write followed by the next write")
			}
		}
	})

	t.Run("AbortDuringWrite", func(t *testing.T) {
		s := open(t)
		long := sine(s.rate, s.channels, 440, 0.5, s.rate*20)
		errc := make(chan error, 1)
		go func() { errc <- s.sink.Write(ctx, long) }()
		// Abort until the write returns: an Abort that lands before the
		// write starts does not stop it (a later one does).
		var werr error
	loop:
		for {
			if err := s.sink.Abort(); err != nil {
				t.Fatal(err)
			}
			select {
			case werr = <-errc:
				break loop
			case <-time.After(time.Millisecond):
			}
		}
		if werr != nil && !errors.Is(werr, ErrAborted) {
			t.Errorf("interrupted write: %v, want nil or ErrAborted", werr)
		}
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		frames, got := s.delivered(t)
		if frames > int64(long.Frames()) {
			t.Errorf("delivered %d frames of a %d-frame write", frames, long.Frames())
		}
		if got != nil && !slices.Equal(got, long.Samples[:len(got)]) {
			t.Error("delivered audio is not a prefix of what was written")
		}
	})

	t.Run("ConvertsFormat", func(t *testing.T) {
		s := open(t)
		// 16 kHz stereo in whatever the sink plays: conversion must match
		// Convert exactly.
		p := sine(16000, 2, 500, 0.5, 1600)
		want, err := Convert(p, s.rate, s.channels)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Write(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, want.Samples)
	})

	t.Run("RejectsInvalidPCM", func(t *testing.T) {
		s := open(t)
		defer s.sink.Close()
		bad := PCM{Rate: 22050, Channels: 2, Samples: []int16{1, 2, 3}}
		if err := s.sink.Write(ctx, bad); !errors.Is(err, ErrInvalidPCM) {
			t.Errorf("invalid PCM: %v", err)
		}
	})
}

func TestNullSinkSuite(t *testing.T) {
	for _, opts := range []NullSinkOptions{
		{Rate: 22050, Channels: 1},
		{Rate: 48000, Channels: 2, Pace: true},
	} {
		name := "fast"
		if opts.Pace {
			name = "paced"
		}
		t.Run(name, func(t *testing.T) {
			runSinkSuite(t, func(t *testing.T) sinkUnderTest {
				s, err := NewNullSink(&opts)
				if err != nil {
					t.Fatal(err)
				}
				return sinkUnderTest{sink: s, rate: opts.Rate, channels: opts.Channels,
					delivered: func(*testing.T) (int64, []int16) { return s.Frames(), nil }}
			})
		})
	}
}

func TestWAVFileSinkSuite(t *testing.T) {
	runSinkSuite(t, func(t *testing.T) sinkUnderTest {
		path := filepath.Join(t.TempDir(), "out.wav")
		s, err := NewWAVFileSink(path, 24000, 1)
		if err != nil {
			t.Fatal(err)
		}
		return sinkUnderTest{sink: s, rate: 24000, channels: 1, delivered: func(t *testing.T) (int64, []int16) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := DecodeWAV(data, nil)
			if err != nil {
				t.Fatalf("sink left an invalid file: %v", err)
			}
			if p.Rate != 24000 || p.Channels != 1 {
				t.Fatalf("file is %d Hz %d ch", p.Rate, p.Channels)
			}
			return int64(p.Frames()), p.Samples
		}}
	})
}

func TestNullSinkCountsAndPaces(t *testing.T) {
	s, err := NewNullSink(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without Rate/Channels the PCM passes as is, in any format.
	for _, p := range []PCM{sine(8000, 1, 100, 0.5, 80), sine(44100, 2, 100, 0.5, 441)} {
		if err := s.Write(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if s.Frames() != 521 || s.Writes() != 2 {
		t.Errorf("Frames %d Writes %d, want 521 and 2", s.Frames(), s.Writes())
	}
	if _, err := NewNullSink(&NullSinkOptions{Rate: 22050}); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("rate without channels: %v", err)
	}

	// A paced sink blocks Drain until the audio has "played"; the wait is
	// cut by ctx, so an hour of audio proves blocking without a clock.
	paced, _ := NewNullSink(&NullSinkOptions{Pace: true})
	defer paced.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- paced.Write(ctx, Silence(8000, 1, time.Hour)) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("paced write of an hour returned %v before cancel", err)
	}
	// Abort forgets the hour, so Drain returns at once.
	if err := paced.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := paced.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWAVFileSinkErrors(t *testing.T) {
	if _, err := NewWAVFileSink(filepath.Join(t.TempDir(), "no", "such", "dir.wav"), 22050, 1); err == nil {
		t.Error("created a sink in a missing directory")
	}
	if _, err := NewWAVFileSink(filepath.Join(t.TempDir(), "x.wav"), 22050, 0); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("0 channels: %v", err)
	}
	// Drain leaves a complete file on disk before Close.
	path := filepath.Join(t.TempDir(), "d.wav")
	s, err := NewWAVFileSink(path, 22050, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := sine(22050, 1, 440, 0.5, 500)
	if err := s.Write(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got, err := DecodeWAV(data, nil)
	if err != nil || !slices.Equal(got.Samples, p.Samples) {
		t.Errorf("file after Drain: %v", err)
	}
}

// fakeDevice is an outputDevice whose stream can be made to hang, to test
// the write deadline without unplugging a sound card.
type fakeDevice struct {
	mu       sync.Mutex
	written  []int16
	hang     chan struct{} // while non-nil, write blocks until it is closed
	entered  chan struct{} // signaled when a write starts hanging
	released int
	aborts   int
	started  bool
	failOpen error
}

func (d *fakeDevice) open(rate, channels, fpb int) (outputStream, streamFormat, error) {
	if d.failOpen != nil {
		return nil, streamFormat{}, d.failOpen
	}
	return (*fakeStream)(d), streamFormat{rate: rate, channels: channels, latency: 10 * time.Millisecond}, nil
}

func (d *fakeDevice) release() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.released++
	return nil
}

type fakeStream fakeDevice

func (s *fakeStream) start() error { s.mu.Lock(); s.started = true; s.mu.Unlock(); return nil }
func (s *fakeStream) stop() error  { s.mu.Lock(); s.started = false; s.mu.Unlock(); return nil }
func (s *fakeStream) abort() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.started = false
	s.aborts++
	return nil
}
func (s *fakeStream) close() error { return nil }
func (s *fakeStream) write(samples []int16) error {
	s.mu.Lock()
	hang := s.hang
	s.mu.Unlock()
	if hang != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
		<-hang
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.written = append(s.written, samples...)
	return nil
}

func (d *fakeDevice) releases() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.released
}

// unhang lets the write stuck in the fake driver, and all later ones, go.
// Tests also defer it so that a failing test cannot leave Close waiting on
// a stuck owner goroutine.
func (d *fakeDevice) unhang() {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.hang != nil {
		close(d.hang)
		d.hang = nil
	}
}

// waitJobStopped returns once the write in progress has been told to stop
// between buffers (by Abort, Close or its ctx). The bound only turns a
// hang into a failure; it measures nothing.
func waitJobStopped(t *testing.T, s *PortAudioSink) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		s.mu.Lock()
		j := s.cur
		s.mu.Unlock()
		if j != nil {
			select {
			case <-j.cancel:
				return
			default:
			}
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatal("the write in progress was never told to stop")
}

func (d *fakeDevice) samples() []int16 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.written)
}

func TestDeviceSinkSuite(t *testing.T) {
	// The PortAudio sink's own logic (owner goroutine, buffers, abort,
	// close) against a well-behaved fake device.
	runSinkSuite(t, func(t *testing.T) sinkUnderTest {
		dev := &fakeDevice{}
		s, err := newPortAudioSink(dev, &PortAudioOptions{Rate: 22050, Channels: 1, FramesPerBuffer: 256})
		if err != nil {
			t.Fatal(err)
		}
		return sinkUnderTest{sink: s, rate: 22050, channels: 1, delivered: func(t *testing.T) (int64, []int16) {
			if n := dev.releases(); n != 1 {
				t.Errorf("device released %d times, want 1", n)
			}
			got := dev.samples()
			return int64(len(got)), got
		}}
	})
}

func TestDeviceSinkTimeout(t *testing.T) {
	dev := &fakeDevice{hang: make(chan struct{}), entered: make(chan struct{}, 1)}
	s, err := newPortAudioSink(dev, &PortAudioOptions{Rate: 16000, Channels: 1, WriteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.unhang()
	ctx := context.Background()
	// The device swallows the write and never returns: Write must give up
	// with ErrDeviceTimeout instead of hanging the caller.
	err = s.Write(ctx, sine(16000, 1, 440, 0.5, 4000))
	if !errors.Is(err, ErrDeviceTimeout) {
		t.Fatalf("write to a hung device: %v, want ErrDeviceTimeout", err)
	}
	// Broken from now on: every call fails fast with a clear error.
	for name, call := range map[string]func() error{
		"write": func() error { return s.Write(ctx, sine(16000, 1, 440, 0.5, 10)) },
		"drain": func() error { return s.Drain(ctx) },
		"abort": s.Abort,
	} {
		if err := call(); !errors.Is(err, ErrDeviceBroken) {
			t.Errorf("%s on a broken sink: %v, want ErrDeviceBroken", name, err)
		}
	}
	// Close cannot release a device stuck in the driver: it says so.
	if err := s.Close(); !errors.Is(err, ErrDeviceTimeout) {
		t.Errorf("close with a stuck device: %v, want ErrDeviceTimeout", err)
	}
	if dev.releases() != 0 {
		t.Error("released PortAudio while a stream is still in use")
	}
	// When the driver finally returns, the owner goroutine cleans up.
	dev.unhang()
	<-s.done
	if n := dev.releases(); n != 1 {
		t.Errorf("released %d times after the device recovered, want 1", n)
	}
}

func TestDeviceSinkAbortUnblocksWrite(t *testing.T) {
	dev := &fakeDevice{hang: make(chan struct{}), entered: make(chan struct{}, 1)}
	s, err := newPortAudioSink(dev, &PortAudioOptions{Rate: 16000, Channels: 1, FramesPerBuffer: 100, WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer dev.unhang()
	errc := make(chan error, 1)
	go func() { errc <- s.Write(context.Background(), sine(16000, 1, 440, 0.5, 16000)) }()
	<-dev.entered // the first buffer is inside the "driver"
	abortc := make(chan error, 1)
	go func() { abortc <- s.Abort() }()
	waitJobStopped(t, s)
	// The device takes the buffer in flight; the other 159 are dropped.
	dev.unhang()
	if err := <-errc; !errors.Is(err, ErrAborted) {
		t.Errorf("aborted write: %v, want ErrAborted", err)
	}
	if err := <-abortc; err != nil {
		t.Fatal(err)
	}
	if n := len(dev.samples()); n != 100 {
		t.Errorf("device got %d samples, want the one 100-frame buffer in flight", n)
	}
	dev.mu.Lock()
	aborts := dev.aborts
	dev.mu.Unlock()
	if aborts != 1 {
		t.Errorf("stream aborted %d times, want 1", aborts)
	}
}

func TestDeviceSinkCancelDuringWrite(t *testing.T) {
	dev := &fakeDevice{hang: make(chan struct{}), entered: make(chan struct{}, 1)}
	s, err := newPortAudioSink(dev, &PortAudioOptions{Rate: 16000, Channels: 1, FramesPerBuffer: 100, WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer dev.unhang()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Write(ctx, sine(16000, 1, 440, 0.5, 16000)) }()
	<-dev.entered
	cancel()
	waitJobStopped(t, s)
	dev.unhang()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("canceled write: %v", err)
	}
	if n := len(dev.samples()); n != 100 {
		t.Errorf("device got %d samples after cancel, want 100", n)
	}
	// The sink stays usable.
	if err := s.Write(context.Background(), sine(16000, 1, 440, 0.5, 50)); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceSinkLazyFormat(t *testing.T) {
	dev := &fakeDevice{}
	s, err := newPortAudioSink(dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, c := s.Format(); r != 0 || c != 0 {
		t.Fatalf("format before first write: %d %d", r, c)
	}
	p := sine(24000, 1, 440, 0.5, 2400)
	if err := s.Write(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if r, c := s.Format(); r != 24000 || c != 1 {
		t.Errorf("stream opened at %d Hz %d ch, want the first PCM's 24000 1", r, c)
	}
	if !slices.Equal(dev.samples(), p.Samples) {
		t.Error("first PCM was converted although the stream took its format")
	}
	for _, o := range []PortAudioOptions{{Rate: 4000}, {Rate: 1 << 20}, {Channels: 9}, {Channels: -1}} {
		d := &fakeDevice{}
		if _, err := newPortAudioSink(d, &o); !errors.Is(err, ErrInvalidPCM) || d.releases() != 1 {
			t.Errorf("options %+v: err %v, %d releases", o, err, d.releases())
		}
	}
	failing := &fakeDevice{failOpen: errors.New("device unavailable")}
	if _, err := newPortAudioSink(failing, &PortAudioOptions{Rate: 16000, Channels: 1}); err == nil {
		t.Error("open of a failing device succeeded")
	}
	if n := failing.releases(); n != 1 {
		t.Errorf("failed open released %d times, want 1", n)
	}
}
