// Package portaudio plays mynah's speech through a sound card with
// PortAudio. It is a package of its own so that package audio has no cgo:
// the daemon needs audio.PCM and audio.Sink but must never link C, and gets
// this sink through an interface wired in cmd. Built without cgo, Open fails
// with ErrUnsupported.
//
// The sink's deadline and abort logic (sink.go) is pure Go over a small
// device interface; portaudio_cgo.go implements that interface with the
// gordonklaus/portaudio binding and tests fake it to make a device hang.
package portaudio

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// Errors returned by this package. Callers test them with errors.Is; the
// returned errors wrap them with detail. A closed sink and an aborted write
// report audio.ErrClosed and audio.ErrAborted, as every audio.Sink does.
var (
	// ErrDeviceTimeout is returned when the audio device did not accept
	// audio within the write timeout (unplugged, suspended, wedged driver).
	// The sink is broken afterwards: reopen it.
	ErrDeviceTimeout = errors.New("audio device timeout")
	// ErrDeviceBroken is returned by every call on a sink after a device
	// timeout or a device error that left the stream unusable.
	ErrDeviceBroken = errors.New("audio device broken")
	// ErrUnsupported is returned where the binary was built without cgo, so
	// PortAudio is not available.
	ErrUnsupported = errors.New("portaudio not available in this build (built without cgo)")
)

var (
	_ audio.Sink     = (*Sink)(nil)
	_ audio.DACClock = (*Sink)(nil)
)

// Options configures Open; nil means the defaults.
type Options struct {
	// Device picks the output device by name: an exact name, or else a
	// case-insensitive substring matching exactly one output device.
	// Empty means the default output device.
	Device string
	// Rate is the stream's sample rate. 0 means the rate of the first PCM
	// written if the device takes it (so the common case needs no
	// resampling), else the device's default rate.
	Rate int
	// Channels is the stream's channel count. 0 means the first PCM's,
	// capped at what the device has.
	Channels int
	// FramesPerBuffer is the size of each blocking write handed to the
	// device, and so how long Abort may wait for the write in progress.
	// Default 1024.
	FramesPerBuffer int
	// WriteTimeout is how long the device may take to accept one buffer
	// (or, in Drain, to finish playing) before the sink gives up with
	// ErrDeviceTimeout and marks itself broken. Default 2 s.
	WriteTimeout time.Duration
	// Logger receives device events; nil discards them.
	Logger *slog.Logger
}

// Defaults for Options.
const (
	DefaultFramesPerBuffer = 1024
	DefaultWriteTimeout    = 2 * time.Second
)

// DeviceInfo describes an output device (no PortAudio types leak out).
type DeviceInfo struct {
	Name              string
	HostAPI           string // "ALSA", "JACK Audio Connection Kit", ...
	MaxOutputChannels int
	DefaultRate       int
	Default           bool // the host API's default output
}

// outputStream is the part of a PortAudio blocking stream the sink drives.
// The cgo file implements it; tests fake it to make a device hang.
type outputStream interface {
	start() error
	write(samples []int16) error // blocks until the device takes them
	stop() error                 // plays out what was written, then stops
	abort() error                // drops what was written and stops
	close() error
	// writeAvailable returns how many frames write would take now without
	// blocking (Pa_GetStreamWriteAvailable).
	writeAvailable() (int, error)
}

// outputDevice is a resolved output device holding a reference on the
// PortAudio library.
type outputDevice interface {
	// open opens a blocking int16 stream, preferring rate and channels; the
	// device may choose another format, which it returns.
	open(rate, channels, framesPerBuffer int) (outputStream, streamFormat, error)
	// release drops the library reference; called once, after the stream
	// is closed.
	release() error
}

type streamFormat struct {
	rate, channels int
	latency        time.Duration // the stream's OutputLatency: from write to DAC with a full buffer
}

// Sink plays through a PortAudio output device.
//
// All calls into PortAudio for the stream happen on one goroutine the sink
// owns, because a blocking write into a vanished device may never return:
// callers wait for it with a timeout instead. After a timeout the goroutine
// may stay stuck in the driver; the sink is then broken (every call returns
// ErrDeviceBroken) and Close cannot release the device, which is leaked
// rather than freed under a thread that still uses it.
type Sink struct {
	dev     outputDevice
	opts    Options
	log     *slog.Logger
	ops     chan ownerOp  // run on the owner goroutine
	quit    chan struct{} // closed by Close
	done    chan struct{} // closed when the owner goroutine has exited
	closeMu sync.Once

	writeMu sync.Mutex // serializes Write and Drain

	mu       sync.Mutex
	format   streamFormat // zero until the stream is open
	cur      *writeJob
	epoch    uint64 // bumped by Abort; a Write from an older epoch is aborted
	broken   error
	closed   bool
	closeErr error

	// Owned by the owner goroutine.
	stream   outputStream
	started  bool
	capacity int // frames the stream's buffer holds; 0 while unknown
}

