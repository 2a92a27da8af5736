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

// fileMeta is what a test reads of a bbolt meta page, by offsets of
// bbolt's layout (not through the code under test).
type fileMeta struct{ off, root, txid int }

func metaAt(data []byte, off int) fileMeta {
	m := data[off+pageHeaderSize:]
	return fileMeta{off: off, root: int(ne.Uint64(m[16:])), txid: int(ne.Uint64(m[48:]))}
}

// newestMeta returns the meta page bbolt would use and the other one.
func newestMeta(t *testing.T, data []byte) (newest, older fileMeta) {
	ps := testPageSize(t, data)
	a, b := metaAt(data, 0), metaAt(data, ps)
	if b.txid > a.txid {
		return b, a
	}
	return a, b
}

func testPageSize(t *testing.T, data []byte) int {
	t.Helper()
	ps := int(ne.Uint32(data[pageHeaderSize+8:]))
	if ps < 512 || ps&(ps-1) != 0 {
		t.Fatalf("page size %d", ps)
	}
	return ps
}

// spoolLeaf returns the offset of the page holding the spool records of
// the newest tree (the inline page in the root page's spool bucket value,
// or the bucket's own leaf page) and its record count, reading the page
// layout directly.
func spoolLeaf(t *testing.T, data []byte) (off, count int) {
	t.Helper()
	ps := testPageSize(t, data)
	m, _ := newestMeta(t, data)
	root := data[m.root*ps:]
	if ne.Uint16(root[8:]) != leafPageFlag {
		t.Fatal("the root bucket is not a single leaf: make the fixture smaller")
	}
	for i := range int(ne.Uint16(root[10:])) {
		e := root[pageHeaderSize+i*pageElementSize:]
		kstart := pageHeaderSize + i*pageElementSize + int(ne.Uint32(e[4:]))
		ksize := int(ne.Uint32(e[8:]))
		if string(root[kstart:kstart+ksize]) != "spool" {
			continue
		}
		v := m.root*ps + kstart + ksize
		if page := int(ne.Uint64(data[v:])); page != 0 {
			off = page * ps
		} else {
			off = v + bucketHeaderSize
		}
		if ne.Uint16(data[off+8:]) != leafPageFlag {
			t.Fatal("the spool is not a single leaf")
		}
		return off, int(ne.Uint16(data[off+10:]))
	}
	t.Fatal("no spool bucket in the root page")
	return 0, 0
}

