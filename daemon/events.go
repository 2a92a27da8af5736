package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"math"
	"sync/atomic"
	"time"
)

// Event states on mynah/<node>/event.
const (
	EventQueued   = "queued"   // accepted into the queue
	EventStarted  = "started"  // first audio accepted by the sink
	EventFinished = "finished" // all audio played (drained)
	EventFailed   = "failed"   // rejected payload, bad command or error
	EventDropped  = "dropped"  // not (fully) spoken by policy: expired, queue_full, interrupted, stopped, shutdown
	EventDone     = "done"     // a control command succeeded (cache/purge, speaker/enroll, speaker/forget)
	EventWarning  = "warning"  // trouble outside any request (a damaged cache file replaced)
	EventEvicted  = "evicted"  // a speaker was let go to keep the most recent ones
	// EventDownloading is news of a voice/install in progress: one file's
	// bytes so far (Event.Download). Like queued and started it may be
	// dropped while the broker is slow or away.
	EventDownloading = "downloading"
)

// Event is the JSON published on mynah/<node>/event. Times are
// milliseconds with microsecond resolution, measured from the moment the
// daemon received the request.
type Event struct {
	ID    string `json:"id,omitempty"` // the request's id; absent for control commands
	State string `json:"state"`
	// Reason is a Reason constant for failed and dropped events.
	Reason string `json:"reason,omitempty"`
	// Error is a human-readable detail for failed events.
	Error string `json:"error,omitempty"`
	// Command names the control command (volume/set, voice/set,
	// cache/purge, speaker/enroll, ...) a done or failed event is about.
	// A say request's events never carry one: Home Assistant's Request
	// and Command event entities tell the two apart by it.
	Command string `json:"command,omitempty"`
	Owner   string `json:"owner,omitempty"`
	// Group is the group of a group announcement (mynah/group/<group>/say):
	// each member answers on its own event topic, under the request's id.
	Group string `json:"group,omitempty"`
	// PlayAt is the instant a timed request's first sample was to reach
	// the DAC, in Unix milliseconds (started, finished, and dropped late).
	PlayAt *float64 `json:"play_at,omitempty"`
	// LateMS is how late the first sample reached the DAC against PlayAt,
	// as measured after it was placed (negative: early); Clock says whose
	// time that is: ClockDAC (the device's queue and latency) or
	// ClockSystem (a sink without one: the system clock at the write).
	LateMS *float64 `json:"late_ms,omitempty"`
	Clock  string   `json:"clock,omitempty"`
	// SkippedMS is how much of a late start's head was left out so that
	// the rest plays in step (up to Options.MaxLate): late_ms − skipped_ms
	// is how far the audio's own timeline is from play_at.
	SkippedMS *float64 `json:"skipped_ms,omitempty"`
	// FirstAudioMS is received → first PCM accepted by the sink (started
	// and finished events).
	FirstAudioMS *float64 `json:"first_audio_ms,omitempty"`
	// LatencyMS is received → finished (all audio drained).
	LatencyMS *float64 `json:"latency_ms,omitempty"`
	Sentences *int     `json:"sentences,omitempty"`
	// Rendered counts a finished request's sentences a render node made
	// (render.mode remote); they count as misses in Cache.
	Rendered *int `json:"rendered,omitempty"`
	// Cache says where a finished request's audio came from: CacheHit (every
	// sentence from the phrase cache), CacheMiss (none) or CachePartial.
	Cache string `json:"cache,omitempty"`
	// SentenceDetail is, for a finished request, each sentence's source
	// and first audio (received → its first PCM accepted by the sink), for
	// at most MaxSentenceDetail sentences.
	SentenceDetail []SentenceDetail `json:"sentence_detail,omitempty"`
	// Replayed marks a queued event of a request replayed from the spool
	// after a restart.
	Replayed bool `json:"replayed,omitempty"`
	// Redelivered marks a terminal event sent again because the broker's
	// acknowledgement of an earlier copy was not seen (a dropped
	// connection, a restart): a subscriber that has the id's terminal
	// event already ignores it.
	Redelivered bool `json:"redelivered,omitempty"`
	// Speaker names the speaker of a speaker/enroll, speaker/forget or
	// evicted event.
	Speaker string `json:"speaker,omitempty"`
	// Voice names the voice a voice/install installs (done, downloading).
	Voice string `json:"voice,omitempty"`
	// Download is a downloading event's progress.
	Download *InstallProgress `json:"download,omitempty"`
	// Voices is what a done voices/reload found.
	Voices *VoiceChanges `json:"voices,omitempty"`
	// Scope and Removed describe a done cache/purge.
	Scope   string    `json:"scope,omitempty"`
	Removed *int      `json:"removed,omitempty"`
	Time    time.Time `json:"time"`
}

