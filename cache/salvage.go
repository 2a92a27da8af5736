package cache

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"os"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// A damaged file is moved aside and replaced by an empty one, but the
// spool holds commands the daemon has acknowledged: they must not vanish
// with the phrases. Before the move, salvageSpool reads what it can of the
// damaged file's spool, record by record, with the page reader of
// verify.go rather than bbolt (which trusts its pages, and cannot open a
// file whose two meta pages fail their checks), and Open carries the
// sound records into the new file.
//
// Where the records are looked for, in this order:
//
//  1. The tree of a meta page. Both meta pages are tried, the newer
//     first, whether or not their checksum holds (a damaged byte may lie
//     in any field; a damaged page's txid is believed only when it fits
//     bbolt's alternation, see metaOrder); the first whose root leads to
//     the spool bucket is taken. Every leaf element of the spool is read
//     on its own: one whose header or key fails its checks is counted
//     unreadable, one whose key holds but value does not is lost under
//     its id, the others are carried.
//  2. Pages the tree lost. A page below the tree's high-water mark that
//     the tree does not reach and its freelist does not list was cut off
//     by the damage (a branch that no longer reads): such leaf pages are
//     read too.
//  3. A newer commit. When the other meta page may be newer than the
//     tree taken, its records lie on pages that tree does not reach:
//     records there whose txid (each record carries its commit's) is
//     newer than the tree's are taken, and win over the tree's version of
//     the same key.
//  4. No tree at all. When neither meta page leads to the spool, every
//     page is read, those on a readable freelist aside, and of two
//     versions of a key the newer txid wins.
//
// Outside a tree (2 to 4) only records whose checksums hold are taken,
// and a damaged one is reported lost only when its key's checksum holds:
// a page of another bucket must not pass for one of the spool, and a
// record of an older mynahd, which has no checksum, cannot be told apart.
//
// The limit: bbolt leaves deleted records on freed pages until they are
// reused. Step 3 can bring back a record the newer commit deleted (it is
// still in the older tree), and step 4 without a freelist any record
// whose page was freed and not reused. For the daemon such a record is
// mostly an answer the broker had already acknowledged (sent again,
// marked redelivered), rarely a request it had released unanswered. The
// tests in salvage_test.go measure each case.

// SpoolSalvage is what Open saved of a damaged file's spool. Every figure
// is counted, none assumed: records on pages that could not be read at
// all are in DamagedPages, not in the other figures.
type SpoolSalvage struct {
	// Carried is how many records were copied into the new file.
	Carried int
	// Lost are the records whose key could be read but not their value,
	// or that did not fit the new file (Options.MaxSpoolEntries): ID and
	// Received are set, Payload is nil.
	Lost []SpoolEntry
	// Unreadable counts records of which not even the key could be read
	// (an element header or key that fails its checks).
	Unreadable int
	// DamagedPages counts pages of the spool's tree that could not be read
	// at all: how many records they held is not known.
	DamagedPages int
	// Scanned says that no meta page led to the spool: the records were
	// found by reading every page (step 4 above).
	Scanned bool
}

// salvaged is one sound spool record read from a damaged file.
type salvaged struct {
	key []byte
	rec spoolRecord // its payload is its own copy
}

// salvageSpool reads the spool records of a damaged file.
func salvageSpool(path string, o Options) ([]salvaged, SpoolSalvage) {
	f, err := os.Open(path)
	if err != nil {
		return nil, SpoolSalvage{Scanned: true}
	}
	defer f.Close()
	w, err := newSalvageWalker(f)
	if err != nil {
		return nil, SpoolSalvage{Scanned: true}
	}
	return readSpool(w, w.metaOrder(), o.MaxSpoolPayload).collect()
}

func newSalvageWalker(f *os.File) (*pageWalker, error) {
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	return &pageWalker{r: f, size: info.Size(), ps: salvagePageSize(f)}, nil
}

