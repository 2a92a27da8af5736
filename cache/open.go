package cache

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// readOnlyLockWait is how long a read-only Open tries for the shared lock
// before it concludes a writer holds the file and copies it instead.
const readOnlyLockWait = 100 * time.Millisecond

// snapshotAttempts bounds the copies a read-only Open makes of a file whose
// meta pages keep changing under it; between attempts it waits a little
// longer each time (5 ms, 10 ms, ...: about 1 s in all), because a daemon
// commits in bursts.
const snapshotAttempts = 20

// keepCorrupt is how many moved-aside damaged files are kept, newest first,
// so a file that keeps breaking cannot fill the disk.
const keepCorrupt = 2

// boltOpen opens a bbolt file and sorts its errors: ErrLocked, the
// operating system's own errors, and everything else as ErrCorrupt. bbolt
// can panic, or touch memory outside its map, on a damaged file; both are
// turned into ErrCorrupt. After such a panic bbolt's state is unknown, so
// the half-opened DB is abandoned (its file is closed by the os.File
// finalizer).
func boltOpen(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			db, err = nil, fmt.Errorf("%w: bbolt failed reading it: %v", ErrCorrupt, r)
		}
	}()
	db, err = bolt.Open(path, 0o600, bo)
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, bberrors.ErrTimeout):
		return nil, fmt.Errorf("%w: %s (waited %v; is mynahd running? inspect it read-only, or purge through the daemon)",
			ErrLocked, path, bo.Timeout)
	case isSystemError(err):
		return nil, fmt.Errorf("open cache: %w", err)
	default:
		return nil, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
}

// isSystemError tells errors of the operating system (permission denied,
// read-only file system, out of memory) from errors about the file's
// content. Only the latter make a file corrupt.
func isSystemError(err error) bool {
	var pe *fs.PathError
	var errno syscall.Errno
	return errors.As(err, &pe) || errors.As(err, &errno)
}

// verifyDB runs the structural walk, the check that bbolt did not fall
// back from a damaged meta page past spooled requests, and bbolt's
// consistency check. poisoned
// reports a panic inside bbolt, after which db must not be closed (Close
// would wait for the transaction the panic left open).
func verifyDB(db *bolt.DB, path string) (poisoned bool, err error) {
	if err := verifyStructure(path, db.Info().PageSize); err != nil {
		return false, fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := checkMetaFallback(path); err != nil {
		return false, err
	}
	return guard(func() error { return db.View(checkTx) })
}

// guard runs fn, which reads a bbolt file, turning a panic or a memory
// fault into ErrCorrupt with poisoned set: the DB must then be abandoned,
// not closed (Close would wait for the transaction the panic left open).
func guard(fn func() error) (poisoned bool, err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			poisoned, err = true, fmt.Errorf("%w: bbolt failed reading it: %v", ErrCorrupt, r)
		}
	}()
	return false, fn()
}

// checkTx drains tx.Check and returns the first few problems as one error
// wrapping ErrCorrupt.
func checkTx(tx *bolt.Tx) error {
	var msgs []string
	n := 0
	for err := range tx.Check() {
		if n++; len(msgs) < 5 {
			msgs = append(msgs, err.Error())
		}
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("%w: consistency check found %d problem(s): %s", ErrCorrupt, n, strings.Join(msgs, "; "))
}

func closeDB(db *bolt.DB, poisoned bool) {
	if !poisoned {
		_ = db.Close()
	}
}

// openWritable verifies, opens, upgrades and loads the file.
//
// The check runs on a read-only handle (shared lock) that is closed before
// the exclusive open: tx.Check touches every page header through bbolt's
// memory map, and the kernel maps the neighbouring pages of the page cache
// in with each fault, so checking through the daemon's own handle would
// leave the whole file resident in its RSS for good (BenchmarkFullCache
// reports what stays mapped). Another writer slipping in between the two
// opens would be a second daemon on the same file: a misconfiguration.
func openWritable(path string, o Options) (*Store, error) {
	if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
		ro, err := boltOpen(path, &bolt.Options{ReadOnly: true, Timeout: o.Timeout})
		if err != nil {
			return nil, err
		}
		poisoned, err := verifyDB(ro, path)
		if err == nil {
			poisoned, err = guard(func() error { return ro.View(verifyRecords) })
		}
		closeDB(ro, poisoned)
		if err != nil {
			return nil, err
		}
	}
	db, err := boltOpen(path, &bolt.Options{
		Timeout: o.Timeout,
		MaxSize: int(o.MaxFileBytes),
	})
	if err != nil {
		return nil, err
	}
	s := newStore(path, db, o)
	if poisoned, err := guard(s.load); err != nil {
		closeDB(db, poisoned)
		return nil, err
	}
	s.startWriter()
	return s, nil
}

