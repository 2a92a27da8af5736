package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultNode            = "mynah"
	DefaultDiscoveryPrefix = "homeassistant"
	DefaultTTL             = 60 * time.Second
	DefaultStateInterval   = 60 * time.Second
	DefaultOutboxSize      = 256
	DefaultPublishTimeout  = 5 * time.Second
	DefaultShutdownTimeout = 3 * time.Second
	DefaultWriteBlock      = 100 * time.Millisecond
	// MaxQueueSize bounds Options.QueueSize.
	MaxQueueSize = 10000
	// maxSilence caps Chunk.Silence so a broken engine cannot hold the
	// speaker for minutes of nothing.
	maxSilence = 5 * time.Second
	// voiceCheckTimeout bounds Engine.CheckVoice for voice/set: a cold
	// load of a large voice on a small CPU takes seconds, not minutes.
	voiceCheckTimeout = time.Minute
)

// Options configures a Daemon. Transport, Engine and Sink are required;
// zero values of the other fields mean the defaults above.
type Options struct {
	// Node names this daemon in topics (mynah/<node>/...) and in Home
	// Assistant: 1..64 of A-Z a-z 0-9 _ - (default "mynah").
	Node      string
	Transport Transport
	Engine    Engine
	Sink      Sink
	// DiscoveryPrefix is Home Assistant's discovery prefix (default
	// "homeassistant"); its birth topic is <prefix>/status.
	DiscoveryPrefix string
	// QueueSize bounds the requests waiting to play (default 32, at most
	// MaxQueueSize).
	QueueSize int
	// DefaultTTL is how long a request without ttl may wait (default 60 s).
	DefaultTTL time.Duration
	// DefaultVolume is the volume at start, 0..1; nil means 1.
	DefaultVolume *float64
	// DefaultVoice is the voice for requests that name none; it must be one
	// of Engine.Voices. "" leaves the choice to the engine.
	DefaultVoice string
	// StateInterval is how often the state is re-published without a
	// change (default 60 s).
	StateInterval time.Duration
	Logger        *slog.Logger
	// Now is the clock, for tests (default time.Now).
	Now func() time.Time
	// Version is the software version shown in Home Assistant.
	Version string
	// Model is the device model shown in Home Assistant (default "mynahd").
	Model string
	// Decode sets the payload limits; nil means DecodeOptions' defaults.
	Decode *DecodeOptions
	// DedupeIDs and DedupeWindow bound the duplicate-id filter: an id is
	// ignored when it was seen among the last DedupeIDs ids (default 256)
	// and less than DedupeWindow ago (default 10 min).
	DedupeIDs    int
	DedupeWindow time.Duration
	// OutboxSize bounds the non-terminal events (queued, started, ...)
	// waiting to be published (default 256); beyond it they are dropped
	// and counted (Counters.EventsDropped). Terminal events are kept until
	// published (see outbox.go).
	OutboxSize int
	// PublishTimeout bounds each publish (default 5 s).
	PublishTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits, after ctx ends, for the
	// worker to stop and for the last events to go out (default 3 s each).
	ShutdownTimeout time.Duration
	// WriteBlock is the longest piece of audio handed to the sink in one
	// Write (default 100 ms), so that volume changes apply within a block.
	WriteBlock time.Duration
	// Spool, when set, keeps accepted requests until they are done, so a
	// crash or restart loses none (see spool.go). nil: a crash loses the
	// queue.
	Spool Spool
	// SpoolError, when set, says why the configured spool cannot be used
	// (Spool is then nil): the state's spool object reports it and a
	// warning event spool_unavailable says so once. Commands are then
	// acknowledged at once and a crash loses the queue.
	SpoolError error
	// Cache, when set, is the engine's phrase cache: its figures go into
	// the state and cache/purge purges it. nil: cache/purge fails with
	// not_supported.
	Cache PhraseCache
	// CacheError, when set, says why the configured phrase cache cannot
	// be used (Cache is then nil): the state's cache object reports it and
	// a warning event cache_unavailable says so once.
	CacheError error
	// Speakers, when set, enrolls and forgets cloned speakers
	// (speaker/enroll, speaker/forget). nil: those fail with
	// not_supported.
	Speakers SpeakerStore
}

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	if out.Node == "" {
		out.Node = DefaultNode
	}
	if err := ValidateNode(out.Node); err != nil {
		return bad("Node: %v", err)
	}
	if out.DiscoveryPrefix == "" {
		out.DiscoveryPrefix = DefaultDiscoveryPrefix
	}
	if err := validatePrefix(out.DiscoveryPrefix); err != nil {
		return bad("DiscoveryPrefix: %v", err)
	}
	switch {
	case out.Transport == nil:
		return bad("Transport is required")
	case out.Engine == nil:
		return bad("Engine is required")
	case out.Sink == nil:
		return bad("Sink is required")
	case out.QueueSize < 0 || out.QueueSize > MaxQueueSize:
		return bad("QueueSize %d is outside 1..%d", out.QueueSize, MaxQueueSize)
	case out.DefaultVolume != nil && !(*out.DefaultVolume >= 0 && *out.DefaultVolume <= 1):
		return bad("DefaultVolume %g is outside 0..1", *out.DefaultVolume)
	case out.DefaultTTL < 0, out.StateInterval < 0, out.DedupeWindow < 0, out.PublishTimeout < 0,
		out.ShutdownTimeout < 0, out.WriteBlock < 0, out.OutboxSize < 0, out.DedupeIDs < 0:
		return bad("durations and sizes must not be negative")
	}
	if out.DefaultVoice != "" {
		if err := ValidateName(out.DefaultVoice); err != nil {
			return bad("DefaultVoice: %v", err)
		}
		if voices := out.Engine.Voices(); !slices.Contains(voices, out.DefaultVoice) {
			return bad("DefaultVoice: %w %q (the engine has: %s)", ErrUnknownVoice, out.DefaultVoice, strings.Join(voices, ", "))
		}
	}
	setDefault(&out.QueueSize, DefaultQueueSize)
	setDefault(&out.DefaultTTL, DefaultTTL)
	setDefault(&out.StateInterval, DefaultStateInterval)
	setDefault(&out.DedupeIDs, DefaultDedupeIDs)
	setDefault(&out.DedupeWindow, DefaultDedupeWindow)
	setDefault(&out.OutboxSize, DefaultOutboxSize)
	setDefault(&out.PublishTimeout, DefaultPublishTimeout)
	setDefault(&out.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&out.WriteBlock, DefaultWriteBlock)
	setDefault(&out.Model, "mynahd")
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// ValidateNode checks a node name: 1..64 bytes of A-Z a-z 0-9 _ -, which
// is what both an MQTT topic level and a Home Assistant discovery node id
// accept.
func ValidateNode(node string) error {
	if node == "" || len(node) > 64 {
		return fmt.Errorf("node name must be 1..64 bytes, not %d", len(node))
	}
	for i := 0; i < len(node); i++ {
		if c := node[i]; !isNameStart(c) && c != '-' {
			return fmt.Errorf("node name %s contains %q: use A-Z a-z 0-9 _ -", quoteShort(node), c)
		}
	}
	return nil
}