// readSpool reads the spool from the trees of metas, most trusted first
// (steps 1 to 3), or else from every page (step 4).
func readSpool(w *pageWalker, metas []boltMeta, maxPayload int) *salvager {
	for i, m := range metas {
		s := newSalvager(w, maxPayload, m.hwm)
		if !s.walkPage(m.root, 0, modeRoot) || !s.spoolFound {
			continue
		}
		s.readFreelist(m.freelist)
		// A sound newer meta page whose tree did not read: its commit's
		// pages are damaged, what they held is not known.
		for _, o := range metas[:i] {
			if o.valid && o.txid > m.txid {
				s.result.DamagedPages++
			}
		}
		// The other meta page may hold a newer commit when it is damaged
		// or newer and its tree did not lead to the spool.
		newer := slices.ContainsFunc(metas[:i], func(o boltMeta) bool { return !o.valid || o.txid > m.txid }) ||
			slices.ContainsFunc(metas[i+1:], func(o boltMeta) bool { return !o.valid })
		s.scanOutside(m.txid, newer)
		return s
	}
	s := newSalvager(w, maxPayload, w.pages())
	for _, m := range metas {
		if s.readFreelist(m.freelist) {
			break
		}
	}
	s.scanAll()
	s.result.Scanned = true
	return s
}

// checkMetaFallback checks a file one of whose meta pages fails its
// checksum. bbolt opens such a file from the other page without a word:
// when the damaged page held the newest commit, that commit is gone, and
// with it the requests it spooled. It returns an error wrapping ErrCorrupt
// when the salvage's reading of the spool (which tries the damaged page's
// tree, and a newer commit's records, too) differs from the sound page's
// tree, so that Open moves the file aside and carries the salvage.
func checkMetaFallback(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return nil // bbolt has it open: what follows reports the system's errors
	}
	defer f.Close()
	w, err := newSalvageWalker(f)
	if err != nil {
		return nil
	}
	metas := w.metaOrder()
	if len(metas) != 2 || metas[0].valid == metas[1].valid {
		return nil
	}
	sound := metas[0]
	if !sound.valid {
		sound = metas[1]
	}
	all := readSpool(w, metas, math.MaxInt)
	older := readSpool(w, []boltMeta{sound}, math.MaxInt)
	if !all.sameAs(older) {
		return fmt.Errorf("%w: a meta page is damaged, and the commit bbolt would open instead lacks spool records of a newer one", ErrCorrupt)
	}
	return nil
}

// sameAs reports whether two readings found the same records.
func (s *salvager) sameAs(o *salvager) bool {
	a, b := s.result, o.result
	if len(s.recs) != len(o.recs) || a.Unreadable != b.Unreadable || a.DamagedPages != b.DamagedPages || a.Scanned != b.Scanned {
		return false
	}
	for k, f := range s.recs {
		g, ok := o.recs[k]
		if !ok || f.isLost != g.isLost || f.txid != g.txid {
			return false
		}
	}
	return true
}

// salvagePageSize is the page size a meta page records, or the system's
// (bbolt's default) when neither can be read.
func salvagePageSize(f *os.File) uint64 {
	head := make([]byte, pageHeaderSize+metaSize)
	if n, _ := f.ReadAt(head, 0); n == len(head) {
		if ps := uint64(ne.Uint32(head[pageHeaderSize+8:])); validPageSize(ps) {
			return ps
		}
	}
	for _, ps := range []uint64{uint64(os.Getpagesize()), 4096, 16384, 65536, 8192, 32768, 2048, 1024, 512} {
		if n, _ := f.ReadAt(head, int64(ps)); n == len(head) && uint64(ne.Uint32(head[pageHeaderSize+8:])) == ps {
			return ps
		}
	}
	return uint64(os.Getpagesize())
}

func validPageSize(ps uint64) bool { return ps >= 512 && ps <= 1<<20 && ps&(ps-1) == 0 }