// SentenceDetail is one sentence of a finished request.
type SentenceDetail struct {
	Cache        string   `json:"cache"` // hit or miss
	FirstAudioMS *float64 `json:"first_audio_ms"`
}

// MaxSentenceDetail bounds Event.SentenceDetail; a request of more
// sentences reports the first ones.
const MaxSentenceDetail = 64

// Values of Event.Cache.
const (
	CacheHit     = "hit"
	CacheMiss    = "miss"
	CachePartial = "partial"
	// CacheRendered is a sentence detail's source when a render node made
	// the sentence (render.mode remote): a miss here, not synthesized here.
	CacheRendered = "rendered"
)

// State is the retained JSON on mynah/<node>/state, published on every
// change and every Options.StateInterval.
type State struct {
	State string `json:"state"` // idle or speaking
	Queue int    `json:"queue"` // requests waiting, not counting the one playing
	// Voice is the default voice, always one of Voices (the voice select
	// refuses any other): "" only when there are none, or when the
	// choice is left to the engine (Options.DefaultVoice "").
	Voice string `json:"voice"`
	// Voices are the voices a request may name, as the voice select
	// offers them.
	Voices   []string `json:"voices"`
	Volume   float64  `json:"volume"`
	Counters Counters `json:"counters"`
	// Cache is the phrase cache's figures; absent without a cache.
	Cache *CacheStats `json:"cache,omitempty"`
	// Spool says whether accepted commands survive a crash; absent
	// without a spool.
	Spool *SpoolStatus `json:"spool,omitempty"`
	// Wyoming counts the requests of Home Assistant's Wyoming integration;
	// absent when that server is off.
	Wyoming *WyomingCounters `json:"wyoming,omitempty"`
	// Audio says whether the audio device is there; absent when the
	// sink cannot lose it (a file, null).
	Audio *AudioStatus `json:"audio,omitempty"`
	// Clock says whether the system clock is synchronized, as the last
	// check found (ClockChanged); absent on a node that does not check
	// (mynahd checks only with groups configured).
	Clock *ClockStatus `json:"clock,omitempty"`
	// LastError is the most recent failed event or warning since the
	// daemon started; absent before the first.
	LastError *LastError `json:"last_error,omitempty"`
	Time      time.Time  `json:"time"`
}

// AudioStatus is the state's audio object.
type AudioStatus struct {
	Available bool      `json:"available"`
	Error     string    `json:"error,omitempty"` // why not
	Since     time.Time `json:"since"`
}

// ClockStatus is the state's clock object. A group's members start an
// announcement at one instant of their own clocks, so they play in step
// only as far as their clocks agree.
type ClockStatus struct {
	// Synced is whether the clock is synchronized to a time server; false
	// also when the check failed (Error).
	Synced bool `json:"synced"`
	// MaxErrorMS is the kernel's bound on the clock's error, which grows
	// while no time server corrects the clock.
	MaxErrorMS float64 `json:"max_error_ms"`
	// Source says where the status came from (mynahd: "adjtimex"); empty
	// when only the clock probe has reported (and Synced says nothing).
	Source string `json:"source"`
	// Error is why the check failed; the other fields then say nothing.
	Error string `json:"error,omitempty"`
	// ClockOffset is what the last round of the clock probe measured
	// (ClockOffsetChanged); nil, and its fields absent, on a node that
	// does not probe (mynahd: groups.clock_probe) or before its first
	// round.
	*ClockOffset
}

// ClockOffset is how this node's clock compares with its groups' other
// members, as one round of the clock probe measured it over MQTT; its
// fields go into the state's clock object.
type ClockOffset struct {
	// OffsetMS is how far the group's clocks are ahead of this one
	// (NTP's sign: negative when this clock is ahead, and plays early):
	// the median of the peers' offsets, each from its sample of least
	// round trip.
	OffsetMS float64 `json:"offset_ms"`
	// MaxOffsetMS is the peers' offset of largest magnitude, with its
	// sign: a peer this far off is out of step with this node.
	MaxOffsetMS float64 `json:"max_offset_ms"`
	// DelayMS is the largest of those samples' round trips: each peer's
	// offset is known to within half of it.
	DelayMS float64 `json:"delay_ms"`
	// Peers is how many members answered; 0 when none did, and the
	// other fields then say nothing.
	Peers int `json:"peers"`
}

