package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSession stands in for a loaded voice. users counts callers between
// Get and release so that Close can catch a session closed while in use.
type fakeSession struct {
	key    string
	serial int
	users  atomic.Int32
	closes atomic.Int32
}

// fakeLoader records every Load and Close. Its function fields are the
// knobs: size, fail and gate decide what Load does.
type fakeLoader struct {
	mu     sync.Mutex
	loaded []*fakeSession
	loads  map[string]int
	closed []string
	// violations are closes of sessions in use or closed twice.
	violations []string

	size func(key string) int64
	fail func(ctx context.Context, key string) error
	// gate, when set, holds every Load until it is closed or ctx is done.
	gate chan struct{}
	// started receives the key of each Load as it begins (buffered).
	started  chan string
	closeErr error
}

func newFakeLoader() *fakeLoader {
	return &fakeLoader{loads: map[string]int{}, started: make(chan string, 1000)}
}

func (l *fakeLoader) Load(ctx context.Context, key string) (*fakeSession, int64, error) {
	select {
	case l.started <- key:
	default: // nobody is watching (the stress test loads thousands)
	}
	l.mu.Lock()
	l.loads[key]++
	l.mu.Unlock()
	if l.gate != nil {
		select {
		case <-l.gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	if l.fail != nil {
		if err := l.fail(ctx, key); err != nil {
			return nil, 0, err
		}
	}
	var size int64
	if l.size != nil {
		size = l.size(key)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fs := &fakeSession{key: key, serial: len(l.loaded)}
	l.loaded = append(l.loaded, fs)
	return fs, size, nil
}

func (l *fakeLoader) Close(fs *fakeSession) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := fs.users.Load(); n != 0 {
		l.violations = append(l.violations, fmt.Sprintf("%s#%d closed with %d users", fs.key, fs.serial, n))
	}
	if fs.closes.Add(1) > 1 {
		l.violations = append(l.violations, fmt.Sprintf("%s#%d closed twice", fs.key, fs.serial))
	}
	l.closed = append(l.closed, fs.key)
	return l.closeErr
}

func (l *fakeLoader) loadCount(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.loads[key]
}

func (l *fakeLoader) closedKeys() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.closed...)
}

// newTestSessions builds a cache over l and, at cleanup, closes it and
// checks that every loaded session was closed exactly once and never while
// in use. Tests must release what they Get before they end.
func newTestSessions(t *testing.T, l *fakeLoader, opts lruOptions[*fakeSession]) *sessionLRU[*fakeSession] {
	t.Helper()
	opts.Load = l.Load
	opts.Close = l.Close
	s := newSessionLRU(&opts)
	t.Cleanup(func() {
		if err := s.Close(); err != nil && !errors.Is(err, l.closeErr) {
			t.Errorf("Close: %v", err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		for _, v := range l.violations {
			t.Errorf("violation: %s", v)
		}
		for _, fs := range l.loaded {
			if fs.closes.Load() != 1 {
				t.Errorf("%s#%d closed %d times after Close", fs.key, fs.serial, fs.closes.Load())
			}
		}
	})
	return s
}

// get is Get that fails the test on error and marks the session in use.
func get(t *testing.T, s *sessionLRU[*fakeSession], key string) (*fakeSession, func()) {
	t.Helper()
	fs, release, err := s.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("Get(%q): %v", key, err)
	}
	if fs.key != key {
		t.Fatalf("Get(%q) returned session of %q", key, fs.key)
	}
	fs.users.Add(1)
	return fs, func() { fs.users.Add(-1); release() }
}

// touch gets and releases key at once.
func touch(t *testing.T, s *sessionLRU[*fakeSession], key string) {
	t.Helper()
	_, release := get(t, s, key)
	release()
}

// waitFor polls cond; the deadline only guards against a hang.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func cachedKeys(s *sessionLRU[*fakeSession]) map[string]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := map[string]bool{}
	for k := range s.entries {
		m[k] = true
	}
	return m
}

func wantCached(t *testing.T, s *sessionLRU[*fakeSession], want ...string) {
	t.Helper()
	got := cachedKeys(s)
	if len(got) != len(want) {
		t.Errorf("cached %v, want %v", got, want)
		return
	}
	for _, k := range want {
		if !got[k] {
			t.Errorf("cached %v, want %v", got, want)
			return
		}
	}
}