// metaOrder returns the meta pages, the most recent first. bbolt writes commit txid to meta page txid%2, so the two
// are one apart; a page whose checksum fails is believed newer only when
// its txid fits that (else a damaged txid could put an old tree first),
// and goes after a sound page otherwise.
func (w *pageWalker) metaOrder() []boltMeta {
	pages := w.pages()
	var ms []boltMeta
	var plausible []bool
	for i := range uint64(2) {
		m, err := w.readMeta(i * w.ps)
		if err != nil {
			continue
		}
		// A page whose fields are out of range stays in the list: its
		// tree does not read, but the commit it stood for may be newer.
		m.hwm = min(m.hwm, pages)
		ms = append(ms, m)
		plausible = append(plausible, m.valid || m.txid%2 == i)
	}
	if len(ms) == 2 && ms[0].valid != ms[1].valid {
		sound, damaged := 0, 1
		if ms[1].valid {
			sound, damaged = 1, 0
		}
		d := ms[damaged].txid - ms[sound].txid
		plausible[damaged] = plausible[damaged] && (d == 1 || d == ^uint64(0))
	}
	if len(ms) == 2 {
		// Believed pages by txid, the others after them.
		if !plausible[0] && plausible[1] || plausible[0] == plausible[1] && ms[1].txid > ms[0].txid {
			ms[0], ms[1] = ms[1], ms[0]
		}
	}
	return ms
}

// pageMode says what the elements of a page are.
type pageMode int

const (
	modeRoot  pageMode = iota // the root bucket: elements are the top-level buckets
	modeOther                 // another bucket: values, and maybe nested buckets
	modeSpool                 // the spool bucket: spool records
)

// salvager gathers spool records from one reading of a damaged file.
type salvager struct {
	w          *pageWalker
	maxPayload int
	reached    bitset // pages the tree reached, overflow included
	free       bitset // pages on the freelist, and the freelist's own
	freeKnown  bool
	spoolFound bool
	damaged    bool // some page of the tree did not read
	recs       map[string]found
	result     SpoolSalvage
}

// found is the best version of one key: a sound record, or a lost one.
type found struct {
	salvaged
	lost   SpoolEntry
	isLost bool
	txid   uint64
}

type bitset []uint64

func newBitset(n uint64) bitset    { return make(bitset, (n+63)/64) }
func (b bitset) has(i uint64) bool { return i/64 < uint64(len(b)) && b[i/64]&(1<<(i%64)) != 0 }
func (b bitset) set(i uint64)      { b[i/64] |= 1 << (i % 64) }

func (b bitset) setRun(i, n uint64) {
	for p := i; p < i+n; p++ {
		b.set(p)
	}
}

func newSalvager(w *pageWalker, maxPayload int, hwm uint64) *salvager {
	pages := uint64(w.size) / w.ps
	w.hwm = hwm
	return &salvager{w: w, maxPayload: maxPayload, reached: newBitset(pages), free: newBitset(pages), recs: map[string]found{}}
}

// walkPage reads page id and the tree below it, tolerating damage: a page
// that does not read is noted and skipped. It reports whether page id
// itself read.
func (s *salvager) walkPage(id uint64, depth int, mode pageMode) bool {
	ok := s.walk(id, depth, mode)
	if !ok {
		s.damaged = true
		if mode == modeSpool {
			s.result.DamagedPages++
		}
	}
	return ok
}