// spoolValueAt returns the offset of record i's value in the leaf at off.
func spoolValueAt(data []byte, off, i int) int {
	e := data[off+pageHeaderSize+i*pageElementSize:]
	return off + pageHeaderSize + i*pageElementSize + int(ne.Uint32(e[4:])) + int(ne.Uint32(e[8:]))
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
	ps := testPageSize(t, base)
	cases := []struct {
		name   string
		damage func(d []byte)
		// carried are the indexes of the ids carried over, lost those
		// reported lost; unreadable counts the records without an id.
		carried, lost []int
		unreadable    int
		damagedPages  int
		scanned       bool
	}{
		{
			name: "both meta pages", carried: []int{0, 1, 2, 3, 4, 5, 6},
			damage: func(d []byte) {
				copy(d[pageHeaderSize:], []byte{0xde, 0xad, 0xbe, 0xef})
				copy(d[ps+pageHeaderSize:], []byte{0xde, 0xad, 0xbe, 0xef})
			},
		},
		{
			name: "both meta pages' root ids", carried: []int{0, 1, 2, 3, 4, 5, 6}, scanned: true,
			damage: func(d []byte) {
				for _, off := range []int{pageHeaderSize + 16, ps + pageHeaderSize + 16} {
					ne.PutUint64(d[off:], 1<<40)
				}
			},
		},
		{
			name: "newest meta page", carried: []int{0, 1, 2, 3, 4, 5, 6},
			damage: func(d []byte) {
				m, _ := newestMeta(t, d)
				d[m.off+pageHeaderSize+56] ^= 0x01 // its checksum
			},
		},
		{
			name: "newest meta page's root id", carried: []int{0, 1, 2, 3, 4, 5, 6},
			damage: func(d []byte) {
				m, _ := newestMeta(t, d)
				d[m.off+pageHeaderSize+16] ^= 0x40
			},
		},
		{
			// The newest commit's root page holds the spool inline: of
			// its records only those the older commit had are found,
			// and the page is counted.
			name: "newest root page", carried: []int{0, 1, 2, 3, 4, 5}, damagedPages: 1,
			damage: func(d []byte) {
				m, _ := newestMeta(t, d)
				copy(d[m.root*ps:], bytes.Repeat([]byte{0xee}, pageHeaderSize))
			},
		},
		{
			// The records of the damaged headers are framed by their
			// checksums in the page's data.
			name: "leaf element headers", carried: []int{0, 1, 2, 3, 4, 5, 6},
			damage: func(d []byte) {
				off, _ := spoolLeaf(t, d)
				copy(d[off+pageHeaderSize:], bytes.Repeat([]byte{0xff}, 4*pageElementSize))
			},
		},
		{
			name: "leaf element headers and a key byte", carried: []int{0, 2, 3, 4, 5, 6}, unreadable: 1,
			damage: func(d []byte) {
				off, _ := spoolLeaf(t, d)
				k1 := spoolValueAt(d, off, 1) - 1 // the last byte of k1's key
				copy(d[off+pageHeaderSize:], bytes.Repeat([]byte{0xff}, 4*pageElementSize))
				d[k1] ^= 0x20
			},
		},
		{
			name: "one value byte", carried: []int{0, 1, 2, 4, 5, 6}, lost: []int{3},
			damage: func(d []byte) {
				off, _ := spoolLeaf(t, d)
				d[spoolValueAt(d, off, 3)+20] ^= 0x10 // in the expiry
			},
		},
		{
			name: "one text byte", carried: []int{0, 1, 2, 3, 4, 6}, lost: []int{5},
			damage: func(d []byte) {
				off, _ := spoolLeaf(t, d)
				v := spoolValueAt(d, off, 5)
				i := v + bytes.Index(d[v:], []byte("Item number 5")) + 2
				d[i] = 'x' // "Item" becomes "Itxm"
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := bytes.Clone(base)
			tc.damage(d)
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
			if !slices.Equal(carried, want(tc.carried)) || r.Spool.Carried != len(tc.carried) {
				t.Errorf("carried %v (Carried %d), want %v", carried, r.Spool.Carried, want(tc.carried))
			}
			if !slices.Equal(lost, want(tc.lost)) {
				t.Errorf("lost %v, want %v", lost, want(tc.lost))
			}
			if r.Spool.Unreadable != tc.unreadable || r.Spool.Scanned != tc.scanned || r.Spool.DamagedPages != tc.damagedPages {
				t.Errorf("salvage %+v, want %d unreadable, %d damaged pages, scanned %v", r.Spool, tc.unreadable, tc.damagedPages, tc.scanned)
			}
			t.Logf("%s: carried %d, lost %d, unreadable %d, scanned %v", tc.name, r.Spool.Carried, len(r.Spool.Lost), r.Spool.Unreadable, r.Spool.Scanned)
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
			m, _ := newestMeta(t, d)
			d[m.off+pageHeaderSize+56] ^= 0x01
		}, "k0 k2 k3 k5 k6"},
		{"both meta pages' root ids (scan)", true, func(d []byte) {
			ne.PutUint64(d[pageHeaderSize+16:], 1<<40)
			ne.PutUint64(d[ps+pageHeaderSize+16:], 1<<40)
		}, "k0 k2 k3 k5 k6"},
		{"newest meta page's root id (the limit: k4 comes back)", false, func(d []byte) {
			m, _ := newestMeta(t, d)
			d[m.off+pageHeaderSize+16] ^= 0x40
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
