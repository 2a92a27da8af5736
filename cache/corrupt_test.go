package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// template is a small, sound cache file with phrases of several sizes
// (inline, multi-page), pins and spool entries, built once.
var template struct {
	once     sync.Once
	data     []byte
	pageSize int
	used     int64 // bytes below the high-water mark
	err      error
}

func templateFile(t testing.TB) ([]byte, int, int64) {
	t.Helper()
	template.once.Do(func() {
		dir, err := os.MkdirTemp("", "mynah-cache-template-")
		if err != nil {
			template.err = err
			return
		}
		defer os.RemoveAll(dir)
		path := filepath.Join(dir, "cache.db")
		s, err := Open(path, nil)
		if err != nil {
			template.err = err
			return
		}
		for i := range 60 {
			size := []int{10, 300, 2000, 9000}[i%4]
			if err := s.PutPhrase(key(fmt.Sprint("t", i)), fmt.Sprint("v", i%3), sealed(filler(size, byte(i)))); err != nil {
				template.err = err
			}
			if i%10 == 0 {
				_ = s.Pin(key(fmt.Sprint("t", i)))
			}
		}
		for i := range 5 {
			_ = s.SpoolPut(fmt.Sprint("r", i), []byte("say hi"), time.Unix(1700000000+int64(i), 0), time.Time{})
		}
		_, _, _ = s.GetPhrase(key("t1"))
		if err := s.Close(); err != nil {
			template.err = err
			return
		}
		db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
		if err != nil {
			template.err = err
			return
		}
		template.pageSize = db.Info().PageSize
		db.View(func(tx *bolt.Tx) error { template.used = tx.Size(); return nil })
		db.Close()
		template.data, template.err = os.ReadFile(path)
	})
	if template.err != nil {
		t.Fatal(template.err)
	}
	return bytes.Clone(template.data), template.pageSize, template.used
}

// openDamaged writes data as a cache file, opens it read-write and checks
// that the store works and the file is sound afterwards.
func openDamaged(t testing.TB, data []byte) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	var log logBuffer
	s, err := Open(path, &Options{Logger: log.logger()})
	if err != nil {
		t.Fatalf("open of a damaged file: %v", err)
	}
	if err := s.Check(); err != nil {
		t.Fatalf("after open: %v", err)
	}
	mustPut(t, s, key("after"), "v", []byte("works"))
	mustHit(t, s, key("after"), []byte("works"))
	if r := s.Recovery(); r != nil && !strings.Contains(log.String(), r.MovedTo) {
		t.Errorf("recovery not logged with the new name: %s", log.String())
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
		mustBeSound(t, path)
	})
	return s, path
}

func TestDamagedFileIsMovedAside(t *testing.T) {
	data, ps, used := templateFile(t)
	flip := func(offsets ...int) []byte {
		d := bytes.Clone(data)
		for _, o := range offsets {
			d[o] ^= 0xff
		}
		return d
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 64<<10)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), random[:4000]...)
	rootPage := int(ne.Uint64(data[pageHeaderSize+16:])) // meta0's root bucket page
	cases := map[string][]byte{
		"truncated to 100 bytes":        data[:100],
		"truncated inside meta page 1":  data[:ps+200],
		"truncated to half":             data[:used/2],
		"truncated by one page":         data[:used-int64(ps)],
		"both meta magics flipped":      flip(pageHeaderSize, ps+pageHeaderSize),
		"both meta checksums flipped":   flip(pageHeaderSize+56, ps+pageHeaderSize+56),
		"root page header id flipped":   flip(rootPage * ps),
		"root page flags flipped":       flip(rootPage*ps + 8),
		"root page first element moved": flip(rootPage*ps + pageHeaderSize + 4),
		"random bytes":                  random,
		"PNG file":                      png,
		"foreign bbolt file":            foreignFile(t, "users"),
		"newer schema":                  schemaFile(t, 99),
		"damaged schema record":         schemaRecordFile(t, []byte{1, 2, 3}),
	}
	for name, damaged := range cases {
		t.Run(name, func(t *testing.T) {
			s, path := openDamaged(t, damaged)
			r := s.Recovery()
			if r == nil {
				t.Fatal("damaged file was not recovered")
			}
			if !strings.HasPrefix(r.MovedTo, path+".corrupt-") || r.Reason == "" {
				t.Errorf("recovery %+v", r)
			}
			moved, err := os.ReadFile(r.MovedTo)
			if err != nil || !bytes.Equal(moved, damaged) {
				t.Errorf("the damaged file was not kept as it was: %v", err)
			}
			// The template's 5 spooled requests are carried over when the
			// damaged file's spool could still be read, and reported
			// otherwise.
			if st := s.Stats(); st.Entries != 1 || st.SpoolEntries != r.Spool.Carried {
				t.Errorf("fresh file stats %+v, recovery %+v", st, r.Spool)
			}
			if c := r.Spool; c.Carried+len(c.Lost)+c.Unreadable > 5 {
				t.Errorf("spool salvage %+v of a file that held 5", c)
			}
		})
	}
	t.Run("empty file is simply new", func(t *testing.T) {
		if s, _ := openDamaged(t, nil); s.Recovery() != nil {
			t.Errorf("an empty file was treated as damaged: %+v", s.Recovery())
		}
	})
	t.Run("one meta page flipped falls back to the other", func(t *testing.T) {
		s, _ := openDamaged(t, flip(pageHeaderSize+56))
		if s.Recovery() != nil {
			t.Errorf("bbolt's own meta fallback was treated as damage: %+v", s.Recovery())
		}
	})
}