func (s *salvager) walk(id uint64, depth int, mode pageMode) bool {
	if depth > maxTreeDepth || id < 2 || id >= s.w.hwm || s.reached.has(id) {
		return false
	}
	flags, count, run, err := s.w.pageHeader(id)
	if err != nil || (flags != branchPageFlag && flags != leafPageFlag) {
		return false
	}
	length := run * s.w.ps
	if pageHeaderSize+uint64(count)*pageElementSize > length {
		return false
	}
	s.reached.setRun(id, run)
	// A spool page is read whole (spool pages are small); other leaves
	// only as far as their element array, as verify does.
	n := pageHeaderSize + uint64(count)*pageElementSize
	if mode == modeSpool && flags == leafPageFlag {
		n = length
	}
	b, err := s.w.read(id*s.w.ps, n)
	if err != nil {
		return false
	}
	p := clone(b)
	if flags == branchPageFlag {
		for i := range int(count) {
			if _, _, child, err := branchElemAt(p, i, length); err != nil {
				s.damaged = true
				if mode == modeSpool {
					s.result.DamagedPages++ // its child, unread
				}
			} else {
				s.walkPage(child, depth+1, mode)
			}
		}
		return true
	}
	if mode == modeSpool {
		s.spoolElems(p, int(count), length)
		return true
	}
	for i := range int(count) {
		el, err := leafElemAt(p, i, length)
		if err != nil {
			s.damaged = true
			continue
		}
		if el.flags&bucketLeafFlag == 0 {
			continue
		}
		k, err := s.w.read(id*s.w.ps+el.kstart, el.ksize)
		if err != nil {
			s.damaged = true
			continue
		}
		name := string(k)
		v, err := s.w.read(id*s.w.ps+el.kstart+el.ksize, el.vsize)
		if err != nil {
			s.damaged = true
			continue
		}
		s.walkBucket(clone(v), depth+1, childMode(mode, name))
	}
	return true
}

func childMode(parent pageMode, name string) pageMode {
	if parent == modeRoot && name == string(bucketSpool) {
		return modeSpool
	}
	return modeOther
}

// walkBucket follows a bucket header: a root page, or an inline leaf page
// in the value itself.
func (s *salvager) walkBucket(v []byte, depth int, mode pageMode) {
	if mode == modeSpool {
		s.spoolFound = true
	}
	damage := func() {
		s.damaged = true
		if mode == modeSpool {
			s.result.DamagedPages++
		}
	}
	if len(v) < bucketHeaderSize || depth > maxTreeDepth {
		damage()
		return
	}
	if root := ne.Uint64(v); root != 0 {
		s.walkPage(root, depth, mode)
		return
	}
	p := v[bucketHeaderSize:]
	if len(p) < pageHeaderSize || ne.Uint16(p[8:]) != leafPageFlag {
		damage()
		return
	}
	count := int(ne.Uint16(p[10:]))
	if mode == modeSpool {
		s.spoolElems(p, count, uint64(len(p)))
		return
	}
	for i := range count {
		el, err := leafElemAt(p, i, uint64(len(p)))
		if err != nil {
			s.damaged = true
			continue
		}
		if el.flags&bucketLeafFlag != 0 {
			vstart := el.kstart + el.ksize
			name := string(p[el.kstart:vstart])
			s.walkBucket(p[vstart:vstart+el.vsize], depth+1, childMode(modeOther, name))
		}
	}
}

