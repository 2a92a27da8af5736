package audio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// dacModel is a sound card on a clock the test moves: a queue played at
// rate in real time, then a fixed output delay to the DAC. Like a blocking
// PortAudio write, Write returns (moves the clock on) once no more than
// queue is left unplayed. From the model it records when each Write's
// first frame is heard, to hold Place to; NextDAC answers from the same
// model, as a DAC clock that knows its device.
type dacModel struct {
	latency time.Duration // from leaving the queue to the DAC
	startup time.Duration // an idle card starts this late
	queue   time.Duration // how much a Write may leave unplayed when it returns
	cost    time.Duration // clock time each Write spends besides waiting

	now      time.Time // the clock
	playedBy time.Time // when the queue has played out
	writes   []modelWrite
}

type modelWrite struct {
	frames int
	given  time.Time // the clock when Write was called
	heard  time.Time // when its first frame reaches the DAC
}

var (
	_ Sink     = (*dacModel)(nil)
	_ DACClock = (*dacModel)(nil)
)

// nextStart is when a frame queued now leaves the queue.
func (m *dacModel) nextStart() time.Time {
	if m.playedBy.After(m.now) {
		return m.playedBy
	}
	return m.now.Add(m.startup)
}

func (m *dacModel) Write(ctx context.Context, p PCM) error {
	start := m.nextStart()
	m.writes = append(m.writes, modelWrite{frames: p.Frames(), given: m.now, heard: start.Add(m.latency)})
	m.playedBy = start.Add(p.Duration())
	if wait := m.playedBy.Sub(m.now) - m.queue; wait > 0 {
		m.now = m.now.Add(wait)
	}
	m.now = m.now.Add(m.cost)
	return nil
}

func (m *dacModel) NextDAC() (time.Time, error) { return m.nextStart().Add(m.latency), nil }
func (m *dacModel) Drain(context.Context) error { return nil }
func (m *dacModel) Abort() error                { return nil }
func (m *dacModel) Close() error                { return nil }

func (m *dacModel) leadFrames() int {
	n := 0
	for _, w := range m.writes {
		n += w.frames
	}
	return n
}

var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func TestPlaceStartsClipAtDAC(t *testing.T) {
	for _, tc := range []struct {
		name     string
		model    dacModel
		rate     int
		channels int
		speech   time.Duration // already queued when Place is called
		ahead    time.Duration // at, from the clock's now
	}{
		{name: "blocking card", model: dacModel{latency: 40 * time.Millisecond, queue: 100 * time.Millisecond}, rate: 48000, channels: 2, ahead: 500 * time.Millisecond},
		{name: "slow to start", model: dacModel{latency: 10 * time.Millisecond, startup: 30 * time.Millisecond, queue: 50 * time.Millisecond}, rate: 22050, channels: 1, ahead: 300 * time.Millisecond},
		{name: "plays as written", model: dacModel{}, rate: 16000, channels: 1, ahead: 250 * time.Millisecond},
		{name: "speech still queued", model: dacModel{latency: 25 * time.Millisecond, queue: 200 * time.Millisecond}, rate: 24000, channels: 1, speech: 150 * time.Millisecond, ahead: 600 * time.Millisecond},
		{name: "busy cpu", model: dacModel{latency: 20 * time.Millisecond, queue: 100 * time.Millisecond, cost: 3 * time.Millisecond}, rate: 44100, channels: 2, ahead: 1 * time.Second},
		{name: "odd instant", model: dacModel{latency: 7 * time.Millisecond, queue: 64 * time.Millisecond}, rate: 22050, channels: 1, ahead: 333333 * time.Microsecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.model
			m.now = epoch
			ctx := context.Background()
			if tc.speech > 0 {
				m.Write(ctx, Silence(tc.rate, tc.channels, tc.speech))
				m.writes = nil
			}
			at := epoch.Add(tc.ahead)
			first, _ := m.NextDAC()
			pl, err := Place(ctx, &m, at, tc.rate, tc.channels, 50*time.Millisecond)
			if err != nil {
				t.Fatalf("Place: %v", err)
			}
			if pl.Clock != ClockDAC {
				t.Errorf("clock %q, want %q", pl.Clock, ClockDAC)
			}
			if want := framesIn(at.Sub(first), tc.rate); pl.Lead != want || m.leadFrames() != want {
				t.Errorf("lead %d frames (%d written), want %d: the frames between the next DAC time and at", pl.Lead, m.leadFrames(), want)
			}
			for _, w := range m.writes {
				if d := time.Duration(w.frames) * time.Second / time.Duration(tc.rate); d > maxSilencePiece {
					t.Errorf("a lead write of %v, more than %v", d, maxSilencePiece)
				}
			}
			m.Write(ctx, sine(tc.rate, tc.channels, 440, 0.5, tc.rate/10))
			heard := m.writes[len(m.writes)-1].heard
			if off := heard.Sub(at); off < -time.Millisecond || off > time.Millisecond {
				t.Errorf("clip heard %v from at, want within 1 ms", off)
			}
			if pl.Late < -time.Millisecond || pl.Late > time.Millisecond || pl.Skip > 1 {
				t.Errorf("late %v, skip %d frames: want on time", pl.Late, pl.Skip)
			}
		})
	}
}

