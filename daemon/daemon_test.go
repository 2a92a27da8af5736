package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

func states(evs []Event) []string {
	var out []string
	for _, e := range evs {
		out = append(out, e.State)
	}
	return out
}

func TestSayPlainText(t *testing.T) {
	h := newHarness(t, func(o *Options) { v := 0.5; o.DefaultVolume = &v }).start()
	h.send("say", "Hello world.")
	waitFor(t, "finished", func() bool { return len(h.events()) == 3 })

	evs := h.events()
	if got := states(evs); !slices.Equal(got, []string{EventQueued, EventStarted, EventFinished}) {
		t.Fatalf("events %v", got)
	}
	id := evs[0].ID
	if len(id) != 16 || evs[1].ID != id || evs[2].ID != id {
		t.Fatalf("ids %q %q %q", id, evs[1].ID, evs[2].ID)
	}
	// The fake clock moves 5 ms per synthesized sentence, 10 ms per write
	// and 20 ms for the drain, so the figures are exact.
	if f := evs[1].FirstAudioMS; f == nil || *f != 15 {
		t.Errorf("started first_audio_ms = %v, want 15", f)
	}
	fin := evs[2]
	if fin.FirstAudioMS == nil || *fin.FirstAudioMS != 15 || fin.LatencyMS == nil || *fin.LatencyMS != 35 ||
		fin.Sentences == nil || *fin.Sentences != 1 {
		t.Errorf("finished %+v: want first_audio_ms 15, latency_ms 35, sentences 1", fin)
	}
	if !fin.Time.Equal(t0.Add(35 * time.Millisecond)) {
		t.Errorf("finished at %v", fin.Time)
	}
	if got, want := h.eng.last(), (Speech{Voice: "alice", Text: "Hello world.", Rate: 1}); got != want {
		t.Errorf("engine got %+v, want %+v", got, want)
	}
	samples := h.sink.samples()
	if len(samples) != 800 || slices.ContainsFunc(samples, func(s int16) bool { return s != 500 }) {
		t.Errorf("sink got %d samples, want 800 at half volume (500)", len(samples))
	}
	if h.sink.drains != 1 {
		t.Errorf("%d drains, want 1", h.sink.drains)
	}
}

func TestSayJSON(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("say", `{"id":"j1","text":"One. Two. Three.","voice":"bob","speaker":"s1","rate":1.5,"volume":0.25}`)
	fin := h.waitEvent("j1", EventFinished)
	if got := h.eventsOf("j1"); !slices.Equal(got, []string{EventQueued, EventStarted, EventFinished}) {
		t.Fatalf("events %v", got)
	}
	want := Speech{Voice: "bob", Speaker: "s1", Text: "One. Two. Three.", Rate: 1.5}
	if got := h.eng.last(); got != want {
		t.Errorf("engine got %+v, want %+v", got, want)
	}
	// Every clock step happens before finished: 3×5 synthesis, 3×10
	// writes, 20 drain. The first audio may or may not overlap the second
	// sentence's synthesis (that is the lookahead).
	if fin.LatencyMS == nil || *fin.LatencyMS != 65 || *fin.Sentences != 3 {
		t.Errorf("finished %+v: want latency 65 ms, 3 sentences", fin)
	}
	if f := *fin.FirstAudioMS; f != 15 && f != 20 {
		t.Errorf("first_audio_ms %v, want 15 or 20", f)
	}
	samples := h.sink.samples()
	if len(samples) != 2400 || slices.ContainsFunc(samples, func(s int16) bool { return s != 250 }) {
		t.Errorf("sink got %d samples, want 2400 at the request's volume 0.25", len(samples))
	}
}