func validatePrefix(p string) error {
	switch {
	case len(p) > 128:
		return fmt.Errorf("%d bytes is over the limit of 128", len(p))
	case strings.ContainsAny(p, "+#\x00"):
		return fmt.Errorf("%s contains an MQTT wildcard or NUL", quoteShort(p))
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return fmt.Errorf("%s has an empty topic level", quoteShort(p))
	}
	return nil
}

// topics are the daemon's MQTT topics, fixed at New.
type topics struct {
	base, say, ownerPrefix, stop, volume, voice, purge string
	enroll, forget                                     string
	event, state, status, haStatus, discovery          string
}

func newTopics(node, prefix string) topics {
	base := "mynah/" + node
	return topics{
		base: base, say: base + "/say", ownerPrefix: base + "/u/",
		stop: base + "/stop", volume: base + "/volume/set", voice: base + "/voice/set",
		purge: base + "/cache/purge", event: base + "/event", state: base + "/state",
		enroll: base + "/speaker/enroll", forget: base + "/speaker/forget",
		status: StatusTopic(node), haStatus: prefix + "/status",
		discovery: DiscoveryTopic(prefix, node),
	}
}

// StatusTopic is where the transport keeps the retained online/offline
// availability (its last will): mynah/<node>/status.
func StatusTopic(node string) string { return "mynah/" + node + "/status" }

// DiscoveryTopic is the retained device discovery topic:
// <prefix>/device/<node>/config.
func DiscoveryTopic(prefix, node string) string { return prefix + "/device/" + node + "/config" }

