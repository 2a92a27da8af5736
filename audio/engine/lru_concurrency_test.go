package engine

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSessionsConcurrentColdGetLoadsOnce(t *testing.T) {
	const callers = 50
	l := newFakeLoader()
	l.gate = make(chan struct{})
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})

	got := make(chan *fakeSession, callers)
	var wg sync.WaitGroup
	for range callers {
		wg.Go(func() {
			fs, release, err := s.Get(context.Background(), "cold")
			if err != nil {
				t.Error(err)
				return
			}
			got <- fs
			release()
		})
	}
	// Every caller is waiting before the load may finish.
	waitFor(t, "all callers to wait", func() bool { return s.Stats().Misses == callers })
	close(l.gate)
	wg.Wait()
	close(got)
	var first *fakeSession
	for fs := range got {
		if first == nil {
			first = fs
		} else if fs != first {
			t.Fatal("callers got different sessions")
		}
	}
	if n := l.loadCount("cold"); n != 1 {
		t.Errorf("Load called %d times for %d concurrent Gets, want 1", n, callers)
	}
	if st := s.Stats(); st.Loads != 1 || st.Misses != callers || st.InUse != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestSessionsFirstWaiterCancelDoesNotFailOthers(t *testing.T) {
	l := newFakeLoader()
	l.gate = make(chan struct{})
	var loadCtxErr atomic.Value
	l.fail = func(ctx context.Context, _ string) error {
		if err := ctx.Err(); err != nil {
			loadCtxErr.Store(err)
			return err
		}
		return nil
	}
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})

	firstCtx, cancelFirst := context.WithCancel(context.Background())
	firstErr := make(chan error, 1)
	go func() {
		_, release, err := s.Get(firstCtx, "v")
		if err == nil {
			release()
		}
		firstErr <- err
	}()
	<-l.started // the first caller's Get started the load
	const others = 5
	errs := make(chan error, others)
	for range others {
		go func() {
			_, release, err := s.Get(context.Background(), "v")
			if err == nil {
				release()
			}
			errs <- err
		}()
	}
	waitFor(t, "the other callers to join", func() bool { return s.Stats().Misses == others+1 })
	cancelFirst()
	if err := <-firstErr; !errors.Is(err, context.Canceled) {
		t.Errorf("first caller: %v, want context.Canceled", err)
	}
	close(l.gate)
	for range others {
		if err := <-errs; err != nil {
			t.Errorf("other caller: %v", err)
		}
	}
	if err := loadCtxErr.Load(); err != nil {
		t.Errorf("Load saw its context canceled: %v", err)
	}
	if n := l.loadCount("v"); n != 1 {
		t.Errorf("Load called %d times, want 1", n)
	}
}

func TestSessionsAllWaitersCancelStopsLoad(t *testing.T) {
	l := newFakeLoader()
	l.gate = make(chan struct{})
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, _, err := s.Get(ctx, "v")
		done <- err
	}()
	<-l.started
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Get: %v, want context.Canceled", err)
	}
	// The abandoned load sees its context canceled and fails; a new Get
	// does not join it but loads afresh.
	waitFor(t, "the abandoned load to end", func() bool { return s.Stats().LoadErrors == 1 })
	close(l.gate)
	touch(t, s, "v")
	if n := l.loadCount("v"); n != 2 {
		t.Errorf("Load called %d times, want 2", n)
	}
}

func TestSessionsLoadErrorNotCached(t *testing.T) {
	l := newFakeLoader()
	errBroken := errors.New("model file truncated")
	var failures atomic.Int32
	failures.Store(1)
	l.fail = func(context.Context, string) error {
		if failures.Add(-1) >= 0 {
			return errBroken
		}
		return nil
	}
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	if _, _, err := s.Get(t.Context(), "v"); !errors.Is(err, errBroken) {
		t.Fatalf("Get: %v, want errBroken", err)
	}
	touch(t, s, "v")
	if st := s.Stats(); st.Loads != 2 || st.LoadErrors != 1 || st.Sessions != 1 {
		t.Errorf("stats %+v, want 2 loads, 1 error, 1 session", st)
	}
}

