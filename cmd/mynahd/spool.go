package main

import (
	"errors"
	"fmt"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
)

// The daemon declares what it needs of the cache file (daemon.Spool,
// daemon.PhraseCache); these adapt *cache.Store to it, so the daemon
// package knows nothing of bbolt.

// storeSpool is the queue spool, in a bbolt file of its own (stores.go).
type storeSpool struct{ s *cache.Store }

var _ daemon.Spool = storeSpool{}

// Put tells a full spool to the daemon (daemon.ErrSpoolFull), which
// clears it from the state once the queue has drained.
func (a storeSpool) Put(key string, record []byte, received, expires time.Time) error {
	err := a.s.SpoolPut(key, record, received, expires)
	if errors.Is(err, cache.ErrSpoolFull) {
		return fmt.Errorf("%w: %d records, requests and answers waiting for the broker", daemon.ErrSpoolFull, maxSpoolEntries)
	}
	return err
}

func (a storeSpool) Delete(key string) error { return a.s.SpoolDelete(key) }

func (a storeSpool) List() ([]daemon.SpoolRecord, error) {
	entries, err := a.s.SpoolList()
	if err != nil {
		return nil, err
	}
	out := make([]daemon.SpoolRecord, len(entries))
	for i, e := range entries {
		out[i] = daemon.SpoolRecord{Key: e.ID, Record: e.Payload, Received: e.Received, Expires: e.Expires}
	}
	return out, nil
}

// storePhrases is the phrase cache's figures and purge.
type storePhrases struct{ s *cache.Store }

var _ daemon.PhraseCache = storePhrases{}

func (a storePhrases) CacheStats() daemon.CacheStats {
	st := a.s.Stats()
	return daemon.CacheStats{Entries: st.Entries, Bytes: st.Bytes, MaxBytes: st.MaxBytes,
		Hits: st.Hits, Misses: st.Misses, WriteErrors: st.WriteErrors}
}

// Purge takes the scopes of `mynah cache purge`. "all" purges the phrases
// and the speakers but not the spool: the spool of a running daemon holds
// the commands it has accepted.
func (a storePhrases) Purge(scope string) (int, error) {
	sc, err := cache.ParsePurgeScope(scope)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", daemon.ErrInvalidScope, err)
	}
	if sc.Kind != cache.PurgeAll {
		return a.s.Purge(sc)
	}
	n, err := a.s.Purge(cache.PurgeScope{Kind: cache.PurgePhrases})
	if err != nil {
		return n, err
	}
	m, err := a.s.Purge(cache.PurgeScope{Kind: cache.PurgeSpeakers})
	return n + m, err
}