// filters are the subscriptions: the command topics and Home Assistant's
// birth topic.
func (t *topics) filters() []string {
	return []string{t.say, t.ownerPrefix + "+/say", t.stop, t.volume, t.voice, t.purge,
		t.enroll, t.forget, t.ownerPrefix + "+/speaker/enroll", t.ownerPrefix + "+/speaker/forget", t.haStatus}
}

// Commands an owner's topics take: mynah/<node>/u/<owner>/<command>.
const (
	cmdSay    = "say"
	cmdEnroll = "speaker/enroll"
	cmdForget = "speaker/forget"
)

// owner splits mynah/<node>/u/<owner>/<command> for the commands above.
func (t *topics) owner(topic string) (owner, command string, ok bool) {
	rest, ok := strings.CutPrefix(topic, t.ownerPrefix)
	if !ok {
		return "", "", false
	}
	owner, command, ok = strings.Cut(rest, "/")
	if !ok || owner == "" {
		return "", "", false
	}
	switch command {
	case cmdSay, cmdEnroll, cmdForget:
		return owner, command, true
	}
	return "", "", false
}

// Daemon is mynahd's core. Create it with New, start it with Run.
type Daemon struct {
	opts   Options
	log    *slog.Logger
	topics topics
	decode DecodeOptions
	stats  counters

	mu      sync.Mutex
	queue   *queue
	current *job
	voice   string
	voices  []string // Engine.Voices, refreshed with every discovery publish
	started bool     // Run was called
	closed  bool     // Run is shutting down: no new work

	volume atomic.Uint64 // math.Float64bits of 0..1
	// busySince is when the current blocking call began, as nanoseconds
	// since epoch plus 1 (0 = none). Durations from epoch use the monotonic
	// clock, so a wall-clock jump cannot fake a stall.
	epoch     time.Time
	busySince atomic.Int64

	// background counts spool writes and deletes, purges, enrollments
	// and forgets in flight; Run cancels bgCtx and waits for them before
	// it returns.
	background sync.WaitGroup
	bgCtx      context.Context
	bgCancel   context.CancelFunc
	enrolling  atomic.Int32 // enrollments waiting or running
	enrollMu   sync.Mutex   // one enrollment at a time
	retained   chan retainedMsg
	// voiceWanted is the voice/set waiting for its check ("" = none) and
	// voiceChecking whether the goroutine checking voices runs; both
	// under mu.
	voiceWanted   string
	voiceChecking bool

	// spoolMu guards spoolErr: why the spool cannot be written now
	// (Options.SpoolError, or the last failed write until one succeeds).
	spoolMu  sync.Mutex
	spoolErr error
	// deletes counts the publisher's spool deletes of delivered events.
	deletes sync.WaitGroup

	work         chan struct{} // a request was queued
	out          *outbox
	stateDue     chan struct{}
	discoveryDue chan struct{}
}

// New checks opts and returns a Daemon ready to Run.
func New(opts *Options) (*Daemon, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Daemon{
		opts:         o,
		log:          o.Logger.With("node", o.Node),
		topics:       newTopics(o.Node, o.DiscoveryPrefix),
		decode:       o.Decode.withDefaults(),
		queue:        newQueue(o.QueueSize, o.DedupeIDs, o.DedupeWindow),
		voice:        o.DefaultVoice,
		voices:       o.Engine.Voices(),
		epoch:        o.Now(),
		work:         make(chan struct{}, 1),
		out:          newOutbox(o.OutboxSize),
		stateDue:     make(chan struct{}, 1),
		discoveryDue: make(chan struct{}, 1),
		retained:     make(chan retainedMsg, maxRetainedPending),
	}
	d.bgCtx, d.bgCancel = context.WithCancel(context.Background())
	if o.CacheError != nil {
		d.Warn(ReasonCacheUnavailable, fmt.Errorf("phrase cache off, speaking uncached: %w", o.CacheError))
	}
	if o.SpoolError != nil {
		d.spoolErr = o.SpoolError
		d.Warn(ReasonSpoolUnavailable, fmt.Errorf("spool off: commands are spoken, but a crash loses those waiting: %w", o.SpoolError))
	}
	vol := 1.0
	if o.DefaultVolume != nil {
		vol = *o.DefaultVolume
	}
	d.volume.Store(math.Float64bits(vol))
	return d, nil
}

func (d *Daemon) now() time.Time { return d.opts.Now() }