// ownerOp is work for the owner goroutine; done has room for the result so
// the owner never waits for a caller that gave up.
type ownerOp struct {
	run  func() error
	done chan error
}

func newOp(run func() error) ownerOp { return ownerOp{run: run, done: make(chan error, 1)} }

type writeJob struct {
	samples  []int16
	progress chan struct{} // a buffer went out
	cancel   chan struct{} // closed to stop between buffers
	once     sync.Once
	result   error // why cancel was closed
}

func (j *writeJob) stop(why error) {
	j.once.Do(func() {
		j.result = why
		close(j.cancel)
	})
}

// newSink starts the owner goroutine for dev. When opts fixes both
// rate and channels the stream opens now, so a missing device fails here.
func newSink(dev outputDevice, opts *Options) (*Sink, error) {
	s := &Sink{
		dev:  dev,
		ops:  make(chan ownerOp),
		quit: make(chan struct{}),
		done: make(chan struct{}),
	}
	if opts != nil {
		s.opts = *opts
	}
	if r := s.opts.Rate; r != 0 && (r < audio.MinRate || r > audio.MaxRate) {
		dev.release()
		return nil, fmt.Errorf("open portaudio: %w: Rate %d Hz outside %d..%d", audio.ErrInvalidPCM, r, audio.MinRate, audio.MaxRate)
	}
	if c := s.opts.Channels; c < 0 || c > audio.MaxChannels {
		dev.release()
		return nil, fmt.Errorf("open portaudio: %w: Channels %d outside 1..%d", audio.ErrInvalidPCM, c, audio.MaxChannels)
	}
	if s.opts.FramesPerBuffer <= 0 {
		s.opts.FramesPerBuffer = DefaultFramesPerBuffer
	}
	if s.opts.WriteTimeout <= 0 {
		s.opts.WriteTimeout = DefaultWriteTimeout
	}
	s.log = s.opts.Logger
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	go s.run()
	if s.opts.Rate != 0 && s.opts.Channels != 0 {
		if err := s.openStream(context.Background(), s.opts.Rate, s.opts.Channels); err != nil {
			s.Close()
			return nil, err
		}
	}
	return s, nil
}

func (s *Sink) run() {
	defer close(s.done)
	for {
		select {
		case op := <-s.ops:
			op.done <- op.run()
		case <-s.quit:
			var err error
			if s.stream != nil {
				if s.started {
					err = s.stream.abort()
				}
				if cerr := s.stream.close(); err == nil {
					err = cerr
				}
			}
			if rerr := s.dev.release(); err == nil {
				err = rerr
			}
			s.mu.Lock()
			s.closeErr = err
			s.mu.Unlock()
			return
		}
	}
}

// Format returns the stream's rate and channel count; zeros until the first
// Write opened it (when Options left them to the audio).
func (s *Sink) Format() (rate, channels int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.format.rate, s.format.channels
}

// usable reports why the sink cannot take a call, if it cannot.
func (s *Sink) usable(what string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return fmt.Errorf("portaudio %s: %w", what, audio.ErrClosed)
	}
	if s.broken != nil {
		return fmt.Errorf("portaudio %s: %w: reopen the sink (%v)", what, ErrDeviceBroken, s.broken)
	}
	return nil
}

func (s *Sink) markBroken(err error) {
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
	}
	s.mu.Unlock()
	s.log.Error("audio device stopped responding", "err", err)
}

// do runs op on the owner goroutine and waits for it, giving up after
// timeout (the sink is then broken) or when ctx ends (op still runs).
func (s *Sink) do(ctx context.Context, what string, timeout time.Duration, run func() error) error {
	op := newOp(run)
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case s.ops <- op:
	case <-s.quit:
		return fmt.Errorf("portaudio %s: %w", what, audio.ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("portaudio %s: %w", what, ctx.Err())
	case <-t.C:
		s.markBroken(fmt.Errorf("%s: device busy for %v", what, timeout))
		return fmt.Errorf("portaudio %s: %w after %v", what, ErrDeviceTimeout, timeout)
	}
	select {
	case err := <-op.done:
		return err
	case <-ctx.Done():
		// The op keeps the owner busy; the next call waits for it.
		return fmt.Errorf("portaudio %s: %w", what, ctx.Err())
	case <-t.C:
		s.markBroken(fmt.Errorf("%s: no answer for %v", what, timeout))
		return fmt.Errorf("portaudio %s: %w after %v", what, ErrDeviceTimeout, timeout)
	}
}

