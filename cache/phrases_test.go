package cache

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestLRUEvictionUnderBudget(t *testing.T) {
	s := openTemp(t, &Options{MaxBytes: 1000})
	a, b, c, d := key("a"), key("b"), key("c"), key("d")
	mustPut(t, s, a, "v", filler(300, 1))
	mustPut(t, s, b, "v", filler(300, 2))
	mustPut(t, s, c, "v", filler(300, 3))
	mustHit(t, s, a, filler(300, 1)) // a is now the most recently used; b the least
	mustPut(t, s, d, "v", filler(300, 4))
	mustMiss(t, s, b)
	mustHit(t, s, a, filler(300, 1))
	mustHit(t, s, c, filler(300, 3))
	mustHit(t, s, d, filler(300, 4))
	st := s.Stats()
	if st.Entries != 3 || st.Bytes != 900 || st.Evictions != 1 {
		t.Errorf("stats %+v: want 3 entries, 900 bytes, 1 eviction", st)
	}

	// Recency is now d, c, a (the hits above). A large phrase evicts as
	// many as it needs, least recently used first.
	mustPut(t, s, key("big"), "v", filler(650, 5))
	mustMiss(t, s, a)
	mustMiss(t, s, c)
	mustHit(t, s, d, filler(300, 4))
	if st := s.Stats(); st.Bytes != 950 || st.Evictions != 3 {
		t.Errorf("stats %+v: want 950 bytes, 3 evictions", st)
	}
}

// The recency order persists: after a reopen the least recently used
// phrase is still evicted first.
func TestLRUOrderSurvivesReopen(t *testing.T) {
	clock := newClock()
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := &Options{MaxBytes: 1000, Now: clock.Now}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"a", "b", "c"} {
		clock.Advance(time.Second)
		mustPut(t, s, key(k), "v", filler(300, 1))
	}
	clock.Advance(time.Second)
	mustHit(t, s, key("a"), filler(300, 1)) // order now: b (oldest), c, a
	if err := s.Close(); err != nil {       // Close flushes the last-use times
		t.Fatal(err)
	}
	s, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { s.Close(); mustBeSound(t, path) }()
	clock.Advance(time.Second)
	mustPut(t, s, key("d"), "v", filler(300, 1))
	mustMiss(t, s, key("b"))
	mustHit(t, s, key("a"), filler(300, 1))
	mustHit(t, s, key("c"), filler(300, 1))
}