func TestSessionsWarmHitDoesNotLoad(t *testing.T) {
	l := newFakeLoader()
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	first, release := get(t, s, "amy")
	release()
	second, release := get(t, s, "amy")
	release()
	if first != second {
		t.Errorf("warm Get returned a different session")
	}
	if n := l.loadCount("amy"); n != 1 {
		t.Errorf("Load called %d times, want 1", n)
	}
	st := s.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.Loads != 1 || st.Sessions != 1 || st.InUse != 0 {
		t.Errorf("stats %+v, want 1 hit, 1 miss, 1 load, 1 session, none in use", st)
	}
}

func TestSessionsLRUByCount(t *testing.T) {
	l := newFakeLoader()
	s := newTestSessions(t, l, lruOptions[*fakeSession]{MaxCount: 2})
	touch(t, s, "a")
	touch(t, s, "b")
	touch(t, s, "a") // b is now the least recently used
	touch(t, s, "c")
	wantCached(t, s, "a", "c")
	if got := l.closedKeys(); len(got) != 1 || got[0] != "b" {
		t.Errorf("closed %v, want [b]", got)
	}
	if st := s.Stats(); st.Evictions != 1 {
		t.Errorf("evictions %d, want 1", st.Evictions)
	}
}

func TestSessionsDefaultMaxCount(t *testing.T) {
	l := newFakeLoader()
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	for i := range DefaultMaxSessions + 2 {
		touch(t, s, fmt.Sprint(i))
	}
	if s.Len() != DefaultMaxSessions {
		t.Errorf("Len %d, want DefaultMaxSessions=%d", s.Len(), DefaultMaxSessions)
	}
}

func TestSessionsLRUByBytes(t *testing.T) {
	l := newFakeLoader()
	sizes := map[string]int64{"a": 40, "b": 40, "c": 30, "big": 150}
	l.size = func(k string) int64 { return sizes[k] }
	s := newTestSessions(t, l, lruOptions[*fakeSession]{MaxCount: -1, MaxBytes: 100})
	touch(t, s, "a")
	touch(t, s, "b")
	touch(t, s, "a")
	touch(t, s, "c") // 110 bytes: b goes
	wantCached(t, s, "a", "c")
	if s.Bytes() != 70 {
		t.Errorf("Bytes %d, want 70", s.Bytes())
	}

	// A session bigger than the whole budget is still served, but it
	// displaces everything idle and is closed as soon as it is released.
	fs, release := get(t, s, "big")
	if fs.closes.Load() != 0 {
		t.Fatal("big session closed while in use")
	}
	wantCached(t, s, "big")
	release()
	wantCached(t, s)
	if s.Bytes() != 0 {
		t.Errorf("Bytes %d after big was released, want 0", s.Bytes())
	}
}

func TestSessionsNegativeSizeIsAnError(t *testing.T) {
	l := newFakeLoader()
	l.size = func(string) int64 { return -1 }
	s := newTestSessions(t, l, lruOptions[*fakeSession]{})
	if _, _, err := s.Get(t.Context(), "a"); err == nil {
		t.Fatal("Get succeeded with a negative size")
	}
	if got := l.closedKeys(); len(got) != 1 {
		t.Errorf("closed %v, want the rejected session closed", got)
	}
	if s.Len() != 0 {
		t.Errorf("Len %d, want 0", s.Len())
	}
}

func TestSessionsPinnedNeverEvicted(t *testing.T) {
	l := newFakeLoader()
	sizes := map[string]int64{"pin1": 60, "pin2": 60, "x": 10, "y": 10}
	l.size = func(k string) int64 { return sizes[k] }
	avail := &atomic.Int64{}
	avail.Store(1 << 30)
	s := newTestSessions(t, l, lruOptions[*fakeSession]{
		MaxCount: 1,
		MaxBytes: 100,
		Pinned:   []string{"pin1", "pin2"},
		Memory:   fakeProbe{avail},
		LowWater: 1000,
		ProbeGap: -1,
	})
	if err := s.Preload(t.Context(), "pin1", "pin2", "x"); err != nil {
		t.Fatal(err)
	}
	// The pins alone exceed both bounds: they stay, everything else goes.
	wantCached(t, s, "pin1", "pin2")
	touch(t, s, "y")
	touch(t, s, "pin1")
	wantCached(t, s, "pin1", "pin2")

	// Memory pressure closes no pin either.
	avail.Store(0)
	touch(t, s, "pin2")
	wantCached(t, s, "pin1", "pin2")
	if n := l.loadCount("pin1") + l.loadCount("pin2"); n != 2 {
		t.Errorf("pins loaded %d times, want 2", n)
	}
	// Evict is explicit and does remove a pin.
	if !s.Evict("pin1") {
		t.Error("Evict(pin1) = false")
	}
	wantCached(t, s, "pin2")
}

