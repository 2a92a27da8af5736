package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// Fakes made of function fields; the recorders below fill them in.

type fakeTransport struct {
	SubscribeFunc func(filters []string, handle func(Message)) error
	PublishFunc   func(ctx context.Context, topic string, payload []byte, retained bool) error

	mu        sync.Mutex
	connected []func() // what Subscribe registered; reconnect calls them
}

var _ Transport = (*fakeTransport)(nil)

func (f *fakeTransport) Subscribe(filters []string, handle func(Message), connected func()) error {
	if err := f.SubscribeFunc(filters, handle); err != nil {
		return err
	}
	if connected != nil {
		f.mu.Lock()
		f.connected = append(f.connected, connected)
		f.mu.Unlock()
	}
	return nil
}

// reconnect does what the real transport does after a reconnect, once
// the subscriptions are renewed: it calls every connected callback.
func (f *fakeTransport) reconnect() {
	f.mu.Lock()
	cbs := slices.Clone(f.connected)
	f.mu.Unlock()
	for _, cb := range cbs {
		cb()
	}
}

func (f *fakeTransport) Publish(ctx context.Context, topic string, payload []byte, retained bool) error {
	return f.PublishFunc(ctx, topic, payload, retained)
}

type fakeEngine struct {
	VoicesFunc     func() []string
	SpeakFunc      func(ctx context.Context, s Speech, emit func(Chunk) error) error
	CheckVoiceFunc func(ctx context.Context, name string) error
	// ReloadFunc nil: the voices are only listed again.
	ReloadFunc func() (VoiceChanges, error)
}

func (f *fakeEngine) Voices() []string { return f.VoicesFunc() }
func (f *fakeEngine) ReloadVoices() (VoiceChanges, error) {
	if f.ReloadFunc == nil {
		return VoiceChanges{}, nil
	}
	return f.ReloadFunc()
}
func (f *fakeEngine) Speak(ctx context.Context, s Speech, emit func(Chunk) error) error {
	return f.SpeakFunc(ctx, s, emit)
}
func (f *fakeEngine) CheckVoice(ctx context.Context, name string) error {
	return f.CheckVoiceFunc(ctx, name)
}

type fakeSink struct {
	WriteFunc func(ctx context.Context, p audio.PCM) error
	DrainFunc func(ctx context.Context) error
	AbortFunc func() error
}

func (f *fakeSink) Write(ctx context.Context, p audio.PCM) error { return f.WriteFunc(ctx, p) }
func (f *fakeSink) Drain(ctx context.Context) error              { return f.DrainFunc(ctx) }
func (f *fakeSink) Abort() error                                 { return f.AbortFunc() }

var (
	_ VoiceReloader = (*fakeEngine)(nil)
	_ Transport     = (*fakeTransport)(nil)
	_ Engine        = (*fakeEngine)(nil)
	_ Sink          = (*fakeSink)(nil)
)

// fakeClock only moves when a test or a fake moves it, so that every
// duration the daemon reports is exact.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// waitFor polls cond. The deadline only turns a hang into a failure; no
// test depends on how fast anything is.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(200 * time.Microsecond)
	}
}

type published struct {
	topic    string
	payload  []byte
	retained bool
}

// transportRec records subscriptions and publishes. When gate is set,
// Publish waits for it to close (a slow broker).
type transportRec struct {
	mu      sync.Mutex
	filters []string
	handle  func(Message)
	msgs    []published
	gate    chan struct{}
	// fail, when set, is asked before each publish; its error is
	// returned and nothing is recorded (a broker that is gone).
	fail func(topic string, payload []byte) error
	fake fakeTransport
}

