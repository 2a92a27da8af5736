package voice

import (
	"errors"
	"log/slog"
	"math"
	"testing"
	"time"
)

// The pipeline's caches on their own, with a clock the test moves.

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func testCaches(o PipelineOptions) (*kvCaches, *fakeClock) {
	clock := &fakeClock{t: time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)}
	o.Clock = clock.now
	o = (&o).withDefaults()
	return newKVCaches(o, slog.New(slog.DiscardHandler)), clock
}

// state is a one-layer KV of floats/2 keys and as many values: 4·floats
// bytes.
func state(floats int) *kvState {
	return &kvState{seq: 1, keys: [][]float32{make([]float32, floats/2)}, values: [][]float32{make([]float32, floats/2)}}
}

func TestPrefixCacheLRUByCount(t *testing.T) {
	c, _ := testCaches(PipelineOptions{MaxPrefixes: 2})
	a, b, d := state(8), state(8), state(8)
	c.putPrefix("a", a)
	c.putPrefix("b", b)
	if got, ok := c.prefix("a"); !ok || got != a { // a is now the most recent
		t.Fatal("a missing")
	}
	c.putPrefix("d", d) // evicts b, the least recently used
	if _, ok := c.prefix("b"); ok {
		t.Error("b survived although least recently used")
	}
	for _, k := range []string{"a", "d"} {
		if _, ok := c.prefix(k); !ok {
			t.Errorf("%s evicted", k)
		}
	}
	st := c.stats()
	if st.Prefixes != 2 || st.PrefixBytes != 64 || st.Evicted != 1 || st.PrefixHits != 3 || st.PrefixMisses != 1 {
		t.Errorf("stats %+v", st)
	}
	// A second store of one key keeps the first copy: all users share it.
	if got := c.putPrefix("a", state(8)); got != a {
		t.Error("a second prefix for a key replaced the first")
	}
}

func TestPrefixCacheLRUByBytes(t *testing.T) {
	c, _ := testCaches(PipelineOptions{MaxPrefixes: 10, MaxPrefixBytes: 100})
	c.putPrefix("a", state(10)) // 40 bytes
	c.putPrefix("b", state(10)) // 80
	c.putPrefix("c", state(10)) // 120 > 100: a goes
	if _, ok := c.prefix("a"); ok {
		t.Error("a survived the byte bound")
	}
	if st := c.stats(); st.Prefixes != 2 || st.PrefixBytes != 80 {
		t.Errorf("stats %+v, want 2 prefixes of 80 bytes", st)
	}
	// One larger than the whole cache is used but not kept.
	big := state(100)
	if got := c.putPrefix("big", big); got != big {
		t.Error("an oversized prefix was not handed back")
	}
	if _, ok := c.prefix("big"); ok {
		t.Error("a prefix over MaxPrefixBytes was cached")
	}
	if st := c.stats(); st.Prefixes != 2 || st.PrefixBytes != 80 {
		t.Errorf("the oversized prefix evicted others: %+v", st)
	}
}

func TestPrefixCacheOff(t *testing.T) {
	c, _ := testCaches(PipelineOptions{MaxPrefixes: -1})
	kv := state(8)
	if got := c.putPrefix("a", kv); got != kv {
		t.Error("putPrefix did not hand the prefix back")
	}
	if _, ok := c.prefix("a"); ok {
		t.Error("a disabled cache kept a prefix")
	}
}

// speakInSession runs one "sentence" of a session: checkout, then checkin of a
// state of floats.
func speakInSession(t *testing.T, c *kvCaches, id string, floats int) {
	t.Helper()
	e, _, _, err := c.checkout(id)
	if err != nil {
		t.Fatal(err)
	}
	c.checkin(e, state(floats), "spk")
}

func TestSessionTTL(t *testing.T) {
	c, clock := testCaches(PipelineOptions{SessionTTL: time.Minute})
	speakInSession(t, c, "a", 8)
	clock.advance(40 * time.Second)
	speakInSession(t, c, "b", 8)
	clock.advance(40 * time.Second) // a idle 80 s, b 40 s
	if st := c.stats(); st.Sessions != 1 || st.SessionsExpired != 1 || st.SessionBytes != 32 {
		t.Fatalf("after a's TTL: %+v", st)
	}
	// Use resets the idle time.
	_, kv, speaker, err := c.checkout("b")
	if err != nil || kv == nil || speaker != "spk" {
		t.Fatalf("b: %v %v %q", kv, err, speaker)
	}
	clock.advance(10 * time.Minute)
	if st := c.stats(); st.Sessions != 1 {
		t.Errorf("a busy session expired: %+v", st)
	}
	e, _, _, _ := c.checkout("c") // a new session: b stays busy
	c.checkin(e, state(8), "spk")
	clock.advance(59 * time.Second)
	if _, kv, _, _ := c.checkout("c"); kv == nil {
		t.Error("c expired before its TTL")
	}
	// An expired session comes back empty.
	speakInSession(t, c, "d", 8)
	clock.advance(61 * time.Second)
	if _, kv, _, _ := c.checkout("d"); kv != nil {
		t.Error("d kept its state past the TTL")
	}
}