// TestLookahead checks that sentence n+1 is synthesized while sentence n
// is still being written, and no further ahead.
func TestLookahead(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"la","text":"A. B. C."}`)
	h.waitWriting(1)
	// The engine emitted A (being written) and synthesized B; it waits in
	// emit and cannot start C.
	waitFor(t, "sentence B synthesized", func() bool { return h.clock.Now().Sub(t0) == 10*time.Millisecond })
	time.Sleep(20 * time.Millisecond) // give a wrong implementation time to run ahead
	if got := h.clock.Now().Sub(t0); got != 10*time.Millisecond {
		t.Fatalf("engine ran %v of synthesis while the first write blocked, want 2 sentences (10ms)", got)
	}
	release()
	h.waitEvent("la", EventFinished)
}

func TestVolumeAppliesWithinASentence(t *testing.T) {
	h := newHarness(t, nil)
	h.eng.frames = 4800 // 300 ms at 16 kHz: three 100 ms writes
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"v","text":"Long sentence."}`)
	h.waitWriting(1)
	h.send("volume/set", "50%")
	release()
	h.waitEvent("v", EventFinished)
	s := h.sink.samples()
	if len(s) != 4800 || s[0] != 1000 || s[1599] != 1000 || s[1600] != 500 || s[4799] != 500 {
		t.Fatalf("%d samples, [0]=%d [1599]=%d [1600]=%d: want the volume change from the second block on", len(s), s[0], s[1599], s[1600])
	}
	if v := h.d.Snapshot().Volume; v != 0.5 {
		t.Errorf("volume %v", v)
	}
}

func TestSilenceIsWritten(t *testing.T) {
	h := newHarness(t, nil)
	h.eng.fake.SpeakFunc = func(ctx context.Context, s Speech, emit func(Chunk) error) error {
		return emit(Chunk{PCM: audio.PCM{Rate: 16000, Channels: 1, Samples: []int16{7, 7}}, Silence: 10 * time.Millisecond, Last: true})
	}
	h.start()
	h.send("say", `{"id":"s","text":"x"}`)
	h.waitEvent("s", EventFinished)
	if s := h.sink.samples(); len(s) != 162 || s[0] != 7 || s[1] != 7 || s[161] != 0 {
		t.Fatalf("samples %v, want 2 of speech then 160 of silence", len(s))
	}
}

func TestPriorities(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"first","text":"first"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"l","text":"low","priority":"low"}`)
	h.send("say", `{"id":"n","text":"normal"}`)
	h.send("say", `{"id":"a","text":"alert","priority":"alert"}`)
	h.send("say", `{"id":"n2","text":"normal2","priority":"normal"}`)
	release()
	h.waitEvent("l", EventFinished)
	if got, want := h.eng.texts(), []string{"first", "alert", "normal", "normal2", "low"}; !slices.Equal(got, want) {
		t.Fatalf("spoken %v, want %v", got, want)
	}
}

func TestInterruptCutsAndPlaysNext(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	defer release()
	h.start()
	h.send("say", `{"id":"long","text":"long"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"q","text":"queued","priority":"alert"}`)
	h.send("say", `{"id":"int","text":"now","interrupt":true,"priority":"low"}`)
	// The blocked fake Write ignores its context: only Sink.Abort frees it.
	h.waitEvent("long", EventDropped)
	if e := h.waitEvent("long", EventDropped); e.Reason != ReasonInterrupted {
		t.Errorf("cut request: reason %q", e.Reason)
	}
	if _, aborts, _ := h.sink.stats(); aborts < 1 {
		t.Errorf("Sink.Abort not called")
	}
	h.waitWriting(2) // the interrupt request is playing
	release()
	h.waitEvent("q", EventFinished)
	if got, want := h.eng.texts(), []string{"long", "now", "queued"}; !slices.Equal(got, want) {
		t.Fatalf("spoken %v, want %v", got, want)
	}
	if got := h.eventsOf("long"); !slices.Equal(got, []string{EventQueued, EventDropped}) {
		t.Errorf("cut request events %v", got)
	}
}

func TestTTLDrop(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DefaultTTL = 30 * time.Second })
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"first","text":"first"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"late","text":"late","ttl":1}`)
	h.send("say", `{"id":"default","text":"default ttl"}`)
	h.send("say", `{"id":"fresh","text":"fresh","ttl":120}`)
	h.clock.Advance(31 * time.Second)
	release()
	h.waitEvent("fresh", EventFinished)
	for _, id := range []string{"late", "default"} {
		if e := h.waitEvent(id, EventDropped); e.Reason != ReasonExpired {
			t.Errorf("%s: reason %q, want expired", id, e.Reason)
		}
	}
	if got := h.eng.texts(); !slices.Equal(got, []string{"first", "fresh"}) {
		t.Fatalf("spoken %v: expired requests must not be spoken", got)
	}
}

