package clockprobe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"time"
)

// Transport is the MQTT connection as this package needs it; mynahd's
// daemon/mqtt client provides one (Client.ClockTransport). It has the
// shape of daemon/render's.
type Transport interface {
	// Subscribe subscribes to filters at QoS 1 for as long as the
	// transport lives (renewed after reconnects) and calls handle for
	// every message. handle runs on the transport's goroutine: it returns
	// quickly and never publishes. The handler may keep the payload, but
	// never changes it.
	Subscribe(filters []string, handle func(topic string, payload []byte)) error
	// Publish sends payload at QoS 1, not retained, and returns once the
	// broker has it, or when ctx ends.
	Publish(ctx context.Context, topic string, payload []byte) error
}

// Defaults and bounds of Options.
const (
	DefaultSamples = 8
	// DefaultSpacing leaves an answerer's connection quiet again before
	// the next ping: DefaultAnswerDelay, and the 40 ms of a delayed ACK
	// of the broker's PUBACK to its pong (see DefaultAnswerDelay).
	DefaultSpacing = 150 * time.Millisecond
	DefaultWait    = time.Second
	// DefaultAnswerDelay is how long an answerer holds a pong. Mosquitto
	// leaves Nagle's algorithm on (set_tcp_nodelay false), so a message
	// it writes to a client within a delayed ACK (40 ms on Linux) of its
	// PUBACK to that client's publish waits for that ACK: every pong that
	// came at once would wait with the prober's own PUBACK, and every
	// sample be 40 ms long on the way back, 20 ms off. The hold is t2 − t1,
	// which the arithmetic takes out, so it costs nothing but time.
	DefaultAnswerDelay = 50 * time.Millisecond
	DefaultMaxPeers    = 64
	// MaxSamples bounds Options.Samples.
	MaxSamples = 64
	// maxGroups bounds Options.Groups (the daemon's MaxGroups).
	maxGroups = 16
	// answerQueue is how many pongs wait to be published; pings beyond
	// are dropped.
	answerQueue = 64
	// publishTimeout bounds one ping's or pong's publish.
	publishTimeout = 5 * time.Second
)

// Options configure Run.
type Options struct {
	// Node is this node's name (1..64 bytes of A-Z a-z 0-9 _ -): the
	// prober's name in pings, the answerer's in pongs. Required.
	Node string
	// Groups are the groups to answer and probe in, at least one, at most
	// 16, each a topic level like Node.
	Groups []string
	// Every is how often to probe: a round at once, then one every Every.
	// 0 only answers the other members' pings.
	Every time.Duration
	// Samples is how many pings a round sends to each group (default
	// DefaultSamples, at most MaxSamples), Spacing apart (default
	// DefaultSpacing); the round then waits Wait (default DefaultWait)
	// for the last pongs.
	Samples int
	Spacing time.Duration
	Wait    time.Duration
	// AnswerDelay is how long after a ping its pong is sent (default
	// DefaultAnswerDelay).
	AnswerDelay time.Duration
	// MaxPeers bounds the peers a round keeps samples of (default
	// DefaultMaxPeers); pongs of more are dropped.
	MaxPeers int
	// Now is the clock being measured (default time.Now).
	Now func() time.Time
	// Report, if set, gets every round's findings, on Run's goroutine.
	Report func(Report)
	// Logger gets the rounds and dropped messages (debug) and failed
	// publishes (warn); nil discards them.
	Logger *slog.Logger
}