func (s *Sink) openStream(ctx context.Context, rate, channels int) error {
	return s.do(ctx, "open", s.opts.WriteTimeout, func() error {
		st, f, err := s.dev.open(rate, channels, s.opts.FramesPerBuffer)
		if err != nil {
			return fmt.Errorf("portaudio open: %w", err)
		}
		s.stream = st
		s.learnCapacity()
		s.mu.Lock()
		s.format = f
		s.mu.Unlock()
		s.log.Info("audio stream open", "rate", f.rate, "channels", f.channels, "latency", f.latency)
		return nil
	})
}

// Write implements audio.Sink. WriteTimeout bounds each buffer, not the whole
// PCM: a long sentence takes as long as it plays, minus the device buffer.
func (s *Sink) Write(ctx context.Context, p audio.PCM) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("portaudio write: %w", err)
	}
	if err := p.Validate(); err != nil {
		return fmt.Errorf("portaudio write: %w", err)
	}
	s.mu.Lock()
	epoch := s.epoch
	s.mu.Unlock()
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.usable("write"); err != nil {
		return err
	}
	if rate, _ := s.Format(); rate == 0 {
		r, c := s.opts.Rate, s.opts.Channels
		if r == 0 {
			r = p.Rate
		}
		if c == 0 {
			c = p.Channels
		}
		if err := s.openStream(ctx, r, c); err != nil {
			return err
		}
	}
	rate, channels := s.Format()
	p, err := audio.Convert(p, rate, channels)
	if err != nil {
		return fmt.Errorf("portaudio write: %w", err)
	}
	job := &writeJob{samples: p.Samples, progress: make(chan struct{}, 1), cancel: make(chan struct{})}
	s.mu.Lock()
	if s.epoch != epoch {
		s.mu.Unlock()
		return fmt.Errorf("portaudio write: %w", audio.ErrAborted)
	}
	s.cur = job
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		s.cur = nil
		s.mu.Unlock()
	}()

	timeout := s.opts.WriteTimeout
	t := time.NewTimer(timeout)
	defer t.Stop()
	op := newOp(func() error { return s.writeBuffers(job, channels) })
	select {
	case s.ops <- op:
	case <-s.quit:
		return fmt.Errorf("portaudio write: %w", audio.ErrClosed)
	case <-ctx.Done():
		return fmt.Errorf("portaudio write: %w", ctx.Err())
	case <-t.C:
		s.markBroken(fmt.Errorf("write: device busy for %v", timeout))
		return fmt.Errorf("portaudio write: %w after %v", ErrDeviceTimeout, timeout)
	}
	for {
		select {
		case err := <-op.done:
			return err
		case <-job.progress:
			t.Reset(timeout)
		case <-ctx.Done():
			// Let the buffer in flight finish so the owner is free again;
			// what was accepted plays out unless Abort drops it.
			job.stop(ctx.Err())
			select {
			case <-op.done:
			case <-t.C:
				s.markBroken(fmt.Errorf("write: no progress for %v", timeout))
			}
			return fmt.Errorf("portaudio write: %w", ctx.Err())
		case <-t.C:
			// Should the driver ever return, do not play stale audio.
			job.stop(ErrDeviceTimeout)
			s.markBroken(fmt.Errorf("write: no progress for %v", timeout))
			return fmt.Errorf("portaudio write: %w: device took no audio for %v", ErrDeviceTimeout, timeout)
		}
	}
}

// writeBuffers runs on the owner goroutine.
func (s *Sink) writeBuffers(job *writeJob, channels int) error {
	step := s.opts.FramesPerBuffer * channels
	for off := 0; off < len(job.samples); off += step {
		select {
		case <-job.cancel:
			return fmt.Errorf("portaudio write: %w", job.result)
		case <-s.quit:
			return fmt.Errorf("portaudio write: %w", audio.ErrClosed)
		default:
		}
		if !s.started {
			if err := s.stream.start(); err != nil {
				s.markBroken(err)
				return fmt.Errorf("portaudio start: %w", err)
			}
			s.started = true
			s.learnCapacity()
		}
		end := min(off+step, len(job.samples))
		if err := s.stream.write(job.samples[off:end]); err != nil {
			s.markBroken(err)
			return fmt.Errorf("portaudio write: %w", err)
		}
		select {
		case job.progress <- struct{}{}:
		default:
		}
	}
	return nil
}

// learnCapacity runs on the owner goroutine while the stream's buffer is
// empty (just opened, just started): what it can take then is its size.
// A reading with audio queued is only the free part. A failed reading
// leaves NextDAC less precise, not wrong in kind.
func (s *Sink) learnCapacity() {
	if n, err := s.stream.writeAvailable(); err == nil {
		s.capacity = max(s.capacity, n)
	}
}