func TestQueueFullEvents(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.QueueSize = 2 })
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"first","text":"first"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"n1","text":"1"}`)
	h.send("say", `{"id":"n2","text":"2"}`)
	h.send("say", `{"id":"n3","text":"3"}`)
	h.send("say", `{"id":"l1","text":"low","priority":"low"}`)
	if e := h.waitEvent("n1", EventDropped); e.Reason != ReasonQueueFull {
		t.Errorf("n1: %q", e.Reason)
	}
	h.waitEvent("l1", EventDropped)
	if got := h.eventsOf("l1"); !slices.Equal(got, []string{EventDropped}) {
		t.Errorf("low request into a queue of normals: events %v, want only dropped", got)
	}
	if q := h.d.Snapshot().Queue; q != 2 {
		t.Errorf("queue length %d", q)
	}
	release()
	h.waitEvent("n3", EventFinished)
	if got := h.eng.texts(); !slices.Equal(got, []string{"first", "2", "3"}) {
		t.Fatalf("spoken %v", got)
	}
}

func TestDuplicateIDIgnored(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("say", `{"id":"d","text":"once"}`)
	h.send("say", `{"id":"d","text":"once"}`)
	h.waitEvent("d", EventFinished)
	h.send("say", `{"id":"d","text":"once"}`)
	h.send("say", `{"id":"e","text":"other"}`)
	h.waitEvent("e", EventFinished)
	if got := h.eng.texts(); !slices.Equal(got, []string{"once", "other"}) {
		t.Fatalf("spoken %v", got)
	}
	if got := h.eventsOf("d"); !slices.Equal(got, []string{EventQueued, EventStarted, EventFinished}) {
		t.Errorf("events of d: %v", got)
	}
	if n := h.d.Snapshot().Counters.Duplicates; n != 2 {
		t.Errorf("duplicates %d, want 2", n)
	}
}

// TestBadPayloadsKeepServing sends every payload from REFERENCE.md's list
// of inputs that broke peers, then a good one.
func TestEngineAndSinkFailures(t *testing.T) {
	h := newHarness(t, nil).start()
	h.eng.err = errors.New("model exploded")
	h.send("say", `{"id":"s","text":"x"}`)
	if e := h.waitEvent("s", EventFailed); e.Reason != ReasonSynthesis || !strings.Contains(e.Error, "model exploded") {
		t.Errorf("engine error: %+v", e)
	}
	h.eng.err = fmt.Errorf("load: %w", ErrUnknownVoice)
	h.send("say", `{"id":"u","text":"x"}`)
	if e := h.waitEvent("u", EventFailed); e.Reason != ReasonUnknownVoice {
		t.Errorf("unknown voice from the engine: %+v", e)
	}
	h.eng.err = nil
	h.sink.mu.Lock()
	h.sink.err = errors.New("audio device timeout")
	h.sink.mu.Unlock()
	h.send("say", `{"id":"a","text":"x"}`)
	if e := h.waitEvent("a", EventFailed); e.Reason != ReasonAudio {
		t.Errorf("sink error: %+v", e)
	}
	h.sink.mu.Lock()
	h.sink.err = nil
	h.sink.mu.Unlock()
	h.eng.fake.SpeakFunc = func(ctx context.Context, s Speech, emit func(Chunk) error) error {
		return emit(Chunk{PCM: audio.PCM{Rate: 0, Channels: 1, Samples: []int16{1}}})
	}
	h.send("say", `{"id":"p","text":"x"}`)
	if e := h.waitEvent("p", EventFailed); e.Reason != ReasonSynthesis {
		t.Errorf("invalid PCM: %+v", e)
	}
	h.eng.fake.SpeakFunc = newSpeakRec(h.clock).fake.SpeakFunc
	h.send("say", `{"id":"ok","text":"x"}`)
	h.waitEvent("ok", EventFinished)
}

// TestBurst floods the daemon with 1000 messages while both the sink and
// the broker are stuck: the handler must still return every time, and
// the queue and outbox stay within their bounds.
func TestBurst(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.OutboxSize = 64; o.PublishTimeout = time.Hour })
	releaseSink := h.sink.block()
	gate := make(chan struct{})
	h.tr.gate = gate
	h.start()
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 1000 {
			h.send("say", fmt.Sprintf(`{"id":"b%d","text":"burst %d","priority":"%s"}`, i, i, Priority(i%3)))
		}
	}()
	waitFor(t, "the handler to take 1000 messages", func() bool {
		select {
		case <-done:
			return true
		default:
			return false
		}
	})
	s := h.d.Snapshot()
	all, terminal := h.d.out.counts()
	if s.Queue > DefaultQueueSize || all-terminal > 64 {
		t.Fatalf("queue %d, outbox %d news: over their bounds", s.Queue, all-terminal)
	}
	if s.Counters.Received != 1000 || s.Counters.Dropped < 1000-DefaultQueueSize-1 || s.Counters.EventsDropped == 0 {
		t.Fatalf("counters %+v", s.Counters)
	}
	// Only news was shed: every dropped request's answer waits.
	if uint64(terminal) != s.Counters.Dropped {
		t.Fatalf("%d terminal events waiting, %d requests dropped", terminal, s.Counters.Dropped)
	}
	close(gate)
	releaseSink()
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	c := h.d.Snapshot().Counters
	emitted := c.Queued + c.Started + c.Finished + c.Failed + c.Dropped
	if got := uint64(len(h.events())) + c.EventsDropped; got != emitted {
		t.Errorf("published %d + dropped %d events, but %d were emitted", len(h.events()), c.EventsDropped, emitted)
	}
	// Every request got exactly one terminal event.
	terminals := map[string]int{}
	for _, e := range h.events() {
		if isTerminal(&e) {
			terminals[e.ID]++
		}
	}
	for i := range 1000 {
		if id := fmt.Sprintf("b%d", i); terminals[id] != 1 {
			t.Errorf("%s: %d terminal events", id, terminals[id])
		}
	}
}

func TestHealthy(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	h.start()
	if !h.d.Healthy(30 * time.Second) {
		t.Fatal("idle daemon unhealthy")
	}
	h.send("say", `{"id":"w","text":"x"}`)
	h.waitWriting(1)
	if !h.d.Healthy(30 * time.Second) {
		t.Error("unhealthy while a write has just begun")
	}
	h.clock.Advance(31 * time.Second)
	if h.d.Healthy(30 * time.Second) {
		t.Error("healthy while a write is stuck for 31 s")
	}
	release()
	h.waitEvent("w", EventFinished)
	if !h.d.Healthy(30 * time.Second) {
		t.Error("unhealthy after the write completed")
	}

	hold := make(chan struct{})
	h.eng.mu.Lock()
	h.eng.hold = hold
	h.eng.mu.Unlock()
	h.send("say", `{"id":"e","text":"x"}`)
	waitFor(t, "the worker waiting on the engine", func() bool { return len(h.eng.texts()) == 2 && h.d.busySince.Load() != 0 })
	h.clock.Advance(31 * time.Second)
	if h.d.Healthy(30 * time.Second) {
		t.Error("healthy while synthesis is stuck for 31 s")
	}
	close(hold)
	h.waitEvent("e", EventFinished)
	if !h.d.Healthy(30 * time.Second) {
		t.Error("unhealthy after synthesis completed")
	}
}

func TestRunShutdown(t *testing.T) {
	h := newHarness(t, nil)
	h.sink.block()
	h.start()
	h.send("say", `{"id":"first","text":"first"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"q","text":"queued"}`)
	if err := h.stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, id := range []string{"first", "q"} {
		if e := h.waitEvent(id, EventDropped); e.Reason != ReasonShutdown {
			t.Errorf("%s: %q", id, e.Reason)
		}
	}
	if _, aborts, _ := h.sink.stats(); aborts < 1 {
		t.Error("playback not cut")
	}
	if s := h.lastState(); s.State != "idle" || s.Queue != 0 {
		t.Errorf("last state %+v", s)
	}
	n := len(h.events())
	h.send("say", "after shutdown")
	if all, _ := h.d.out.counts(); len(h.events()) != n || all != 0 {
		t.Error("a message after shutdown was handled")
	}
	if err := h.d.Run(context.Background()); err == nil {
		t.Error("second Run succeeded")
	}
}

func TestRunStuckEngine(t *testing.T) {
	stuck := make(chan struct{})
	defer close(stuck)
	h := newHarness(t, func(o *Options) { o.ShutdownTimeout = 10 * time.Millisecond })
	h.eng.fake.SpeakFunc = func(ctx context.Context, s Speech, emit func(Chunk) error) error {
		<-stuck // ignores ctx
		return nil
	}
	h.start()
	h.send("say", `{"id":"s","text":"x"}`)
	waitFor(t, "speaking", func() bool { return h.d.Snapshot().State == "speaking" })
	if err := h.stop(); err == nil || !strings.Contains(err.Error(), "did not stop") {
		t.Fatalf("Run = %v, want an error about the stuck worker", err)
	}
}

func TestSubscribeError(t *testing.T) {
	h := newHarness(t, nil)
	h.tr.fake.SubscribeFunc = func([]string, func(Message)) error { return errors.New("not connected") }
	err := h.d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "subscribe: not connected") {
		t.Fatalf("Run = %v", err)
	}
}

func TestPeriodicState(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.StateInterval = time.Millisecond }).start()
	waitFor(t, "periodic state publishes", func() bool { return len(h.tr.on("mynah/test/state")) >= 5 })
	s := h.lastState()
	if s.State != "idle" || s.Voice != "alice" || s.Volume != 1 || !h.tr.on("mynah/test/state")[0].retained {
		t.Errorf("state %+v", s)
	}
}

func TestStateWhileSpeaking(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"x","text":"x"}`)
	h.send("say", `{"id":"y","text":"y"}`)
	h.waitWriting(1)
	waitFor(t, "speaking state", func() bool { s := h.lastState(); return s.State == "speaking" && s.Queue == 1 })
	release()
	h.waitEvent("y", EventFinished)
	waitFor(t, "idle state", func() bool { s := h.lastState(); return s.State == "idle" && s.Counters.Finished == 2 })
}

