package engine

import (
	"context"
	"sync"
	"time"
)

// Synthesis slots. Every synthesis of a sentence, for whichever front
// end (mynahd's MQTT worker, its Wyoming connections, a render request),
// holds one of Options.MaxParallel slots while it runs; the phrase cache
// and render nodes need none, so a cached phrase is answered while every
// slot is busy. The sentences waiting for a slot are served by sentence,
// not by request: a request's first sentence before any request's later
// ones (its listener hears nothing until it is made, while a later one
// only has to be ready before the one before it has played), and among
// first sentences the shortest first, so a one-line "The door is open."
// does not wait behind a paragraph's opening. A sentence that has waited
// longer than agingLimit goes before every one that has not, oldest
// first, so nothing waits for ever behind a stream of short ones.

// agingLimit is how long a sentence waits before it is served in arrival
// order ahead of the others.
const agingLimit = 2 * time.Second

// scheduler hands out synthesis slots.
type scheduler struct {
	mu      sync.Mutex
	free    int
	waiting []*slotWaiter
	seq     uint64
	now     func() time.Time
}

// slotWaiter is one sentence waiting for a slot; ready is closed when it
// has one.
type slotWaiter struct {
	first bool
	runes int
	seq   uint64
	since time.Time
	ready chan struct{}
	given bool
}

func newScheduler(n int) *scheduler { return &scheduler{free: n, now: time.Now} }

// acquire waits for a slot for one sentence of runes runes (first: the
// first of its request) and returns the func that gives it back. It
// fails only when ctx ends first.
func (s *scheduler) acquire(ctx context.Context, first bool, runes int) (release func(), err error) {
	s.mu.Lock()
	if s.free > 0 && len(s.waiting) == 0 {
		s.free--
		s.mu.Unlock()
		return s.release, nil
	}
	s.seq++
	w := &slotWaiter{first: first, runes: runes, seq: s.seq, since: s.now(), ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.mu.Unlock()
	select {
	case <-w.ready:
		return s.release, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		if w.given {
			// Given a slot as ctx ended: pass it on.
			s.free++
			s.handOutLocked()
		} else {
			s.removeLocked(w)
		}
		return nil, ctx.Err()
	}
}

// release gives a slot back to the best waiting sentence, if any.
func (s *scheduler) release() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.free++
	s.handOutLocked()
}

// handOutLocked gives the free slots to the best waiters; s.mu is held.
func (s *scheduler) handOutLocked() {
	for s.free > 0 && len(s.waiting) > 0 {
		now := s.now()
		best := 0
		for i := 1; i < len(s.waiting); i++ {
			if before(s.waiting[i], s.waiting[best], now) {
				best = i
			}
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.free--
		w.given = true
		close(w.ready)
	}
}

func (s *scheduler) removeLocked(w *slotWaiter) {
	for i, x := range s.waiting {
		if x == w {
			s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
			return
		}
	}
}

// before reports whether a is served before b at now.
func before(a, b *slotWaiter, now time.Time) bool {
	aOld, bOld := now.Sub(a.since) >= agingLimit, now.Sub(b.since) >= agingLimit
	switch {
	case aOld != bOld:
		return aOld
	case aOld: // both waited long: oldest first
		return a.seq < b.seq
	case a.first != b.first:
		return a.first
	case a.first && a.runes != b.runes:
		return a.runes < b.runes
	}
	return a.seq < b.seq
}
