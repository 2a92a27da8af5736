// Package cachetest damages mynah's spool files the way issue 22 found
// them damaged, for the tests of package cache and of mynahd: one table,
// read at both levels. It reads the file's layout itself (bbolt's file
// format version 2: meta pages 0 and 1, page headers, leaf elements), not
// through package cache, whose reading is what the tests check.
package cachetest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
)

// bbolt's layout (go.etcd.io/bbolt/internal/common), in the machine's
// byte order.
const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	elementSize      = 16 // leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	leafFlag         = 0x02
	metaMagic        = 0
	metaPageSize     = 8
	metaRoot         = 16
	metaChecksum     = 56
	metaTxid         = 48
)

var ne = binary.NativeEndian

// SpoolDamage is one way of damaging a spool file.
type SpoolDamage struct {
	Name string
	// Damage changes a spool file whose requests lie in one leaf (an
	// inline page or a page of its own); record i is the i-th in arrival
	// order.
	Damage func(data []byte) error
	// What a salvage makes of a file of 7 requests, by index: carried
	// over, or lost under its id; Unreadable counts records lost without
	// an id, DamagedPages pages of the spool not read, Scanned that no
	// page tree led to the spool.
	Carried, Lost            []int
	Unreadable, DamagedPages int
	Scanned                  bool
	// OneRequestPerCommit says the figures hold only when the newest
	// commit added a single request (a test's fixture; mynahd commits
	// the requests that arrive together at once).
	OneRequestPerCommit bool
}

var all = []int{0, 1, 2, 3, 4, 5, 6}

// SpoolDamages is the table: issue 22's cases and the neighbours that
// reach the other ways the salvage reads.
func SpoolDamages() []SpoolDamage {
	return []SpoolDamage{
		{Name: "both meta pages", Carried: all, Damage: func(d []byte) error {
			ps, err := PageSize(d)
			for _, off := range []int{pageHeaderSize + metaMagic, ps + pageHeaderSize + metaMagic} {
				copy(d[off:], []byte{0xde, 0xad, 0xbe, 0xef})
			}
			return err
		}},
		{Name: "both meta pages' root ids", Carried: all, Scanned: true, Damage: func(d []byte) error {
			ps, err := PageSize(d)
			for _, off := range []int{pageHeaderSize + metaRoot, ps + pageHeaderSize + metaRoot} {
				ne.PutUint64(d[off:], 1<<40)
			}
			return err
		}},
		{Name: "newest meta page", Carried: all, Damage: func(d []byte) error {
			m, err := NewestMeta(d)
			d[m+pageHeaderSize+metaChecksum] ^= 0x01
			return err
		}},
		{Name: "newest meta page's root id", Carried: all, Damage: func(d []byte) error {
			m, err := NewestMeta(d)
			d[m+pageHeaderSize+metaRoot] ^= 0x40
			return err
		}},
		// The newest commit's root page holds the spool inline: of its
		// records only those the older commit had are found, and the
		// page is counted.
		{Name: "newest root page", Carried: all[:6], DamagedPages: 1, OneRequestPerCommit: true, Damage: func(d []byte) error {
			m, err := NewestMeta(d)
			if err != nil {
				return err
			}
			ps, _ := PageSize(d)
			copy(d[int(ne.Uint64(d[m+pageHeaderSize+metaRoot:]))*ps:], bytes.Repeat([]byte{0xee}, pageHeaderSize))
			return nil
		}},
		// The records of the damaged headers are framed by their
		// checksums in the page's data.
		{Name: "leaf element headers", Carried: all, Damage: func(d []byte) error {
			off, _, err := SpoolLeaf(d)
			copy(d[off+pageHeaderSize:], bytes.Repeat([]byte{0xff}, 4*elementSize))
			return err
		}},
		{Name: "leaf element headers and a key byte", Carried: []int{0, 2, 3, 4, 5, 6}, Unreadable: 1, Damage: func(d []byte) error {
			off, _, err := SpoolLeaf(d)
			if err != nil {
				return err
			}
			k, _ := Record(d, off, 1)
			copy(d[off+pageHeaderSize:], bytes.Repeat([]byte{0xff}, 4*elementSize))
			d[k+8] ^= 0x20 // the first byte of its id
			return nil
		}},
		{Name: "one value byte", Carried: []int{0, 1, 2, 4, 5, 6}, Lost: []int{3}, Damage: func(d []byte) error {
			off, _, err := SpoolLeaf(d)
			if err != nil {
				return err
			}
			_, v := Record(d, off, 3)
			d[v+20] ^= 0x10 // in the expiry
			return nil
		}},
		{Name: "one text byte", Carried: []int{0, 1, 2, 3, 4, 6}, Lost: []int{5}, Damage: func(d []byte) error {
			off, _, err := SpoolLeaf(d)
			if err != nil {
				return err
			}
			_, v := Record(d, off, 5)
			i := bytes.Index(d[v:], []byte(`"text":"`))
			if i < 0 {
				return errors.New("record 5 has no text")
			}
			i += v + len(`"text":"`)
			if d[i] == 'x' { // another ASCII letter
				d[i] = 'y'
			} else {
				d[i] = 'x'
			}
			return nil
		}},
	}
}

