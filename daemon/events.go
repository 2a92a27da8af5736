package daemon

import (
	"context"
	"encoding/json"
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
	// Command names the control topic (stop, volume/set, voice/set,
	// cache/purge) a failed event is about.
	Command string `json:"command,omitempty"`
	Owner   string `json:"owner,omitempty"`
	// FirstAudioMS is received → first PCM accepted by the sink (started
	// and finished events).
	FirstAudioMS *float64 `json:"first_audio_ms,omitempty"`
	// LatencyMS is received → finished (all audio drained).
	LatencyMS *float64 `json:"latency_ms,omitempty"`
	Sentences *int     `json:"sentences,omitempty"`
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
	// Speaker names the speaker of a speaker/enroll, speaker/forget or
	// evicted event.
	Speaker string `json:"speaker,omitempty"`
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
)

// State is the retained JSON on mynah/<node>/state, published on every
// change and every Options.StateInterval.
type State struct {
	State    string   `json:"state"` // idle or speaking
	Queue    int      `json:"queue"` // requests waiting, not counting the one playing
	Voice    string   `json:"voice"` // the default voice ("" = the engine's)
	Volume   float64  `json:"volume"`
	Counters Counters `json:"counters"`
	// Cache is the phrase cache's figures; absent without a cache.
	Cache *CacheStats `json:"cache,omitempty"`
	Time  time.Time   `json:"time"`
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
	// EventsDropped counts events lost because the outbox was full (the
	// broker slower than the events, e.g. during a flood).
	EventsDropped uint64 `json:"events_dropped"`
	PublishErrors uint64 `json:"publish_errors"`
	// SpoolErrors counts failed spool writes, deletes and reads: requests
	// a crash could lose, or that could be spoken twice.
	SpoolErrors uint64 `json:"spool_errors"`
}

type counters struct {
	received, queued, started, finished, failed, dropped   atomic.Uint64
	duplicates, retainedIgnored, eventsDropped, publishErr atomic.Uint64
	spoolErrors                                            atomic.Uint64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Received: c.received.Load(), Queued: c.queued.Load(), Started: c.started.Load(),
		Finished: c.finished.Load(), Failed: c.failed.Load(), Dropped: c.dropped.Load(),
		Duplicates: c.duplicates.Load(), RetainedIgnored: c.retainedIgnored.Load(),
		EventsDropped: c.eventsDropped.Load(), PublishErrors: c.publishErr.Load(),
		SpoolErrors: c.spoolErrors.Load(),
	}
}

func millis(d time.Duration) *float64 {
	ms := math.Round(float64(d)/float64(time.Microsecond)) / 1000
	return &ms
}

// emit queues an event for the publisher without ever blocking: the
// caller may be the MQTT client's goroutine or hold d.mu. When the outbox
// is full the event is counted and lost. Every event follows a counter
// change, so the state is due too.
func (d *Daemon) emit(e Event) {
	e.Time = d.now()
	select {
	case d.outbox <- e:
	default:
		d.stats.eventsDropped.Add(1)
	}
	d.markState()
}

func (d *Daemon) emitDropped(r *Request, reason string) {
	if reason == ReasonShutdown && r.spool != nil {
		// Not dropped: spoken after the restart (spool.go).
		return
	}
	d.release(r)
	d.stats.dropped.Add(1)
	d.log.Debug("request dropped", "id", r.ID, "reason", reason)
	d.emit(Event{ID: r.ID, State: EventDropped, Reason: reason, Owner: r.Owner})
}

func (d *Daemon) emitFailed(id, owner, command, reason string, err error) {
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
	d.emit(e)
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
func (d *Daemon) publisher(ctx context.Context, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	tick := time.NewTicker(d.opts.StateInterval)
	defer tick.Stop()
	for {
		select {
		case e := <-d.outbox:
			d.publishEvent(ctx, e)
		case m := <-d.retained:
			d.publish(ctx, m.topic, m.payload, true)
		case <-d.discoveryDue:
			d.publishDiscovery(ctx)
			d.publishState(ctx)
			d.publishAllSpeakerLists()
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

// flush publishes the events still in the outbox and a last state, until
// ctx ends.
func (d *Daemon) flush(ctx context.Context) {
	for ctx.Err() == nil {
		select {
		case e := <-d.outbox:
			d.publishEvent(ctx, e)
		case m := <-d.retained:
			d.publish(ctx, m.topic, m.payload, true)
		default:
			d.publishState(ctx)
			return
		}
	}
}

func (d *Daemon) publishEvent(ctx context.Context, e Event) {
	b, err := json.Marshal(e)
	if err != nil { // cannot happen: Event has only plain fields
		d.log.Error("encode event", "err", err)
		return
	}
	d.publish(ctx, d.topics.event, b, false)
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
// repeats what matters, and events are best effort by design.
func (d *Daemon) publish(ctx context.Context, topic string, payload []byte, retained bool) {
	ctx, cancel := context.WithTimeout(ctx, d.opts.PublishTimeout)
	defer cancel()
	if err := d.opts.Transport.Publish(ctx, topic, payload, retained); err != nil {
		d.stats.publishErr.Add(1)
		d.log.Warn("publish failed", "topic", topic, "err", err)
	}
}
