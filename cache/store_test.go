package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

func TestReopenKeepsEverything(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Recovery() != nil {
		t.Fatalf("a new file reports a recovery: %+v", s.Recovery())
	}
	values := map[PhraseKey][]byte{}
	for i := range 20 {
		k := key(fmt.Sprint("sentence ", i))
		values[k] = filler(100+i*37, byte(i))
		mustPut(t, s, k, "amy", values[k])
	}
	if err := s.Pin(key("sentence 3")); err != nil {
		t.Fatal(err)
	}
	received := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	if err := s.SpoolPut("req-1", []byte("hello"), received, received.Add(time.Minute)); err != nil {
		t.Fatal(err)
	}
	mustHit(t, s, key("sentence 0"), values[key("sentence 0")])
	mustMiss(t, s, key("never stored"))
	before := s.Stats()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetPhrase(key("sentence 0")); !errors.Is(err, ErrClosed) {
		t.Errorf("get after close: %v, want ErrClosed", err)
	}
	if err := s.PutPhrase(key("x"), "amy", nil); !errors.Is(err, ErrClosed) {
		t.Errorf("put after close: %v, want ErrClosed", err)
	}

	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); mustBeSound(t, path) })
	after := s.Stats()
	before.FileBytes, after.FileBytes = 0, 0
	if before != after {
		t.Errorf("stats changed across reopen:\n before %+v\n after  %+v", before, after)
	}
	if after.Hits != 1 || after.Misses != 1 || after.Entries != 20 || after.PinnedEntries != 1 || after.SpoolEntries != 1 {
		t.Errorf("stats %+v: want 1 hit, 1 miss, 20 entries, 1 pinned, 1 spooled", after)
	}
	for k, v := range values {
		mustHit(t, s, k, v)
	}
	if got := s.Pinned(); len(got) != 1 || got[0] != key("sentence 3") {
		t.Errorf("pinned %v", got)
	}
	spool, err := s.SpoolList()
	if err != nil || len(spool) != 1 || spool[0].ID != "req-1" || !spool[0].Received.Equal(received) ||
		!spool[0].Expires.Equal(received.Add(time.Minute)) || string(spool[0].Payload) != "hello" {
		t.Errorf("spool after reopen: %+v %v", spool, err)
	}
}

func TestValuesAreCopies(t *testing.T) {
	s := openTemp(t, nil)
	in := filler(500, 1)
	mustPut(t, s, key("a"), "v", in)
	in[0] ^= 0xff // the caller reuses its buffer
	got, _, _ := s.GetPhrase(key("a"))
	if got[0] == in[0] {
		t.Fatal("the store kept the caller's slice")
	}
	got[1] ^= 0xff // the caller scribbles on what it got
	mustHit(t, s, key("a"), filler(500, 1))
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{{Timeout: -1}, {MaxBytes: -1}, {TTL: -time.Second}, {MaxSpoolEntries: -3}} {
		if _, err := Open(filepath.Join(t.TempDir(), "c.db"), &o); !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
}

// A second Open in the same process conflicts too: bbolt's flock belongs
// to the open file description, not to the process.
func TestLockedInProcess(t *testing.T) {
	s := openTemp(t, nil)
	_, err := Open(s.Path(), &Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) || !strings.Contains(err.Error(), s.Path()) {
		t.Fatalf("second open: %v, want ErrLocked naming the path", err)
	}
}

// The daemon's situation: another process holds the file. A read-write
// Open gets ErrLocked; a read-only Open reads a snapshot.
func TestLockedByAnotherProcess(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "cache.db")
	c := startChild(t, "hold", path)
	c.waitReady(t)

	_, err := Open(path, &Options{Timeout: 200 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("open while another process holds the file: %v, want ErrLocked", err)
	}
	for _, want := range []string{path, "mynahd"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}

	snapDir := t.TempDir()
	ro, err := Open(path, &Options{ReadOnly: true, SnapshotDir: snapDir})
	if err != nil {
		t.Fatalf("read-only open while locked: %v", err)
	}
	if !ro.Snapshot() {
		t.Error("read-only open of a locked file did not use a snapshot")
	}
	if st := ro.Stats(); st.Entries != 5 {
		t.Errorf("snapshot stats %+v, want 5 entries", st)
	}
	if err := ro.Check(); err != nil {
		t.Errorf("snapshot check: %v", err)
	}
	got, ok, err := ro.GetPhrase(key("2"))
	if p, sound := unsealed(got); !ok || err != nil || !sound || len(p) != 1000 {
		t.Errorf("snapshot get: ok=%v err=%v sound=%v", ok, err, sound)
	}
	if err := ro.PutPhrase(key("new"), "v", []byte("x")); !errors.Is(err, ErrReadOnly) {
		t.Errorf("put on read-only: %v", err)
	}
	if _, err := ro.Purge(PurgeScope{Kind: PurgeAll}); !errors.Is(err, ErrReadOnly) {
		t.Errorf("purge on read-only: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	if left, _ := os.ReadDir(snapDir); len(left) != 0 {
		t.Errorf("snapshot copy left behind: %v", left)
	}

	c.stop(t)
	s, err := Open(path, nil)
	if err != nil {
		t.Fatalf("open after the other process closed: %v", err)
	}
	if st := s.Stats(); st.Entries != 5 {
		t.Errorf("stats %+v", st)
	}
	s.Close()
	mustBeSound(t, path)
}

// Read-only snapshots of a file being written by another process are
// consistent: bbolt's check passes and every value is intact.
func TestSnapshotWhileWriting(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	c := startChild(t, "paced", path, "MYNAH_CACHE_SEED=1")
	c.waitReady(t)
	for i := range 10 {
		ro, err := Open(path, &Options{ReadOnly: true, SnapshotDir: t.TempDir()})
		if err != nil {
			t.Fatalf("snapshot %d: %v", i, err)
		}
		if !ro.Snapshot() {
			t.Errorf("snapshot %d: not a snapshot", i)
		}
		if err := ro.Check(); err != nil {
			t.Errorf("snapshot %d: %v", i, err)
		}
		checkAllSealed(t, ro)
		ro.Close()
	}
	c.kill()
}

// checkAllSealed reads every phrase and verifies its embedded checksum.
func checkAllSealed(t *testing.T, s *Store) int {
	t.Helper()
	s.mu.Lock()
	keys := make([]PhraseKey, 0, len(s.st.phrases))
	for k := range s.st.phrases {
		keys = append(keys, k)
	}
	s.mu.Unlock()
	for _, k := range keys {
		v, ok, err := s.GetPhrase(k)
		if err != nil || !ok {
			t.Fatalf("phrase %s listed but not readable: ok=%v err=%v", k, ok, err)
		}
		if _, sound := unsealed(v); !sound {
			t.Fatalf("phrase %s (%d bytes) fails its checksum", k, len(v))
		}
	}
	return len(keys)
}

func TestReadOnlyInPlace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, key("a"), "v", []byte("abc"))
	s.Close()
	info, _ := os.Stat(path)

	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if ro.Snapshot() {
		t.Error("read-only open without a writer copied the file")
	}
	mustHit(t, ro, key("a"), []byte("abc"))
	if err := ro.Flush(); !errors.Is(err, ErrReadOnly) {
		t.Errorf("flush: %v", err)
	}
	ro.Close()
	if after, _ := os.Stat(path); !after.ModTime().Equal(info.ModTime()) || after.Size() != info.Size() {
		t.Error("a read-only open changed the file")
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.db"), &Options{ReadOnly: true}); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("read-only open of a missing file: %v", err)
	}
}

