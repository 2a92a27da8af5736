package cache

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Defaults used where Options leaves a field zero.
const (
	DefaultTimeout         = time.Second
	DefaultMaxBytes        = 64 << 20
	DefaultMaxPhraseBytes  = 4 << 20
	DefaultFlushInterval   = 5 * time.Second
	DefaultMaxSpoolEntries = 1024
	DefaultMaxSpoolPayload = 256 << 10
	DefaultMaxSpeakers     = 5
)

// Options configures a Store. nil means all defaults.
type Options struct {
	// Timeout is how long Open waits for the file's lock before returning
	// ErrLocked. Default DefaultTimeout; it is never unlimited.
	Timeout time.Duration

	// ReadOnly opens the file for inspection (mynah cache stats/check)
	// without ever writing it or taking it from a running daemon. bbolt
	// gives a read-only opener a shared lock, which a daemon's exclusive
	// lock refuses; so when the lock is taken, Open reads a consistent copy
	// of the file instead (see Store.Snapshot). Writes return ErrReadOnly,
	// and a damaged file is reported (ErrCorrupt), not moved aside.
	ReadOnly bool

	// MaxBytes bounds the summed size of the phrase values; the least
	// recently used unpinned phrases are evicted to stay under it. The file
	// is larger than this by bbolt's page overhead and free pages
	// (BenchmarkFullCache reports the ratio). Default DefaultMaxBytes.
	MaxBytes int64

	// MaxPhraseBytes bounds one phrase value (ErrBudget above it), so one
	// huge utterance cannot flush the whole cache. Default
	// DefaultMaxPhraseBytes, at most MaxBytes and below 2 GiB.
	MaxPhraseBytes int64

	// TTL, when positive, makes phrases stored longer ago than TTL miss;
	// they are deleted at the next flush. Pinned phrases do not expire.
	TTL time.Duration

	// MaxFileBytes, when positive, caps the bbolt file (bbolt's MaxSize): a
	// write that would grow the file past it fails with ErrWriteFailed,
	// like a full disk. Keep it well above MaxBytes (2× is safe): deleting
	// also needs a few free pages.
	MaxFileBytes int64

	// FlushInterval is how often last-use times of hit phrases, the
	// counters and TTL expiry are written, in one transaction, when
	// anything changed. Hits never write by themselves. Default
	// DefaultFlushInterval; a crash loses at most this much recency.
	FlushInterval time.Duration

	// MaxSpoolEntries bounds the spool (ErrSpoolFull beyond it).
	MaxSpoolEntries int
	// MaxSpoolPayload bounds one spooled request's payload in bytes.
	MaxSpoolPayload int

	// MaxSpeakers is how many speakers PutSpeaker keeps: the most recently
	// used ones. Default DefaultMaxSpeakers, at most MaxSpeakersLimit. A
	// file holding more (the option was lowered) keeps them until the next
	// PutSpeaker.
	MaxSpeakers int
	// SpeakerPrecision is how PutSpeaker stores embeddings: PrecisionFP16
	// (the default) or PrecisionInt8. Stored speakers keep the precision
	// they were stored in.
	SpeakerPrecision string

	// ReleaseAfterCommit drops the file's mapped pages from the process's
	// RSS after every commit (ReleaseMapped): a commit reads the values
	// beside the ones it changes through bbolt's map, so a busy cache's
	// pages pile up in RSS. They stay in the page cache; a later read
	// maps them again. For a daemon on a small device.
	ReleaseAfterCommit bool

	// SnapshotDir is where a read-only Open of a locked file puts its copy.
	// Default os.TempDir().
	SnapshotDir string

	// Logger receives recoveries, upgrades and failed writes. nil discards.
	Logger *slog.Logger
	// Now is the clock for TTLs, last-use times and recovery names.
	// Default time.Now.
	Now func() time.Time
}