func TestSessionsPreload(t *testing.T) {
	l := newFakeLoader()
	errMissing := errors.New("no such voice")
	l.fail = func(_ context.Context, k string) error {
		if k == "missing" {
			return errMissing
		}
		return nil
	}
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	err := s.Preload(t.Context(), "a", "missing", "b")
	if !errors.Is(err, errMissing) {
		t.Errorf("Preload: %v, want errMissing", err)
	}
	wantCached(t, s, "a", "b")
	touch(t, s, "a")
	if st := s.Stats(); st.Loads != 3 || st.Hits != 1 {
		t.Errorf("stats %+v, want 3 loads and a hit after preload", st)
	}
}

func TestSessionsClose(t *testing.T) {
	l := newFakeLoader()
	l.closeErr = errors.New("release failed")
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	touch(t, s, "idle")
	busy, releaseBusy := get(t, s, "busy")

	l.gate = make(chan struct{}) // the next load hangs until canceled
	loadErr := make(chan error, 1)
	go func() {
		_, _, err := s.Get(context.Background(), "loading")
		loadErr <- err
	}()
	<-l.started
	<-l.started
	<-l.started

	if err := s.Close(); !errors.Is(err, l.closeErr) {
		t.Errorf("Close: %v, want the session's close error", err)
	}
	if err := <-loadErr; !errors.Is(err, errSessionsClosed) {
		t.Errorf("Get during Close: %v, want errSessionsClosed", err)
	}
	if got := l.closedKeys(); len(got) != 1 || got[0] != "idle" {
		t.Errorf("closed %v, want [idle]", got)
	}
	if busy.closes.Load() != 0 {
		t.Fatal("Close closed a session in use")
	}
	releaseBusy()
	if busy.closes.Load() != 1 {
		t.Error("session in use not closed by its release after Close")
	}
	if _, _, err := s.Get(t.Context(), "idle"); !errors.Is(err, errSessionsClosed) {
		t.Errorf("Get after Close: %v, want errSessionsClosed", err)
	}
	if err := s.Preload(t.Context(), "a", "b"); !errors.Is(err, errSessionsClosed) {
		t.Errorf("Preload after Close: %v, want errSessionsClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if st := s.Stats(); st.CloseErrors != 2 || st.Sessions != 0 || st.Bytes != 0 {
		t.Errorf("stats %+v, want 2 close errors and nothing left", st)
	}
}

// TestSessionsStress mixes Gets, releases, Evicts and pressure over a few
// keys under -race; the cleanup check then proves that no session was closed
// in use, twice, or never.
func TestSessionsStress(t *testing.T) {
	l := newFakeLoader()
	l.size = func(k string) int64 { return int64(len(k)) * 10 }
	avail := &atomic.Int64{}
	avail.Store(1 << 20)
	s := newTestSessions(t, l, lruOptions[*fakeSession]{
		MaxCount: 3, MaxBytes: 120, Pinned: []string{"p"},
		Memory: fakeProbe{avail}, LowWater: 100, MemoryInterval: time.Millisecond,
	})
	keys := []string{"p", "a", "bb", "ccc", "dddd", "eeeee"}
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 1))
			for range 500 {
				k := keys[r.IntN(len(keys))]
				switch r.IntN(10) {
				case 0:
					s.Evict(k)
				case 1:
					avail.Store(r.Int64N(200))
				default:
					ctx, cancel := context.WithCancel(context.Background())
					if r.IntN(4) == 0 {
						cancel()
					}
					fs, release, err := s.Get(ctx, k)
					cancel()
					if err != nil {
						continue
					}
					fs.users.Add(1)
					if fs.closes.Load() != 0 {
						t.Errorf("Get returned closed session %s#%d", fs.key, fs.serial)
					}
					fs.users.Add(-1)
					release()
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.InUse != 0 {
		t.Errorf("InUse %d after every release", st.InUse)
	}
}