func TestSessionBounds(t *testing.T) {
	c, clock := testCaches(PipelineOptions{MaxSessions: 2, MaxSessionBytes: 100})
	speakInSession(t, c, "a", 8)
	clock.advance(time.Second)
	speakInSession(t, c, "b", 8)
	clock.advance(time.Second)
	speakInSession(t, c, "c", 8) // count: a goes
	if st := c.stats(); st.Sessions != 2 || st.Evicted != 1 {
		t.Fatalf("three sessions in two: %+v", st)
	}
	if c.dropSession("a") {
		t.Error("a was still there")
	}
	speakInSession(t, c, "b", 20) // b: 80 bytes, c: 32 → over 100: c, now the oldest, goes
	st := c.stats()
	if st.Sessions != 1 || st.SessionBytes != 80 {
		t.Errorf("bytes bound: %+v, want only b (80 bytes)", st)
	}
	speakInSession(t, c, "b", 40) // 160 bytes alone: dropped, not kept over the bound
	if st := c.stats(); st.Sessions != 0 || st.SessionBytes != 0 {
		t.Errorf("a session over MaxSessionBytes was kept: %+v", st)
	}
}

func TestSessionBusy(t *testing.T) {
	c, _ := testCaches(PipelineOptions{})
	e, _, _, err := c.checkout("s")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := c.checkout("s"); !errors.Is(err, ErrSessionBusy) {
		t.Errorf("second checkout: %v, want ErrSessionBusy", err)
	}
	// Busy sessions survive EvictKV; dropping one discards its checkin.
	if freed := c.evict(math.MaxInt64); freed != 0 || c.stats().Sessions != 1 {
		t.Errorf("EvictKV freed %d and left %d sessions, want a busy one untouched", freed, c.stats().Sessions)
	}
	if !c.dropSession("s") {
		t.Fatal("drop of a busy session")
	}
	c.checkin(e, state(8), "spk")
	if st := c.stats(); st.Sessions != 0 || st.SessionBytes != 0 {
		t.Errorf("a dropped session came back at checkin: %+v", st)
	}
	// A failed first sentence leaves no session behind.
	e, _, _, _ = c.checkout("t")
	c.checkin(e, nil, "")
	if st := c.stats(); st.Sessions != 0 {
		t.Errorf("a session without state stayed: %+v", st)
	}
}

func TestEvictKVOrder(t *testing.T) {
	c, clock := testCaches(PipelineOptions{}) // TTL 5 min
	c.putPrefix("p1", state(10))              // 40 bytes each
	c.putPrefix("p2", state(10))
	speakInSession(t, c, "old", 4) // 16 bytes
	clock.advance(4 * time.Minute)
	speakInSession(t, c, "s1", 10) // 40
	clock.advance(time.Second)
	speakInSession(t, c, "s2", 10) // 40
	clock.advance(2 * time.Minute) // old is past its TTL, s1 and s2 are not

	// The expired session goes first, and counts.
	if freed := c.evict(10); freed != 16 {
		t.Errorf("evict(10) freed %d, want the expired session's 16", freed)
	}
	// Then idle sessions, oldest first, before any prefix.
	if freed := c.evict(30); freed != 40 {
		t.Errorf("evict(30) freed %d, want s1's 40", freed)
	}
	if _, kv, _, _ := c.checkout("s2"); kv == nil {
		t.Error("s2 was evicted before s1")
	}
	st := c.stats()
	if st.Prefixes != 2 || st.Sessions != 1 {
		t.Errorf("prefixes evicted while sessions remained: %+v", st)
	}
	// s2 is busy now: the next eviction reaches the prefixes, oldest first.
	if _, ok := c.prefix("p1"); !ok {
		t.Fatal("p1 missing")
	}
	if freed := c.evict(1); freed != 40 {
		t.Errorf("evict(1) freed %d, want one prefix", freed)
	}
	if _, ok := c.prefix("p2"); ok {
		t.Error("p2 (least recently used) survived, p1 should have")
	}
	if freed := c.evict(0); freed != 0 {
		t.Errorf("evict(0) freed %d", freed)
	}
}