// PageSize is the page size meta page 0 records.
func PageSize(d []byte) (int, error) {
	if len(d) < pageHeaderSize+64 {
		return 0, fmt.Errorf("a file of %d bytes", len(d))
	}
	ps := int(ne.Uint32(d[pageHeaderSize+metaPageSize:]))
	if ps < 512 || ps&(ps-1) != 0 || len(d) < 2*ps {
		return 0, fmt.Errorf("page size %d", ps)
	}
	return ps, nil
}

// NewestMeta is the offset of the meta page with the larger txid: the one
// bbolt opens.
func NewestMeta(d []byte) (int, error) {
	ps, err := PageSize(d)
	if err != nil {
		return 0, err
	}
	if ne.Uint64(d[ps+pageHeaderSize+metaTxid:]) > ne.Uint64(d[pageHeaderSize+metaTxid:]) {
		return ps, nil
	}
	return 0, nil
}

// SpoolLeaf is the offset of the leaf holding the spool's records in the
// newest commit (the inline page in the root page's spool bucket value,
// or the bucket's own page), and its record count.
func SpoolLeaf(d []byte) (off, count int, err error) {
	m, err := NewestMeta(d)
	if err != nil {
		return 0, 0, err
	}
	ps, _ := PageSize(d)
	rootOff := int(ne.Uint64(d[m+pageHeaderSize+metaRoot:])) * ps
	root := d[rootOff:]
	if ne.Uint16(root[8:]) != leafFlag {
		return 0, 0, errors.New("the root bucket is not a single leaf")
	}
	for i := range int(ne.Uint16(root[10:])) {
		e := pageHeaderSize + i*elementSize
		kstart := e + int(ne.Uint32(root[e+4:]))
		ksize := int(ne.Uint32(root[e+8:]))
		if string(root[kstart:kstart+ksize]) != "spool" {
			continue
		}
		v := rootOff + kstart + ksize
		if page := int(ne.Uint64(d[v:])); page != 0 {
			off = page * ps
		} else {
			off = v + bucketHeaderSize
		}
		if ne.Uint16(d[off+8:]) != leafFlag {
			return 0, 0, errors.New("the spool is not a single leaf")
		}
		return off, int(ne.Uint16(d[off+10:])), nil
	}
	return 0, 0, errors.New("no spool bucket in the root page")
}

// Record is the offsets of record i's key and value in the leaf at off.
func Record(d []byte, off, i int) (key, value int) {
	e := off + pageHeaderSize + i*elementSize
	key = e + int(ne.Uint32(d[e+4:]))
	return key, key + int(ne.Uint32(d[e+8:]))
}