// Bytes of the page headers and element arrays, flipped one at a time (a
// quarter of them per run, from a random phase, each with one of three
// patterns; a run costs about 1000 opens): Open never panics or hangs, and always
// ends with a sound, working file. (Flips that leave the structure valid
// are not detected by design: they change values, which the daemon's codec
// CRC catches.) This test found the kinds of damage tx.Check misses that
// verifyStructure now catches.
func TestEveryStructuralByteFlip(t *testing.T) {
	data, ps, used := templateFile(t)
	var offsets []int
	for p := 2; p < int(used)/ps; p++ {
		hdr := data[p*ps:]
		if ne.Uint64(hdr) != uint64(p) { // an overflow or free page
			continue
		}
		n := pageHeaderSize + int(ne.Uint16(hdr[10:]))*pageElementSize
		for o := range min(n, ps) {
			offsets = append(offsets, p*ps+o)
		}
	}
	if len(offsets) < 200 {
		t.Fatalf("only %d structural bytes found: the template is too small to mean anything", len(offsets))
	}
	phase := rand.IntN(4)
	t.Logf("phase %d", phase)
	recovered, tried := 0, 0
	for i, o := range offsets {
		if i%4 != phase {
			continue
		}
		tried++
		x := []byte{0x01, 0x80, 0xff}[(i/4)%3]
		d := bytes.Clone(data)
		d[o] ^= x
		t.Run(fmt.Sprintf("%d^%#x", o, x), func(t *testing.T) {
			if s, _ := openDamaged(t, d); s.Recovery() != nil {
				recovered++
			}
		})
	}
	t.Logf("%d of %d structural bytes flipped: %d files moved aside", tried, len(offsets), recovered)
	if recovered == 0 {
		t.Error("no flip was detected")
	}
}

func FuzzOpenDamaged(f *testing.F) {
	f.Add(uint32(16), []byte{0xff}, uint32(0))
	f.Add(uint32(8192+8), []byte{0x01}, uint32(0))
	f.Add(uint32(0), []byte{}, uint32(5000))
	f.Add(uint32(4096*3+20), []byte{0, 0, 0, 0, 0xff, 0xff}, uint32(0))
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		data, _, _ := templateFile(t)
		if cut > 0 && int(cut) < len(data) {
			data = data[:cut]
		}
		if len(patch) > 64 {
			patch = patch[:64]
		}
		if len(data) > 0 {
			copy(data[int(at)%len(data):], patch)
		}
		openDamaged(t, data)
	})
}

func TestDamagedFileReadOnlyIsReported(t *testing.T) {
	data, ps, _ := templateFile(t)
	data[pageHeaderSize] ^= 0xff
	data[ps+pageHeaderSize] ^= 0xff
	path := filepath.Join(t.TempDir(), "cache.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path, &Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("read-only open of a damaged file: %v, want ErrCorrupt", err)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("read-only open changed or moved the damaged file")
	}
}