// Run subscribes and plays requests until ctx ends. Then it stops taking
// work, drops what is queued (dropped events, reason shutdown), cuts the
// playing request (Sink.Abort), waits up to Options.ShutdownTimeout for
// the worker and as long again for the last events and state to be
// published, and returns: shutdown takes at most 2×ShutdownTimeout. It
// returns nil after a clean shutdown, an error when subscribing failed or
// the worker did not stop in time (a stuck engine or sink). Run may be
// called once.
func (d *Daemon) Run(ctx context.Context) error {
	d.mu.Lock()
	if d.started {
		d.mu.Unlock()
		return errors.New("daemon: Run called twice")
	}
	d.started = true
	d.mu.Unlock()

	pubCtx, cancelPub := context.WithCancel(context.Background())
	defer cancelPub()
	pubStop, pubDone := make(chan struct{}), make(chan struct{})
	go d.publisher(pubCtx, pubStop, pubDone)
	// The worker's context is not ctx: shutdown must first mark the cut
	// reason, then cancel.
	workCtx, cancelWork := context.WithCancel(context.Background())
	workDone := make(chan struct{})
	go func() {
		defer close(workDone)
		d.worker(workCtx)
	}()

	if d.opts.Spool != nil {
		d.replay()
	}
	var err error
	if err = d.opts.Transport.Subscribe(d.topics.filters(), d.handle, d.Connected); err != nil {
		err = fmt.Errorf("subscribe: %w", err)
	} else {
		d.log.Info("daemon running", "topics", d.topics.base+"/#", "queue", d.opts.QueueSize)
		signal(d.discoveryDue)
		<-ctx.Done()
	}
	return errors.Join(err, d.shutdown(cancelWork, workDone, cancelPub, pubStop, pubDone))
}

func (d *Daemon) shutdown(cancelWork context.CancelFunc, workDone chan struct{}, cancelPub context.CancelFunc, pubStop, pubDone chan struct{}) error {
	d.mu.Lock()
	d.closed = true
	if n := d.queue.len(); n > 0 && d.opts.Spool != nil {
		d.log.Info("queued requests stay in the spool for the next start", "requests", n)
	}
	for _, r := range d.queue.clear() {
		d.emitDropped(&r, ReasonShutdown)
	}
	d.cutLocked(ReasonShutdown)
	d.mu.Unlock()
	cancelWork()

	var err error
	timer := time.NewTimer(d.opts.ShutdownTimeout)
	defer timer.Stop()
	select {
	case <-workDone:
	case <-timer.C:
		err = fmt.Errorf("daemon: worker did not stop within %s (stuck synthesis or audio write)", d.opts.ShutdownTimeout)
	}
	d.bgCancel()
	if !waitTimeout(&d.background, d.opts.ShutdownTimeout) {
		err = errors.Join(err, fmt.Errorf("daemon: spool writes or a purge did not end within %s", d.opts.ShutdownTimeout))
	}
	close(pubStop)
	// A publish in flight and the flush end together, ShutdownTimeout
	// from now.
	cut := time.AfterFunc(d.opts.ShutdownTimeout, cancelPub)
	defer cut.Stop()
	<-pubDone
	d.log.Info("daemon stopped")
	return err
}

// waitTimeout waits for wg, at most timeout, and says whether it ended.
func waitTimeout(wg *sync.WaitGroup, timeout time.Duration) bool {
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
		return false
	}
}

// Connected is for the transport wiring to call after every (re)connect:
// it re-publishes discovery and state, asynchronously (it never blocks).
// Run also publishes both when it starts, so a connect before Run needs no
// call.
func (d *Daemon) Connected() { signal(d.discoveryDue) }

// Healthy reports whether the worker is making progress: false while one
// synthesis step, sink write or drain has been blocked longer than stall.
// An idle daemon is healthy. For systemd's watchdog (WATCHDOG=1 only when
// Healthy); choose stall above the longest sentence synthesis.
func (d *Daemon) Healthy(stall time.Duration) bool {
	since := d.busySince.Load()
	return since == 0 || d.sinceEpoch()-(since-1) <= int64(stall)
}

func (d *Daemon) sinceEpoch() int64 { return int64(d.now().Sub(d.epoch)) }
func (d *Daemon) busy()             { d.busySince.Store(d.sinceEpoch() + 1) }
func (d *Daemon) idle()             { d.busySince.Store(0) }