// spoolElems reads the records of a leaf of the spool's tree (a page of
// length bytes, whole in p). Every element is a record: a flag damaged
// into the bucket flag does not make one a bucket.
//
// A record of the current layout proves itself by its checksums. An older
// one has none, and a damaged element header can frame bytes that pass
// for one (a key size one longer, a value one shorter), so older records
// are believed only on a leaf written wholly by an older mynahd whose
// elements all hold together: each where bbolt puts it (keys and values
// one after the other, in element order, right after the element array),
// keys ascending. Elsewhere an older record in place is reported lost
// under its id, and out of place counted unreadable.
func (s *salvager) spoolElems(p []byte, count int, length uint64) {
	elems := make([]leafElem, count)
	bad := make([]bool, count)
	next, known := pageHeaderSize+uint64(count)*pageElementSize, true
	inPlace := make([]bool, count)
	oldOK := true
	var prevKey []byte
	for i := range count {
		el, err := leafElemAt(p, i, length)
		if err != nil {
			bad[i], known, oldOK = true, false, false
			continue
		}
		elems[i] = el
		k := p[el.kstart : el.kstart+el.ksize]
		v := p[el.kstart+el.ksize : el.kstart+el.ksize+el.vsize]
		inPlace[i] = known && el.kstart == next
		oldOK = oldOK && inPlace[i] && bytes.Compare(prevKey, k) < 0 && (len(v) == 0 || v[0] != spoolValueMark)
		prevKey = k
		// An element in place, or a record whose checksums hold, says
		// where the next one begins.
		if _, _, err := decodeSpoolRecord(k, v, s.maxPayload); inPlace[i] || err == nil && len(v) > 0 && v[0] == spoolValueMark {
			next, known = el.kstart+el.ksize+el.vsize, true
		} else {
			known = false
		}
	}
	// Records are counted by the keys found: elements whose headers
	// were damaged may point at another's bytes.
	found := map[string]bool{}
	var sound, lost []span // where the records kept lie in p
	clean := true
	for i, el := range elems {
		if bad[i] {
			clean = false
			continue
		}
		vstart := el.kstart + el.ksize
		k := p[el.kstart:vstart]
		sp := span{el.kstart, vstart + el.vsize, string(k)}
		switch s.treeRecord(k, p[vstart:sp.end], inPlace[i], oldOK) {
		case keptSound:
			found[sp.key], sound = true, append(sound, sp)
		case keptLost:
			found[sp.key], lost = true, append(lost, sp)
		default:
			clean = false
		}
		clean = clean && inPlace[i]
	}
	if !clean {
		sound = append(sound, s.frameRecords(p, pageHeaderSize+uint64(count)*pageElementSize, found)...)
		// A lost record framed by a damaged header over the bytes of a
		// sound one is those bytes, not a record of its own.
		for _, l := range lost {
			if slices.ContainsFunc(sound, func(o span) bool { return l.start < o.end && o.start < l.end }) {
				if f := s.recs[l.key]; f.isLost {
					delete(s.recs, l.key)
				}
				delete(found, l.key)
			}
		}
	}
	s.result.Unreadable += max(0, count-len(found))
}

// span is where a record lies in its page.
type span struct {
	start, end uint64
	key        string
}

type kept int

const (
	keptNone  kept = iota
	keptSound      // a sound record
	keptLost       // lost under its key
)

// treeRecord takes a record of the tree read: inPlace says its element
// lies where bbolt puts it, oldOK that an older record is believed.
func (s *salvager) treeRecord(k, v []byte, inPlace, oldOK bool) kept {
	r, keyOK, err := decodeSpoolRecord(k, v, s.maxPayload)
	switch {
	case err == nil && (r.checked || oldOK):
		s.keep(k, r)
		return keptSound
	case err == nil && inPlace, keyOK && (inPlace || len(v) > 0 && v[0] >= 0x80):
		s.keepLost(k) // its key: by its checksum, or in place
		return keptLost
	}
	return keptNone
}

// frameRecords finds the records of the current layout in the data of a
// leaf whose element headers did not all hold, without them: bbolt
// writes a page's keys and values one after the other from the end of
// its element array, and the rest of the page is zero, so a key and a
// value whose checksums both hold, framed anywhere in that area, are one
// of the page's records. Keys already found are left.
func (s *salvager) frameRecords(p []byte, from uint64, found map[string]bool) (spans []span) {
	for q := int(from); q < len(p); {
		ksize, vsize, ok := frameAt(p[q:])
		if !ok {
			q++
			continue
		}
		k, v := p[q:q+ksize], p[q+ksize:q+ksize+vsize]
		if r, _, err := decodeSpoolRecord(k, v, s.maxPayload); err == nil {
			if f, seen := s.recs[string(k)]; !found[string(k)] || seen && f.isLost {
				s.keep(k, r)
				found[string(k)] = true
			}
			spans = append(spans, span{uint64(q), uint64(q + ksize + vsize), string(k)})
		}
		q += ksize + vsize
	}
	return spans
}