// LastError is the state's last_error object: what Home Assistant's
// "Last error" sensor shows.
type LastError struct {
	State   string    `json:"state"`  // failed or warning
	Reason  string    `json:"reason"` // a Reason constant, or a warning's
	Error   string    `json:"error,omitempty"`
	ID      string    `json:"id,omitempty"`
	Command string    `json:"command,omitempty"`
	Time    time.Time `json:"time"`
}

// WyomingCounters are the Wyoming server's figures in the state, since
// mynahd started.
type WyomingCounters struct {
	Connections uint64  `json:"connections"`
	Active      int64   `json:"active"` // connections open now
	Rejected    uint64  `json:"rejected"`
	Requests    uint64  `json:"requests"`
	Errors      uint64  `json:"errors"`
	CacheHits   uint64  `json:"cache_hits"` // sentences served from the phrase cache
	AudioS      float64 `json:"audio_s"`    // seconds of audio sent
}

// SpoolStatus is the state's spool object.
type SpoolStatus struct {
	// Available is false while the spool cannot be written: commands are
	// spoken and acknowledged all the same, but a crash loses those
	// waiting.
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
}

// Counters count since the daemon started.
type Counters struct {
	Received        uint64 `json:"received"` // say messages, valid or not
	Queued          uint64 `json:"queued"`
	Started         uint64 `json:"started"`
	Finished        uint64 `json:"finished"`
	Failed          uint64 `json:"failed"`
	Dropped         uint64 `json:"dropped"`
	Duplicates      uint64 `json:"duplicates"`
	RetainedIgnored uint64 `json:"retained_ignored"`
	// EventsDropped counts queued, started and other non-terminal events
	// dropped because the outbox was full (the broker slower than the
	// events, e.g. during a flood) or their publish failed. Terminal
	// events are never dropped for them.
	EventsDropped uint64 `json:"events_dropped"`
	// EventsResent counts terminal events sent again: after a failed
	// publish, or from the spool after a restart.
	EventsResent uint64 `json:"events_resent"`
	// EventsLost counts terminal events let go from memory because more
	// than maxPendingTerminal waited; those kept in the spool are still
	// sent after the next start.
	EventsLost    uint64 `json:"events_lost"`
	PublishErrors uint64 `json:"publish_errors"`
	// SpoolErrors counts failed spool writes, deletes and reads: requests
	// a crash could lose, or that could be spoken twice.
	SpoolErrors uint64 `json:"spool_errors"`
}

type counters struct {
	received, queued, started, finished, failed, dropped   atomic.Uint64
	duplicates, retainedIgnored, eventsDropped, publishErr atomic.Uint64
	eventsResent, eventsLost, spoolErrors                  atomic.Uint64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Received: c.received.Load(), Queued: c.queued.Load(), Started: c.started.Load(),
		Finished: c.finished.Load(), Failed: c.failed.Load(), Dropped: c.dropped.Load(),
		Duplicates: c.duplicates.Load(), RetainedIgnored: c.retainedIgnored.Load(),
		EventsDropped: c.eventsDropped.Load(), EventsResent: c.eventsResent.Load(),
		EventsLost: c.eventsLost.Load(), PublishErrors: c.publishErr.Load(),
		SpoolErrors: c.spoolErrors.Load(),
	}
}

func millis(d time.Duration) *float64 {
	ms := math.Round(float64(d)/float64(time.Microsecond)) / 1000
	return &ms
}

// isTerminal says whether e answers a request for good: see outbox.go.
func isTerminal(e *Event) bool {
	if e.ID == "" {
		return false
	}
	switch e.State {
	case EventFinished, EventFailed, EventDropped, EventDone:
		return true
	}
	return false
}

// emit queues an event for the publisher without ever blocking: the
// caller may be the MQTT client's goroutine or hold d.mu. Every event
// follows a counter change, so the state is due too.
func (d *Daemon) emit(e Event) {
	e.Time = d.now()
	if (e.State == EventFailed || e.State == EventWarning) && !e.Redelivered {
		d.lastErr.Store(&LastError{State: e.State, Reason: e.Reason, Error: e.Error, ID: e.ID, Command: e.Command, Time: e.Time})
	}
	d.enqueue(&pending{e: e, terminal: isTerminal(&e)})
}