func (o *Options) withDefaults() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Timeout < 0 || r.MaxBytes < 0 || r.MaxPhraseBytes < 0 || r.TTL < 0 || r.MaxFileBytes < 0 ||
		r.FlushInterval < 0 || r.MaxSpoolEntries < 0 || r.MaxSpoolPayload < 0 || r.MaxSpeakers < 0 {
		return r, fmt.Errorf("%w: negative option", ErrInvalid)
	}
	if int64(int(r.MaxFileBytes)) != r.MaxFileBytes {
		return r, fmt.Errorf("%w: MaxFileBytes %d exceeds this platform's int", ErrInvalid, r.MaxFileBytes)
	}
	if r.Timeout == 0 {
		r.Timeout = DefaultTimeout
	}
	if r.MaxBytes == 0 {
		r.MaxBytes = DefaultMaxBytes
	}
	if r.MaxPhraseBytes == 0 {
		r.MaxPhraseBytes = DefaultMaxPhraseBytes
	}
	r.MaxPhraseBytes = min(r.MaxPhraseBytes, r.MaxBytes, 1<<31-1)
	if r.FlushInterval == 0 {
		r.FlushInterval = DefaultFlushInterval
	}
	if r.MaxSpoolEntries == 0 {
		r.MaxSpoolEntries = DefaultMaxSpoolEntries
	}
	if r.MaxSpoolPayload == 0 {
		r.MaxSpoolPayload = DefaultMaxSpoolPayload
	}
	if r.MaxSpeakers == 0 {
		r.MaxSpeakers = DefaultMaxSpeakers
	}
	if r.MaxSpeakers > MaxSpeakersLimit {
		return r, fmt.Errorf("%w: MaxSpeakers %d exceeds the limit of %d (MaxSpeakersLimit)", ErrInvalid, r.MaxSpeakers, MaxSpeakersLimit)
	}
	switch r.SpeakerPrecision {
	case "":
		r.SpeakerPrecision = PrecisionFP16
	case PrecisionFP16, PrecisionInt8:
	default:
		return r, fmt.Errorf("%w: SpeakerPrecision %q: want %q or %q", ErrInvalid, r.SpeakerPrecision, PrecisionFP16, PrecisionInt8)
	}
	if r.Logger == nil {
		r.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r, nil
}

// Store is mynah's cache file. All methods are safe for concurrent use.
//
// Reads use the in-memory index and one bbolt read transaction; writes go
// to a single writer goroutine that commits everything queued at that
// moment in one write transaction (group commit: no added delay when idle,
// one fsync for many writes under load).
type Store struct {
	path     string // the file bbolt has open: the caller's, or a snapshot copy
	file     string // the caller's path
	snapshot bool
	readOnly bool
	db       *bolt.DB
	opts     Options
	log      *slog.Logger
	recovery *Recovery

	mu         sync.Mutex // guards everything below, and is held while ops apply
	st         *state
	dirty      map[PhraseKey]struct{} // last-use times not yet written
	count      counters
	countDirty bool
	closed     bool
	broken     error // set when bbolt panicked: the file is no longer touched

	sendMu  sync.RWMutex // held for reading while sending on ops
	closing bool
	ops     chan *writeOp
	done    chan struct{} // closed when the writer goroutine has returned
}

// Recovery describes a damaged file that Open moved aside.
type Recovery struct {
	MovedTo string    // where the damaged file now lies
	Reason  string    // what was wrong with it
	At      time.Time // when it was moved
	// Spool is what was saved of the damaged file's spool.
	Spool SpoolSalvage
}

// Stats are the cache's figures. The counters are lifetime totals of the
// file, persisted at each flush.
type Stats struct {
	Entries       int   // phrases cached
	Bytes         int64 // summed size of their values
	PinnedEntries int
	PinnedBytes   int64
	MaxBytes      int64 // Options.MaxBytes
	Hits          uint64
	Misses        uint64
	Evictions     uint64 // phrases removed to stay under MaxBytes
	Expired       uint64 // phrases removed by the TTL
	WriteErrors   uint64 // failed writes, ErrWriteFailed and ErrBudget
	SpoolEntries  int
	FileBytes     int64 // size of the bbolt file

	Speakers         int    // speakers stored
	MaxSpeakers      int    // Options.MaxSpeakers
	SpeakerPrecision string // Options.SpeakerPrecision: how new speakers are stored
	// SpeakerCosine and SpeakerRelativeL2 are the means, over the stored
	// speakers, of the cosine similarity and relative L2 error of each
	// stored embedding against the one PutSpeaker was given, measured when
	// it was stored (kept in its record, so a read-only open shows them;
	// SpeakerInfo has each speaker's own figures and precision). Zero
	// when no speaker is stored.
	SpeakerCosine     float64
	SpeakerRelativeL2 float64
}

