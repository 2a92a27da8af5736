package cache

import (
	"encoding/binary"
	"fmt"
	"math"
	"time"

	bolt "go.etcd.io/bbolt"
)

// SpoolEntry is one accepted request waiting to be spoken.
type SpoolEntry struct {
	ID       string
	Payload  []byte
	Received time.Time
	Expires  time.Time // zero: never
}

// maxSpoolID is the longest request id the spool takes, in bytes.
const maxSpoolID = 255

// SpoolPut stores an accepted request and returns once the write
// transaction holding it has committed and been synced to disk: the daemon
// acknowledges the MQTT message only after it returns, so a crash loses no
// accepted command. Concurrent puts share one commit.
//
// id is 1 to 255 bytes; putting an id again replaces its entry. received
// orders the spool (ties by id) and must not be before 1970. expires is
// the zero time for "never". Errors wrap ErrInvalid, ErrSpoolFull
// (Options.MaxSpoolEntries), ErrWriteFailed, ErrReadOnly or ErrClosed;
// payloads larger than Options.MaxSpoolPayload are ErrInvalid.
func (s *Store) SpoolPut(id string, payload []byte, received, expires time.Time) error {
	switch {
	case s.readOnly:
		return ErrReadOnly
	case id == "" || len(id) > maxSpoolID:
		return fmt.Errorf("spool put: %w: id of %d bytes, want 1 to %d", ErrInvalid, len(id), maxSpoolID)
	case len(payload) > s.opts.MaxSpoolPayload:
		return fmt.Errorf("spool put: %w: payload of %d bytes exceeds Options.MaxSpoolPayload (%d)", ErrInvalid, len(payload), s.opts.MaxSpoolPayload)
	case received.Before(time.Unix(0, 0)) || received.After(time.Unix(0, 1<<63-1)):
		return fmt.Errorf("spool put: %w: receive time %v outside 1970–2262", ErrInvalid, received)
	}
	key := spoolKey(received, id)
	var exp int64
	if !expires.IsZero() {
		exp = expires.UnixNano()
	}
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		old, exists := s.st.spool[id]
		if !exists && len(s.st.spool) >= s.opts.MaxSpoolEntries {
			return fmt.Errorf("%w: %d requests spooled (Options.MaxSpoolEntries)", ErrSpoolFull, len(s.st.spool))
		}
		b := tx.Bucket(bucketSpool)
		if exists {
			if err := b.Delete(old); err != nil {
				return abort(err)
			}
		}
		// The value carries this commit's txid: a batch retried op by op
		// commits in another transaction, so it is made here.
		val := appendSpoolValue(make([]byte, 0, spoolValueHeader+len(payload)), key, uint64(tx.ID()), exp, payload)
		if err := b.Put(key, val); err != nil {
			return abort(err)
		}
		s.st.spool[id] = key
		return nil
	}})
	if err != nil {
		return fmt.Errorf("spool put: %w", err)
	}
	return nil
}

func spoolKey(received time.Time, id string) []byte {
	k := binary.BigEndian.AppendUint64(make([]byte, 0, 8+len(id)), uint64(received.UnixNano()))
	return append(k, id...)
}

// SpoolDelete removes a request once it was spoken, dropped or failed, and
// returns after the removal is committed. A missing id is not an error.
func (s *Store) SpoolDelete(id string) error {
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		key, ok := s.st.spool[id]
		if !ok {
			return nil
		}
		if err := tx.Bucket(bucketSpool).Delete(key); err != nil {
			return abort(err)
		}
		delete(s.st.spool, id)
		return nil
	}})
	if err != nil {
		return fmt.Errorf("spool delete: %w", err)
	}
	return nil
}

// SpoolList returns the spooled requests in arrival order (receive time,
// then id). The daemon replays the unexpired ones at start-up and drops
// the rest.
func (s *Store) SpoolList() ([]SpoolEntry, error) {
	var out []SpoolEntry
	err := s.view(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSpool)
		if b == nil {
			return nil // a read-only look at a file nothing was written to yet
		}
		return b.ForEach(func(k, v []byte) error {
			r, _, err := decodeSpoolRecord(k, v, math.MaxInt)
			if err != nil {
				return nil // Open found none: the file changed under the store; Check reports it
			}
			e := SpoolEntry{ID: r.id, Payload: clone(r.payload), Received: time.Unix(0, r.received)}
			if r.expires != 0 {
				e.Expires = time.Unix(0, r.expires)
			}
			out = append(out, e)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("spool list: %w", err)
	}
	return out, nil
}