func (d *Daemon) enqueue(p *pending) {
	shed, lost := d.out.push(p)
	if shed > 0 {
		d.stats.eventsDropped.Add(uint64(shed))
	}
	if lost > 0 {
		d.stats.eventsLost.Add(uint64(lost))
		d.log.Warn("terminal event let go from memory: too many waiting for the broker", "waiting", maxPendingTerminal)
	}
	d.markState()
}

// finish emits r's terminal event. A spooled request's record is replaced
// by the event, which stays on disk until the broker has acknowledged it
// (spool.go); without a spool record the event waits in memory only.
func (d *Daemon) finish(r *Request, e Event) {
	e.Time = d.now()
	if e.Group == "" {
		e.Group = r.Group
	}
	p := &pending{e: e, terminal: true}
	if st := r.spool; st != nil {
		st.once.Do(func() { d.settle(st, p) })
	}
	d.enqueue(p)
}

func (d *Daemon) emitDropped(r *Request, reason string) {
	if reason == ReasonShutdown && r.spool != nil {
		// Not dropped: spoken after the restart (spool.go).
		return
	}
	d.stats.dropped.Add(1)
	d.log.Debug("request dropped", "id", r.ID, "reason", reason)
	d.finish(r, Event{ID: r.ID, State: EventDropped, Reason: reason, Owner: r.Owner})
}

// emitFailed reports a failure that is not about a queued request: a
// payload refused, a control command that failed.
func (d *Daemon) emitFailed(id, owner, command, reason string, err error) {
	d.emit(d.failedEvent(id, owner, command, reason, err))
}

// failRequest reports the failure of a queued (maybe spooled) request.
func (d *Daemon) failRequest(r *Request, reason string, err error) {
	d.finish(r, d.failedEvent(r.ID, r.Owner, "", reason, err))
}

// failedEvent logs and counts a failure and returns its event.
func (d *Daemon) failedEvent(id, owner, command, reason string, err error) Event {
	d.stats.failed.Add(1)
	// A flood of bad payloads must not become a flood of warnings; a
	// failing engine or sound card deserves one each time.
	level := slog.LevelInfo
	if reason == ReasonSynthesis || reason == ReasonAudio {
		level = slog.LevelWarn
	}
	d.log.Log(context.Background(), level, "request failed", "id", id, "command", command, "reason", reason, "err", err)
	e := Event{ID: id, State: EventFailed, Reason: reason, Command: command, Owner: owner}
	if err != nil {
		e.Error = err.Error()
	}
	return e
}

// retainedMsg is a retained publish other than state and discovery (the
// speaker lists), queued for the publisher.
type retainedMsg struct {
	topic   string
	payload []byte
}

// maxRetainedPending bounds the retained messages waiting for the
// publisher; beyond it they are dropped and counted like events (the next
// change or reconnect sends the list again).
const maxRetainedPending = 64

// outboxRetained queues a retained publish without blocking.
func (d *Daemon) outboxRetained(topic string, payload []byte) {
	select {
	case d.retained <- retainedMsg{topic, payload}:
	default:
		d.stats.eventsDropped.Add(1)
	}
}

// signal wakes a goroutine waiting on ch (capacity 1) without blocking;
// signals that arrive while one is pending merge into it.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

func (d *Daemon) markState() { signal(d.stateDue) }

// publisher is the only goroutine that publishes while Run runs, so events
// leave in the order they were emitted and a slow broker never stalls the
// MQTT handler or the worker. Discovery and state are "latest value"
// signals, so a flood cannot queue more than one of each. ctx ends every
// publish in flight; Run cancels it when the shutdown flush is out of time.
//
// A terminal event whose publish failed stays at the head of the outbox:
// nothing behind it leaves before it does. It is tried again after a
// backoff, or at once when the transport reconnects (Connected).
func (d *Daemon) publisher(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	defer func() {
		if !waitTimeout(&d.deletes, d.opts.ShutdownTimeout) {
			d.log.Warn("spool deletes of delivered events did not end in time; they are sent again after the restart")
		}
	}()
	tick := time.NewTicker(d.opts.StateInterval)
	defer tick.Stop()
	retry := time.NewTimer(0)
	<-retry.C
	backoff := false
	send := func() {
		if backoff {
			return
		}
		if wait := d.sendPending(ctx, false); wait > 0 {
			backoff = true
			retry.Reset(wait)
		}
	}
	for {
		select {
		case <-d.out.ready:
			send()
		case <-retry.C:
			backoff = false
			send()
		case m := <-d.retained:
			d.publish(ctx, m.topic, m.payload, true)
		case <-d.discoveryDue:
			d.publishDiscovery(ctx)
			d.publishState(ctx)
			d.publishAllSpeakerLists()
			// Connected: whatever waits for the broker goes now.
			if backoff && !retry.Stop() {
				<-retry.C
			}
			backoff = false
			send()
		case <-d.stateDue:
			d.publishState(ctx)
		case <-tick.C:
			d.publishState(ctx)
		case <-stop:
			d.flush(ctx)
			return
		}
	}
}