func TestNewValidates(t *testing.T) {
	clock := &fakeClock{t: t0}
	eng, sink, tr := newSpeakRec(clock), newSinkRec(clock), newTransportRec()
	base := func() Options { return Options{Transport: &tr.fake, Engine: &eng.fake, Sink: &sink.fake} }
	loud := 1.5
	tests := []struct {
		name   string
		modify func(*Options)
		field  string
	}{
		{"no transport", func(o *Options) { o.Transport = nil }, "Transport"},
		{"no engine", func(o *Options) { o.Engine = nil }, "Engine"},
		{"no sink", func(o *Options) { o.Sink = nil }, "Sink"},
		{"node with slash", func(o *Options) { o.Node = "a/b" }, "Node"},
		{"node with plus", func(o *Options) { o.Node = "a+" }, "Node"},
		{"long node", func(o *Options) { o.Node = strings.Repeat("n", 65) }, "Node"},
		{"prefix wildcard", func(o *Options) { o.DiscoveryPrefix = "ha/#" }, "DiscoveryPrefix"},
		{"prefix slash", func(o *Options) { o.DiscoveryPrefix = "ha/" }, "DiscoveryPrefix"},
		{"queue too big", func(o *Options) { o.QueueSize = MaxQueueSize + 1 }, "QueueSize"},
		{"volume", func(o *Options) { o.DefaultVolume = &loud }, "DefaultVolume"},
		{"unknown voice", func(o *Options) { o.DefaultVoice = "carol" }, "DefaultVoice"},
		{"negative ttl", func(o *Options) { o.DefaultTTL = -time.Second }, "negative"},
	}
	for _, tt := range tests {
		o := base()
		tt.modify(&o)
		_, err := New(&o)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%s: err %v, want ErrInvalidOptions naming %s", tt.name, err, tt.field)
		}
	}
	if _, err := New(nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(nil) = %v", err)
	}
	o := base()
	d, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	if d.opts.Node != "mynah" || d.topics.say != "mynah/mynah/say" || d.opts.QueueSize != 32 || d.opts.DefaultTTL != time.Minute {
		t.Errorf("defaults: %+v", d.opts)
	}
}

