package cache

import (
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// writeOp is one queued write. apply runs in the writer's transaction with
// s.mu held and updates the in-memory state together with the file. It
// must check everything that can refuse the op (budget, not found) before
// it changes anything, and return those refusals plainly; an error of the
// transaction itself is returned as abortError and aborts the batch.
type writeOp struct {
	apply func(tx *bolt.Tx) error
	flush bool       // also write last-use times and counters, expire
	done  chan error // nil: nobody waits (fire and forget)
}

type abortError struct{ err error }

func (e abortError) Error() string { return e.err.Error() }
func (e abortError) Unwrap() error { return e.err }

// abort marks an error of a bbolt call inside apply.
func abort(err error) error {
	if err == nil {
		return nil
	}
	return abortError{err}
}

// maxBatch bounds the ops in one transaction, and queueLength the ops
// waiting for the writer (a sender blocks beyond it).
const (
	maxBatch    = 256
	queueLength = 256
)

func (s *Store) startWriter() {
	s.ops = make(chan *writeOp, queueLength)
	s.done = make(chan struct{})
	go s.writer()
}

func (s *Store) writer() {
	defer close(s.done)
	// A fault reading a damaged map becomes a panic that runTx recovers,
	// instead of killing the daemon.
	debug.SetPanicOnFault(true)
	tick := time.NewTicker(s.opts.FlushInterval)
	defer tick.Stop()
	batch := make([]*writeOp, 0, maxBatch)
	for {
		select {
		case op, ok := <-s.ops:
			if !ok {
				s.commit(nil, true)
				return
			}
			batch = append(batch[:0], op)
		drain:
			for len(batch) < maxBatch {
				select {
				case op, ok := <-s.ops:
					if !ok {
						break drain // the next receive ends the loop
					}
					batch = append(batch, op)
				default:
					break drain
				}
			}
			s.commit(batch, false)
			clear(batch)
		case <-tick.C:
			s.mu.Lock()
			pending := len(s.dirty) > 0 || s.countDirty || s.anyExpiredLocked() || s.st.speakersTouched()
			s.mu.Unlock()
			if pending {
				s.commit(nil, true)
			}
		}
	}
}

// commit runs a batch in one transaction. If the transaction fails, each
// op is run again alone, so that one op's failure (or a full disk) is
// reported to exactly the ops it concerns.
func (s *Store) commit(batch []*writeOp, flush bool) {
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	if broken != nil {
		for _, op := range batch {
			s.reply(op, fmt.Errorf("%w: %w", ErrWriteFailed, broken))
		}
		return
	}
	errs := make([]error, len(batch))
	for _, op := range batch {
		flush = flush || op.flush
	}
	err := s.runTx(func(tx *bolt.Tx) error {
		for i, op := range batch {
			if op.apply == nil {
				continue
			}
			if err := op.apply(tx); err != nil {
				var ae abortError
				if errors.As(err, &ae) {
					return err
				}
				errs[i] = err
			}
		}
		if flush {
			return s.flushLocked(tx)
		}
		return nil
	})
	switch {
	case err == nil:
	case len(batch) <= 1:
		for i := range errs {
			if errs[i] == nil {
				errs[i] = err
			}
		}
	default:
		for i, op := range batch {
			if op.apply == nil {
				errs[i] = nil
				continue
			}
			var opErr error
			errs[i] = s.runTx(func(tx *bolt.Tx) error {
				opErr = op.apply(tx)
				var ae abortError
				if errors.As(opErr, &ae) {
					return opErr
				}
				return nil
			})
			if errs[i] == nil {
				errs[i] = opErr
			}
		}
		if flush {
			_ = s.runTx(s.flushLocked)
		}
	}
	if s.opts.ReleaseAfterCommit {
		// A commit read the neighbours of what it changed through the map.
		// Released before the replies: a writer that has its answer finds
		// the pages gone (TestReleaseAfterCommit raced with this).
		if _, err := s.ReleaseMapped(); err != nil {
			s.log.Debug("mapped pages not released after a commit", "err", err)
		}
	}
	for i, op := range batch {
		s.reply(op, errs[i])
	}
}

func (s *Store) reply(op *writeOp, err error) {
	s.noteFailure(err)
	if op.done != nil {
		op.done <- err
	}
}

// noteFailure counts and logs a failed write.
func (s *Store) noteFailure(err error) {
	if !errors.Is(err, ErrWriteFailed) && !errors.Is(err, ErrBudget) {
		return
	}
	s.mu.Lock()
	s.count.writeErrors++
	s.countDirty = true
	n := s.count.writeErrors
	s.mu.Unlock()
	s.log.Warn("cache write failed; going on without it", "err", err, "write_errors", n)
}

// runTx runs fn in a write transaction, holding s.mu while fn runs but not
// during the commit's fsync, so reads are not held up by the disk. If the
// transaction fails, the in-memory state, which fn changed optimistically,
// is reloaded from the file. A panic inside bbolt breaks the store.
func (s *Store) runTx(fn func(tx *bolt.Tx) error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %w", ErrWriteFailed, s.breakDown(r))
		}
	}()
	tx, err := s.db.Begin(true)
	if err != nil {
		return fmt.Errorf("%w: begin: %w", ErrWriteFailed, err)
	}
	func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		err = fn(tx)
	}()
	if err != nil {
		_ = tx.Rollback()
		s.reload()
		return fmt.Errorf("%w: %w", ErrWriteFailed, err)
	}
	if err := tx.Commit(); err != nil {
		s.reload()
		return fmt.Errorf("%w: commit: %w", ErrWriteFailed, err)
	}
	return nil
}