func (o *Options) resolve() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	if err := checkName("node", out.Node); err != nil {
		return out, fmt.Errorf("clock probe: Options.Node: %w", err)
	}
	if len(out.Groups) == 0 || len(out.Groups) > maxGroups {
		return out, fmt.Errorf("clock probe: Options.Groups: %d groups, want 1 to %d", len(out.Groups), maxGroups)
	}
	for i, g := range out.Groups {
		if err := checkName("group", g); err != nil {
			return out, fmt.Errorf("clock probe: Options.Groups[%d]: %w", i, err)
		}
	}
	// A group named twice would only be pinged twice.
	out.Groups = slices.Compact(slices.Sorted(slices.Values(out.Groups)))
	if out.Every < 0 {
		return out, fmt.Errorf("clock probe: Options.Every %v is negative", out.Every)
	}
	if out.Samples == 0 {
		out.Samples = DefaultSamples
	}
	if out.Samples < 0 || out.Samples > MaxSamples {
		return out, fmt.Errorf("clock probe: Options.Samples %d, want 1 to %d", out.Samples, MaxSamples)
	}
	if out.Spacing <= 0 {
		out.Spacing = DefaultSpacing
	}
	if out.Wait <= 0 {
		out.Wait = DefaultWait
	}
	if out.AnswerDelay <= 0 {
		out.AnswerDelay = DefaultAnswerDelay
	}
	if out.MaxPeers <= 0 {
		out.MaxPeers = DefaultMaxPeers
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	if out.Logger == nil {
		out.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return out, nil
}

// Log attribute keys.
const (
	logKeyTopic  = "topic"
	logKeyErr    = "err"
	logKeyPeer   = "peer"
	logKeyPeers  = "peers"
	logKeyOffset = "offset_ms"
	logKeyDelay  = "delay_ms"
)

// Run answers the pings of the other members of opts.Groups and, with
// opts.Every set, probes them every opts.Every, until ctx ends; then it
// returns nil once its goroutines are done. It fails at once only for bad
// options or a failed Subscribe. The subscription outlives Run (the
// transport has no unsubscribe), and drops what comes after.
func Run(ctx context.Context, tr Transport, opts *Options) error {
	o, err := opts.resolve()
	if err != nil {
		return err
	}
	p := &prober{opts: o, tr: tr, log: o.Logger, answers: make(chan answer, answerQueue), topics: make(map[string]route)}
	var filters []string
	for _, g := range o.Groups {
		p.topics[Topic(g)] = route{group: g}
		p.topics[ReplyTopic(g, o.Node)] = route{group: g, reply: true}
		filters = append(filters, Topic(g), ReplyTopic(g, o.Node))
	}
	// The answerer stops with ctx, before Run returns.
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	p.ctx = ctx
	if err := tr.Subscribe(filters, p.handle); err != nil {
		return fmt.Errorf("clock probe: subscribe: %w", err)
	}
	wg.Go(p.answer)
	if o.Every == 0 {
		<-ctx.Done()
		return nil
	}
	tick := time.NewTicker(o.Every)
	defer tick.Stop()
	for {
		r, ok := p.round()
		if !ok {
			return nil
		}
		p.logRound(r)
		if o.Report != nil {
			o.Report(r)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// prober is one Run.
type prober struct {
	opts Options
	tr   Transport
	log  *slog.Logger
	ctx  context.Context // Run's; handle drops messages once it ends

	topics  map[string]route // read-only after Run's start
	answers chan answer

	mu      sync.Mutex
	seq     uint64
	current *round // nil between rounds
}

// route is what a subscribed topic is for.
type route struct {
	group string
	reply bool // a reply topic: pongs to us; else pings
}

// answer is a pong to be sent at due.
type answer struct {
	group string
	ping  ping
	t1    float64
	due   time.Time
}

// round is the pings of the round in progress and the samples of their
// pongs, by peer.
type round struct {
	sent   map[uint64]float64 // seq → t0
	byPeer map[string][]sample
}

// handle takes one message, on the transport's goroutine: the time it
// came is read first, so that decoding is not part of the measurement.
func (p *prober) handle(topic string, payload []byte) {
	now := unixMS(p.opts.Now())
	rt, ok := p.topics[topic]
	if !ok || p.ctx.Err() != nil {
		return
	}
	if !rt.reply {
		pg, err := decodePing(payload)
		if err == nil && pg.Node == p.opts.Node {
			err = errOwn
		}
		if err != nil {
			p.drop(topic, err)
			return
		}
		select {
		case p.answers <- answer{group: rt.group, ping: pg, t1: now, due: time.Now().Add(p.opts.AnswerDelay)}:
		default:
			p.drop(topic, errors.New("answer queue full"))
		}
		return
	}
	pg, err := decodePong(payload)
	if err == nil {
		err = p.take(pg, now)
	}
	if err != nil {
		p.drop(topic, err)
	}
}

func (p *prober) drop(topic string, err error) {
	p.log.Debug("clock message dropped", logKeyTopic, topic, logKeyErr, err)
}

// take adds a pong that came at t3 to the round in progress.
func (p *prober) take(pg pong, t3 float64) error {
	switch {
	case pg.To != p.opts.Node:
		return errNotForUs
	case pg.Node == p.opts.Node:
		return errOwn
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.current
	if r == nil {
		return errUnknownSeq
	}
	// A pong to an earlier process has a seq of ours, but not its t0.
	if t0, ok := r.sent[pg.Seq]; !ok || t0 != pg.T0 {
		return errUnknownSeq
	}
	s := sample{seq: pg.Seq, t0: pg.T0, t1: pg.T1, t2: pg.T2, t3: t3}
	if s.delay() < 0 {
		return errNegative
	}
	samples, known := r.byPeer[pg.Node]
	if !known && len(r.byPeer) >= p.opts.MaxPeers {
		return errTooManyPeers
	}
	if slices.ContainsFunc(samples, func(s sample) bool { return s.seq == pg.Seq }) {
		return errDuplicate // QoS 1 sends again, or a peer in two of our groups
	}
	r.byPeer[pg.Node] = append(samples, s)
	return nil
}

// answer publishes the pongs handle queues, until Run's ctx ends.
func (p *prober) answer() {
	for {
		select {
		case <-p.ctx.Done():
			return
		case a := <-p.answers:
			if !sleep(p.ctx, time.Until(a.due)) {
				return
			}
			pg := pong{Node: p.opts.Node, To: a.ping.Node, Seq: a.ping.Seq, T0: a.ping.T0, T1: a.t1}
			pg.T2 = unixMS(p.opts.Now())
			p.publish(ReplyTopic(a.group, a.ping.Node), pg)
		}
	}
}

// round sends a round of pings and sums up the pongs; false when ctx
// ended first.
func (p *prober) round() (Report, bool) {
	r := &round{sent: make(map[uint64]float64), byPeer: make(map[string][]sample)}
	p.mu.Lock()
	p.current = r
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		p.current = nil
		p.mu.Unlock()
	}()
	for i := range p.opts.Samples {
		for _, g := range p.opts.Groups {
			p.mu.Lock()
			p.seq++
			pg := ping{Node: p.opts.Node, Seq: p.seq, T0: unixMS(p.opts.Now())}
			r.sent[pg.Seq] = pg.T0
			p.mu.Unlock()
			p.publish(Topic(g), pg)
		}
		wait := p.opts.Spacing
		if i == p.opts.Samples-1 {
			wait = p.opts.Wait
		}
		if !sleep(p.ctx, wait) {
			return Report{}, false
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return report(r.byPeer, p.opts.Now()), true
}

func (p *prober) publish(topic string, msg any) {
	payload, err := json.Marshal(msg)
	if err != nil {
		p.log.Warn("clock message not encoded", logKeyTopic, topic, logKeyErr, err)
		return
	}
	ctx, cancel := context.WithTimeout(p.ctx, publishTimeout)
	defer cancel()
	if err := p.tr.Publish(ctx, topic, payload); err != nil && p.ctx.Err() == nil {
		p.log.Warn("clock message not sent", logKeyTopic, topic, logKeyErr, err)
	}
}

func (p *prober) logRound(r Report) {
	for _, peer := range r.Peers {
		p.log.Debug("clock peer", logKeyPeer, peer.Node, logKeyOffset, ms(peer.Offset), logKeyDelay, ms(peer.Delay))
	}
	p.log.Debug("clock probe round", logKeyPeers, len(r.Peers), logKeyOffset, ms(r.Offset), logKeyDelay, ms(r.MaxDelay))
}

// sleep waits d; false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
