package main

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
)

// stores are the two bbolt files: the phrase cache (with the cloned
// speakers) and the spool. They are separate so that damage to the large,
// busy cache file, which is moved aside and started empty, cannot take
// the accepted commands along; the spool file stays small and is written
// only by the queue.
type stores struct {
	cache, spool       *cache.Store
	cacheErr, spoolErr error // configured but unusable (read-only, locked)
	log                *slog.Logger
}

// maxSpoolEntries bounds the spool file: the queue and the answers
// waiting for the broker. A flood that outruns the broker's
// acknowledgements fills it (its requests are then spoken unspooled,
// with one spool_unavailable warning, their answers kept in memory);
// 16384 measured 5 MB more peak RSS in the 5,000-say soak than 1024
// (107.5 against 102.3 MB: goroutines waiting on the writes), a margin
// the 120 MB budget keeps for the CPUs not measured here.
const maxSpoolEntries = cache.DefaultMaxSpoolEntries

// openStores opens what cfg configures. A file that cannot be opened does
// not stop speech: its error is kept for the daemon to report.
func openStores(cfg config.Config, log *slog.Logger) *stores {
	st := &stores{log: log}
	if cfg.Cache.File != "" {
		st.cache, st.cacheErr = cache.Open(cfg.Cache.File, &cache.Options{MaxBytes: cfg.Cache.MaxBytes, TTL: cfg.Cache.TTL,
			MaxSpeakers: cfg.Cache.MaxSpeakers, SpeakerPrecision: cfg.Cache.SpeakerPrecision, ReleaseAfterCommit: true,
			Logger: log.With("component", "cache")})
		if st.cacheErr != nil {
			log.Warn("phrase cache unavailable, speaking uncached", "file", cfg.Cache.File, "err", st.cacheErr)
		}
	}
	if path := cfg.SpoolPath(); path != "" {
		// The spool holds no audio: the phrase budget is its smallest.
		st.spool, st.spoolErr = cache.Open(path, &cache.Options{MaxBytes: 1 << 20, MaxSpoolEntries: maxSpoolEntries,
			ReleaseAfterCommit: true, Logger: log.With("component", "spool")})
		if st.spoolErr != nil {
			st.spoolErr = fmt.Errorf("open spool %s: %w", path, st.spoolErr)
			log.Warn("spool unavailable: commands are spoken, but a crash loses those waiting", "file", path, "err", st.spoolErr)
		}
	}
	st.migrate()
	return st
}

// migrate moves the requests an older mynahd spooled in the cache file
// (or that the cache file's recovery carried over) into the spool file.
func (st *stores) migrate() {
	if st.cache == nil || st.spool == nil {
		return
	}
	entries, err := st.cache.SpoolList()
	if err != nil || len(entries) == 0 {
		return
	}
	moved := 0
	for _, e := range entries {
		if err := st.spool.SpoolPut(e.ID, e.Payload, e.Received, e.Expires); err != nil {
			st.log.Warn("spooled request not moved to the spool file; it stays in the cache file", "id", e.ID, "err", err)
			continue
		}
		if err := st.cache.SpoolDelete(e.ID); err != nil {
			st.log.Warn("moved spooled request not removed from the cache file", "id", e.ID, "err", err)
		}
		moved++
	}
	st.log.Info("spooled requests moved from the cache file to the spool file", "requests", moved)
}

// options fills in the daemon's view of the stores.
func (st *stores) options(o *daemon.Options) {
	o.CacheError, o.SpoolError = st.cacheErr, st.spoolErr
	// A nil *cache.Store must not become a non-nil interface.
	if st.cache != nil {
		o.Cache = storePhrases{st.cache}
	}
	if st.spool != nil {
		o.Spool = storeSpool{st.spool}
	}
}

// report tells the daemon (warning and failed events) what the opens
// recovered from. Call it after daemon.New, before Run.
func (st *stores) report(d *daemon.Daemon, cfg config.Config) {
	if st.cache != nil {
		if r := st.cache.Recovery(); r != nil {
			// The cache file holds spooled requests only those an older
			// mynahd left there: its figures only when there were any.
			note := ""
			if s := r.Spool; s.Carried > 0 || len(s.Lost) > 0 || s.Unreadable > 0 || s.DamagedPages > 0 {
				note = "; " + salvageNote(s)
			}
			d.Warn(daemon.ReasonCacheCorrupt, fmt.Errorf("cache file %s was damaged (%s): moved to %s, started empty%s",
				cfg.Cache.File, r.Reason, r.MovedTo, note))
			if s := r.Spool; len(s.Lost) > 0 || s.Unreadable > 0 || s.DamagedPages > 0 {
				d.SpoolLost(lostRecords(s.Lost), fmt.Errorf("spooled requests of the damaged cache file %s: %s", cfg.Cache.File, salvageNote(s)))
			}
		}
	}
	if st.spool != nil {
		if r := st.spool.Recovery(); r != nil {
			d.SpoolLost(lostRecords(r.Spool.Lost), fmt.Errorf("spool file %s was damaged (%s): moved to %s; %s",
				cfg.SpoolPath(), r.Reason, r.MovedTo, salvageNote(r.Spool)))
		}
	}
}

// lostRecords are the lost requests as the daemon knows its records: the
// store's id is the daemon's key.
func lostRecords(lost []cache.SpoolEntry) []daemon.SpoolRecord {
	out := make([]daemon.SpoolRecord, len(lost))
	for i, e := range lost {
		out[i] = daemon.SpoolRecord{Key: e.ID, Received: e.Received}
	}
	return out
}

// salvageNote says, for a warning, what a recovery counted of the spool:
// nothing in it is assumed (cache.SpoolSalvage).
func salvageNote(s cache.SpoolSalvage) string {
	note := fmt.Sprintf("%d carried over, %d lost (ids reported failed), %d unreadable", s.Carried, len(s.Lost), s.Unreadable)
	if s.DamagedPages > 0 {
		note += fmt.Sprintf(", and %d damaged page(s) of the spool holding requests not counted", s.DamagedPages)
	}
	if s.Scanned {
		note += "; no page tree led to the spool, so every page was searched (see the README's spool section for what that cannot tell)"
	}
	return note
}

// Close closes both files and returns the first error.
func (st *stores) Close() error {
	var errs []error
	for _, s := range []*cache.Store{st.cache, st.spool} {
		if s != nil {
			errs = append(errs, s.Close())
		}
	}
	return errors.Join(errs...)
}