// frameAt reports whether b begins with a record of the current layout:
// a key of spool shape followed by spoolValueMark and the key's checksum,
// then a value whose checksum holds at its shortest length that does.
func frameAt(b []byte) (ksize, vsize int, ok bool) {
	for ksize = 9; ksize <= 8+maxSpoolID && ksize+spoolValueHeader <= len(b); ksize++ {
		v := b[ksize:]
		if v[0] != spoolValueMark || !spoolKeyShape(b[:ksize]) ||
			binary.BigEndian.Uint32(v[1:]) != crc32.Checksum(b[:ksize], castagnoli) {
			continue
		}
		want := binary.BigEndian.Uint32(v[5:])
		sum := crc32.Checksum(v[9:spoolValueHeader], castagnoli)
		for vsize = spoolValueHeader; ; vsize++ {
			if sum == want {
				return ksize, vsize, true
			}
			if vsize == len(v) {
				break
			}
			sum = crc32.Update(sum, castagnoli, v[vsize:vsize+1])
		}
	}
	return 0, 0, false
}

// keep records a sound record unless a version of its key as new is
// known. A lost version (its txid unknown) gives way to any sound one: in
// a tree a key is found once, and outside it only records of a newer
// commit or of the tree's own lost pages are taken.
func (s *salvager) keep(k []byte, r spoolRecord) {
	if old, seen := s.recs[string(k)]; seen && !old.isLost && r.txid <= old.txid {
		return
	}
	r.payload = clone(r.payload)
	s.recs[string(k)] = found{salvaged: salvaged{key: clone(k), rec: r}, txid: r.txid}
}

// keepLost records a key whose value did not read.
func (s *salvager) keepLost(k []byte) {
	if _, seen := s.recs[string(k)]; seen {
		return
	}
	s.recs[string(k)] = found{lost: SpoolEntry{ID: string(k[8:]), Received: time.Unix(0, int64(binary.BigEndian.Uint64(k)))}, isLost: true}
}

// readFreelist marks the pages freelist id lists as free, and the
// freelist's own. It reports whether the freelist read.
func (s *salvager) readFreelist(id uint64) bool {
	if id == noFreelist {
		return false
	}
	flags, count, run, err := s.w.pageHeader(id)
	if err != nil || flags != freelistFlag {
		return false
	}
	off, n := id*s.w.ps+pageHeaderSize, uint64(count)
	if count == 0xFFFF {
		b, err := s.w.read(off, 8)
		if err != nil {
			return false
		}
		off, n = off+8, ne.Uint64(b)
	}
	if n > (run*s.w.ps-pageHeaderSize)/8 {
		return false
	}
	b, err := s.w.read(off, n*8)
	if err != nil {
		return false
	}
	pages := s.w.pages()
	free := newBitset(pages)
	for i := uint64(0); i < n*8; i += 8 {
		p := ne.Uint64(b[i:])
		if p < 2 || p >= pages {
			return false
		}
		free.set(p)
	}
	free.setRun(id, run)
	s.free, s.freeKnown = free, true
	return true
}

func (w *pageWalker) pages() uint64 { return uint64(w.size) / w.ps }

// scanOutside reads the leaf pages the tree did not reach: those it lost
// (step 2, when the tree was damaged and its freelist read) and, when
// newer says another commit may be newer than the tree's txid, records of
// such a commit anywhere (step 3).
func (s *salvager) scanOutside(txid uint64, newer bool) {
	lostPages := s.damaged && s.freeKnown
	if !lostPages && !newer {
		return
	}
	hwm := s.w.hwm
	s.w.hwm = s.w.pages() // a newer commit may have grown the file
	defer func() { s.w.hwm = hwm }()
	for id := uint64(2); id < s.w.hwm; id++ {
		if s.reached.has(id) {
			continue
		}
		cut := lostPages && id < hwm && !s.free.has(id)
		if cut || newer {
			s.scanPage(id, func(r spoolRecord) bool { return cut || r.txid > txid }, cut)
		}
	}
}