func TestPlaceLate(t *testing.T) {
	const rate = 48000
	ctx := context.Background()
	at := epoch.Add(10 * time.Millisecond)

	// Audio queued up to 30 ms past at: no lead, the first 30 ms of the
	// clip are left out.
	m := &dacModel{now: epoch, playedBy: at.Add(30 * time.Millisecond)}
	pl, err := Place(ctx, m, at, rate, 1, 50*time.Millisecond)
	if err != nil {
		t.Fatalf("30 ms late, 50 allowed: %v", err)
	}
	if pl.Late != 30*time.Millisecond || pl.Lead != 0 || len(m.writes) != 0 {
		t.Errorf("late %v, lead %d, %d writes: want 30ms and nothing written", pl.Late, pl.Lead, len(m.writes))
	}
	if want := rate * 30 / 1000; pl.Skip < want-1 || pl.Skip > want+1 {
		t.Errorf("skip %d frames, want %d±1", pl.Skip, want)
	}

	// 200 ms late: too late, and nothing is written.
	m = &dacModel{now: epoch, playedBy: at.Add(200 * time.Millisecond)}
	pl, err = Place(ctx, m, at, rate, 1, 50*time.Millisecond)
	if !errors.Is(err, ErrTooLate) {
		t.Fatalf("200 ms late, 50 allowed: %v, want ErrTooLate", err)
	}
	if pl.Late != 200*time.Millisecond || len(m.writes) != 0 {
		t.Errorf("late %v, %d writes: want 200ms and nothing written", pl.Late, len(m.writes))
	}

	// A card that stalls 20 ms after each 100 ms piece of the lead (and
	// underruns): Place measures the 60 ms it lost, not what it hoped for,
	// and skipping that much puts the rest of the clip in step.
	m = &dacModel{now: epoch, cost: 20 * time.Millisecond}
	at = epoch.Add(300 * time.Millisecond)
	pl, err = Place(ctx, m, at, rate, 1, 100*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if pl.Late != 60*time.Millisecond || pl.Skip != rate*60/1000 {
		t.Errorf("late %v skip %d, want 60ms and %d frames", pl.Late, pl.Skip, rate*60/1000)
	}
	m.Write(ctx, sine(rate, 1, 440, 0.5, rate/10))
	heard := m.writes[len(m.writes)-1].heard
	if want := at.Add(time.Duration(pl.Skip) * time.Second / rate); heard.Sub(want).Abs() > time.Millisecond {
		t.Errorf("the clip's frame %d is heard %v from where it belongs", pl.Skip, heard.Sub(want))
	}
}

func TestPlacePacedNullSink(t *testing.T) {
	const rate = 16000
	s, err := NewNullSink(&NullSinkOptions{Pace: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	at := time.Now().Add(300 * time.Millisecond)
	pl, err := Place(context.Background(), s, at, rate, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("lead %d frames, late %v", pl.Lead, pl.Late)
	// The clip's first frame comes after the lead, which is the time left
	// until at when Place first looked: under 300 ms by what the machine
	// spent first, which the wide margin only keeps from mattering.
	if got := s.Frames(); got != int64(pl.Lead) || pl.Lead > framesIn(300*time.Millisecond, rate) || pl.Lead < framesIn(200*time.Millisecond, rate) {
		t.Errorf("clip starts at frame %d (lead %d), want about %d", got, pl.Lead, framesIn(300*time.Millisecond, rate))
	}
	// The paced sink is busy until the lead has "played", which cannot be
	// before at: time only runs forward. What it adds is measured.
	if pl.Clock != ClockDAC || pl.Late < -time.Second/rate || pl.Skip != framesIn(pl.Late, rate) {
		t.Errorf("placement %+v: want the DAC clock, not early, skip matching late", pl)
	}
}

func TestNullSinkNextDAC(t *testing.T) {
	within := func(t *testing.T, what string, got, from, to time.Time) {
		t.Helper()
		if got.Before(from) || got.After(to) {
			t.Errorf("%s: NextDAC %v outside [%v, %v]", what, got, from, to)
		}
	}
	fast, _ := NewNullSink(nil)
	before := time.Now()
	next, err := fast.NextDAC()
	within(t, "unpaced", next, before, time.Now())
	if err != nil {
		t.Fatal(err)
	}

	paced, _ := NewNullSink(&NullSinkOptions{Pace: true})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	before = time.Now()
	go func() { errc <- paced.Write(ctx, Silence(8000, 1, time.Hour)) }()
	eventually(t, "the hour accepted", func() bool { return paced.Writes() == 1 })
	next, _ = paced.NextDAC()
	within(t, "an hour written", next.Add(-time.Hour), before, time.Now())
	cancel()
	<-errc
	// Abort drops the hour: the next sample is heard now.
	paced.Abort()
	before = time.Now()
	next, _ = paced.NextDAC()
	within(t, "after Abort", next, before, time.Now())
	paced.Close()
	if _, err := paced.NextDAC(); !errors.Is(err, ErrClosed) {
		t.Errorf("NextDAC after Close: %v", err)
	}
}

func TestPlaceAbortCutsLead(t *testing.T) {
	s, _ := NewNullSink(&NullSinkOptions{Pace: true})
	defer s.Close()
	type result struct {
		pl  Placement
		err error
	}
	done := make(chan result, 1)
	go func() {
		pl, err := Place(context.Background(), s, time.Now().Add(time.Hour), 16000, 1, 0)
		done <- result{pl, err}
	}()
	eventually(t, "the lead to start", func() bool { return s.Writes() >= 1 })
	s.Abort()
	r := <-done
	if !errors.Is(r.err, ErrAborted) || r.pl.Lead >= framesIn(time.Hour, 16000) {
		t.Errorf("aborted lead: %v after %d frames", r.err, r.pl.Lead)
	}
}

func TestPlaceBySystemClock(t *testing.T) {
	const rate = 16000
	path := filepath.Join(t.TempDir(), "out.wav")
	file, err := NewWAVFileSink(path, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	ctx := context.Background()

	at := time.Now().Add(20 * time.Millisecond)
	pl, err := Place(ctx, file, at, rate, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// A timer never fires early, so Place returns at or after at.
	if pl.Clock != ClockSystem || pl.Lead != 0 || pl.Late < 0 || pl.Skip != framesIn(pl.Late, rate) {
		t.Errorf("placement %+v: want the system clock, no lead, not early", pl)
	}
	if err := file.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	if p, err := DecodeWAV(data, nil); err != nil || p.Frames() != 0 {
		t.Errorf("a lead went into the file: %d frames (%v)", p.Frames(), err)
	}

	pl, err = Place(ctx, file, time.Now().Add(-200*time.Millisecond), rate, 1, 50*time.Millisecond)
	if !errors.Is(err, ErrTooLate) || pl.Late < 200*time.Millisecond {
		t.Errorf("200 ms ago: %v, late %v", err, pl.Late)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Place(cctx, file, time.Now().Add(time.Hour), rate, 1, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled wait: %v", err)
	}

	// A ReopeningSink around the file forwards ErrNoDACClock: the same
	// fallback.
	r, _ := NewReopeningSink(&ReopenOptions{Open: func() (Sink, error) { return file, nil }})
	defer r.Close()
	pl, err = Place(ctx, r, time.Now(), rate, 1, time.Second)
	if err != nil || pl.Clock != ClockSystem {
		t.Errorf("reopening file sink: %+v, %v", pl, err)
	}

	if _, err := Place(ctx, file, time.Now(), 0, 1, 0); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("rate 0: %v", err)
	}
}

// clockedDevice is a device with a DAC clock, which fails once the
// device is gone.
type clockedDevice struct {
	deviceSink
	next time.Time
}

func (d *clockedDevice) NextDAC() (time.Time, error) {
	if d.gone.Load() {
		return time.Time{}, errUnplugged
	}
	return d.next, nil
}

func TestReopeningSinkNextDAC(t *testing.T) {
	dev := &clockedDevice{next: epoch}
	opens := 0
	s, err := NewReopeningSink(&ReopenOptions{MinBackoff: time.Hour, Open: func() (Sink, error) {
		if opens++; opens > 1 {
			return nil, errors.New("no such device")
		}
		return dev, nil
	}})
	if err != nil {
		t.Fatal(err)
	}
	if next, err := s.NextDAC(); err != nil || !next.Equal(epoch) {
		t.Errorf("forwarded NextDAC: %v, %v; want %v", next, err, epoch)
	}
	// A device whose clock fails is let go, as after a failed write.
	dev.gone.Store(true)
	if _, err := s.NextDAC(); !errors.Is(err, errUnplugged) {
		t.Errorf("failing clock: %v", err)
	}
	if s.Status().Available {
		t.Error("a device whose clock failed is still in use")
	}
	if _, err := s.NextDAC(); !errors.Is(err, ErrUnavailable) {
		t.Errorf("NextDAC without a device: %v, want ErrUnavailable", err)
	}
	s.Close()
	if _, err := s.NextDAC(); !errors.Is(err, ErrClosed) {
		t.Errorf("NextDAC after Close: %v", err)
	}

	plain, _ := NewReopeningSink(&ReopenOptions{Open: func() (Sink, error) { return &deviceSink{}, nil }})
	defer plain.Close()
	if _, err := plain.NextDAC(); !errors.Is(err, ErrNoDACClock) {
		t.Errorf("device without a clock: %v, want ErrNoDACClock", err)
	}
}

func TestFramesIn(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		rate int
		want int
	}{
		{0, 16000, 0},
		{-time.Second, 16000, 0},
		{time.Second, 16000, 16000},
		{30 * time.Millisecond, 48000, 1440},
		{31250 * time.Nanosecond, 16000, 1}, // half a frame rounds up
		{31249 * time.Nanosecond, 16000, 0},
		{1000 * time.Hour, 192000, 1000 * 3600 * 192000},
	} {
		if got := framesIn(tc.d, tc.rate); got != tc.want {
			t.Errorf("framesIn(%v, %d) = %d, want %d", tc.d, tc.rate, got, tc.want)
		}
	}
}