func TestPublishErrorsCounted(t *testing.T) {
	h := newHarness(t, nil)
	h.tr.fake.PublishFunc = func(context.Context, string, []byte, bool) error { return errors.New("broker gone") }
	h.start()
	h.send("say", `{"id":"x","text":"x"}`)
	waitFor(t, "finished despite the broker", func() bool {
		c := h.d.Snapshot().Counters
		return c.Finished == 1 && c.PublishErrors >= 4 // discovery, state, queued, started, ...
	})
	if err := h.d.Unregister(context.Background()); err == nil || !strings.Contains(err.Error(), "broker gone") {
		t.Errorf("Unregister = %v", err)
	}
}

// TestCacheResult: the finished event says whether the request's audio
// came from the engine's phrase cache entirely, partly or not at all.
func TestCacheResult(t *testing.T) {
	h := newHarness(t, nil)
	h.eng.cached = func(s string) bool { return s == "Washing done" || s == "Good morning" }
	h.start()
	for id, text := range map[string]string{"hit": "Good morning.", "partial": "Washing done. It is 7.", "miss": "It is 8."} {
		h.send("say", `{"id":"`+id+`","text":"`+text+`"}`)
		if got := h.waitEvent(id, EventFinished).Cache; got != id {
			t.Errorf("%q: cache %q, want %q", text, got, id)
		}
	}
}

