package cache

import (
	"bytes"
	"cmp"
	"container/list"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// The file's layout. Every bucket is created once, by the migrations, when
// the file is opened read-write; afterwards a missing bucket means damage.
var (
	bucketMeta    = []byte("meta")         // schema version, persisted counters
	bucketPhrases = []byte("phrases")      // PhraseKey → the caller's bytes
	bucketIndex   = []byte("phrase_index") // PhraseKey → indexRecord (size, times, pin, voice)
	bucketSpool   = []byte("spool")        // received (8 bytes, big-endian ns) + id → spool value (spool_record.go)
	bucketSpeaker = []byte("speakers")     // "owner/name" → speakerRecord (schema 2)

	keySchema   = []byte("schema")
	keyCounters = []byte("counters")

	ourBuckets = [][]byte{bucketMeta, bucketPhrases, bucketIndex, bucketSpool, bucketSpeaker}
)

// migrations[n] upgrades a file from schema version n to n+1, inside the
// open's write transaction; the runner then records n+1. Version 0 is a
// file without a meta bucket: a new, empty bbolt file. Append a function
// here to change the layout; never edit one that has shipped.
var migrations = []func(tx *bolt.Tx) error{
	// 0 → 1: the first layout.
	func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketPhrases, bucketIndex, bucketSpool} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return nil
	},
	// 1 → 2: speaker embeddings.
	func(tx *bolt.Tx) error {
		_, err := tx.CreateBucketIfNotExists(bucketSpeaker)
		return err
	},
}

// schemaVersion is the version this build writes.
func schemaVersion() uint64 { return uint64(len(migrations)) }

// readSchema returns the file's schema version, or an error wrapping
// ErrCorrupt for a file that is not ours or is newer than this build.
func readSchema(tx *bolt.Tx) (uint64, error) {
	meta := tx.Bucket(bucketMeta)
	if meta == nil {
		var foreign error
		_ = tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			switch {
			case b == nil:
				foreign = fmt.Errorf("%w: top-level key %q is not a bucket", ErrCorrupt, name)
			case !slices.ContainsFunc(ourBuckets, func(b []byte) bool { return bytes.Equal(b, name) }):
				foreign = fmt.Errorf("%w: a bbolt file of another program (bucket %q)", ErrCorrupt, name)
			}
			return foreign
		})
		return 0, foreign
	}
	v := meta.Get(keySchema)
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: schema version record of %d bytes", ErrCorrupt, len(v))
	}
	version := binary.BigEndian.Uint64(v)
	if version > schemaVersion() {
		return 0, fmt.Errorf("%w: schema version %d is newer than this build's %d", ErrCorrupt, version, schemaVersion())
	}
	return version, nil
}

// upgradeSchema runs the migrations from the file's version to the current
// one and checks that every bucket exists afterwards.
func upgradeSchema(tx *bolt.Tx) (from uint64, err error) {
	from, err = readSchema(tx)
	if err != nil {
		return 0, err
	}
	meta, err := tx.CreateBucketIfNotExists(bucketMeta)
	if err != nil {
		return 0, fmt.Errorf("create meta bucket: %w", err)
	}
	for v := from; v < schemaVersion(); v++ {
		if err := migrations[v](tx); err != nil {
			return 0, fmt.Errorf("upgrade schema %d to %d: %w", v, v+1, err)
		}
		if err := meta.Put(keySchema, binary.BigEndian.AppendUint64(nil, v+1)); err != nil {
			return 0, fmt.Errorf("upgrade schema %d to %d: %w", v, v+1, err)
		}
	}
	return from, checkBuckets(tx)
}

func checkBuckets(tx *bolt.Tx) error {
	for _, name := range ourBuckets {
		if tx.Bucket(name) == nil {
			return fmt.Errorf("%w: bucket %q is missing", ErrCorrupt, name)
		}
	}
	return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
		if b == nil {
			return fmt.Errorf("%w: top-level key %q is not a bucket", ErrCorrupt, name)
		}
		return nil
	})
}