func TestSessionsInUseNotClosedUntilRelease(t *testing.T) {
	l := newFakeLoader()
	s := newTestSessions(t, l, lruOptions[*fakeSession]{MaxCount: 1})
	a, releaseA := get(t, s, "a")
	b, releaseB := get(t, s, "b")
	// a is over the bound but in use: it stays open and cached.
	if a.closes.Load() != 0 {
		t.Fatal("a closed while in use")
	}
	wantCached(t, s, "a", "b")
	if st := s.Stats(); st.InUse != 2 {
		t.Errorf("InUse %d, want 2", st.InUse)
	}
	releaseA()
	if a.closes.Load() != 1 {
		t.Error("a not closed after its release put the cache back under its bound")
	}
	wantCached(t, s, "b")

	// Evict of a session in use defers the close to the last release; a
	// Get meanwhile loads a fresh one.
	if !s.Evict("b") {
		t.Fatal("Evict(b) = false")
	}
	if b.closes.Load() != 0 {
		t.Fatal("b closed while in use")
	}
	b2, releaseB2 := get(t, s, "b")
	if b2 == b {
		t.Error("Get after Evict returned the evicted session")
	}
	if s.Bytes() != 0 || s.Stats().InUse != 2 {
		t.Errorf("stats %+v, want both b sessions in use", s.Stats())
	}
	releaseB()
	releaseB() // a second release does nothing
	if b.closes.Load() != 1 {
		t.Errorf("evicted b closed %d times after release, want 1", b.closes.Load())
	}
	if b2.closes.Load() != 0 {
		t.Error("double release closed the new session")
	}
	releaseB2()
}

func TestSessionsEach(t *testing.T) {
	s := newSessionLRU(&lruOptions[string]{
		Load: func(_ context.Context, key string) (string, int64, error) { return "v-" + key, 1, nil },
	})
	defer s.Close()
	for _, k := range []string{"a", "b", "c"} {
		if err := s.Preload(context.Background(), k); err != nil {
			t.Fatal(err)
		}
	}
	if _, release, err := s.Get(context.Background(), "a"); err != nil {
		t.Fatal(err)
	} else {
		release()
	}
	var got []string
	s.Each(func(key, v string) { got = append(got, key+"="+v) })
	if want := []string{"a=v-a", "c=v-c", "b=v-b"}; !slices.Equal(got, want) {
		t.Errorf("Each visited %v, want %v (most recently used first)", got, want)
	}
	var again []string
	s.Each(func(key, _ string) { again = append(again, key) })
	if !slices.Equal(again, []string{"a", "c", "b"}) {
		t.Errorf("Each changed the order: %v", again)
	}
}

// Replace puts a new session in place of a cached one: a Get before it
// keeps the old one, which is closed by its last release; Gets after it
// have the new one; nothing is replaced when the key is not cached or
// replace says no.
func TestLRUReplace(t *testing.T) {
	l := newFakeLoader()
	s := newTestSessions(t, l, lruOptions[*fakeSession]{Pinned: []string{"a"}})
	old, release := get(t, s, "a")
	next := &fakeSession{key: "a", serial: -1}
	if s.Replace("a", func(*fakeSession) bool { return false }, next, 0) {
		t.Fatal("replaced although replace said no")
	}
	if s.Replace("b", func(*fakeSession) bool { return true }, next, 0) {
		t.Fatal("replaced a key that is not cached")
	}
	if !s.Replace("a", func(v *fakeSession) bool { return v == old }, next, 0) {
		t.Fatal("not replaced")
	}
	if got := l.closedKeys(); len(got) != 0 {
		t.Fatalf("the old session closed while in use: %v", got)
	}
	got, release2 := get(t, s, "a")
	if got != next {
		t.Fatalf("Get after Replace: session #%d", got.serial)
	}
	release()
	if closed := l.closedKeys(); len(closed) != 1 || old.closes.Load() != 1 {
		t.Fatalf("the old session not closed by its last release: %v", closed)
	}
	release2()
	if st := s.Stats(); st.Replacements != 1 || st.Loads != 1 || st.Sessions != 1 {
		t.Errorf("stats %+v", st)
	}
	// The new one is the cache's now: Close closes it (newTestSessions
	// checks every loaded one; this one it did not load).
	s.Close()
	if next.closes.Load() != 1 {
		t.Errorf("the new session closed %d times by Close", next.closes.Load())
	}
}