// Snapshot returns the current state, as published on the state topic.
func (d *Daemon) Snapshot() State {
	d.mu.Lock()
	s := State{State: "idle", Queue: d.queue.len(), Voice: d.voice}
	if d.current != nil {
		s.State = "speaking"
	}
	d.mu.Unlock()
	s.Volume = d.currentVolume()
	s.Counters = d.stats.snapshot()
	s.Cache = d.cacheStats()
	s.Spool = d.spoolStatus()
	s.Time = d.now()
	return s
}

func (d *Daemon) currentVolume() float64 { return math.Float64frombits(d.volume.Load()) }

// Unregister removes the device from Home Assistant (an empty retained
// discovery payload) and clears the retained state. mynahd -unregister
// calls it without Run.
func (d *Daemon) Unregister(ctx context.Context) error {
	return Unregister(ctx, d.opts.Transport, d.opts.Node, d.opts.DiscoveryPrefix)
}

// Unregister removes node from Home Assistant over t without a running
// Daemon (mynahd -unregister): an empty retained discovery payload, and the
// retained state cleared. prefix "" is "homeassistant".
func Unregister(ctx context.Context, t Transport, node, prefix string) error {
	if prefix == "" {
		prefix = DefaultDiscoveryPrefix
	}
	tp := newTopics(node, prefix)
	if err := t.Publish(ctx, tp.discovery, nil, true); err != nil {
		return fmt.Errorf("unregister: remove discovery: %w", err)
	}
	if err := t.Publish(ctx, tp.state, nil, true); err != nil {
		return fmt.Errorf("unregister: clear state: %w", err)
	}
	return nil
}

// handle is the Transport's message handler. It runs on the MQTT client's
// goroutine, so it only decodes, takes d.mu briefly and queues events; it
// never publishes or waits.
func (d *Daemon) handle(m Message) {
	ack := m.Ack
	if ack == nil {
		ack = func() {}
	}
	if m.Topic == d.topics.say && !m.Retained {
		d.say(m.Payload, "", ack) // acknowledges once spooled
		return
	}
	owner, command, isOwner := d.topics.owner(m.Topic)
	if isOwner && command == cmdSay && !m.Retained {
		d.say(m.Payload, owner, ack)
		return
	}
	// Control commands act at once and are not spooled: a stop or a
	// volume change replayed after a restart would be wrong.
	defer ack()
	if m.Topic == d.topics.haStatus {
		// Home Assistant (re)started and asks devices to announce
		// themselves: a broker without persistence may have lost the
		// retained discovery.
		if strings.TrimSpace(string(m.Payload)) == "online" {
			d.Connected()
		}
		return
	}
	if m.Retained {
		// A retained command would replay on every reconnect: "say the door
		// is open" forever.
		d.stats.retainedIgnored.Add(1)
		d.log.Debug("ignoring retained command", "topic", m.Topic)
		return
	}
	switch m.Topic {
	case d.topics.stop:
		d.stop()
	case d.topics.volume:
		d.setVolume(m.Payload)
	case d.topics.voice:
		d.setVoice(m.Payload)
	case d.topics.purge:
		d.purge(m.Payload)
	case d.topics.enroll:
		d.enroll(m.Payload, "")
	case d.topics.forget:
		d.forget(m.Payload, "")
	default:
		if isOwner {
			if err := ValidateName(owner); err != nil {
				id := ""
				if command == cmdEnroll {
					id = peekID(m.Payload)
				}
				d.emitFailed(id, "", command, ReasonBadName, fmt.Errorf("owner: %w", err))
				return
			}
			switch command {
			case cmdEnroll:
				d.enroll(m.Payload, owner)
			case cmdForget:
				d.forget(m.Payload, owner)
			}
			return
		}
		d.log.Debug("ignoring message on unknown topic", "topic", m.Topic)
	}
}

