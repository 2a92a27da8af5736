package engine

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
)

// order acquires a slot for each waiter while the only slot is held,
// then releases it and records who got it after whom.
func order(t *testing.T, s *scheduler, waiters []struct {
	name  string
	first bool
	runes int
}) []string {
	t.Helper()
	hold, err := s.acquire(context.Background(), true, 1)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var got []string
	var wg sync.WaitGroup
	for i, w := range waiters {
		wg.Go(func() {
			release, err := s.acquire(context.Background(), w.first, w.runes)
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			got = append(got, w.name)
			mu.Unlock()
			release()
		})
		// Queued in this order (seq), each before the next starts.
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(time.Millisecond) {
			s.mu.Lock()
			n := len(s.waiting)
			s.mu.Unlock()
			if n == i+1 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("waiter %s never queued", w.name)
			}
		}
	}
	hold()
	wg.Wait()
	return got
}

func TestSchedulerServesBySentence(t *testing.T) {
	s := newScheduler(1)
	got := order(t, s, []struct {
		name  string
		first bool
		runes int
	}{
		{"later-a", false, 10},
		{"first-long", true, 200},
		{"later-b", false, 5},
		{"first-short", true, 20},
		{"first-mid", true, 80},
	})
	want := []string{"first-short", "first-mid", "first-long", "later-a", "later-b"}
	if len(got) != len(want) {
		t.Fatalf("served %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("served %v, want %v (first sentences shortest first, then the rest in arrival order)", got, want)
		}
	}
}

func TestSchedulerAging(t *testing.T) {
	s := newScheduler(1)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	s.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	hold, _ := s.acquire(context.Background(), true, 1)
	got := make(chan string, 2)
	var wg sync.WaitGroup
	wg.Go(func() {
		release, _ := s.acquire(context.Background(), false, 100)
		got <- "old later sentence"
		release()
	})
	for s.queued() != 1 {
		time.Sleep(time.Millisecond)
	}
	mu.Lock()
	now = now.Add(agingLimit)
	mu.Unlock()
	wg.Go(func() {
		release, _ := s.acquire(context.Background(), true, 3)
		got <- "new short first sentence"
		release()
	})
	for s.queued() != 2 {
		time.Sleep(time.Millisecond)
	}
	hold()
	wg.Wait()
	if first := <-got; first != "old later sentence" {
		t.Errorf("%s served first: a sentence that waited %v must go before one that just came", first, agingLimit)
	}
}

func (s *scheduler) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.waiting)
}

func TestSchedulerCancel(t *testing.T) {
	s := newScheduler(1)
	hold, _ := s.acquire(context.Background(), true, 1)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := s.acquire(ctx, true, 1)
		errc <- err
	}()
	for s.queued() != 1 {
		time.Sleep(time.Millisecond)
	}
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("acquire = %v, want context.Canceled", err)
	}
	if n := s.queued(); n != 0 {
		t.Errorf("%d waiters left after the cancel", n)
	}
	hold()
	// The slot is free again, and only one: two holders never run at once.
	a, err := s.acquire(context.Background(), true, 1)
	if err != nil {
		t.Fatal(err)
	}
	short, stop := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer stop()
	if _, err := s.acquire(short, true, 1); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a second slot from a scheduler of one: %v", err)
	}
	a()
}

// A phrase-cache hit needs no synthesis slot: it is answered while every
// slot is taken, and a miss waits for one.
func TestCacheHitsTakeNoSlot(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	vs, _ := storeEngine(t, dir, nil)
	vs.slots = newScheduler(1)
	speakAll(t, vs, "The door is open.") // cached now
	hold, err := vs.slots.acquire(context.Background(), true, 1)
	if err != nil {
		t.Fatal(err)
	}
	if s := speakAll(t, vs, "The door is open."); !s.cached[0] {
		t.Fatal("not a hit")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err = vs.Speak(ctx, Request{Text: "A sentence never said."}, func(Chunk) error { return nil })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a miss with every slot taken: %v, want it waiting until its context ended", err)
	}
	hold()
	if s := speakAll(t, vs, "A sentence never said."); s.cached[0] {
		t.Error("the miss was a hit")
	}
}
