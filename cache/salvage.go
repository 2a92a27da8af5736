package cache

import (
	bolt "go.etcd.io/bbolt"
)

// A damaged file is moved aside and replaced by an empty one, but the
// spool holds commands the daemon has acknowledged: they must not vanish
// with the phrases. Before the move, salvageSpool reads what it can of the
// damaged file's spool (bbolt still opens a file whose newest meta page is
// damaged, from the other one) and Open carries those entries into the
// new file. The damage is what made the file fail its checks, so every
// read is guarded, and a record that does not hold together is counted,
// with its id when the key can be read, for the daemon to report.

// SpoolSalvage is what Open saved of a damaged file's spool.
type SpoolSalvage struct {
	// Carried is how many entries were copied into the new file.
	Carried int
	// Lost are the ids of entries whose value could not be read;
	// Unreadable says the damaged file's spool could not be read at all
	// (bbolt could not open it), so how many were lost is unknown.
	Lost       []string
	Unreadable bool
}

// salvageSpool reads the spool entries of a damaged file.
func salvageSpool(path string, o Options) (entries []salvaged, lost []string, ok bool) {
	db, err := boltOpen(path, &bolt.Options{ReadOnly: true, Timeout: min(o.Timeout, readOnlyLockWait)})
	if err != nil {
		return nil, nil, false
	}
	poisoned, err := guard(func() error {
		return db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucketSpool)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				switch {
				case len(k) <= 8 || len(k) > 8+maxSpoolID:
					lost = append(lost, "")
				case len(v) < 8 || len(v)-8 > o.MaxSpoolPayload:
					lost = append(lost, string(k[8:]))
				default:
					entries = append(entries, salvaged{key: clone(k), val: clone(v)})
				}
				return nil
			})
		})
	})
	closeDB(db, poisoned)
	if err != nil && len(entries) == 0 && len(lost) == 0 {
		return nil, nil, false
	}
	return entries, lost, true
}

// salvaged is one spool entry read from a damaged file, as stored.
type salvaged struct{ key, val []byte }

// carrySpool writes salvaged entries into the new file in one commit.
func (s *Store) carrySpool(entries []salvaged) error {
	if len(entries) == 0 {
		return nil
	}
	return s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		b := tx.Bucket(bucketSpool)
		for _, e := range entries {
			if len(s.st.spool) >= s.opts.MaxSpoolEntries {
				break
			}
			id := string(e.key[8:])
			if err := b.Put(e.key, e.val); err != nil {
				return abort(err)
			}
			s.st.spool[id] = e.key
		}
		return nil
	}})
}