// indexRecord is the small per-phrase record kept apart from the audio so
// that refreshing the last-use time rewrites a few dozen bytes, not the
// audio's overflow pages.
//
//	[0] record version (1)  [1] flags (bit 0: pinned)  [2:6] value size u32
//	[6:14] created ns  [14:22] last use ns  [22] voice length  [23:] voice
type indexRecord struct {
	size    int64
	created int64
	lastUse int64
	pinned  bool
	voice   string
}

const indexRecordVersion = 1

// maxVoiceLen is the longest voice name a phrase can carry (one length byte).
const maxVoiceLen = 255

func (r indexRecord) append(b []byte) []byte {
	var flags byte
	if r.pinned {
		flags = 1
	}
	b = append(b, indexRecordVersion, flags)
	b = binary.BigEndian.AppendUint32(b, uint32(r.size))
	b = binary.BigEndian.AppendUint64(b, uint64(r.created))
	b = binary.BigEndian.AppendUint64(b, uint64(r.lastUse))
	b = append(b, byte(len(r.voice)))
	return append(b, r.voice...)
}

func decodeIndexRecord(b []byte) (indexRecord, error) {
	if len(b) < 23 || b[0] != indexRecordVersion || b[1]&^1 != 0 || len(b) != 23+int(b[22]) {
		return indexRecord{}, fmt.Errorf("malformed phrase index record of %d bytes", len(b))
	}
	return indexRecord{
		pinned:  b[1]&1 != 0,
		size:    int64(binary.BigEndian.Uint32(b[2:])),
		created: int64(binary.BigEndian.Uint64(b[6:])),
		lastUse: int64(binary.BigEndian.Uint64(b[14:])),
		voice:   string(b[23:]),
	}, nil
}

// counters are the lifetime statistics persisted in the meta bucket, so
// that `mynah cache stats` on the file shows them.
type counters struct {
	hits, misses, evictions, expired, writeErrors uint64
}

func (c counters) encode() []byte {
	b := make([]byte, 0, 40)
	for _, v := range []uint64{c.hits, c.misses, c.evictions, c.expired, c.writeErrors} {
		b = binary.BigEndian.AppendUint64(b, v)
	}
	return b
}

func decodeCounters(b []byte) counters {
	if len(b) != 40 { // absent or damaged: counters are statistics, start again
		return counters{}
	}
	u := func(i int) uint64 { return binary.BigEndian.Uint64(b[8*i:]) }
	return counters{u(0), u(1), u(2), u(3), u(4)}
}

// state is the in-memory mirror of the phrase index and the spool's keys,
// and the decoded speakers. Lookups, LRU order and budget decisions use it,
// so a miss never opens a transaction, a phrase hit needs only a read
// transaction and a speaker hit none.
type state struct {
	phrases     map[PhraseKey]*phraseEntry
	lru         list.List // of *phraseEntry; front is the most recently used
	bytes       int64
	pinnedBytes int64
	pinned      int
	spool       map[string][]byte        // id → spool key
	speakers    map[string]*speakerEntry // SpeakerRef.key() → speaker
	stamps      uint64                   // the last phraseEntry.stamp given
}

func newState() *state {
	return &state{
		phrases:  map[PhraseKey]*phraseEntry{},
		spool:    map[string][]byte{},
		speakers: map[string]*speakerEntry{},
	}
}

type phraseEntry struct {
	key  PhraseKey
	rec  indexRecord
	elem *list.Element
	// stamp tells this record from any other under its key: every entry
	// added to a state gets a new one (PhraseStamp).
	stamp uint64
}