func (d *Daemon) say(payload []byte, owner string, ack func()) {
	d.stats.received.Add(1)
	r, err := DecodeSay(payload, d.now(), &d.decode)
	if owner != "" {
		if oerr := ValidateName(owner); oerr != nil {
			err, owner = &DecodeError{Reason: ReasonBadName, Field: "owner", Err: oerr}, ""
		}
	}
	if err != nil {
		reason := ReasonInvalidJSON
		if de := (*DecodeError)(nil); errors.As(err, &de) {
			reason = de.Reason
		}
		d.emitFailed(r.ID, owner, "", reason, err)
		ack()
		return
	}
	r.Owner = owner
	if r.TTL == 0 {
		r.TTL = d.opts.DefaultTTL
	}
	if d.opts.Spool != nil {
		r.spool = newSpoolState(&r)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		// Not acknowledged: the broker keeps it for the next start.
		d.log.Debug("ignoring say during shutdown", "id", r.ID)
		return
	}
	if r.Voice != "" && !slices.Contains(d.voices, r.Voice) {
		d.emitFailed(r.ID, owner, "", ReasonUnknownVoice, fmt.Errorf("%w %q", ErrUnknownVoice, r.Voice))
		ack()
		return
	}
	if !d.pushLocked(r, false) || r.spool == nil {
		ack()
		return
	}
	// Spooled even when the queue pushed it out at once: its dropped
	// event's release waits for the write, so the record cannot outlive it.
	d.spool(&r, payload, ack)
}

// pushLocked queues r, reports what happened as events, and says whether
// r was new (not a duplicate). d.mu is held.
func (d *Daemon) pushLocked(r Request, replayed bool) bool {
	res := d.queue.push(r, r.Received)
	if res.duplicate {
		d.stats.duplicates.Add(1)
		d.log.Debug("ignoring duplicate id", "id", r.ID)
		if replayed {
			d.release(&r)
		}
		return false
	}
	if res.accepted {
		d.stats.queued.Add(1)
		d.emit(Event{ID: r.ID, State: EventQueued, Owner: r.Owner, Replayed: replayed})
	}
	for _, x := range res.dropped {
		d.emitDropped(&x.req, x.reason)
	}
	if res.accepted && r.Interrupt {
		d.cutLocked(ReasonInterrupted)
	}
	signal(d.work)
	d.markState()
	return true
}

// stop drops everything queued and cuts what is playing.
func (d *Daemon) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.queue.clear() {
		d.emitDropped(&r, ReasonStopped)
	}
	d.cutLocked(ReasonStopped)
	d.markState()
}

// cutLocked stops the playing request at once: its context ends, which
// makes the worker call Sink.Abort. The first reason wins.
func (d *Daemon) cutLocked(reason string) {
	if j := d.current; j != nil && j.cutReason == "" {
		j.cutReason = reason
		j.cancel()
	}
}

func (d *Daemon) setVolume(payload []byte) {
	v, err := ParseVolume(payload)
	if err != nil {
		d.emitFailed("", "", "volume/set", ReasonBadVolume, err)
		return
	}
	d.volume.Store(math.Float64bits(v))
	d.log.Info("volume set", "volume", v)
	d.markState()
}

// setVoice runs a voice/set command. The voice becomes the default only
// once the engine has checked it (loaded it, typically): a voice whose
// files are gone must be refused now, not fail every request after it.
// The checks run off the MQTT handler, one at a time, in order; a
// voice/set that arrives while another waits replaces it (a Home
// Assistant select clicked through several voices loads only the last).
func (d *Daemon) setVoice(payload []byte) {
	name := string(trimPayload(payload))
	if err := ValidateName(name); err != nil {
		d.emitFailed("", "", "voice/set", ReasonBadName, err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.voices, name) {
		d.emitFailed("", "", "voice/set", ReasonUnknownVoice, fmt.Errorf("%w %q", ErrUnknownVoice, name))
		return
	}
	if d.closed {
		return
	}
	d.voiceWanted = name
	if d.voiceChecking {
		return
	}
	d.voiceChecking = true
	d.background.Add(1)
	go d.checkVoices()
}

// checkVoices checks the voices voice/set asks for until none waits.
func (d *Daemon) checkVoices() {
	defer d.background.Done()
	for {
		d.mu.Lock()
		name := d.voiceWanted
		d.voiceWanted = ""
		if name == "" {
			d.voiceChecking = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()

		ctx, cancel := context.WithTimeout(d.bgCtx, voiceCheckTimeout)
		err := d.opts.Engine.CheckVoice(ctx, name)
		cancel()
		if err != nil {
			if d.bgCtx.Err() != nil {
				return // shutting down: the check was cut, not failed
			}
			d.emitFailed("", "", "voice/set", speakerReason(err), fmt.Errorf("voice %q: %w", name, err))
			continue
		}
		d.mu.Lock()
		d.voice = name
		d.mu.Unlock()
		d.log.Info("default voice set", "voice", name)
		d.markState()
	}
}