// Subscribed is closed only once Run's subscriptions are in place, so
// mynahd's READY comes after them; a Run whose subscribe fails never
// closes it.
func TestSubscribedAfterTheSubscriptions(t *testing.T) {
	h := newHarness(t, nil)
	gate := make(chan struct{})
	sub := h.tr.fake.SubscribeFunc
	h.tr.fake.SubscribeFunc = func(filters []string, handle func(Message)) error {
		<-gate
		return sub(filters, handle)
	}
	h.startNoWait()
	select {
	case <-h.d.Subscribed():
		t.Fatal("Subscribed before the subscription returned")
	case <-time.After(20 * time.Millisecond):
	}
	close(gate)
	select {
	case <-h.d.Subscribed():
	case <-time.After(5 * time.Second):
		t.Fatal("Subscribed not closed after the subscription")
	}

	f := newHarness(t, nil)
	f.tr.fake.SubscribeFunc = func([]string, func(Message)) error { return errors.New("broker said no") }
	done := make(chan error, 1)
	go func() { done <- f.d.Run(context.Background()) }()
	if err := <-done; err == nil {
		t.Fatal("Run with a failed subscribe returned nil")
	}
	select {
	case <-f.d.Subscribed():
		t.Error("Subscribed closed though the subscribe failed")
	default:
	}
}

// startNoWait runs the daemon without start's wait for the subscription.
func (h *harness) startNoWait() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel, h.done = cancel, make(chan error, 1)
	go func() { h.done <- h.d.Run(ctx) }()
	h.t.Cleanup(func() { h.stop() })
}