// NextDAC implements audio.DACClock. A blocking stream never sees the DAC
// time (and Pa_GetStreamTime may stay 0 through PulseAudio's ALSA plugin),
// so the sink estimates it on the system clock as
//
//	now + queued/rate + max(0, latency − capacity/rate)
//
// capacity is what the stream's buffer could take while empty, and queued
// is what it holds and has not played: capacity less what it could take
// now (Pa_GetStreamWriteAvailable). latency is the stream's OutputLatency,
// the delay of a sample written into a full buffer; on ALSA it is that
// buffer less one period, which queued already counts, so only what a
// host API reports past its buffer is added (all of latency while capacity
// is unknown). A stream not playing (not yet started, or after Drain or
// Abort) holds nothing; the next Write starts it.
//
// The estimate cannot see a delay that the host API leaves out: the
// sound server's own buffer behind PulseAudio's ALSA plugin, a codec's few
// samples on hardware. It is as fine as the driver's report of its play
// position, a period on some cards. Before the first Write opened a stream
// whose format Options left to the audio, there is no latency to add and
// NextDAC returns now.
//
// Like Write, call it from the player's goroutine: it waits for a Write in
// progress.
func (s *Sink) NextDAC() (time.Time, error) {
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.usable("dac clock"); err != nil {
		return time.Time{}, err
	}
	var next time.Time
	err := s.do(context.Background(), "dac clock", s.opts.WriteTimeout, func() error {
		s.mu.Lock()
		f := s.format
		s.mu.Unlock()
		if s.stream == nil {
			next = time.Now()
			return nil
		}
		queued := 0
		if s.started {
			avail, err := s.stream.writeAvailable()
			if err != nil {
				s.markBroken(err)
				return fmt.Errorf("portaudio dac clock: %w", err)
			}
			queued = max(s.capacity-avail, 0)
		}
		past := max(f.latency-framesDuration(s.capacity, f.rate), 0)
		next = time.Now().Add(framesDuration(queued, f.rate) + past)
		return nil
	})
	return next, err
}

func framesDuration(frames, rate int) time.Duration {
	return time.Duration(frames) * time.Second / time.Duration(rate)
}

// Drain implements audio.Sink by stopping the stream, which in PortAudio returns
// once the buffered audio has played; the next Write restarts it.
func (s *Sink) Drain(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("portaudio drain: %w", err)
	}
	s.writeMu.Lock()
	defer s.writeMu.Unlock()
	if err := s.usable("drain"); err != nil {
		return err
	}
	s.mu.Lock()
	timeout := s.opts.WriteTimeout + 2*s.format.latency
	s.mu.Unlock()
	return s.do(ctx, "drain", timeout, func() error {
		if !s.started {
			return nil
		}
		s.started = false
		if err := s.stream.stop(); err != nil {
			s.markBroken(err)
			return fmt.Errorf("portaudio drain: %w", err)
		}
		return nil
	})
}

// Abort implements audio.Sink. It waits at most for the buffer being written
// (FramesPerBuffer frames) before PortAudio drops the device's buffer.
func (s *Sink) Abort() error {
	if err := s.usable("abort"); err != nil {
		return err
	}
	s.mu.Lock()
	s.epoch++
	if s.cur != nil {
		s.cur.stop(audio.ErrAborted)
	}
	s.mu.Unlock()
	return s.do(context.Background(), "abort", s.opts.WriteTimeout, func() error {
		if !s.started {
			return nil
		}
		s.started = false
		if err := s.stream.abort(); err != nil {
			s.markBroken(err)
			return fmt.Errorf("portaudio abort: %w", err)
		}
		return nil
	})
}

// Close implements audio.Sink. It drops audio not yet played and releases the
// device. If the device hung, Close returns ErrDeviceTimeout after
// WriteTimeout and leaves the stuck stream alone.
func (s *Sink) Close() error {
	first := false
	s.closeMu.Do(func() {
		first = true
		s.mu.Lock()
		s.closed = true
		if s.cur != nil {
			s.cur.stop(audio.ErrClosed)
		}
		s.mu.Unlock()
		close(s.quit)
	})
	if !first {
		return nil
	}
	t := time.NewTimer(s.opts.WriteTimeout)
	defer t.Stop()
	select {
	case <-s.done:
	case <-t.C:
		return fmt.Errorf("close portaudio: %w after %v; the device is left open", ErrDeviceTimeout, s.opts.WriteTimeout)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closeErr != nil {
		return fmt.Errorf("close portaudio: %w", s.closeErr)
	}
	return nil
}