// load reads the schema, index and counters, upgrading the schema if it is
// older. Records that do not hold together make the whole file count as
// damaged: bbolt's check found nothing wrong with its pages, so the damage
// is one it cannot see, and deleting records from such a tree has been
// seen to corrupt the freelist (a panic in Commit). A sound file is only
// read here, so a full disk does not keep it from opening.
func (s *Store) load() error {
	var version uint64
	err := s.db.View(func(tx *bolt.Tx) error {
		var err error
		if version, err = readSchema(tx); err != nil || version < schemaVersion() {
			return err
		}
		return s.loadIn(tx, false)
	})
	if err != nil || version == schemaVersion() {
		return err
	}
	err = s.db.Update(func(tx *bolt.Tx) error {
		if _, err := upgradeSchema(tx); err != nil {
			return err
		}
		return s.loadIn(tx, true)
	})
	switch {
	case err == nil:
	case errors.Is(err, ErrCorrupt):
		return err
	case isSystemError(err) || errors.Is(err, bberrors.ErrMaxSizeReached):
		return fmt.Errorf("open cache: upgrade schema: %w: %w", ErrWriteFailed, err)
	default: // bbolt refusing a bucket it should take: damage
		return fmt.Errorf("%w: upgrade schema: %w", ErrCorrupt, err)
	}
	s.log.Info("cache schema upgraded", "path", s.path, "from", version, "to", schemaVersion())
	return nil
}

// loadIn fills the in-memory state from tx.
func (s *Store) loadIn(tx *bolt.Tx, crossCheck bool) error {
	if err := checkBuckets(tx); err != nil {
		return err
	}
	st, bad := loadState(tx, crossCheck)
	if err := badRecordsError(bad); err != nil {
		return err
	}
	s.st = st
	s.count = decodeCounters(tx.Bucket(bucketMeta).Get(keyCounters))
	return nil
}

// openReadOnly opens the file for inspection: in place when no writer
// holds it, else a consistent copy.
func openReadOnly(path string, o Options) (*Store, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open cache: %w", err)
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("%w: %s is empty", ErrCorrupt, path)
	}
	bo := &bolt.Options{ReadOnly: true, Timeout: min(o.Timeout, readOnlyLockWait)}
	db, err := boltOpen(path, bo)
	file, snapshot := path, false
	if errors.Is(err, ErrLocked) {
		file, db, err = openSnapshot(path, o)
		snapshot = err == nil
	} else if err == nil {
		var poisoned bool
		if poisoned, err = verifyDB(db, path); err != nil {
			closeDB(db, poisoned)
		}
	}
	if err != nil {
		return nil, err
	}
	s := newStore(file, db, o)
	s.file, s.snapshot, s.readOnly = path, snapshot, true
	if poisoned, err := guard(s.loadReadOnly); err != nil {
		closeDB(db, poisoned)
		if snapshot {
			_ = os.Remove(file)
		}
		return nil, err
	}
	return s, nil
}

func (s *Store) loadReadOnly() error {
	return s.db.View(func(tx *bolt.Tx) error {
		version, err := readSchema(tx)
		if err != nil {
			return err
		}
		if version == 0 && tx.Bucket(bucketMeta) == nil && tx.Bucket(bucketPhrases) == nil {
			s.st = newState()
			return nil // a new file nothing was written to yet
		}
		if version < schemaVersion() {
			return fmt.Errorf("cache schema version %d is older than this build's %d: open it read-write once to upgrade", version, schemaVersion())
		}
		return s.loadIn(tx, true)
	})
}

