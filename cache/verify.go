package cache

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"os"
)

// verifyStructure walks the page tree of a bbolt file before bbolt walks it.
//
// Why: bbolt trusts its pages. A byte flip that makes a branch point at its
// own ancestor sends bbolt's recursive walks (tx.Check, cursor seeks) into
// an endless recursion, and a Go stack overflow is a fatal error that no
// recover catches; an element offset pointing past the page makes bbolt read
// outside its memory map, a fault that kills the process in any goroutine
// that has not asked for panics on faults (tx.Check's own goroutine has not).
// This walk proves, reading the file with pread, that every page reachable
// from the current meta page lies inside the file and below the high-water
// mark, is referenced once, is a branch or leaf, sits at most maxTreeDepth
// levels deep, and that every element's key and value lie inside its page;
// that no page in use, overflow pages included, is on the freelist
// (tx.Check looks only at a page's first page, and a free overflow page is
// handed out again, which later makes bbolt free a page twice and panic);
// and that every branch key equals its child's first key, as bbolt writes
// them (tx.Check checks only their order, but bbolt finds a child's entry
// in its parent by that key when it splits the child: a wrong key adds a
// second entry, and the page later points at itself, another panic).
// Then tx.Check can only report, never crash. Values of ordinary keys are
// not read, so the cost is one pread per page plus bucket headers: about
// the size of the branch and leaf headers, not of the data.
//
// The constants mirror bbolt's on-disk format (file format version 2, in
// go.etcd.io/bbolt/internal/common); bbolt files use the machine's byte
// order.
func verifyStructure(path string, pageSize int) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return fmt.Errorf("verify: %w", err)
	}
	w := &pageWalker{r: f, size: info.Size(), ps: uint64(pageSize)}
	return w.run()
}

const (
	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	pageElementSize  = 16 // branch: pos, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root pgid u64, sequence u64
	metaSize         = 64 // magic, version, pageSize, flags u32; root bucket; freelist, pgid, txid, checksum u64
	metaSumSize      = 56 // bytes covered by the meta checksum (FNV-1a 64)

	boltMagic      = 0xED0CDAED
	boltVersion    = 2
	branchPageFlag = 0x01
	leafPageFlag   = 0x02
	freelistFlag   = 0x10
	bucketLeafFlag = 0x01
	noFreelist     = ^uint64(0)

	// maxTreeDepth bounds the nesting of pages and buckets. A B+tree of
	// 4 KiB pages reaches depth 6 with billions of keys; 64 only stops loops.
	maxTreeDepth = 64
)

var ne = binary.NativeEndian

type boltMeta struct {
	valid    bool
	root     uint64
	freelist uint64
	hwm      uint64 // the page-id high-water mark
	txid     uint64
}

type pageWalker struct {
	r    io.ReaderAt
	size int64
	ps   uint64
	hwm  uint64
	seen []uint64 // bitset of referenced page ids
	buf  []byte
}

func (w *pageWalker) run() error {
	if w.ps < 512 || w.ps > 1<<20 || w.ps&(w.ps-1) != 0 {
		return fmt.Errorf("page size %d is not a power of two in [512, 1 MiB]", w.ps)
	}
	if uint64(w.size) < 2*w.ps {
		return fmt.Errorf("file of %d bytes is shorter than its two meta pages", w.size)
	}
	m0, err := w.readMeta(0)
	if err != nil {
		return err
	}
	m1, err := w.readMeta(w.ps)
	if err != nil {
		return err
	}
	// The same choice as bbolt's DB.meta: the newer meta page if it is
	// valid, else the older one.
	m, older := m0, m1
	if m1.txid > m0.txid {
		m, older = m1, m0
	}
	if !m.valid {
		m = older
	}
	if !m.valid {
		return fmt.Errorf("both meta pages are invalid")
	}
	if m.hwm < 3 || m.hwm > uint64(w.size)/w.ps {
		return fmt.Errorf("high-water mark page %d lies beyond the end of the %d-byte file", m.hwm, w.size)
	}
	w.hwm = m.hwm
	w.seen = make([]uint64, (m.hwm+63)/64)
	w.seen[0] = 3 // the meta pages
	var freeID, freeLen uint64
	if m.freelist != noFreelist {
		var err error
		if freeID, freeLen, err = w.checkFreelist(m.freelist); err != nil {
			return err
		}
	}
	if _, err := w.walkPage(m.root, 0); err != nil {
		return err
	}
	if freeLen > 0 {
		return w.checkFreeIDs(freeID, freeLen)
	}
	return nil
}

func (w *pageWalker) readMeta(off uint64) (boltMeta, error) {
	b, err := w.read(off, pageHeaderSize+metaSize)
	if err != nil {
		return boltMeta{}, err
	}
	mb := b[pageHeaderSize:]
	h := fnv.New64a()
	h.Write(mb[:metaSumSize])
	m := boltMeta{
		root:     ne.Uint64(mb[16:]),
		freelist: ne.Uint64(mb[32:]),
		hwm:      ne.Uint64(mb[40:]),
		txid:     ne.Uint64(mb[48:]),
	}
	m.valid = ne.Uint32(mb[0:]) == boltMagic && ne.Uint32(mb[4:]) == boltVersion &&
		uint64(ne.Uint32(mb[8:])) == w.ps && ne.Uint64(mb[56:]) == h.Sum64()
	return m, nil
}

