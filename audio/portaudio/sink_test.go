package portaudio

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/audiotest"
)

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
	latency  time.Duration // the stream's OutputLatency; 0 means 10 ms
	avail    int           // what writeAvailable says
	availErr error
}

func (d *fakeDevice) open(rate, channels, fpb int) (outputStream, streamFormat, error) {
	if d.failOpen != nil {
		return nil, streamFormat{}, d.failOpen
	}
	latency := d.latency
	if latency == 0 {
		latency = 10 * time.Millisecond
	}
	return (*fakeStream)(d), streamFormat{rate: rate, channels: channels, latency: latency}, nil
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
func (s *fakeStream) writeAvailable() (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.avail, s.availErr
}
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

func (d *fakeDevice) setAvail(n int, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.avail, d.availErr = n, err
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
func waitJobStopped(t *testing.T, s *Sink) {
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
	audiotest.RunSinkSuite(t, func(t *testing.T) audiotest.SinkUnderTest {
		dev := &fakeDevice{}
		s, err := newSink(dev, &Options{Rate: 22050, Channels: 1, FramesPerBuffer: 256})
		if err != nil {
			t.Fatal(err)
		}
		return audiotest.SinkUnderTest{Sink: s, Rate: 22050, Channels: 1, Delivered: func(t *testing.T) (int64, []int16) {
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
	s, err := newSink(dev, &Options{Rate: 16000, Channels: 1, WriteTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer dev.unhang()
	ctx := context.Background()
	// The device swallows the write and never returns: Write must give up
	// with ErrDeviceTimeout instead of hanging the caller.
	err = s.Write(ctx, audiotest.Sine(16000, 1, 440, 0.5, 4000))
	if !errors.Is(err, ErrDeviceTimeout) {
		t.Fatalf("write to a hung device: %v, want ErrDeviceTimeout", err)
	}
	// Broken from now on: every call fails fast with a clear error.
	for name, call := range map[string]func() error{
		"write": func() error { return s.Write(ctx, audiotest.Sine(16000, 1, 440, 0.5, 10)) },
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
	s, err := newSink(dev, &Options{Rate: 16000, Channels: 1, FramesPerBuffer: 100, WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer dev.unhang()
	errc := make(chan error, 1)
	go func() { errc <- s.Write(context.Background(), audiotest.Sine(16000, 1, 440, 0.5, 16000)) }()
	<-dev.entered // the first buffer is inside the "driver"
	abortc := make(chan error, 1)
	go func() { abortc <- s.Abort() }()
	waitJobStopped(t, s)
	// The device takes the buffer in flight; the other 159 are dropped.
	dev.unhang()
	if err := <-errc; !errors.Is(err, audio.ErrAborted) {
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
	s, err := newSink(dev, &Options{Rate: 16000, Channels: 1, FramesPerBuffer: 100, WriteTimeout: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer dev.unhang()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- s.Write(ctx, audiotest.Sine(16000, 1, 440, 0.5, 16000)) }()
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
	if err := s.Write(context.Background(), audiotest.Sine(16000, 1, 440, 0.5, 50)); err != nil {
		t.Fatal(err)
	}
}

func TestDeviceSinkLazyFormat(t *testing.T) {
	dev := &fakeDevice{}
	s, err := newSink(dev, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if r, c := s.Format(); r != 0 || c != 0 {
		t.Fatalf("format before first write: %d %d", r, c)
	}
	p := audiotest.Sine(24000, 1, 440, 0.5, 2400)
	if err := s.Write(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if r, c := s.Format(); r != 24000 || c != 1 {
		t.Errorf("stream opened at %d Hz %d ch, want the first PCM's 24000 1", r, c)
	}
	if !slices.Equal(dev.samples(), p.Samples) {
		t.Error("first PCM was converted although the stream took its format")
	}
	for _, o := range []Options{{Rate: 4000}, {Rate: 1 << 20}, {Channels: 9}, {Channels: -1}} {
		d := &fakeDevice{}
		if _, err := newSink(d, &o); !errors.Is(err, audio.ErrInvalidPCM) || d.releases() != 1 {
			t.Errorf("options %+v: err %v, %d releases", o, err, d.releases())
		}
	}
	failing := &fakeDevice{failOpen: errors.New("device unavailable")}
	if _, err := newSink(failing, &Options{Rate: 16000, Channels: 1}); err == nil {
		t.Error("open of a failing device succeeded")
	}
	if n := failing.releases(); n != 1 {
		t.Errorf("failed open released %d times, want 1", n)
	}
}

func TestDeviceSinkNextDAC(t *testing.T) {
	// At 16 kHz, 1600 frames are 100 ms. NextDAC is now + queued/rate +
	// what the latency has past the buffer; the wanted offset from now is
	// checked between a time.Now before the call and one after it.
	const rate = 16000
	for _, tc := range []struct {
		name     string
		capacity int // what the stream takes while empty
		latency  time.Duration
		play     bool // a Write started the stream
		drain    bool // and Drain stopped it
		avail    int  // what it takes then
		want     time.Duration
	}{
		{name: "not started", capacity: 1600, latency: 90 * time.Millisecond},
		{name: "not started, host delay past the buffer", capacity: 1600, latency: 250 * time.Millisecond, want: 150 * time.Millisecond},
		{name: "1000 frames queued", capacity: 1600, latency: 90 * time.Millisecond, play: true, avail: 600, want: 62500 * time.Microsecond},
		{name: "buffer full", capacity: 1600, latency: 90 * time.Millisecond, play: true, want: 100 * time.Millisecond},
		{name: "buffer full, host delay past it", capacity: 1600, latency: 130 * time.Millisecond, play: true, want: 130 * time.Millisecond},
		{name: "buffer empty", capacity: 1600, latency: 90 * time.Millisecond, play: true, avail: 1600},
		{name: "buffer size unknown", latency: 40 * time.Millisecond, play: true, want: 40 * time.Millisecond},
		{name: "drained", capacity: 1600, latency: 90 * time.Millisecond, play: true, drain: true, avail: 600},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dev := &fakeDevice{latency: tc.latency, avail: tc.capacity}
			s, err := newSink(dev, &Options{Rate: rate, Channels: 1, FramesPerBuffer: 160})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			if tc.play {
				if err := s.Write(ctx, audiotest.Sine(rate, 1, 440, 0.5, 320)); err != nil {
					t.Fatal(err)
				}
			}
			if tc.drain {
				if err := s.Drain(ctx); err != nil {
					t.Fatal(err)
				}
			}
			dev.setAvail(tc.avail, nil)
			before := time.Now()
			next, err := s.NextDAC()
			after := time.Now()
			if err != nil {
				t.Fatal(err)
			}
			if off := next.Sub(before); off < tc.want || next.Sub(after) > tc.want {
				t.Errorf("NextDAC %v from the call, want %v", off, tc.want)
			}
		})
	}

	// Before a lazily opened stream exists there is nothing to add.
	lazy, _ := newSink(&fakeDevice{}, nil)
	before := time.Now()
	next, err := lazy.NextDAC()
	if err != nil || next.Before(before) || next.After(time.Now()) {
		t.Errorf("NextDAC with no stream: %v from the call (%v), want now", next.Sub(before), err)
	}
	lazy.Close()
	if _, err := lazy.NextDAC(); !errors.Is(err, audio.ErrClosed) {
		t.Errorf("NextDAC after Close: %v", err)
	}

	// A stream that cannot say what it holds is broken, as after a failed
	// write, so a ReopeningSink opens the device again.
	dev := &fakeDevice{avail: 1600}
	s, _ := newSink(dev, &Options{Rate: rate, Channels: 1})
	defer s.Close()
	if err := s.Write(context.Background(), audiotest.Sine(rate, 1, 440, 0.5, 320)); err != nil {
		t.Fatal(err)
	}
	dev.setAvail(0, errors.New("unanticipated host error"))
	if _, err := s.NextDAC(); err == nil {
		t.Fatal("NextDAC of a failing stream succeeded")
	}
	if err := s.Write(context.Background(), audiotest.Sine(rate, 1, 440, 0.5, 320)); !errors.Is(err, ErrDeviceBroken) {
		t.Errorf("write after the DAC clock failed: %v, want ErrDeviceBroken", err)
	}
}
