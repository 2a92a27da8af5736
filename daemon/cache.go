package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// maxScopeBytes bounds a cache/purge payload.
const maxScopeBytes = 300

// CacheStats are the phrase cache's figures in the state (its "cache"
// object) and in Home Assistant's cache sensors.
type CacheStats struct {
	Entries  int    `json:"entries"`   // sentences cached
	Bytes    int64  `json:"bytes"`     // their encoded audio
	MaxBytes int64  `json:"max_bytes"` // the budget
	Hits     uint64 `json:"hits"`
	Misses   uint64 `json:"misses"`
	// HitRatio is Hits / (Hits + Misses), 0 before the first lookup.
	HitRatio    float64 `json:"hit_ratio"`
	WriteErrors uint64  `json:"write_errors"` // failed writes (disk full, budget): speech went on uncached
	// Available is false when the configured cache could not be opened
	// (Options.CacheError, in Error): every figure is then zero.
	Available bool   `json:"available"`
	Error     string `json:"error,omitempty"`
}

// cacheStats reads the phrase cache's figures; nil without a cache.
func (d *Daemon) cacheStats() *CacheStats {
	if d.opts.Cache == nil {
		if d.opts.CacheError != nil {
			return &CacheStats{Error: d.opts.CacheError.Error()}
		}
		return nil
	}
	s := d.opts.Cache.CacheStats()
	s.Available = true
	if n := s.Hits + s.Misses; n > 0 {
		s.HitRatio = float64(s.Hits) / float64(n)
	}
	return &s
}

// purge runs a cache/purge command. The payload is the scope ("phrases",
// the default for an empty payload, "voice=NAME", "older=AGE", "expired").
// The purge is a disk write, so it runs on its own goroutine: the MQTT
// handler never waits. A done event reports how many phrases went.
func (d *Daemon) purge(payload []byte) {
	const command = "cache/purge"
	if d.opts.Cache == nil {
		d.emitFailed("", "", command, ReasonNotSupported, errors.New("the phrase cache is off (cache.file is empty)"))
		return
	}
	if len(payload) > maxScopeBytes {
		d.emitFailed("", "", command, ReasonBadScope, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrInvalidScope, len(payload), maxScopeBytes))
		return
	}
	scope, err := parsePurgePayload(payload)
	if err != nil {
		d.emitFailed("", "", command, ReasonBadScope, err)
		return
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		n, err := d.opts.Cache.Purge(scope)
		if err != nil {
			reason := ReasonCache
			if errors.Is(err, ErrInvalidScope) {
				reason = ReasonBadScope
			}
			d.emitFailed("", "", command, reason, err)
			return
		}
		d.log.Info("phrase cache purged", "scope", scope, "removed", n)
		d.emit(Event{State: EventDone, Command: command, Scope: scope, Removed: &n})
	}()
}

// parsePurgePayload reads a cache/purge payload: the scope as plain text,
// or a JSON object {"scope": "..."}; empty means "phrases" (what Home
// Assistant's purge button sends).
func parsePurgePayload(payload []byte) (string, error) {
	text := string(trimPayload(payload))
	if strings.HasPrefix(text, "{") {
		var v struct {
			Scope *string `json:"scope"`
		}
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return "", fmt.Errorf("%w: %v", ErrInvalidScope, err)
		}
		if v.Scope == nil {
			return "", fmt.Errorf("%w: the JSON object has no \"scope\" string", ErrInvalidScope)
		}
		text = strings.TrimSpace(*v.Scope)
	}
	if text == "" {
		text = "phrases"
	}
	return text, nil
}

// Warn publishes a warning event (state "warning") with reason and err's
// text, for trouble outside a request that a household should see in
// Home Assistant: mynahd reports a damaged cache file it moved aside. It
// never blocks; events emitted before Run are published when Run starts.
func (d *Daemon) Warn(reason string, err error) {
	e := Event{State: EventWarning, Reason: reason}
	if err != nil {
		e.Error = err.Error()
	}
	d.log.Warn("warning event", "reason", reason, "err", err)
	d.emit(e)
}