// verifyRecords checks that the records of a file of the current schema
// hold together (see loadState).
func verifyRecords(tx *bolt.Tx) error {
	version, err := readSchema(tx)
	if err != nil || version < schemaVersion() {
		return err
	}
	if err := checkBuckets(tx); err != nil {
		return err
	}
	_, bad := loadState(tx, true)
	return badRecordsError(bad)
}

// openSnapshot copies a file that a writer holds locked and opens the copy.
//
// Why the copy is consistent: bbolt never overwrites a page reachable from
// the newest committed meta page, and every commit ends by writing one of
// the two meta pages. If the meta pages read the same before and after the
// copy, no commit finished during it, the copy's newest meta page is that
// of the last commit before it, and all of its pages were copied unchanged;
// pages a commit in progress wrote are free pages in that state. If they
// differ, the copy is made again.
func openSnapshot(path string, o Options) (string, *bolt.DB, error) {
	for attempt := range snapshotAttempts {
		if attempt > 0 {
			time.Sleep(time.Duration(attempt) * 5 * time.Millisecond)
		}
		tmp, same, err := copyFile(path, o.SnapshotDir)
		if err != nil {
			return "", nil, fmt.Errorf("open cache snapshot: %w", err)
		}
		if !same {
			_ = os.Remove(tmp)
			continue
		}
		db, err := boltOpen(tmp, &bolt.Options{ReadOnly: true, Timeout: readOnlyLockWait})
		if err == nil {
			var poisoned bool
			if poisoned, err = verifyDB(db, tmp); err != nil {
				closeDB(db, poisoned)
			}
		}
		if err != nil {
			_ = os.Remove(tmp)
			return "", nil, fmt.Errorf("snapshot of %s: %w", path, err)
		}
		return tmp, db, nil
	}
	return "", nil, fmt.Errorf("%w: %s kept changing during %d copies; try again", ErrLocked, path, snapshotAttempts)
}

// copyFile copies path into a new temporary file and reports whether the
// meta pages were the same before and after.
func copyFile(path, dir string) (tmp string, same bool, err error) {
	src, err := os.Open(path)
	if err != nil {
		return "", false, err
	}
	defer src.Close()
	before, err := metaRegion(src)
	if err != nil {
		return "", false, err
	}
	dst, err := os.CreateTemp(dir, "mynah-cache-snapshot-*.db")
	if err != nil {
		return "", false, err
	}
	_, err = io.Copy(dst, io.NewSectionReader(src, 0, 1<<62))
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	var after []byte
	if err == nil {
		after, err = metaRegion(src)
	}
	if err != nil {
		_ = os.Remove(dst.Name())
		return "", false, err
	}
	return dst.Name(), bytes.Equal(before, after), nil
}

// metaRegion reads the two meta pages, using the page size recorded in the
// first (4 KiB when it is unreadable).
func metaRegion(f *os.File) ([]byte, error) {
	head := make([]byte, pageHeaderSize+metaSize)
	n, err := f.ReadAt(head, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	ps := 4096
	if n == len(head) {
		if v := int(ne.Uint32(head[pageHeaderSize+8:])); v >= 512 && v <= 1<<16 && v&(v-1) == 0 {
			ps = v
		}
	}
	b := make([]byte, 2*ps)
	n, err = f.ReadAt(b, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return b[:n], nil
}

// moveAside renames a damaged file to "<path>.corrupt-<UTC time>" and
// deletes all but the newest keepCorrupt such files.
func moveAside(path string, now time.Time) (string, error) {
	base := path + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	dst := base
	for i := 2; ; i++ {
		if _, err := os.Lstat(dst); errors.Is(err, fs.ErrNotExist) {
			break
		}
		dst = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(path, dst); err != nil {
		return "", err
	}
	old, _ := filepath.Glob(globEscape(path) + ".corrupt-*")
	slices.Sort(old)
	for _, f := range old[:max(0, len(old)-keepCorrupt)] {
		if f != dst {
			_ = os.Remove(f)
		}
	}
	return dst, nil
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}
