package clockprobe

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait bounds every wait in these tests: long enough for a loaded CI
// machine, and a failure (never a pass) when it runs out.
const wait = 20 * time.Second

// fakeBroker is an in-memory broker for the tests: a message reaches
// every connection with a matching (exact) subscription after the delay
// the test sets for that leg, and is handled on the connection's one
// goroutine, as paho's router does.
type fakeBroker struct {
	t testing.TB
	// delay is a message's time from one connection to another.
	delay func(from, to string) time.Duration

	mu    sync.Mutex
	conns []*fakeConn
}

type fakeConn struct {
	b    *fakeBroker
	name string
	in   chan delivery
	done chan struct{}
	// subscribed is closed by the first Subscribe.
	subscribed chan struct{}

	mu   sync.Mutex
	subs map[string]func(topic string, payload []byte)
}

var _ Transport = (*fakeConn)(nil)

type delivery struct {
	topic   string
	payload []byte
}

func newFakeBroker(t testing.TB, delay func(from, to string) time.Duration) *fakeBroker {
	return &fakeBroker{t: t, delay: delay}
}

// conn connects a client; it is closed when the test ends.
func (b *fakeBroker) conn(name string) *fakeConn {
	c := &fakeConn{b: b, name: name, in: make(chan delivery, 1024), done: make(chan struct{}),
		subscribed: make(chan struct{}), subs: make(map[string]func(string, []byte))}
	b.mu.Lock()
	b.conns = append(b.conns, c)
	b.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case <-c.done:
				return
			case d := <-c.in:
				c.mu.Lock()
				h := c.subs[d.topic]
				c.mu.Unlock()
				if h != nil {
					h(d.topic, d.payload)
				}
			}
		}
	})
	b.t.Cleanup(func() {
		close(c.done)
		wg.Wait()
	})
	return c
}

func (c *fakeConn) Subscribe(filters []string, handle func(topic string, payload []byte)) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.subs) == 0 {
		close(c.subscribed)
	}
	for _, f := range filters {
		c.subs[f] = handle
	}
	return nil
}

func (c *fakeConn) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.b.mu.Lock()
	conns := slices.Clone(c.b.conns)
	c.b.mu.Unlock()
	for _, to := range conns {
		to.mu.Lock()
		_, ok := to.subs[topic]
		to.mu.Unlock()
		if !ok {
			continue
		}
		d := delivery{topic: topic, payload: slices.Clone(payload)}
		time.AfterFunc(c.b.delay(c.name, to.name), func() {
			select {
			case to.in <- d:
			case <-to.done:
			}
		})
	}
	return nil
}

// member runs Run for one node whose clock is offset ahead of the real
// one, until the test ends. It returns once Run has subscribed.
func member(t *testing.T, b *fakeBroker, node string, offset time.Duration, adjust func(*Options)) {
	t.Helper()
	opts := &Options{Node: node, Groups: []string{"downstairs"}, Now: func() time.Time { return time.Now().Add(offset) },
		Logger: testLogger(t)}
	if adjust != nil {
		adjust(opts)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	c := b.conn(node)
	go func() { done <- Run(ctx, c, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run %s: %v", node, err)
		}
	})
	select {
	case <-c.subscribed:
	case <-time.After(wait):
		t.Fatalf("%s not subscribed within %v", node, wait)
	}
}

// prober runs a member that probes and returns its reports.
func startProber(t *testing.T, b *fakeBroker, node string, adjust func(*Options)) <-chan Report {
	reports := make(chan Report, 16)
	member(t, b, node, 0, func(o *Options) {
		o.Every, o.Samples, o.Spacing, o.Wait = time.Hour, 4, 5*time.Millisecond, time.Second
		o.Report = func(r Report) { reports <- r }
		if adjust != nil {
			adjust(o)
		}
	})
	return reports
}

