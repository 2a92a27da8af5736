package cache

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Check runs Open's checks again on the open file: the structural walk of
// the page tree, bbolt's tx.Check, the schema, the agreement of the phrase
// index, the audio and the spool records, and each speaker record's CRC
// and contents. It returns nil for a sound file, or an error wrapping
// ErrCorrupt that names up to five problems. On a read-write Store it runs
// in the writer's transaction, so writes wait for it (BenchmarkOpenFull
// shows the cost on a full file).
func (s *Store) Check() error {
	if s.readOnly {
		return s.view(s.checkIn)
	}
	return s.submit(&writeOp{apply: s.checkIn})
}

func (s *Store) checkIn(tx *bolt.Tx) error {
	if err := verifyStructure(s.path, s.db.Info().PageSize); err != nil {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	if err := checkTx(tx); err != nil {
		return err
	}
	if version, err := readSchema(tx); err != nil || version == 0 {
		return err // version 0 and sound: a new file nothing was written to yet
	}
	return verifyRecords(tx)
}