// scanAll reads every page not on the freelist (step 4).
func (s *salvager) scanAll() {
	for id := uint64(2); id < s.w.hwm; id++ {
		if !s.free.has(id) {
			s.scanPage(id, func(spoolRecord) bool { return true }, true)
		}
	}
}

// scanPage reads page id as a leaf of spool records, if it is a leaf,
// and keeps the sound records take accepts, and when lostOK the damaged
// ones of the current layout whose key's checksum holds (a damaged record
// cannot be dated: on a page that may be stale it is left).
func (s *salvager) scanPage(id uint64, take func(spoolRecord) bool, lostOK bool) {
	flags, count, run, err := s.w.pageHeader(id)
	if err != nil || flags != leafPageFlag {
		return
	}
	length := run * s.w.ps
	b, err := s.w.read(id*s.w.ps, length)
	if err != nil {
		return
	}
	s.scanLeaf(b, int(count), length, take, lostOK, 0)
}

// scanLeaf reads the elements of a leaf page (whole in p) as spool
// records, and those of the inline buckets among them: a small spool is
// inline in the root page.
func (s *salvager) scanLeaf(p []byte, count int, length uint64, take func(spoolRecord) bool, lostOK bool, depth int) {
	for i := range count {
		el, err := leafElemAt(p, i, length)
		if err != nil {
			continue
		}
		vstart := el.kstart + el.ksize
		k, v := p[el.kstart:vstart], p[vstart:vstart+el.vsize]
		if el.flags&bucketLeafFlag != 0 {
			if in := v[min(len(v), bucketHeaderSize):]; len(v) >= bucketHeaderSize+pageHeaderSize && ne.Uint64(v) == 0 &&
				ne.Uint16(in[8:]) == leafPageFlag && depth < maxTreeDepth {
				s.scanLeaf(in, int(ne.Uint16(in[10:])), uint64(len(in)), take, lostOK, depth+1)
			}
			continue
		}
		r, keyOK, err := decodeSpoolRecord(k, v, s.maxPayload)
		switch {
		case err == nil && r.checked && take(r):
			s.keep(k, r)
		case err != nil && lostOK && keyOK && len(v) > 0 && v[0] >= 0x80:
			s.keepLost(k)
		}
	}
}

// collect returns the sound records in key order (arrival order) and the
// figures.
func (s *salvager) collect() ([]salvaged, SpoolSalvage) {
	var out []salvaged
	res := s.result
	for _, f := range s.recs {
		if f.isLost {
			res.Lost = append(res.Lost, f.lost)
		} else {
			out = append(out, f.salvaged)
		}
	}
	slices.SortFunc(out, func(a, b salvaged) int { return cmp.Compare(string(a.key), string(b.key)) })
	slices.SortFunc(res.Lost, func(a, b SpoolEntry) int {
		return cmp.Or(a.Received.Compare(b.Received), cmp.Compare(a.ID, b.ID))
	})
	return out, res
}

// carrySpool writes salvaged records into the new file in one commit,
// in the current layout with the new file's txid (a txid of the damaged
// file would mean nothing there). Those beyond Options.MaxSpoolEntries
// are returned as lost.
func (s *Store) carrySpool(entries []salvaged) (carried int, lost []SpoolEntry, err error) {
	if len(entries) == 0 {
		return 0, nil, nil
	}
	err = s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		carried, lost = 0, nil
		b := tx.Bucket(bucketSpool)
		for _, e := range entries {
			r := e.rec
			if len(s.st.spool) >= s.opts.MaxSpoolEntries {
				lost = append(lost, SpoolEntry{ID: r.id, Received: time.Unix(0, r.received)})
				continue
			}
			val := appendSpoolValue(nil, e.key, uint64(tx.ID()), r.expires, r.payload)
			if err := b.Put(e.key, val); err != nil {
				return abort(err)
			}
			s.st.spool[r.id] = e.key
			carried++
		}
		return nil
	}})
	if err != nil {
		return 0, nil, fmt.Errorf("carry spool: %w", err)
	}
	return carried, lost, nil
}