func newTransportRec() *transportRec {
	r := &transportRec{}
	r.fake.SubscribeFunc = func(filters []string, handle func(Message)) error {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.filters, r.handle = filters, handle
		return nil
	}
	r.fake.PublishFunc = func(ctx context.Context, topic string, payload []byte, retained bool) error {
		r.mu.Lock()
		gate, fail := r.gate, r.fail
		r.mu.Unlock()
		if fail != nil {
			if err := fail(topic, payload); err != nil {
				return err
			}
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.msgs = append(r.msgs, published{topic, append([]byte(nil), payload...), retained})
		return nil
	}
	return r
}

func (r *transportRec) on(topic string) []published {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []published
	for _, m := range r.msgs {
		if m.topic == topic {
			out = append(out, m)
		}
	}
	return out
}

// speakRec is an engine whose voices are "alice" and "bob". It splits the
// text at '.', advances the clock by synth per sentence and emits frames
// samples of value 1000 at 16 kHz per sentence. hold, when set, makes
// Speak wait for it before each sentence (a slow or stuck model).
// CheckVoice returns what broken says for the voice (nil: it loads),
// after waiting for checkHold when that is set.
type speakRec struct {
	clock  *fakeClock
	synth  time.Duration
	frames int
	err    error // returned after the sentences
	// cached marks sentences the fake "found in its phrase cache".
	cached func(sentence string) bool

	mu        sync.Mutex
	calls     []Speech
	hold      chan struct{}
	broken    map[string]error
	checks    []string
	checkHold chan struct{}
	fake      fakeEngine
}

func newSpeakRec(clock *fakeClock) *speakRec {
	e := &speakRec{clock: clock, synth: 5 * time.Millisecond, frames: 800}
	e.fake.VoicesFunc = func() []string { return []string{"alice", "bob"} }
	e.fake.CheckVoiceFunc = func(ctx context.Context, name string) error {
		e.mu.Lock()
		e.checks = append(e.checks, name)
		hold, err := e.checkHold, e.broken[name]
		e.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return err
	}
	e.fake.SpeakFunc = func(ctx context.Context, s Speech, emit func(Chunk) error) error {
		e.mu.Lock()
		e.calls = append(e.calls, s)
		hold := e.hold
		e.mu.Unlock()
		var sentences []string
		for _, p := range strings.Split(s.Text, ".") {
			if p = strings.TrimSpace(p); p != "" {
				sentences = append(sentences, p)
			}
		}
		for i := range sentences {
			if hold != nil {
				select {
				case <-hold:
				case <-ctx.Done():
					return ctx.Err()
				}
			}
			e.clock.Advance(e.synth)
			pcm := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, e.frames)}
			for j := range pcm.Samples {
				pcm.Samples[j] = 1000
			}
			hit := e.cached != nil && e.cached(sentences[i])
			if err := emit(Chunk{Index: i, Last: i == len(sentences)-1, PCM: pcm, Cached: hit}); err != nil {
				return err
			}
		}
		return e.err
	}
	return e
}

func (e *speakRec) texts() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, c := range e.calls {
		out = append(out, c.Text)
	}
	return out
}

func (e *speakRec) last() Speech {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.calls[len(e.calls)-1]
}

// sinkRec records what it is given and advances the clock by perWrite per
// Write. With hold set, Write blocks until released, and only Abort (not
// the context) frees it early: that proves the daemon calls Abort.
type sinkRec struct {
	clock    *fakeClock
	perWrite time.Duration
	drainDur time.Duration

	mu      sync.Mutex
	writes  []audio.PCM
	entered int // Writes begun
	aborts  int
	drains  int
	hold    chan struct{}
	abortCh chan struct{}
	err     error // returned by every Write
	fake    fakeSink
}

func newSinkRec(clock *fakeClock) *sinkRec {
	s := &sinkRec{clock: clock, perWrite: 10 * time.Millisecond, drainDur: 20 * time.Millisecond, abortCh: make(chan struct{})}
	s.fake.WriteFunc = func(ctx context.Context, p audio.PCM) error {
		s.mu.Lock()
		s.entered++
		hold, abort, err := s.hold, s.abortCh, s.err
		s.mu.Unlock()
		if hold != nil {
			select {
			case <-hold:
			case <-abort:
				return audio.ErrAborted
			}
		}
		if err != nil {
			return err
		}
		s.clock.Advance(s.perWrite)
		s.mu.Lock()
		s.writes = append(s.writes, p.Clone())
		s.mu.Unlock()
		return nil
	}
	s.fake.DrainFunc = func(ctx context.Context) error {
		s.mu.Lock()
		s.drains++
		s.mu.Unlock()
		s.clock.Advance(s.drainDur)
		return nil
	}
	s.fake.AbortFunc = func() error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.aborts++
		close(s.abortCh)
		s.abortCh = make(chan struct{})
		return nil
	}
	return s
}

