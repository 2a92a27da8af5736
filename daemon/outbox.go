package daemon

import (
	"sync"
	"time"
)

// The outbox holds events between emit and the publisher. Two kinds of
// event go through it, and they are treated differently when the broker
// is slow or gone:
//
//   - A terminal event (finished, failed, dropped or done, of a request
//     with an id) is the answer a caller waits for. It is never shed in
//     favour of another event, and a publish that fails is retried, in
//     order, after the next reconnect or a backoff. When the request was
//     spooled, its spool record is replaced by the event (spool.go) and
//     deleted only once the broker has acknowledged it, so a crash or a
//     restart sends it again (with redelivered set: the first copy may
//     have reached the broker before the acknowledgement was lost).
//   - Every other event (queued, started, warnings, evicted, and the
//     failures of control commands without an id) is news: when the
//     outbox is full the newest is dropped, and a publish that fails is
//     not retried. Both are counted.
//
// Terminal events are bounded too, by maxPendingTerminal: the broker
// brings the commands they answer, so while it is gone no new ones arrive,
// and a flood makes at most one per accepted message. Beyond the bound
// the oldest is let go from memory (counted in events_lost); one whose
// spool record holds it is still sent after the next start.

// maxPendingTerminal bounds the terminal events waiting in memory: every
// request the queue can hold plus a flood's worth of answers, a few
// megabytes at most.
const maxPendingTerminal = 4 * MaxQueueSize

// Retry backoff of a terminal event whose publish failed. A reconnect
// retries at once.
const (
	retryMin = 500 * time.Millisecond
	retryMax = 30 * time.Second
)

// pending is one event waiting for the publisher.
type pending struct {
	e        Event
	terminal bool
	// settled is closed once the spool write that keeps the event has
	// returned; durable says whether it succeeded (read after settled).
	// Both are nil/false for an event kept only in memory.
	settled chan struct{}
	durable bool
	key     string // the spool record's key, when settled is set
	// failed counts failed publishes of this event; maybeSent says one
	// of them may have reached the broker all the same (a timeout, a
	// connection lost before the acknowledgement), so that the next copy
	// is marked redelivered.
	failed    int
	maybeSent bool
}

// outbox is a FIFO of pending events under its own mutex: emit may run
// under d.mu or on the MQTT client's goroutine and must never block.
type outbox struct {
	mu       sync.Mutex
	items    []*pending
	news     int // items that are not terminal
	maxNews  int
	maxTotal int
	ready    chan struct{} // capacity 1: items were added
}

func newOutbox(maxNews int) *outbox {
	return &outbox{maxNews: maxNews, maxTotal: maxNews + maxPendingTerminal, ready: make(chan struct{}, 1)}
}

// push adds p and reports what it had to let go: a news event dropped
// (shed) or a terminal event let go from memory (lost).
func (o *outbox) push(p *pending) (shed, lost int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !p.terminal {
		if o.news >= o.maxNews {
			return 1, 0
		}
		o.news++
		o.items = append(o.items, p)
		signal(o.ready)
		return 0, 0
	}
	if len(o.items) >= o.maxTotal {
		// Only terminal events beyond maxNews: let the oldest go.
		for i, q := range o.items {
			if q.terminal {
				o.items = append(o.items[:i], o.items[i+1:]...)
				lost = 1
				break
			}
		}
	}
	o.items = append(o.items, p)
	signal(o.ready)
	return 0, lost
}

// peek returns the oldest event, or nil.
func (o *outbox) peek() *pending {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.items) == 0 {
		return nil
	}
	return o.items[0]
}

// pop removes p, the event peek returned.
func (o *outbox) pop(p *pending) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.items) == 0 || o.items[0] != p {
		return // let go by push meanwhile
	}
	o.items[0] = nil
	o.items = o.items[1:]
	if !p.terminal {
		o.news--
	}
	if len(o.items) == 0 {
		o.items = nil // let the backing array go after a flood
	}
}

// counts returns the events waiting: all, and the terminal ones.
func (o *outbox) counts() (all, terminal int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.items), len(o.items) - o.news
}

// retryDelay is the backoff after the n-th failed publish of an event.
func retryDelay(n int) time.Duration {
	d := retryMin
	for i := 1; i < n && d < retryMax; i++ {
		d *= 2
	}
	return min(d, retryMax)
}