func nextReport(t *testing.T, reports <-chan Report) Report {
	t.Helper()
	select {
	case r := <-reports:
		return r
	case <-time.After(wait):
		t.Fatalf("no report within %v", wait)
		return Report{}
	}
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// within checks that the true offset lies within delay/2 of the
// measured one, as it must whatever the legs took (1 µs for the
// rounding of times to microseconds).
func within(t *testing.T, what string, got, delay, truth time.Duration) {
	t.Helper()
	if (got - truth).Abs() > delay/2+time.Microsecond {
		t.Errorf("%s: offset %v, true %v: further than δ/2 = %v", what, got, truth, delay/2)
	}
}

// Two members whose clocks are 25 ms ahead and 10 ms behind the
// prober's, behind a broker that takes 6 ms to them and 1 ms back: each
// offset is found within half its delay (the asymmetry makes it 2.5 ms
// too high), and the group's is their median.
func TestProbeFindsPeerOffsets(t *testing.T) {
	b := newFakeBroker(t, func(from, to string) time.Duration {
		if from == "kitchen" {
			return 6 * time.Millisecond
		}
		return time.Millisecond
	})
	offsets := map[string]time.Duration{"hall": 25 * time.Millisecond, "attic": -10 * time.Millisecond}
	for node, off := range offsets {
		member(t, b, node, off, nil)
	}
	reports := startProber(t, b, "kitchen", nil)
	r := nextReport(t, reports)
	if len(r.Peers) != 2 || r.Peers[0].Node != "attic" || r.Peers[1].Node != "hall" {
		t.Fatalf("peers %+v, want attic and hall", r.Peers)
	}
	for _, p := range r.Peers {
		t.Logf("%s: offset %v (true %v), delay %v, %d samples", p.Node, p.Offset, offsets[p.Node], p.Delay, p.Samples)
		within(t, p.Node, p.Offset, p.Delay, offsets[p.Node])
		if p.Delay < 7*time.Millisecond || p.Samples != 4 {
			t.Errorf("%s: delay %v, %d samples; want at least the 7 ms of the legs, 4 samples", p.Node, p.Delay, p.Samples)
		}
	}
	within(t, "group", r.Offset, r.MaxDelay, 7500*time.Microsecond)
	within(t, "max", r.MaxOffset, r.MaxDelay, 25*time.Millisecond)
}

// A member in two of the prober's groups answers on each: its samples
// are counted once per ping, and it is one peer.
func TestProbeAcrossGroups(t *testing.T) {
	b := newFakeBroker(t, func(string, string) time.Duration { return 0 })
	member(t, b, "hall", 40*time.Millisecond, func(o *Options) { o.Groups = []string{"all", "downstairs"} })
	member(t, b, "attic", 0, func(o *Options) { o.Groups = []string{"all"} })
	r := nextReport(t, startProber(t, b, "kitchen", func(o *Options) { o.Groups = []string{"downstairs", "all", "all"} }))
	if len(r.Peers) != 2 || r.Peers[1].Node != "hall" || r.Peers[1].Samples != 8 || r.Peers[0].Samples != 4 {
		t.Fatalf("peers %+v, want attic with 4 samples and hall with 8", r.Peers)
	}
	within(t, "hall", r.Peers[1].Offset, r.Peers[1].Delay, 40*time.Millisecond)
}

// A round no member answers is a report with no peers; the next round
// finds the member that came meanwhile.
func TestProbeAlone(t *testing.T) {
	b := newFakeBroker(t, func(string, string) time.Duration { return 0 })
	reports := startProber(t, b, "kitchen", func(o *Options) { o.Every, o.Wait = 10*time.Millisecond, 2*DefaultAnswerDelay })
	if r := nextReport(t, reports); len(r.Peers) != 0 || r.Offset != 0 {
		t.Fatalf("report %+v of a lone prober, want no peers", r)
	}
	member(t, b, "hall", -5*time.Millisecond, nil)
	deadline := time.Now().Add(wait)
	for r := nextReport(t, reports); len(r.Peers) == 0; r = nextReport(t, reports) {
		if time.Now().After(deadline) {
			t.Fatalf("no round found hall within %v", wait)
		}
	}
}

// What a prober refuses, and why.
func TestProberRefuses(t *testing.T) {
	p := &prober{opts: Options{Node: "kitchen", MaxPeers: 2}, log: testLogger(t)}
	p.current = &round{sent: map[uint64]float64{1: 1767225600000, 2: 1767225600075}, byPeer: map[string][]sample{}}
	answer := func(node, to string, seq uint64, t0 float64) pong {
		return pong{Node: node, To: to, Seq: seq, T0: t0, T1: t0 + 20, T2: t0 + 20.2}
	}
	for _, tt := range []struct {
		name string
		pong pong
		t3   float64
		want error
	}{
		{"good", answer("hall", "kitchen", 1, 1767225600000), 1767225600001, nil},
		{"another seq", answer("hall", "kitchen", 2, 1767225600075), 1767225600076, nil},
		{"to another prober", answer("hall", "attic", 1, 1767225600000), 1767225600001, errNotForUs},
		{"own", answer("kitchen", "kitchen", 1, 1767225600000), 1767225600001, errOwn},
		{"unknown seq", answer("hall", "kitchen", 3, 1767225600000), 1767225600001, errUnknownSeq},
		{"an earlier process's ping", answer("attic", "kitchen", 1, 1767225500000), 1767225600001, errUnknownSeq},
		{"again", answer("hall", "kitchen", 1, 1767225600000), 1767225600002, errDuplicate},
		{"came before it left", answer("attic", "kitchen", 1, 1767225600000), 1767225599000, errNegative},
		{"second peer", answer("attic", "kitchen", 1, 1767225600000), 1767225600001, nil},
		{"third peer over MaxPeers", answer("porch", "kitchen", 1, 1767225600000), 1767225600001, errTooManyPeers},
	} {
		if err := p.take(tt.pong, tt.t3); !errors.Is(err, tt.want) {
			t.Errorf("%s: take = %v, want %v", tt.name, err, tt.want)
		}
	}
	if n := len(p.current.byPeer["hall"]); n != 2 || len(p.current.byPeer) != 2 {
		t.Errorf("kept %d samples of hall and %d peers, want 2 and 2", n, len(p.current.byPeer))
	}
	p.current = nil
	if err := p.take(answer("hall", "kitchen", 1, 1767225600000), 1767225600001); !errors.Is(err, errUnknownSeq) {
		t.Errorf("take between rounds = %v, want errUnknownSeq", err)
	}
}

// An answerer answers others' pings, not its own nor malformed ones, and
// queues at most answerQueue answers: a burst of pings a persistent
// session kept is mostly dropped.
func TestAnswererQueue(t *testing.T) {
	p := &prober{opts: Options{Node: "hall", Now: time.Now}, log: testLogger(t), ctx: context.Background(),
		answers: make(chan answer, answerQueue), topics: map[string]route{Topic("all"): {group: "all"}}}
	p.handle(Topic("all"), []byte(`{"node":"hall","seq":1,"t0":1767225600000}`))
	p.handle(Topic("all"), []byte(`{"node":"kitchen","seq":0,"t0":1767225600000}`))
	p.handle(Topic("other"), []byte(`{"node":"kitchen","seq":1,"t0":1767225600000}`))
	if n := len(p.answers); n != 0 {
		t.Fatalf("%d answers to an own, a malformed and a stray ping", n)
	}
	for i := range answerQueue + 10 {
		p.handle(Topic("all"), fmt.Appendf(nil, `{"node":"kitchen","seq":%d,"t0":1767225600000}`, i+1))
	}
	if n := len(p.answers); n != answerQueue {
		t.Fatalf("%d answers queued, want %d", n, answerQueue)
	}
	if a := <-p.answers; a.group != "all" || a.ping.Node != "kitchen" || a.ping.Seq != 1 || a.t1 < 1767225600000 {
		t.Errorf("first answer %+v", a)
	}
}

func TestRunOptions(t *testing.T) {
	b := newFakeBroker(t, func(string, string) time.Duration { return 0 })
	for _, tt := range []struct {
		opts *Options
		bad  string
	}{
		{nil, "Options.Node"},
		{&Options{Node: "a/b", Groups: []string{"all"}}, "Options.Node"},
		{&Options{Node: "a"}, "0 groups"},
		{&Options{Node: "a", Groups: []string{"all", "x+"}}, "Options.Groups[1]"},
		{&Options{Node: "a", Groups: []string{"all"}, Every: -time.Second}, "negative"},
		{&Options{Node: "a", Groups: []string{"all"}, Samples: MaxSamples + 1}, "Options.Samples"},
	} {
		err := Run(context.Background(), b.conn("x"), tt.opts)
		if err == nil || !strings.Contains(err.Error(), tt.bad) {
			t.Errorf("Run(%+v) = %v, want an error about %s", tt.opts, err, tt.bad)
		}
	}
}
