package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestDecodeSpoolRecord(t *testing.T) {
	key := spoolKey(time.Unix(1750000000, 0), "kitchen-1")
	good := appendSpoolValue(nil, key, 42, 1750000300e9, []byte("payload"))
	older := append(binary.BigEndian.AppendUint64(nil, 1750000300e9), "payload"...)
	flip := func(b []byte, i int) []byte { b = bytes.Clone(b); b[i] ^= 0x04; return b }
	cases := []struct {
		name    string
		k, v    []byte
		keyOK   bool // the id can be reported
		ok      bool
		checked bool
	}{
		{"current", key, good, true, true, true},
		{"current, no payload", key, appendSpoolValue(nil, key, 1, 0, nil), true, true, true},
		{"older", key, older, true, true, false},
		{"older, no payload", key, older[:8], true, true, false},
		{"payload byte", key, flip(good, len(good)-1), true, false, false},
		{"expiry byte", key, flip(good, 20), true, false, false},
		{"txid byte", key, flip(good, 10), true, false, false},
		{"value checksum", key, flip(good, 6), true, false, false},
		{"key checksum", key, flip(good, 2), false, false, false},
		{"key byte", flip(key, len(key)-1), good, false, false, false},
		{"mark", key, flip(good, 0), true, false, false},
		{"mark and key checksum", key, flip(flip(good, 0), 1), false, false, false},
		{"mark below 0x80 (an older record's first byte)", key, append([]byte{0x30}, good[1:]...), true, false, false},
		{"current, cut", key, good[:spoolValueHeader-1], true, false, false},
		{"current, cut before the key checksum", key, good[:4], false, false, false},
		{"older, cut", key, older[:7], true, false, false},
		{"empty value", key, nil, true, false, false},
		{"key without id", key[:8], good, false, false, false},
		{"key of 264 bytes", append(bytes.Clone(key[:8]), bytes.Repeat([]byte("i"), 256)...), older, false, false, false},
		{"receive time before 1970", append([]byte{0x80}, key[1:]...), older, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, keyOK, err := decodeSpoolRecord(c.k, c.v, 1<<10)
			if (err == nil) != c.ok || keyOK != c.keyOK || r.checked != c.checked {
				t.Fatalf("ok %v keyOK %v checked %v (%v), want %v %v %v", err == nil, keyOK, r.checked, err, c.ok, c.keyOK, c.checked)
			}
			if err != nil && !errors.Is(err, errBadSpoolRecord) {
				t.Errorf("error %v does not wrap errBadSpoolRecord", err)
			}
			if c.ok && (r.id != "kitchen-1" || r.received != 1750000000e9) {
				t.Errorf("decoded %+v", r)
			}
		})
	}
	if _, _, err := decodeSpoolRecord(key, good, 6); err == nil {
		t.Error("a payload over the limit was taken")
	}
}

// FuzzDecodeSpoolRecord: a record never panics the decoder, and one it
// takes as checked is exactly what appendSpoolValue writes for its fields.
func FuzzDecodeSpoolRecord(f *testing.F) {
	key := spoolKey(time.Unix(1750000000, 0), "r1")
	f.Add(key, appendSpoolValue(nil, key, 7, 0, []byte(`{"text":"hi"}`)))
	f.Add(key, append(make([]byte, 8), "older"...))
	f.Add([]byte{1}, []byte{spoolValueMark, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, k, v []byte) {
		r, keyOK, err := decodeSpoolRecord(k, v, 1<<20)
		if err == nil && !keyOK {
			t.Fatal("a record taken whose key is not")
		}
		if err == nil && r.checked {
			if again := appendSpoolValue(nil, k, r.txid, r.expires, r.payload); !bytes.Equal(again, v) {
				t.Fatalf("checked record %x re-encodes as %x", v, again)
			}
		}
	})
}

// FuzzSpoolSalvage damages the 7-request spool file anywhere: the page
// reader never panics or loops, and a request it carries is the one that
// was spooled, byte for byte.
func FuzzSpoolSalvage(f *testing.F) {
	base, ids := spoolFixture(f, 7)
	f.Add(uint32(16), []byte{0xde, 0xad, 0xbe, 0xef}, uint32(0))
	f.Add(uint32(4096*2+16), bytes.Repeat([]byte{0xff}, 64), uint32(0))
	f.Add(uint32(4096*4+700), []byte("x"), uint32(0))
	f.Add(uint32(0), []byte{}, uint32(4096*3))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		d := bytes.Clone(base)
		if cut > 0 && int(cut) < len(d) {
			d = d[:cut]
		}
		if len(patch) > 64 {
			patch = patch[:64]
		}
		if len(d) > 0 {
			copy(d[int(at)%len(d):], patch)
		}
		path := filepath.Join(dir, "spool.db")
		if err := os.WriteFile(path, d, 0o600); err != nil {
			t.Fatal(err)
		}
		entries, res := salvageSpool(path, Options{MaxSpoolPayload: DefaultMaxSpoolPayload})
		seen := map[string]bool{}
		for _, e := range entries {
			i := -1
			for j, id := range ids {
				if id == e.rec.id {
					i = j
				}
			}
			if i < 0 || seen[e.rec.id] || !bytes.Equal(e.rec.payload, spoolPayload(e.rec.id, fmt.Sprintf("Item number %d.", i))) {
				t.Fatalf("carried %q (seen before: %v) with payload %q", e.rec.id, seen[e.rec.id], e.rec.payload)
			}
			seen[e.rec.id] = true
		}
		if len(entries)+len(res.Lost) > len(ids) {
			t.Fatalf("%d carried and %d lost of a file of %d", len(entries), len(res.Lost), len(ids))
		}
	})
}
