package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mynah-tts/mynah/cache/cachetest"
)

// spoolPayload is a record as the daemon spools it (daemon/spool.go's
// layout: version, flags, id, owner, the say payload).
func spoolPayload(id, text string) []byte {
	b := []byte{1, 0, byte(len(id))}
	b = append(b, id...)
	b = append(b, 0)
	return fmt.Appendf(b, `{"id":%q,"text":%q,"ttl":300}`, id, text)
}

// spoolFixture is a spool file as mynahd keeps it (cmd/mynahd/stores.go's
// options) holding n requests, each put in a commit of its own, and the
// ids in arrival order.
func spoolFixture(t testing.TB, n int) ([]byte, []string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, &Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	t0 := time.Unix(1750000000, 0)
	for i := range n {
		id := fmt.Sprintf("k%d", i)
		ids = append(ids, id)
		if err := s.SpoolPut(id, spoolPayload(id, fmt.Sprintf("Item number %d.", i)), t0.Add(time.Duration(i)*time.Millisecond), t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	// Read before Close, as a SIGKILL leaves it: the last commit is the
	// last put's (Close commits once more).
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return data, ids
}

// testPageSize and newestMeta read the layout as cachetest does.
func testPageSize(t *testing.T, data []byte) int {
	t.Helper()
	ps, err := cachetest.PageSize(data)
	if err != nil {
		t.Fatal(err)
	}
	return ps
}

func newestMeta(t *testing.T, data []byte) int {
	t.Helper()
	off, err := cachetest.NewestMeta(data)
	if err != nil {
		t.Fatal(err)
	}
	return off
}

// TestSpoolSalvageTable damages a spool file of 7 requests as issue 22
// did and checks, record by record, what Open carries over, reports
// lost under its id and counts unreadable. Before the salvage read pages
// itself (measured on the code before it, same file and damage): both
// metas, their root ids, the newest root page and the leaf headers lost
// all 7 ("could not be read", none reported); the newest meta page and
// its root id lost the last request silently (bbolt fell back to the
// older tree, which passed every check); the changed bytes were spoken.
func TestSpoolSalvageTable(t *testing.T) {
	base, ids := spoolFixture(t, 7)
	for _, tc := range cachetest.SpoolDamages() {
		t.Run(tc.Name, func(t *testing.T) {
			d := bytes.Clone(base)
			if err := tc.Damage(d); err != nil {
				t.Fatal(err)
			}
			s, _ := openDamaged(t, d)
			r := s.Recovery()
			if r == nil {
				t.Fatal("the damage was not detected")
			}
			entries, err := s.SpoolList()
			if err != nil {
				t.Fatal(err)
			}
			var carried, lost []string
			for _, e := range entries {
				carried = append(carried, e.ID)
				i := slices.Index(ids, e.ID)
				if i < 0 || !bytes.Equal(e.Payload, spoolPayload(e.ID, fmt.Sprintf("Item number %d.", i))) {
					t.Errorf("carried %s with payload %q", e.ID, e.Payload)
				}
			}
			for _, e := range r.Spool.Lost {
				lost = append(lost, e.ID)
			}
			want := func(idx []int) []string {
				var out []string
				for _, i := range idx {
					out = append(out, ids[i])
				}
				return out
			}
			if !slices.Equal(carried, want(tc.Carried)) || r.Spool.Carried != len(tc.Carried) {
				t.Errorf("carried %v (Carried %d), want %v", carried, r.Spool.Carried, want(tc.Carried))
			}
			if !slices.Equal(lost, want(tc.Lost)) {
				t.Errorf("lost %v, want %v", lost, want(tc.Lost))
			}
			if r.Spool.Unreadable != tc.Unreadable || r.Spool.Scanned != tc.Scanned || r.Spool.DamagedPages != tc.DamagedPages {
				t.Errorf("salvage %+v, want %d unreadable, %d damaged pages, scanned %v", r.Spool, tc.Unreadable, tc.DamagedPages, tc.Scanned)
			}
			t.Logf("%s: carried %d, lost %d, unreadable %d, damaged pages %d, scanned %v", tc.Name, r.Spool.Carried, len(r.Spool.Lost), r.Spool.Unreadable, r.Spool.DamagedPages, r.Spool.Scanned)
		})
	}
}

// A spool of many requests is a tree of leaves under a branch; a damaged
// branch cuts its leaves off the tree, and the salvage finds them among
// the pages neither the tree nor the freelist account for.
func TestSpoolSalvageFindsLeavesOfADamagedBranch(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, &Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	const n = 300
	t0 := time.Unix(1750000000, 0)
	for i := range n {
		id := fmt.Sprintf("request-%03d", i)
		if err := s.SpoolPut(id, spoolPayload(id, strings.Repeat("Words to say. ", 4)), t0.Add(time.Duration(i)), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root int
	ps := db.Info().PageSize
	db.View(func(tx *bolt.Tx) error { root = int(tx.Bucket(bucketSpool).Root()); return nil })
	db.Close()
	data, _ := os.ReadFile(path)
	if ne.Uint16(data[root*ps+8:]) != branchPageFlag {
		t.Fatalf("the spool's root page %d is not a branch", root)
	}
	ne.PutUint64(data[root*ps+pageHeaderSize+8:], 1<<40) // its first child's page id

	s, _ = openDamaged(t, data)
	r := s.Recovery()
	if r == nil {
		t.Fatal("not detected")
	}
	if r.Spool.Carried != n || len(r.Spool.Lost) != 0 || r.Spool.Unreadable != 0 || r.Spool.DamagedPages != 1 {
		t.Errorf("salvage %+v, want all %d carried and the one damaged reference counted", r.Spool, n)
	}
}

// A file written by an older mynahd holds records without checksums: they
// are read back as they are, and a salvage carries them in the current
// layout.
func TestOlderSpoolRecordsStillReplay(t *testing.T) {
	t0 := time.Unix(1700000000, 0)
	old := func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSpool)
		// expiry (8 bytes, big-endian ns) + payload: no checksum
		v := binary.BigEndian.AppendUint64(nil, uint64(t0.Add(time.Hour).UnixNano()))
		return b.Put(spoolKey(t0, "old-1"), append(v, spoolPayload("old-1", "From before.")...))
	}
	// A sound file of the current schema with an older record: opens as is.
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(old); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err = Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	check := func(s *Store) {
		t.Helper()
		list, err := s.SpoolList()
		if err != nil || len(list) != 1 {
			t.Fatalf("spool %+v, %v", list, err)
		}
		if e := list[0]; e.ID != "old-1" || !e.Received.Equal(t0) || !e.Expires.Equal(t0.Add(time.Hour)) || !bytes.Equal(e.Payload, spoolPayload("old-1", "From before.")) {
			t.Errorf("older record read as %+v", e)
		}
	}
	if s.Recovery() != nil {
		t.Fatalf("a file with an older spool record was taken for damaged: %+v", s.Recovery())
	}
	check(s)
	s.Close()

	// The same file damaged elsewhere (both meta pages): the tree is read
	// from them all the same, and the older record carried over.
	data, _ := os.ReadFile(path)
	ps := testPageSize(t, data)
	data[pageHeaderSize] ^= 0xff
	data[ps+pageHeaderSize] ^= 0xff
	s, _ = openDamaged(t, data)
	if r := s.Recovery(); r == nil || r.Spool.Carried != 1 {
		t.Fatalf("recovery %+v, want the older record carried", r)
	}
	check(s)
}

// A request deleted from the spool (spoken and answered) must not come
// back with a salvage. bbolt keeps the deleted record on a freed page
// until it is reused; the salvage takes the tree of the newest commit it
// can read, and a scan leaves the freelist's pages alone. The one case
// that brings a deleted record back is the documented limit: the newest
// commit (the delete) unreadable from its meta page, the older tree is
// all there is (bbolt opens it too, and nothing tells the file damaged).
func TestSpoolSalvageKeepsDeletedRecordsDeleted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spool.db")
	s, err := Open(path, &Options{MaxBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1750000000, 0)
	for i := range 7 {
		id := fmt.Sprintf("k%d", i)
		if err := s.SpoolPut(id, spoolPayload(id, "Spoken soon."), t0.Add(time.Duration(i)), time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"k1", "k4"} { // the last commit deletes k4
		if err := s.SpoolDelete(id); err != nil {
			t.Fatal(err)
		}
	}
	base, _ := os.ReadFile(path)
	s.Close()
	ps := testPageSize(t, base)
	for _, tc := range []struct {
		name   string
		moved  bool // the file is taken for damaged and moved aside
		damage func(d []byte)
		want   string
	}{
		{"both meta pages", true, func(d []byte) {
			d[pageHeaderSize] ^= 0xff
			d[ps+pageHeaderSize] ^= 0xff
		}, "k0 k2 k3 k5 k6"},
		{"newest meta page", true, func(d []byte) {
			d[newestMeta(t, d)+pageHeaderSize+56] ^= 0x01
		}, "k0 k2 k3 k5 k6"},
		{"both meta pages' root ids (scan)", true, func(d []byte) {
			ne.PutUint64(d[pageHeaderSize+16:], 1<<40)
			ne.PutUint64(d[ps+pageHeaderSize+16:], 1<<40)
		}, "k0 k2 k3 k5 k6"},
		{"newest meta page's root id (the limit: k4 comes back)", false, func(d []byte) {
			d[newestMeta(t, d)+pageHeaderSize+16] ^= 0x40
		}, "k0 k2 k3 k4 k5 k6"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := bytes.Clone(base)
			tc.damage(d)
			s, _ := openDamaged(t, d)
			if moved := s.Recovery() != nil; moved != tc.moved {
				t.Errorf("moved aside: %v, want %v", moved, tc.moved)
			}
			list, _ := s.SpoolList()
			var ids []string
			for _, e := range list {
				ids = append(ids, e.ID)
			}
			if got := strings.Join(ids, " "); got != tc.want {
				t.Errorf("carried %q, want %q", got, tc.want)
			}
		})
	}
}