// breakDown records that bbolt panicked. From then on the store answers
// every read with an error and every write with ErrWriteFailed, without
// touching bbolt, whose state is unknown: speech goes on uncached until the
// daemon restarts and Open checks the file again.
func (s *Store) breakDown(r any) error {
	err := fmt.Errorf("%w: bbolt failed on %s: %v", ErrCorrupt, s.path, r)
	s.mu.Lock()
	if s.broken == nil {
		s.broken = err
		s.log.Error("cache broke; going on without it until restart", "path", s.path, "err", err)
	}
	err = s.broken
	s.mu.Unlock()
	return err
}

// view runs a read transaction, turning a bbolt panic or a fault in its
// memory map into a broken store instead of a crash.
func (s *Store) view(fn func(tx *bolt.Tx) error) (err error) {
	s.mu.Lock()
	closed, broken := s.closed, s.broken
	s.mu.Unlock()
	switch {
	case closed:
		return ErrClosed
	case broken != nil:
		return broken
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = s.breakDown(r)
		}
	}()
	return closedErr(s.db.View(fn))
}

func (s *Store) reload() {
	var st *state
	if err := s.view(func(tx *bolt.Tx) error {
		st, _ = loadState(tx, false)
		return nil
	}); err != nil {
		s.log.Error("cache: reload index after a failed write", "err", err)
		return
	}
	s.mu.Lock()
	s.st = st
	clear(s.dirty)
	s.countDirty = true
	s.mu.Unlock()
}

// flushLocked writes last-use times (of phrases and speakers) and counters
// and deletes expired phrases.
func (s *Store) flushLocked(tx *bolt.Tx) error {
	if err := s.flushSpeakersLocked(tx); err != nil {
		return err
	}
	index := tx.Bucket(bucketIndex)
	for k := range s.dirty {
		if e := s.st.phrases[k]; e != nil {
			if err := index.Put(k[:], e.rec.append(nil)); err != nil {
				return abort(err)
			}
		}
	}
	clear(s.dirty)
	if s.opts.TTL > 0 {
		now := s.opts.Now().UnixNano()
		for _, e := range s.st.phrases {
			if s.expiredLocked(e, now) {
				if err := deletePhrase(tx, e.key); err != nil {
					return err
				}
				s.st.remove(e)
				s.count.expired++
				s.countDirty = true
			}
		}
	}
	if s.countDirty {
		if err := tx.Bucket(bucketMeta).Put(keyCounters, s.count.encode()); err != nil {
			return abort(err)
		}
		s.countDirty = false
	}
	return nil
}

// submit queues op for the writer and waits for its result.
func (s *Store) submit(op *writeOp) error {
	if s.readOnly {
		return ErrReadOnly
	}
	s.mu.Lock()
	broken := s.broken
	s.mu.Unlock()
	if broken != nil {
		return fmt.Errorf("%w: %w", ErrWriteFailed, broken)
	}
	op.done = make(chan error, 1)
	s.sendMu.RLock()
	if s.closing {
		s.sendMu.RUnlock()
		return ErrClosed
	}
	s.ops <- op
	s.sendMu.RUnlock()
	return <-op.done
}

// submitAsync queues op if there is room, without waiting.
func (s *Store) submitAsync(op *writeOp) {
	if s.readOnly {
		return
	}
	s.sendMu.RLock()
	if !s.closing {
		select {
		case s.ops <- op:
		default: // the next flush catches up
		}
	}
	s.sendMu.RUnlock()
}

// closedErr maps bbolt's "not open" to ErrClosed.
func closedErr(err error) error {
	if errors.Is(err, bberrors.ErrDatabaseNotOpen) {
		return ErrClosed
	}
	return err
}
