package daemon

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Daemon is mynahd's core. Create it with New, start it with Run.
type Daemon struct {
	opts   Options
	log    *slog.Logger
	topics topics
	decode DecodeOptions
	stats  counters

	// subscribed is closed once Run's subscriptions are in place
	// (Subscribed).
	subscribed chan struct{}

	mu      sync.Mutex
	queue   *queue
	current *job
	voice   string
	voices  []string // Engine.Voices, refreshed with every discovery publish
	started bool     // Run was called
	closed  bool     // Run is shutting down: no new work

	volume  atomic.Uint64 // math.Float64bits of 0..1
	lastErr atomic.Pointer[LastError]
	clock   atomic.Pointer[ClockStatus] // the last ClockChanged; nil before
	// clockOffset is the last ClockOffsetChanged (nil before),
	// clockAstray whether it found this clock out of step.
	clockOffset atomic.Pointer[ClockOffset]
	clockAstray atomic.Bool
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
	// reloading says a ReloadVoices runs, reloadAgain that another was
	// asked for meanwhile, reloadAsked that voices/reload asked (it is
	// always answered); all under mu.
	reloading, reloadAgain, reloadAsked bool

	// spoolMu guards spoolErr: why the spool cannot be written now
	// (Options.SpoolError, or the last failed write until one succeeds or,
	// for ErrSpoolFull, the queue drains), and spoolFailing: the last
	// write failed (its outage was warned of).
	spoolMu      sync.Mutex
	spoolErr     error
	spoolFailing bool
	// deletes counts the publisher's spool deletes of delivered events.
	deletes sync.WaitGroup

	// agreed holds the play_at instants of group requests (group.go).
	agreed agreements

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
		subscribed:   make(chan struct{}),
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
	if err = d.opts.Transport.Subscribe(append(d.topics.filters(), d.groupFilters()...), d.handle, d.Connected); err != nil {
		err = fmt.Errorf("subscribe: %w", err)
	} else {
		close(d.subscribed)
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

// Connected re-publishes discovery and state, asynchronously (it never
// blocks). Run hands it to Transport.Subscribe as the connected callback,
// so the transport calls it after every later (re)connect; Run publishes
// both itself once subscribed, so a connect before that needs no call.
func (d *Daemon) Connected() { signal(d.discoveryDue) }

// Subscribed is closed once Run has its subscriptions in place (the
// broker acknowledged them, when it is connected): from then on a
// command is taken, or kept for the daemon's session. mynahd tells
// systemd READY only then, so that a command sent at READY on the first
// start (no session at the broker yet) is not lost.
func (d *Daemon) Subscribed() <-chan struct{} { return d.subscribed }

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
	s := State{State: "idle", Queue: d.queue.len(), Voice: d.voice, Voices: slices.Clone(d.voices), LastError: d.lastErr.Load()}
	if d.current != nil {
		s.State = "speaking"
	}
	d.mu.Unlock()
	s.Volume = d.currentVolume()
	s.Counters = d.stats.snapshot()
	s.Cache = d.cacheStats()
	s.Spool = d.spoolStatus()
	if d.opts.Wyoming != nil {
		w := d.opts.Wyoming()
		s.Wyoming = &w
	}
	if d.opts.Audio != nil {
		a := d.opts.Audio()
		s.Audio = &a
	}
	s.Clock = d.clockStatus()
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
// retained state cleared. prefix "" is "homeassistant". The devices of the
// node's groups stay: other members may still serve them (discovery.go).
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