// written returns a copy of the list of writes so far.
func (s *sinkRec) written() []audio.PCM {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]audio.PCM(nil), s.writes...)
}

// block makes Writes wait; the returned func lets them all through.
func (s *sinkRec) block() (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ch := make(chan struct{})
	s.hold = ch
	return sync.OnceFunc(func() {
		s.mu.Lock()
		s.hold = nil
		s.mu.Unlock()
		close(ch)
	})
}

func (s *sinkRec) stats() (entered, aborts, writes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.entered, s.aborts, len(s.writes)
}

func (s *sinkRec) samples() []int16 {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []int16
	for _, w := range s.writes {
		out = append(out, w.Samples...)
	}
	return out
}

// harness runs a Daemon over the recorders.
type harness struct {
	t     *testing.T
	clock *fakeClock
	tr    *transportRec
	eng   *speakRec
	sink  *sinkRec
	d     *Daemon
	opts  Options

	cancel context.CancelFunc
	done   chan error
}

func newHarness(t *testing.T, modify func(*Options)) *harness {
	t.Helper()
	clock := &fakeClock{t: t0}
	h := &harness{t: t, clock: clock, tr: newTransportRec(), eng: newSpeakRec(clock), sink: newSinkRec(clock)}
	h.opts = Options{
		Node: "test", Transport: &h.tr.fake, Engine: &h.eng.fake, Sink: &h.sink.fake,
		DefaultVoice: "alice", Now: clock.Now, Version: "1.2.3",
		StateInterval: time.Hour, // periodic publishes would only add noise
	}
	if modify != nil {
		modify(&h.opts)
	}
	d, err := New(&h.opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.d = d
	return h
}

// start runs the daemon until the test ends (or h.stop).
func (h *harness) start() *harness {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.d.Run(ctx) }()
	waitFor(h.t, "subscribe", func() bool {
		h.tr.mu.Lock()
		defer h.tr.mu.Unlock()
		return h.tr.handle != nil
	})
	h.t.Cleanup(func() { h.stop() })
	return h
}

func (h *harness) stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	select {
	case err := <-h.done:
		return err
	case <-time.After(10 * time.Second):
		h.t.Fatal("Run did not return")
		return nil
	}
}

func (h *harness) send(sub, payload string) {
	h.sendMsg(Message{Topic: "mynah/test/" + sub, Payload: []byte(payload)})
}

func (h *harness) sendMsg(m Message) {
	h.tr.mu.Lock()
	handle := h.tr.handle
	h.tr.mu.Unlock()
	handle(m)
}

func (h *harness) events() []Event {
	var out []Event
	for _, m := range h.tr.on("mynah/test/event") {
		var e Event
		if err := json.Unmarshal(m.payload, &e); err != nil {
			h.t.Fatalf("event %s: %v", m.payload, err)
		}
		out = append(out, e)
	}
	return out
}

// eventsOf returns the states of id's events, in order.
func (h *harness) eventsOf(id string) []string {
	var out []string
	for _, e := range h.events() {
		if e.ID == id {
			out = append(out, e.State)
		}
	}
	return out
}

func (h *harness) waitEvent(id, state string) Event {
	h.t.Helper()
	var found Event
	waitFor(h.t, "event "+state+" for "+id, func() bool {
		for _, e := range h.events() {
			if e.ID == id && e.State == state {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// waitCommand waits for an event of a control command (no id).
func (h *harness) waitCommand(command, state string) Event {
	h.t.Helper()
	var found Event
	waitFor(h.t, "event "+state+" for "+command, func() bool {
		for _, e := range h.events() {
			if e.Command == command && e.State == state {
				found = e
				return true
			}
		}
		return false
	})
	return found
}

// lastState returns the last published state; the zero State if none.
func (h *harness) lastState() State {
	h.t.Helper()
	var s State
	msgs := h.tr.on("mynah/test/state")
	if len(msgs) == 0 {
		return s
	}
	if err := json.Unmarshal(msgs[len(msgs)-1].payload, &s); err != nil {
		h.t.Fatal(err)
	}
	return s
}

// waitPlaying waits until the worker is blocked in a Write of the sink.
func (h *harness) waitWriting(n int) {
	h.t.Helper()
	waitFor(h.t, "a blocked write", func() bool { e, _, _ := h.sink.stats(); return e >= n })
}