func TestSchemaUpgradeFromV0(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	db.Close() // an empty bbolt file: schema version 0

	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of a v0 file: %v", err)
	}
	if st := ro.Stats(); st.Entries != 0 {
		t.Errorf("v0 stats %+v", st)
	}
	ro.Close()

	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Recovery() != nil {
		t.Fatalf("v0 file was treated as damaged: %+v", s.Recovery())
	}
	mustPut(t, s, key("a"), "v", []byte("x"))
	s.Close()
	current := schemaVersion()
	if v := schemaOf(t, path); v != current {
		t.Fatalf("schema after upgrade %d, want %d", v, current)
	}

	// A later build adds a step; it runs once, on the next open.
	runs := 0
	migrations = append(migrations, func(tx *bolt.Tx) error {
		runs++
		_, err := tx.CreateBucket([]byte("later"))
		return err
	})
	ourBuckets = append(ourBuckets, []byte("later"))
	defer func() {
		migrations = migrations[:len(migrations)-1]
		ourBuckets = ourBuckets[:len(ourBuckets)-1]
	}()
	for range 2 {
		s, err = Open(path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if s.Recovery() != nil {
			t.Fatalf("upgrade treated the file as damaged: %+v", s.Recovery())
		}
		mustHit(t, s, key("a"), []byte("x"))
		s.Close()
	}
	if runs != 1 || schemaOf(t, path) != current+1 {
		t.Fatalf("migration ran %d times, schema %d; want once and %d", runs, schemaOf(t, path), current+1)
	}
}

func schemaOf(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint64
	db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucketMeta); b != nil {
			v = binary.BigEndian.Uint64(b.Get(keySchema))
		}
		return nil
	})
	return v
}

// Many goroutines writing at once share commits and all succeed.
func TestConcurrentWriters(t *testing.T) {
	s := openTemp(t, nil)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				k := key(fmt.Sprint(g, "/", i))
				if err := s.PutPhrase(k, "v", filler(200, byte(i))); err != nil {
					t.Error(err)
					return
				}
				if _, ok, err := s.GetPhrase(k); !ok || err != nil {
					t.Errorf("read own write: %v %v", ok, err)
				}
				if err := s.SpoolPut(fmt.Sprint(g, "/", i), []byte("p"), time.Now(), time.Time{}); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Entries != 400 || st.SpoolEntries != 400 || st.Hits != 400 {
		t.Errorf("stats %+v", st)
	}
}