// read returns n bytes at off in a buffer reused by the next read.
func (w *pageWalker) read(off, n uint64) ([]byte, error) {
	if off > uint64(w.size) || n > uint64(w.size)-off {
		return nil, fmt.Errorf("read of %d bytes at offset %d passes the end of the %d-byte file", n, off, w.size)
	}
	if uint64(cap(w.buf)) < n {
		w.buf = make([]byte, n)
	}
	b := w.buf[:n]
	if _, err := w.r.ReadAt(b, int64(off)); err != nil {
		return nil, fmt.Errorf("verify: %w", err)
	}
	return b, nil
}

// mark records pages [id, id+n) as referenced and fails on the second
// reference, which is how a loop shows up.
func (w *pageWalker) mark(id, n uint64) error {
	for p := id; p < id+n; p++ {
		bit := uint64(1) << (p % 64)
		if w.seen[p/64]&bit != 0 {
			return fmt.Errorf("page %d is referenced twice", p)
		}
		w.seen[p/64] |= bit
	}
	return nil
}

// header reads and checks the header of page id, returning its flags,
// element count and length in bytes (with overflow pages).
func (w *pageWalker) header(id uint64) (flags uint16, count uint16, length uint64, err error) {
	flags, count, run, err := w.pageHeader(id)
	if err != nil {
		return 0, 0, 0, err
	}
	if err := w.mark(id, run); err != nil {
		return 0, 0, 0, err
	}
	return flags, count, run * w.ps, nil
}

// pageHeader reads the header of page id and checks that it names the
// page and that its overflow pages stay below the high-water mark. run is
// the page's length in pages.
func (w *pageWalker) pageHeader(id uint64) (flags, count uint16, run uint64, err error) {
	if id < 2 || id >= w.hwm {
		return 0, 0, 0, fmt.Errorf("page id %d outside [2, %d)", id, w.hwm)
	}
	h, err := w.read(id*w.ps, pageHeaderSize)
	if err != nil {
		return 0, 0, 0, err
	}
	if got := ne.Uint64(h); got != id {
		return 0, 0, 0, fmt.Errorf("page %d has id %d in its header", id, got)
	}
	flags, count = ne.Uint16(h[8:]), ne.Uint16(h[10:])
	run = uint64(ne.Uint32(h[12:])) + 1
	if run > w.hwm-id {
		return 0, 0, 0, fmt.Errorf("page %d with %d overflow pages passes the high-water mark %d", id, run-1, w.hwm)
	}
	return flags, count, run, nil
}

// leafElem is where a leaf element's key and value lie, in bytes from the
// start of its page.
type leafElem struct {
	flags                uint32
	kstart, ksize, vsize uint64
}

// leafElemAt decodes element i of a leaf page of length bytes whose
// header and element array are p. An element's position is relative to
// its own header; key and value must end inside the page.
func leafElemAt(p []byte, i int, length uint64) (leafElem, error) {
	off := pageHeaderSize + uint64(i)*pageElementSize
	if off+pageElementSize > uint64(len(p)) {
		return leafElem{}, fmt.Errorf("leaf element %d lies past the element array", i)
	}
	e := p[off:]
	el := leafElem{flags: ne.Uint32(e), kstart: off + uint64(ne.Uint32(e[4:])), ksize: uint64(ne.Uint32(e[8:])), vsize: uint64(ne.Uint32(e[12:]))}
	if el.kstart+el.ksize+el.vsize > length {
		return leafElem{}, fmt.Errorf("leaf element %d ends past the page", i)
	}
	return el, nil
}

// branchElemAt decodes element i of a branch page (as leafElemAt).
func branchElemAt(p []byte, i int, length uint64) (kstart, ksize, child uint64, err error) {
	off := pageHeaderSize + uint64(i)*pageElementSize
	if off+pageElementSize > uint64(len(p)) {
		return 0, 0, 0, fmt.Errorf("branch element %d lies past the element array", i)
	}
	e := p[off:]
	kstart, ksize = off+uint64(ne.Uint32(e)), uint64(ne.Uint32(e[4:]))
	if kstart+ksize > length {
		return 0, 0, 0, fmt.Errorf("branch key %d ends past the page", i)
	}
	return kstart, ksize, ne.Uint64(e[8:]), nil
}

// checkFreelist checks the freelist page's header and returns where its
// ids lie.
func (w *pageWalker) checkFreelist(id uint64) (off, length uint64, err error) {
	flags, count, length, err := w.header(id)
	if err != nil {
		return 0, 0, fmt.Errorf("freelist: %w", err)
	}
	if flags != freelistFlag {
		return 0, 0, fmt.Errorf("freelist page %d has flags %#x", id, flags)
	}
	off, n := id*w.ps+pageHeaderSize, uint64(count)
	if count == 0xFFFF { // the real count is the first id slot
		b, err := w.read(off, 8)
		if err != nil {
			return 0, 0, err
		}
		off, n = off+8, ne.Uint64(b)
	}
	if n > (length-pageHeaderSize)/8 {
		return 0, 0, fmt.Errorf("freelist page %d: %d ids do not fit in %d bytes", id, n, length)
	}
	return off, n * 8, nil
}