// Open opens or creates the cache file at path.
//
// A file that bbolt cannot open, that fails the structural walk or
// tx.Check, or whose schema is foreign or newer than this build is moved
// aside as "<path>.corrupt-<UTC time>" (the two newest such copies are
// kept), a fresh file is created, a warning is logged and Recovery reports
// it. The spool records still readable in the damaged file are carried
// into the new one, record by record, and Recovery counts what was
// carried, lost and unreadable (see salvage.go). The check reads every branch and leaf page header and runs bbolt's
// tx.Check (BenchmarkOpenFull measures it on a full 64 MiB file). A file
// of an older schema is upgraded in one transaction.
//
// Errors: ErrLocked when another process holds the file; ErrCorrupt only
// for Options.ReadOnly; otherwise the operating system's error (permissions,
// a read-only file system).
func Open(path string, opts *Options) (*Store, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	if o.ReadOnly {
		return openReadOnly(path, o)
	}
	s, err := openWritable(path, o)
	if err == nil || !errors.Is(err, ErrCorrupt) {
		return s, err
	}
	now := o.Now()
	entries, salvage := salvageSpool(path, o)
	moved, mvErr := moveAside(path, now)
	if mvErr != nil {
		return nil, fmt.Errorf("open cache: %w; moving it aside failed: %w", err, mvErr)
	}
	s, err2 := openWritable(path, o)
	if err2 != nil {
		return nil, err2
	}
	rec := &Recovery{MovedTo: moved, Reason: err.Error(), At: now, Spool: salvage}
	carried, over, cerr := s.carrySpool(entries)
	if cerr != nil {
		o.Logger.Error("spooled requests of the damaged file not carried over", "requests", len(entries), "err", cerr)
		for _, e := range entries {
			over = append(over, SpoolEntry{ID: e.rec.id, Received: time.Unix(0, e.rec.received)})
		}
	}
	rec.Spool.Carried, rec.Spool.Lost = carried, append(rec.Spool.Lost, over...)
	o.Logger.Warn("cache file was damaged; moved it aside and started an empty one",
		"path", path, "moved_to", moved, "err", err,
		"spool_carried", rec.Spool.Carried, "spool_lost", len(rec.Spool.Lost), "spool_unreadable", rec.Spool.Unreadable,
		"spool_damaged_pages", rec.Spool.DamagedPages, "spool_scanned", rec.Spool.Scanned)
	s.recovery = rec
	return s, nil
}

func newStore(path string, db *bolt.DB, o Options) *Store {
	return &Store{
		path:  path,
		file:  path,
		db:    db,
		opts:  o,
		log:   o.Logger,
		dirty: map[PhraseKey]struct{}{},
	}
}

// Recovery reports the damaged file Open moved aside, or nil.
func (s *Store) Recovery() *Recovery { return s.recovery }

// Path is the cache file's path as given to Open.
func (s *Store) Path() string { return s.file }

// Snapshot reports whether a read-only Store reads a copy of a file that
// another process (the daemon) holds locked. The copy is deleted by Close.
func (s *Store) Snapshot() bool { return s.snapshot }

// Stats returns the current figures.
func (s *Store) Stats() Stats {
	s.mu.Lock()
	st := Stats{
		Entries:       len(s.st.phrases),
		Bytes:         s.st.bytes,
		PinnedEntries: s.st.pinned,
		PinnedBytes:   s.st.pinnedBytes,
		MaxBytes:      s.opts.MaxBytes,
		Hits:          s.count.hits,
		Misses:        s.count.misses,
		Evictions:     s.count.evictions,
		Expired:       s.count.expired,
		WriteErrors:   s.count.writeErrors,
		SpoolEntries:  len(s.st.spool),

		MaxSpeakers:      s.opts.MaxSpeakers,
		SpeakerPrecision: s.opts.SpeakerPrecision,
	}
	s.st.speakerStats(&st)
	s.mu.Unlock()
	if fi, err := os.Stat(s.path); err == nil {
		st.FileBytes = fi.Size()
	}
	return st
}

// Flush writes pending last-use times and counters and deletes expired
// phrases now, instead of at the next FlushInterval tick.
func (s *Store) Flush() error {
	return s.submit(&writeOp{flush: true})
}

// Close writes what is pending, stops the writer and closes the file.
// Methods called afterwards return ErrClosed.
func (s *Store) Close() error {
	s.sendMu.Lock()
	if s.closing {
		s.sendMu.Unlock()
		return nil
	}
	s.closing = true
	s.sendMu.Unlock()
	if s.ops != nil {
		close(s.ops) // no sender is left: they send under sendMu
		<-s.done
	}
	s.mu.Lock()
	s.closed = true
	broken := s.broken
	s.mu.Unlock()
	if broken != nil {
		// bbolt's locks may still be held by the transaction that
		// panicked: closing could wait forever. The next Open checks the
		// file again.
		return fmt.Errorf("close cache: %w", broken)
	}
	err := s.db.Close()
	if s.snapshot {
		if rmErr := os.Remove(s.path); err == nil {
			err = rmErr
		}
	}
	if err != nil {
		return fmt.Errorf("close cache: %w", err)
	}
	return nil
}