// A hit updates the last-use time in memory only; the file is written at
// the next flush.
func TestHitsDoNotWrite(t *testing.T) {
	s := openTemp(t, &Options{FlushInterval: time.Hour})
	mustPut(t, s, key("a"), "v", []byte("x"))
	writes := func() int64 { st := s.db.Stats(); return st.TxStats.GetWrite() }
	before := writes()
	for range 100 {
		mustHit(t, s, key("a"), []byte("x"))
	}
	if got := writes(); got != before {
		t.Fatalf("100 hits wrote %d pages", got-before)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if writes() == before {
		t.Fatal("flush wrote nothing")
	}
}

func TestTTL(t *testing.T) {
	clock := newClock()
	s := openTemp(t, &Options{TTL: time.Hour, Now: clock.Now})
	mustPut(t, s, key("old"), "v", []byte("1"))
	mustPut(t, s, key("pinned"), "v", []byte("2"))
	if err := s.Pin(key("pinned")); err != nil {
		t.Fatal(err)
	}
	clock.Advance(40 * time.Minute)
	mustPut(t, s, key("young"), "v", []byte("3"))
	clock.Advance(21 * time.Minute) // old: 61 min, young: 21 min
	mustMiss(t, s, key("old"))
	mustHit(t, s, key("young"), []byte("3"))
	mustHit(t, s, key("pinned"), []byte("2"))
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if st := s.Stats(); st.Entries != 2 || st.Expired != 1 {
		t.Errorf("stats %+v: want 2 entries, 1 expired", st)
	}
	// Expiry counts from storing, not from the last hit.
	clock.Advance(40 * time.Minute)
	if n, err := s.Purge(PurgeScope{Kind: PurgeExpired}); err != nil || n != 1 {
		t.Errorf("purge expired: %d %v, want 1", n, err)
	}
	mustMiss(t, s, key("young"))
	mustHit(t, s, key("pinned"), []byte("2"))
	if st := s.Stats(); st.Entries != 1 || st.Misses != 2 {
		t.Errorf("stats %+v: want the pinned entry left and 2 misses", st)
	}
}

func TestPinnedSurviveEviction(t *testing.T) {
	s := openTemp(t, &Options{MaxBytes: 1000})
	mustPut(t, s, key("pin1"), "v", filler(300, 1))
	mustPut(t, s, key("pin2"), "v", filler(300, 2))
	for _, k := range []string{"pin1", "pin2"} {
		if err := s.Pin(key(k)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 20 { // churn through the 400 bytes left
		mustPut(t, s, key(fmt.Sprint(i)), "v", filler(200, byte(i)))
	}
	mustHit(t, s, key("pin1"), filler(300, 1))
	mustHit(t, s, key("pin2"), filler(300, 2))
	if st := s.Stats(); st.PinnedEntries != 2 || st.PinnedBytes != 600 || st.Entries != 4 {
		t.Errorf("stats %+v", st)
	}
	// Replacing a pinned phrase keeps the pin.
	mustPut(t, s, key("pin1"), "v", filler(300, 9))
	if st := s.Stats(); st.PinnedEntries != 2 {
		t.Errorf("replacing a pinned phrase lost its pin: %+v", st)
	}
	// Pinned phrases that fill the budget refuse new ones, and say why.
	err := s.PutPhrase(key("too big"), "v", filler(500, 3))
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "pinned") {
		t.Errorf("put beside a full pinned set: %v, want ErrBudget naming the pins", err)
	}
	mustHit(t, s, key("pin1"), filler(300, 9))
	if err := s.Unpin(key("pin1")); err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, key("too big"), "v", filler(500, 3))
	mustMiss(t, s, key("pin1"))
	if err := s.Pin(key("absent")); !errors.Is(err, ErrNotFound) {
		t.Errorf("pin of an absent phrase: %v", err)
	}
	if got := s.Pinned(); len(got) != 1 || got[0] != key("pin2") {
		t.Errorf("pinned %v", got)
	}
}

func TestPurgeScopes(t *testing.T) {
	clock := newClock()
	fill := func(t *testing.T) *Store {
		s := openTemp(t, &Options{Now: clock.Now})
		mustPut(t, s, key("amy old"), "amy", []byte("1"))
		mustPut(t, s, key("amy pinned"), "amy", []byte("2"))
		if err := s.Pin(key("amy pinned")); err != nil {
			t.Fatal(err)
		}
		clock.Advance(48 * time.Hour)
		mustPut(t, s, key("bob new"), "bob", []byte("3"))
		if err := s.SpoolPut("r1", []byte("x"), clock.Now(), time.Time{}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	cases := []struct {
		scope  string
		n      int
		remain []string
		spool  int
	}{
		{"voice=amy", 2, []string{"bob new"}, 1},
		{"voice=carl", 0, []string{"amy old", "amy pinned", "bob new"}, 1},
		{"older=24h", 1, []string{"amy pinned", "bob new"}, 1},
		{"older=3d", 0, []string{"amy old", "amy pinned", "bob new"}, 1},
		{"phrases", 3, nil, 1},
		{"all", 4, nil, 0},
		{"expired", 0, []string{"amy old", "amy pinned", "bob new"}, 1}, // no TTL set
	}
	for _, c := range cases {
		t.Run(c.scope, func(t *testing.T) {
			s := fill(t)
			scope, err := ParsePurgeScope(c.scope)
			if err != nil {
				t.Fatal(err)
			}
			n, err := s.Purge(scope)
			if err != nil || n != c.n {
				t.Fatalf("purge %s: %d %v, want %d", c.scope, n, err, c.n)
			}
			for _, k := range []string{"amy old", "amy pinned", "bob new"} {
				_, ok, _ := s.GetPhrase(key(k))
				if want := contains(c.remain, k); ok != want {
					t.Errorf("after purge %s: %q present=%v, want %v", c.scope, k, ok, want)
				}
			}
			if st := s.Stats(); st.Entries != len(c.remain) || st.SpoolEntries != c.spool {
				t.Errorf("stats %+v", st)
			}
			// The store goes on working after a purge.
			mustPut(t, s, key("after"), "amy", []byte("4"))
			mustHit(t, s, key("after"), []byte("4"))
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDeletePhrase(t *testing.T) {
	s := openTemp(t, nil)
	mustPut(t, s, key("a"), "v", []byte("damaged audio"))
	if err := s.Pin(key("a")); err != nil {
		t.Fatal(err)
	}
	if err := s.DeletePhrase(key("a")); err != nil {
		t.Fatal(err)
	}
	mustMiss(t, s, key("a"))
	if err := s.DeletePhrase(key("a")); err != nil {
		t.Errorf("deleting a missing phrase: %v", err)
	}
	if st := s.Stats(); st.Entries != 0 || st.PinnedEntries != 0 || st.Bytes != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestPhraseLimits(t *testing.T) {
	s := openTemp(t, &Options{MaxBytes: 1000, MaxPhraseBytes: 600})
	err := s.PutPhrase(key("a"), "v", filler(601, 1))
	if !errors.Is(err, ErrBudget) || !strings.Contains(err.Error(), "MaxPhraseBytes") {
		t.Errorf("oversized phrase: %v, want ErrBudget naming MaxPhraseBytes", err)
	}
	if err := s.PutPhrase(key("a"), strings.Repeat("v", 256), nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("long voice name: %v", err)
	}
	if st := s.Stats(); st.WriteErrors != 1 {
		t.Errorf("write errors %d, want 1 (the budget refusal)", st.WriteErrors)
	}
	mustPut(t, s, key("b"), "v", filler(600, 1))
	mustPut(t, s, key("empty"), "v", nil)
	if v, ok, err := s.GetPhrase(key("empty")); !ok || err != nil || len(v) != 0 {
		t.Errorf("empty value: %v %v %v", v, ok, err)
	}
}

// A file that cannot grow (bbolt's MaxSize, the same failure a full disk
// gives) makes writes fail with ErrWriteFailed, counted, without harm to
// what is stored; the store goes on working once space is freed.
func TestFileLimitActsLikeDiskFull(t *testing.T) {
	s := openTemp(t, &Options{MaxFileBytes: 256 << 10, MaxBytes: 64 << 20})
	diskFull(t, s)
}

// The same on a real full file system: a 256 KiB tmpfs. Mounting needs
// root; TestFileLimitActsLikeDiskFull covers the same path without it.
func TestDiskFullTmpfs(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root; TestFileLimitActsLikeDiskFull covers the path")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("mount tmpfs: %v: %s (TestFileLimitActsLikeDiskFull covers the path)", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	s, err := Open(filepath.Join(dir, "cache.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	enospc := diskFull(t, s)
	if !errors.Is(enospc, syscall.ENOSPC) {
		t.Errorf("error %v does not wrap ENOSPC", enospc)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	mustBeSound(t, filepath.Join(dir, "cache.db"))
}

func diskFull(t *testing.T, s *Store) error {
	t.Helper()
	var stored []int
	var failure error
	for i := range 200 {
		err := s.PutPhrase(key(fmt.Sprint(i)), "v", filler(16<<10, byte(i)))
		if err != nil {
			failure = err
			break
		}
		stored = append(stored, i)
	}
	if failure == nil {
		t.Fatal("3 MiB of writes into a 256 KiB space all succeeded")
	}
	if !errors.Is(failure, ErrWriteFailed) {
		t.Fatalf("write into a full space: %v, want ErrWriteFailed", failure)
	}
	for _, i := range stored {
		mustHit(t, s, key(fmt.Sprint(i)), filler(16<<10, byte(i)))
	}
	if st := s.Stats(); st.WriteErrors != 1 || st.Entries != len(stored) {
		t.Errorf("stats %+v: want 1 write error and %d entries", st, len(stored))
	}
	if err := s.SpoolPut("r", []byte("x"), time.Now(), time.Time{}); err != nil {
		t.Errorf("a small write after the failure: %v", err)
	}
	if _, err := s.Purge(PurgeScope{Kind: PurgePhrases}); err != nil {
		t.Fatalf("purge in a full space: %v", err)
	}
	mustPut(t, s, key("after"), "v", filler(16<<10, 1))
	mustHit(t, s, key("after"), filler(16<<10, 1))
	return failure
}

// A stamp names one record: the same while it stands (a hit, counted),
// another once it is replaced, none once it is deleted, evicted or
// purged.
func TestPhraseStamp(t *testing.T) {
	s := openTemp(t, &Options{MaxBytes: 1000})
	a, b := key("a"), key("b")
	if _, ok := s.PhraseStamp(a); ok {
		t.Fatal("a stamp for a phrase never put")
	}
	mustPut(t, s, a, "v", filler(300, 1))
	data, stamp, ok, err := s.GetPhraseStamp(a)
	if err != nil || !ok || len(data) != 300 {
		t.Fatalf("GetPhraseStamp = %d bytes, %v, %v", len(data), ok, err)
	}
	before := s.Stats()
	if got, ok := s.PhraseStamp(a); !ok || got != stamp {
		t.Errorf("PhraseStamp = %d, %v; want %d", got, ok, stamp)
	}
	if st := s.Stats(); st.Hits != before.Hits+1 {
		t.Errorf("PhraseStamp counted %d hits, want 1", st.Hits-before.Hits)
	}
	mustPut(t, s, b, "v", filler(300, 2))
	if got, _ := s.PhraseStamp(b); got == stamp {
		t.Error("two records share a stamp")
	}
	mustPut(t, s, a, "v", filler(300, 3)) // replaced, same size
	if got, ok := s.PhraseStamp(a); !ok || got == stamp {
		t.Errorf("a replaced record keeps its stamp %d", got)
	}
	if err := s.DeletePhrase(a); err != nil {
		t.Fatal(err)
	}
	if _, ok := s.PhraseStamp(a); ok {
		t.Error("a stamp for a deleted phrase")
	}
	mustPut(t, s, key("big"), "v", filler(800, 4)) // evicts b
	if _, ok := s.PhraseStamp(b); ok {
		t.Error("a stamp for an evicted phrase")
	}
}