// checkFreeIDs fails if a free page id is out of range, listed twice or in
// use.
func (w *pageWalker) checkFreeIDs(off, length uint64) error {
	b, err := w.read(off, length)
	if err != nil {
		return err
	}
	free := make([]uint64, len(w.seen))
	for i := uint64(0); i < length; i += 8 {
		p := ne.Uint64(b[i:])
		if p < 2 || p >= w.hwm {
			return fmt.Errorf("free page id %d outside [2, %d)", p, w.hwm)
		}
		bit := uint64(1) << (p % 64)
		if w.seen[p/64]&bit != 0 {
			return fmt.Errorf("page %d is both in use and free", p)
		}
		if free[p/64]&bit != 0 {
			return fmt.Errorf("page %d is free twice", p)
		}
		free[p/64] |= bit
	}
	return nil
}

// walkPage checks page id and the tree below it and returns the page's
// first key.
func (w *pageWalker) walkPage(id uint64, depth int) ([]byte, error) {
	if depth > maxTreeDepth {
		return nil, fmt.Errorf("page tree deeper than %d levels at page %d", maxTreeDepth, id)
	}
	flags, count, length, err := w.header(id)
	if err != nil {
		return nil, err
	}
	if flags != branchPageFlag && flags != leafPageFlag {
		return nil, fmt.Errorf("page %d is neither branch nor leaf (flags %#x)", id, flags)
	}
	elemsEnd := uint64(pageHeaderSize) + uint64(count)*pageElementSize
	if elemsEnd > length {
		return nil, fmt.Errorf("page %d: %d elements do not fit in %d bytes", id, count, length)
	}
	elems, err := w.read(id*w.ps, elemsEnd)
	if err != nil {
		return nil, err
	}
	elems = append([]byte(nil), elems...) // w.buf is reused below
	base := id * w.ps
	var first []byte
	if flags == branchPageFlag {
		for i := range int(count) {
			kstart, ksize, child, err := branchElemAt(elems, i, length)
			if err != nil {
				return nil, fmt.Errorf("page %d: %w", id, err)
			}
			k, err := w.read(base+kstart, ksize)
			if err != nil {
				return nil, err
			}
			k = append([]byte(nil), k...)
			childFirst, err := w.walkPage(child, depth+1)
			if err != nil {
				return nil, err
			}
			if !bytes.Equal(k, childFirst) {
				return nil, fmt.Errorf("page %d: branch key %d is not the first key of its child page %d", id, i, child)
			}
			if i == 0 {
				first = k
			}
		}
		return first, nil
	}
	for i := range int(count) {
		el, err := leafElemAt(elems, i, length)
		if err != nil {
			return nil, fmt.Errorf("page %d: %w", id, err)
		}
		if i == 0 {
			k, err := w.read(base+el.kstart, el.ksize)
			if err != nil {
				return nil, err
			}
			first = append([]byte(nil), k...)
		}
		if el.flags&bucketLeafFlag == 0 {
			continue
		}
		v, err := w.read(base+el.kstart+el.ksize, el.vsize)
		if err != nil {
			return nil, err
		}
		if err := w.walkBucket(append([]byte(nil), v...), depth+1); err != nil {
			return nil, fmt.Errorf("bucket in page %d: %w", id, err)
		}
	}
	return first, nil
}

// walkBucket follows a bucket header: a root page, or an inline leaf page
// stored in the value itself.
func (w *pageWalker) walkBucket(v []byte, depth int) error {
	if depth > maxTreeDepth {
		return fmt.Errorf("buckets nested deeper than %d levels", maxTreeDepth)
	}
	if len(v) < bucketHeaderSize {
		return fmt.Errorf("bucket header of %d bytes", len(v))
	}
	if root := ne.Uint64(v); root != 0 {
		_, err := w.walkPage(root, depth)
		return err
	}
	p := v[bucketHeaderSize:]
	if len(p) < pageHeaderSize || ne.Uint16(p[8:]) != leafPageFlag {
		return fmt.Errorf("inline bucket page is not a leaf")
	}
	count := int(ne.Uint16(p[10:]))
	if pageHeaderSize+count*pageElementSize > len(p) {
		return fmt.Errorf("inline bucket: %d elements do not fit in %d bytes", count, len(p))
	}
	for i := range count {
		el, err := leafElemAt(p, i, uint64(len(p)))
		if err != nil {
			return fmt.Errorf("inline bucket: %w", err)
		}
		if el.flags&bucketLeafFlag != 0 {
			vstart := el.kstart + el.ksize
			if err := w.walkBucket(p[vstart:vstart+el.vsize], depth+1); err != nil {
				return err
			}
		}
	}
	return nil
}