func TestOnlyNewestCorruptCopiesKept(t *testing.T) {
	clock := newClock()
	path := filepath.Join(t.TempDir(), "cache.db")
	for i := range 4 { // at T, T (a clash of names), T+1m, T+2m
		if i >= 2 {
			clock.Advance(time.Minute)
		}
		if err := os.WriteFile(path, []byte(fmt.Sprint("garbage ", i)), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := Open(path, &Options{Now: clock.Now})
		if err != nil || s.Recovery() == nil {
			t.Fatalf("open %d: %v %v", i, err, s.Recovery())
		}
		s.Close()
	}
	left, _ := filepath.Glob(path + ".corrupt-*")
	if len(left) != keepCorrupt {
		t.Fatalf("%d moved-aside files left, want %d: %v", len(left), keepCorrupt, left)
	}
	for i, name := range left {
		if b, _ := os.ReadFile(name); string(b) != fmt.Sprint("garbage ", i+2) {
			t.Errorf("%s holds %q: not one of the newest", name, b)
		}
	}
}

// Records that do not hold together in a file bbolt finds sound mean
// damage bbolt cannot see: a read-only open reports it, a read-write open
// moves the file aside rather than repairing a tree it cannot trust.
func TestInconsistentRecordsMoveFileAside(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, key("good"), "v", []byte("fine"))
	mustPut(t, s, key("short"), "v", []byte("will be cut"))
	s.Close()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		k := key("short")
		return errors.Join(
			tx.Bucket(bucketPhrases).Put(k[:], []byte("cut")),                      // size no longer matches the index
			tx.Bucket(bucketPhrases).Put(bytes.Repeat([]byte{7}, 32), []byte("x")), // audio without index
			tx.Bucket(bucketIndex).Put([]byte("short key"), indexRecord{size: 1}.append(nil)),
			tx.Bucket(bucketSpool).Put([]byte{1}, []byte("malformed")),
		)
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	// 5: the four written, and the audio of the index record that is bad.
	if _, err := Open(path, &Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "5 damaged record") {
		t.Errorf("read-only open: %v, want ErrCorrupt with 5 damaged records", err)
	}
	data, _ := os.ReadFile(path)
	s, _ = openDamaged(t, data)
	if r := s.Recovery(); r == nil || !strings.Contains(r.Reason, "damaged record") {
		t.Errorf("recovery %+v, want one naming the damaged records", r)
	}
}

func foreignFile(t *testing.T, bucket string) []byte {
	return rawFile(t, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket([]byte(bucket))
		if err != nil {
			return err
		}
		return b.Put([]byte("alice"), []byte("admin"))
	})
}

func schemaFile(t *testing.T, version uint64) []byte {
	return schemaRecordFile(t, binary.BigEndian.AppendUint64(nil, version))
}

func schemaRecordFile(t *testing.T, record []byte) []byte {
	return rawFile(t, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, record)
	})
}

func rawFile(t *testing.T, fn func(*bolt.Tx) error) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "raw.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	db.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// A file damaged while the store has it open (another program scribbling
// on it, a failing disk) makes bbolt panic or fault on the next read; the
// store turns that into errors and misses, and never touches bbolt again.
func TestDamagedWhileOpenBreaksStoreNotProcess(t *testing.T) {
	var log logBuffer
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, &Options{Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		mustPut(t, s, key(fmt.Sprint(i)), "v", filler(3000, byte(i)))
	}
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	info, _ := f.Stat()
	junk := bytes.Repeat([]byte{0xAA}, int(info.Size())-2*ps)
	if _, err := f.WriteAt(junk, int64(2*ps)); err != nil { // every page but the metas
		t.Fatal(err)
	}
	f.Close()

	_, ok, err := s.GetPhrase(key("3"))
	if ok || !errors.Is(err, ErrCorrupt) {
		t.Fatalf("get from a file damaged under the store: ok=%v err=%v, want ErrCorrupt", ok, err)
	}
	if err := s.PutPhrase(key("new"), "v", []byte("x")); !errors.Is(err, ErrWriteFailed) {
		t.Errorf("put to a broken store: %v, want ErrWriteFailed", err)
	}
	if _, err := s.SpoolList(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("spool list of a broken store: %v", err)
	}
	if !strings.Contains(log.String(), "cache broke") {
		t.Errorf("the breakdown was not logged:\n%s", log.String())
	}
	if err := s.Close(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("close of a broken store: %v, want the breakdown", err)
	}
}

