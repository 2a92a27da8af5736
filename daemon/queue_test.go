package daemon

import (
	"fmt"
	"slices"
	"testing"
	"time"
)

func req(id string, p Priority) Request {
	return Request{ID: id, Text: id, Priority: p, Rate: 1, TTL: time.Minute, Received: t0}
}

func popAll(q *queue, now time.Time) (ids []string) {
	for {
		r, ok, _ := q.pop(now)
		if !ok {
			return ids
		}
		ids = append(ids, r.ID)
	}
}

func mustPush(t *testing.T, q *queue, r Request) {
	t.Helper()
	if res := q.push(r, r.Received); !res.accepted || len(res.dropped) > 0 {
		t.Fatalf("push %s: %+v", r.ID, res)
	}
}

func TestQueuePriorityThenFIFO(t *testing.T) {
	q := newQueue(10, 10, time.Minute)
	for _, r := range []Request{req("l1", PriorityLow), req("n1", PriorityNormal), req("a1", PriorityAlert),
		req("l2", PriorityLow), req("n2", PriorityNormal), req("a2", PriorityAlert)} {
		mustPush(t, q, r)
	}
	want := []string{"a1", "a2", "n1", "n2", "l1", "l2"}
	if got := popAll(q, t0); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if q.len() != 0 {
		t.Fatalf("len %d after popping all", q.len())
	}
}

func TestQueueInterruptGoesFirst(t *testing.T) {
	q := newQueue(10, 10, time.Minute)
	mustPush(t, q, req("a1", PriorityAlert))
	i1 := req("i1", PriorityLow)
	i1.Interrupt = true
	mustPush(t, q, i1)
	i2 := req("i2", PriorityNormal)
	i2.Interrupt = true
	mustPush(t, q, i2)
	// Interrupts play before everything, in arrival order, whatever their
	// priority.
	want := []string{"i1", "i2", "a1"}
	if got := popAll(q, t0); !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
}

func TestQueueFullDropsLowestOldest(t *testing.T) {
	q := newQueue(3, 10, time.Minute)
	mustPush(t, q, req("n1", PriorityNormal))
	mustPush(t, q, req("l1", PriorityLow))
	mustPush(t, q, req("l2", PriorityLow))

	// Full: a normal request pushes out the oldest low one.
	res := q.push(req("n2", PriorityNormal), t0)
	if !res.accepted || len(res.dropped) != 1 || res.dropped[0].req.ID != "l1" || res.dropped[0].reason != ReasonQueueFull {
		t.Fatalf("push n2: %+v", res)
	}
	// Full: a low request ties with the queued low one, and the older of
	// the two goes (l2): stale speech is worth less than fresh.
	res = q.push(req("l3", PriorityLow), t0)
	if !res.accepted || len(res.dropped) != 1 || res.dropped[0].req.ID != "l2" {
		t.Fatalf("push l3: %+v", res)
	}
	// Full of normals: a low request is the one rejected.
	mustPushOver(t, q, req("n3", PriorityNormal), "l3")
	res = q.push(req("l4", PriorityLow), t0)
	if res.accepted || len(res.dropped) != 1 || res.dropped[0].req.ID != "l4" || res.dropped[0].reason != ReasonQueueFull {
		t.Fatalf("push l4 into a queue of normals: %+v", res)
	}
	if q.len() != 3 {
		t.Fatalf("len %d, want 3", q.len())
	}
	if got, want := popAll(q, t0), []string{"n1", "n2", "n3"}; !slices.Equal(got, want) {
		t.Fatalf("left %v, want %v", got, want)
	}
}

func mustPushOver(t *testing.T, q *queue, r Request, victim string) {
	t.Helper()
	res := q.push(r, r.Received)
	if !res.accepted || len(res.dropped) != 1 || res.dropped[0].req.ID != victim {
		t.Fatalf("push %s: %+v, want %s dropped", r.ID, res, victim)
	}
}

func TestQueueFullPrefersExpired(t *testing.T) {
	q := newQueue(2, 10, time.Minute)
	old := req("old", PriorityAlert)
	old.TTL = time.Second
	mustPush(t, q, old)
	mustPush(t, q, req("n1", PriorityNormal))
	later := t0.Add(2 * time.Second)
	r := req("l1", PriorityLow)
	r.Received = later
	res := q.push(r, later)
	if !res.accepted || len(res.dropped) != 1 || res.dropped[0].req.ID != "old" || res.dropped[0].reason != ReasonExpired {
		t.Fatalf("push into a full queue holding an expired alert: %+v", res)
	}
}

