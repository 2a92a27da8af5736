package daemon

import (
	"time"
)

// Queue defaults (Options.QueueSize, Options.DedupeIDs, Options.DedupeWindow).
const (
	DefaultQueueSize    = 32
	DefaultDedupeIDs    = 256
	DefaultDedupeWindow = 10 * time.Minute
)

// Lanes of the queue, in the order they play: interrupt requests first,
// then by priority.
const (
	laneLow = iota
	laneNormal
	laneAlert
	laneInterrupt
	numLanes
)

func laneOf(r *Request) int {
	switch {
	case r.Interrupt:
		return laneInterrupt
	case r.Priority >= PriorityAlert:
		return laneAlert
	case r.Priority <= PriorityLow:
		return laneLow
	}
	return laneNormal
}

// dropped is a request the queue let go, and why (a Reason constant).
type dropped struct {
	req    Request
	reason string
}

// pushResult says what push did: accepted (queued) or duplicate, plus the
// requests that left the queue on the way (the new one itself when it was
// the lowest-priority request of a full queue).
type pushResult struct {
	accepted  bool
	duplicate bool
	dropped   []dropped
}

// queue holds requests waiting to play: bounded, ordered by lane then
// arrival, with a duplicate-id filter. It is not safe for concurrent use;
// the daemon guards it with its mutex. Its size is small (tens), so plain
// slices beat anything cleverer.
type queue struct {
	size  int
	lanes [numLanes][]Request
	n     int
	seen  *dedupe
}

func newQueue(size, dedupeIDs int, dedupeWindow time.Duration) *queue {
	return &queue{size: size, seen: newDedupe(dedupeIDs, dedupeWindow)}
}

func (q *queue) len() int { return q.n }

// push adds r. A client id seen within the dedupe window (and not since
// pushed out) is a duplicate: MQTT QoS 1 may redeliver, and a publisher
// may retry. When the queue is full, expired requests go first; if it is
// still full, the oldest request of the lowest lane goes, which is r
// itself when r's lane is lower than everything queued.
func (q *queue) push(r Request, now time.Time) pushResult {
	var res pushResult
	if !r.idGenerated {
		// An id pushed out for queue_full may come again from its
		// publisher (told queue_full), not from the broker resending the
		// message it already had an answer to.
		if seen, pushedOut := q.seen.lookup(r.ID, now); seen && !(pushedOut && !r.redelivered) {
			res.duplicate = true
			return res
		}
		q.seen.add(r.ID, now)
	}
	if q.n >= q.size {
		res.dropped = q.dropExpired(now)
	}
	if q.n >= q.size {
		low := q.lowestLane()
		if laneOf(&r) < low {
			q.seen.forget(r.ID)
			res.dropped = append(res.dropped, dropped{r, ReasonQueueFull})
			return res
		}
		victim := q.lanes[low][0]
		q.removeFirst(low)
		// Forgotten so that the publisher, told queue_full, may resend
		// the same id.
		q.seen.forget(victim.ID)
		res.dropped = append(res.dropped, dropped{victim, ReasonQueueFull})
	}
	l := laneOf(&r)
	q.lanes[l] = append(q.lanes[l], r)
	q.n++
	res.accepted = true
	return res
}

// pop returns the next request to play. Requests whose TTL passed before
// their turn come back in expired instead: speech that is late is wrong
// ("the door is open" an hour later).
func (q *queue) pop(now time.Time) (r Request, ok bool, expired []Request) {
	for l := numLanes - 1; l >= 0; l-- {
		for len(q.lanes[l]) > 0 {
			r = q.lanes[l][0]
			q.removeFirst(l)
			if now.After(r.Expires()) {
				expired = append(expired, r)
				continue
			}
			return r, true, expired
		}
	}
	return Request{}, false, expired
}

// clear empties the queue and returns what it held, in play order.
func (q *queue) clear() []Request {
	out := make([]Request, 0, q.n)
	for l := numLanes - 1; l >= 0; l-- {
		out = append(out, q.lanes[l]...)
		q.lanes[l] = nil
	}
	q.n = 0
	return out
}

func (q *queue) dropExpired(now time.Time) []dropped {
	var out []dropped
	for l := range q.lanes {
		kept := q.lanes[l][:0]
		for _, r := range q.lanes[l] {
			if now.After(r.Expires()) {
				out = append(out, dropped{r, ReasonExpired})
				q.n--
				continue
			}
			kept = append(kept, r)
		}
		clear(q.lanes[l][len(kept):]) // let the dropped texts be collected
		q.lanes[l] = kept
	}
	return out
}

func (q *queue) lowestLane() int {
	for l := range q.lanes {
		if len(q.lanes[l]) > 0 {
			return l
		}
	}
	return laneInterrupt
}

// removeFirst shifts rather than reslices so that a long-running daemon
// does not keep reallocating lanes that creep forward in memory.
func (q *queue) removeFirst(l int) {
	s := q.lanes[l]
	copy(s, s[1:])
	s[len(s)-1] = Request{}
	q.lanes[l] = s[:len(s)-1]
	q.n--
}

// dedupe remembers the most recent client ids, at most max of them and
// each for window.
type dedupe struct {
	window time.Duration
	ring   []seenID
	next   int
	seq    uint64
	at     map[string]seenID
}

// seenID is one sighting; seq tells a stale ring slot from a newer sighting
// of the same id (a fake clock may give both the same time).
type seenID struct {
	id  string
	at  time.Time
	seq uint64
	// pushedOut: the request was dropped for queue_full, so its publisher
	// may send the id again (a broker's redelivery stays a duplicate).
	pushedOut bool
}

func newDedupe(max int, window time.Duration) *dedupe {
	return &dedupe{window: window, ring: make([]seenID, max), at: make(map[string]seenID, max)}
}

func (d *dedupe) contains(id string, now time.Time) bool {
	seen, _ := d.lookup(id, now)
	return seen
}

// lookup says whether id was seen within the window, and whether its
// request was pushed out for queue_full since.
func (d *dedupe) lookup(id string, now time.Time) (seen, pushedOut bool) {
	s, ok := d.at[id]
	if !ok || now.Sub(s.at) >= d.window {
		return false, false
	}
	return true, s.pushedOut
}

func (d *dedupe) add(id string, now time.Time) {
	old := d.ring[d.next]
	if cur, ok := d.at[old.id]; ok && cur.seq == old.seq {
		delete(d.at, old.id)
	}
	d.seq++
	s := seenID{id: id, at: now, seq: d.seq}
	d.ring[d.next] = s
	d.next = (d.next + 1) % len(d.ring)
	d.at[id] = s
}

// forget marks id's request as pushed out for queue_full: its publisher
// may send the id again.
func (d *dedupe) forget(id string) {
	if s, ok := d.at[id]; ok {
		s.pushedOut = true
		d.at[id] = s
	}
}