// A panic inside a write transaction (as bbolt raises on some damage) is
// recovered, releases the store's lock and breaks the store.
func TestPanicInWriteBreaksStore(t *testing.T) {
	s, err := Open(filepath.Join(t.TempDir(), "cache.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mustPut(t, s, key("a"), "v", []byte("x"))
	err = s.submit(&writeOp{apply: func(*bolt.Tx) error { panic("assertion failed: page 7 already freed") }})
	if !errors.Is(err, ErrWriteFailed) || !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "already freed") {
		t.Fatalf("write that panicked: %v", err)
	}
	if _, _, err := s.GetPhrase(key("a")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("get after the panic: %v", err)
	}
	if st := s.Stats(); st.Entries != 1 { // Stats needs the store's lock: it was released
		t.Errorf("stats %+v", st)
	}
	if err := s.Close(); !errors.Is(err, ErrCorrupt) {
		t.Errorf("close: %v", err)
	}
}

// A damaged file's phrases are lost, its spooled requests are not: the
// daemon has acknowledged them.
func TestDamagedFileKeepsItsSpool(t *testing.T) {
	data, ps, _ := templateFile(t)
	path := filepath.Join(t.TempDir(), "template.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	var root int
	db.View(func(tx *bolt.Tx) error { root = int(tx.Bucket(bucketPhrases).Root()); return nil })
	db.Close()
	damaged := bytes.Clone(data)
	damaged[root*ps] ^= 0xff // the phrase tree's root page id: the file fails its walk

	s, _ := openDamaged(t, damaged)
	r := s.Recovery()
	if r == nil {
		t.Fatal("damaged phrase tree not detected")
	}
	if r.Spool.Carried != 5 || len(r.Spool.Lost) != 0 || r.Spool.Unreadable != 0 || r.Spool.Scanned {
		t.Fatalf("spool salvage %+v, want 5 carried", r.Spool)
	}
	entries, err := s.SpoolList()
	if err != nil || len(entries) != 5 {
		t.Fatalf("spool after recovery: %d entries, %v", len(entries), err)
	}
	for i, e := range entries {
		if e.ID != fmt.Sprint("r", i) || string(e.Payload) != "say hi" || !e.Received.Equal(time.Unix(1700000000+int64(i), 0)) {
			t.Errorf("entry %d: %+v", i, e)
		}
	}
	if st := s.Stats(); st.Entries != 1 { // "after", from openDamaged
		t.Errorf("phrases carried over from a damaged tree: %+v", st)
	}
}

func TestSalvageReportsUnreadableSpoolRecords(t *testing.T) {
	data := rawFile(t, func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(bucketSpool)
		if err != nil {
			return err
		}
		good := spoolKey(time.Unix(1700000000, 0), "kept")
		return errors.Join(
			b.Put(good, append(make([]byte, 8), "payload"...)),
			b.Put(spoolKey(time.Unix(1700000001, 0), "cut"), []byte{1, 2}), // value shorter than its expiry
			b.Put([]byte{1}, []byte("no id")),
		)
	})
	s, _ := openDamaged(t, data) // foreign: no schema record
	r := s.Recovery()
	if r == nil {
		t.Fatal("not recovered")
	}
	if r.Spool.Carried != 1 || len(r.Spool.Lost) != 1 || r.Spool.Lost[0].ID != "cut" || r.Spool.Unreadable != 1 {
		t.Errorf("salvage %+v, want 1 carried, cut lost and one without id unreadable", r.Spool)
	}
	if entries, _ := s.SpoolList(); len(entries) != 1 || entries[0].ID != "kept" || string(entries[0].Payload) != "payload" {
		t.Errorf("spool %+v", entries)
	}
}