func TestQueueTTL(t *testing.T) {
	q := newQueue(10, 10, time.Minute)
	short := req("short", PriorityAlert)
	short.TTL = time.Second
	mustPush(t, q, short)
	mustPush(t, q, req("long", PriorityNormal))

	// Exactly at the deadline it may still start.
	if r, ok, exp := q.pop(t0.Add(time.Second)); !ok || r.ID != "short" || len(exp) != 0 {
		t.Fatalf("pop at the deadline: %v %v %v", r.ID, ok, exp)
	}
	short.ID = "short2"
	mustPush(t, q, short)
	r, ok, exp := q.pop(t0.Add(time.Second + time.Nanosecond))
	if !ok || r.ID != "long" || len(exp) != 1 || exp[0].ID != "short2" {
		t.Fatalf("pop after the deadline: %v %v %v", r.ID, ok, exp)
	}
}

func TestQueueDedupe(t *testing.T) {
	q := newQueue(10, 3, time.Minute)
	mustPush(t, q, req("x", PriorityNormal))
	if res := q.push(req("x", PriorityAlert), t0); !res.duplicate || res.accepted {
		t.Fatalf("second x: %+v", res)
	}
	// Still a duplicate after it played.
	popAll(q, t0)
	if res := q.push(req("x", PriorityNormal), t0.Add(59*time.Second)); !res.duplicate {
		t.Fatalf("x again within the window: %+v", res)
	}
	// Not after the window.
	if res := q.push(req("x", PriorityNormal), t0.Add(61*time.Second)); !res.accepted {
		t.Fatalf("x after the window: %+v", res)
	}
	// Nor after three newer ids pushed it out of the ring.
	for _, id := range []string{"a", "b", "c"} {
		mustPush(t, q, req(id, PriorityNormal))
	}
	if res := q.push(req("x", PriorityNormal), t0.Add(62*time.Second)); !res.accepted {
		t.Fatalf("x after three newer ids: %+v", res)
	}
	// Generated ids are not remembered (they never repeat).
	g := req("gen", PriorityNormal)
	g.idGenerated = true
	mustPush(t, q, g)
	mustPush(t, q, g)
}

func TestQueueDedupeForgetsPushedOut(t *testing.T) {
	q := newQueue(1, 10, time.Minute)
	mustPush(t, q, req("a", PriorityNormal))
	mustPushOver(t, q, req("b", PriorityNormal), "a")
	// a was dropped for queue_full: its publisher may resend it.
	mustPushOver(t, q, req("a", PriorityNormal), "b")
	// b was dropped for queue_full too, but this is the broker sending
	// its message again (DUP): b has had its answer, and is a duplicate.
	dup := req("b", PriorityNormal)
	dup.redelivered = true
	if res := q.push(dup, t0); !res.duplicate {
		t.Fatalf("the broker's redelivery of an answered id: %+v, want a duplicate", res)
	}
}

func TestQueueClear(t *testing.T) {
	q := newQueue(10, 10, time.Minute)
	mustPush(t, q, req("l", PriorityLow))
	mustPush(t, q, req("a", PriorityAlert))
	var ids []string
	for _, r := range q.clear() {
		ids = append(ids, r.ID)
	}
	if !slices.Equal(ids, []string{"a", "l"}) || q.len() != 0 {
		t.Fatalf("clear returned %v, len now %d", ids, q.len())
	}
}

// TestQueueBounded pushes many requests and checks that neither the queue
// nor the dedupe memory grows beyond its bound.
func TestQueueBounded(t *testing.T) {
	q := newQueue(32, 256, time.Hour)
	for i := range 10000 {
		r := req(fmt.Sprint("id", i), Priority(i%3))
		q.push(r, t0)
		if q.len() > 32 {
			t.Fatalf("queue grew to %d", q.len())
		}
		if i%100 == 0 {
			q.pop(t0)
		}
	}
	if len(q.seen.at) > 256 {
		t.Fatalf("dedupe holds %d ids, bound 256", len(q.seen.at))
	}
	for l := range q.lanes {
		if cap(q.lanes[l]) > 64 {
			t.Errorf("lane %d has capacity %d", l, cap(q.lanes[l]))
		}
	}
}