// sendBatch is how many events sendPending publishes before it lets the
// publisher's other work in.
const sendBatch = 64

// sendPending publishes the outbox in order until it is empty, or until
// a terminal event fails: it then returns how long to wait before trying
// again. A news event that fails is dropped (counted). shutdown makes it
// give up at the first failure and delete acknowledged spool records
// inline: the background goroutines have been waited for already.
func (d *Daemon) sendPending(ctx context.Context, shutdown bool) time.Duration {
	for n := 0; ctx.Err() == nil; n++ {
		if n == sendBatch && !shutdown {
			// Let state, discovery and stop in between during a flood.
			signal(d.out.ready)
			return 0
		}
		p := d.out.peek()
		if p == nil {
			return 0
		}
		e := p.e
		if p.maybeSent {
			e.Redelivered = true
		}
		err := d.publishEvent(ctx, e)
		if err == nil {
			d.out.pop(p)
			if p.failed > 0 || e.Redelivered {
				d.stats.eventsResent.Add(1)
			}
			d.sent(p, shutdown)
			continue
		}
		if !p.terminal {
			d.out.pop(p)
			d.stats.eventsDropped.Add(1)
			continue
		}
		p.failed++
		if !errors.Is(err, ErrNotSent) {
			p.maybeSent = true
		}
		if shutdown {
			return 0
		}
		return retryDelay(p.failed)
	}
	return 0
}

// sent deletes the spool record that kept p once the broker has it.
func (d *Daemon) sent(p *pending, inline bool) {
	if p.settled == nil {
		return
	}
	del := func() {
		<-p.settled
		if !p.durable {
			return
		}
		if err := d.opts.Spool.Delete(p.key); err != nil {
			d.stats.spoolErrors.Add(1)
			d.log.Warn("delivered event not removed from the spool: it will be sent again after a restart", "id", p.e.ID, "err", err)
		}
	}
	if inline {
		del()
		return
	}
	// Not d.background: Run waits for that while the publisher still
	// runs. The publisher waits for these itself before it returns.
	d.deletes.Add(1)
	go func() {
		defer d.deletes.Done()
		del()
	}()
}

// flush publishes the events still in the outbox and a last state, until
// ctx ends or the broker fails; terminal events kept in the spool are sent
// after the next start.
func (d *Daemon) flush(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case m := <-d.retained:
			d.publish(ctx, m.topic, m.payload, true)
			continue
		default:
		}
		break
	}
	d.sendPending(ctx, true)
	if all, terminal := d.out.counts(); all > 0 {
		d.log.Warn("events not published before shutdown", "events", all, "terminal", terminal)
	}
	d.publishState(ctx)
}

func (d *Daemon) publishEvent(ctx context.Context, e Event) error {
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: Event has only plain fields
		d.log.Error("encode event", "err", err)
		return nil
	}
	return d.publish(ctx, d.topics.event, b, false)
}

func (d *Daemon) publishState(ctx context.Context) {
	b, err := json.Marshal(d.Snapshot())
	if err != nil {
		d.log.Error("encode state", "err", err)
		return
	}
	d.publish(ctx, d.topics.state, b, true)
}

// publish sends with Options.PublishTimeout (or ctx's earlier deadline).
// Failures are logged and counted: the next state or discovery publish
// repeats what matters, and the outbox retries terminal events.
func (d *Daemon) publish(ctx context.Context, topic string, payload []byte, retained bool) error {
	ctx, cancel := context.WithTimeout(ctx, d.opts.PublishTimeout)
	defer cancel()
	err := d.opts.Transport.Publish(ctx, topic, payload, retained)
	if err != nil {
		d.stats.publishErr.Add(1)
		d.log.Warn("publish failed", "topic", topic, "err", err)
	}
	return err
}