// loadState reads the index, the spool keys and the speakers. Records that
// do not hold together (a malformed index record, a spool record that
// fails its checksums or shape, a speaker
// record that fails its CRC or checks, and with crossCheck an
// index entry without audio or with a different size, or audio without an
// index entry) are returned in bad. The cross-check visits every leaf of
// the audio bucket; see openWritable for why the daemon's handle skips it.
func loadState(tx *bolt.Tx, crossCheck bool) (st *state, bad []badRecord) {
	st = newState()
	values, index := tx.Bucket(bucketPhrases), tx.Bucket(bucketIndex)
	var entries []*phraseEntry
	_ = index.ForEach(func(k, v []byte) error {
		rec, err := decodeIndexRecord(v)
		if err == nil && len(k) != len(PhraseKey{}) {
			err = fmt.Errorf("phrase key of %d bytes", len(k))
		}
		if err == nil && crossCheck {
			if val := values.Get(k); val == nil || int64(len(val)) != rec.size {
				err = fmt.Errorf("audio missing or not %d bytes", rec.size)
			}
		}
		if err != nil {
			bad = append(bad, badRecord{bucketIndex, clone(k), err.Error()})
			return nil
		}
		e := &phraseEntry{key: PhraseKey(k), rec: rec}
		entries = append(entries, e)
		return nil
	})
	if crossCheck {
		_ = values.ForEach(func(k, _ []byte) error {
			if len(k) != len(PhraseKey{}) || index.Get(k) == nil {
				bad = append(bad, badRecord{bucketPhrases, clone(k), "audio without an index record"})
			}
			return nil
		})
		for _, b := range bad {
			if bytes.Equal(b.bucket, bucketIndex) && len(b.key) == len(PhraseKey{}) && values.Get(b.key) != nil {
				bad = append(bad, badRecord{bucketPhrases, b.key, "audio of a bad index record"})
			}
		}
	}
	slices.SortStableFunc(entries, func(a, b *phraseEntry) int {
		return cmp.Compare(b.rec.lastUse, a.rec.lastUse) // most recent first
	})
	for _, e := range entries {
		st.add(e)
		e.elem = st.lru.PushBack(e)
	}
	_ = tx.Bucket(bucketSpool).ForEach(func(k, v []byte) error {
		// A payload stored under a higher Options.MaxSpoolPayload is
		// still a request: no limit here.
		if _, _, err := decodeSpoolRecord(k, v, math.MaxInt); err != nil {
			bad = append(bad, badRecord{bucketSpool, clone(k), err.Error()})
			return nil
		}
		st.spool[string(k[8:])] = clone(k)
		return nil
	})
	_ = tx.Bucket(bucketSpeaker).ForEach(func(k, v []byte) error {
		ref, err := parseSpeakerKey(k)
		var rec speakerRecord
		var emb []float32
		if err == nil {
			rec, emb, err = decodeSpeakerRecord(k, v)
		}
		if err != nil {
			bad = append(bad, badRecord{bucketSpeaker, clone(k), err.Error()})
			return nil
		}
		st.speakers[string(k)] = &speakerEntry{ref: ref, rec: rec, emb: emb, size: len(v)}
		return nil
	})
	return st, bad
}

type badRecord struct {
	bucket []byte
	key    []byte
	reason string
}

func (b badRecord) String() string {
	return fmt.Sprintf("%s/%x: %s", b.bucket, b.key, b.reason)
}

// badRecordsError names up to five bad records in an error wrapping
// ErrCorrupt, or returns nil.
func badRecordsError(bad []badRecord) error {
	if len(bad) == 0 {
		return nil
	}
	var msgs []string
	for _, b := range bad[:min(len(bad), 5)] {
		msgs = append(msgs, b.String())
	}
	return fmt.Errorf("%w: %d damaged record(s): %s", ErrCorrupt, len(bad), strings.Join(msgs, "; "))
}

// add accounts for a new entry (not yet in the LRU list).
func (st *state) add(e *phraseEntry) {
	st.stamps++
	e.stamp = st.stamps
	st.phrases[e.key] = e
	st.bytes += e.rec.size
	if e.rec.pinned {
		st.pinned++
		st.pinnedBytes += e.rec.size
	}
}

func (st *state) remove(e *phraseEntry) {
	delete(st.phrases, e.key)
	st.lru.Remove(e.elem)
	st.bytes -= e.rec.size
	if e.rec.pinned {
		st.pinned--
		st.pinnedBytes -= e.rec.size
	}
}

func (st *state) setPinned(e *phraseEntry, pinned bool) {
	if e.rec.pinned == pinned {
		return
	}
	e.rec.pinned = pinned
	d := e.rec.size
	n := 1
	if !pinned {
		d, n = -d, -1
	}
	st.pinned += n
	st.pinnedBytes += d
}

func clone(b []byte) []byte { return append([]byte(nil), b...) }
