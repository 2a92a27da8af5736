package voice

import (
	"container/list"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// KVStats describe a pipeline's decoder caches.
type KVStats struct {
	// Prefixes and PrefixBytes are the speaker prefixes held and their
	// memory; PrefixHits and PrefixMisses count lookups.
	Prefixes                 int
	PrefixBytes              int64
	PrefixHits, PrefixMisses uint64
	// Sessions counts the sessions known, one whose sentence is running
	// included (its state then belongs to the sentence and is not in
	// SessionBytes).
	Sessions     int
	SessionBytes int64
	// SessionRestarts counts sentences that found their session's context
	// full and started again from the speaker prefix; SessionsExpired
	// counts sessions dropped after SessionTTL idle.
	SessionRestarts, SessionsExpired uint64
	// Evicted counts entries dropped to stay within the count and byte
	// bounds or by EvictKV.
	Evicted uint64
}

// kvCaches holds the speaker prefixes and the session states under one
// lock: both are small, and EvictKV must see both at once. Nothing here
// runs a model; the lock is held for map and list work only.
type kvCaches struct {
	mu  sync.Mutex
	now func() time.Time
	log *slog.Logger

	maxPrefixes, maxSessions        int
	maxPrefixBytes, maxSessionBytes int64
	ttl                             time.Duration

	prefixes    *list.List // of *prefixEntry, most recently used first
	prefixByKey map[string]*list.Element
	sessions    *list.List // of *sessionEntry, most recently used first
	sessionByID map[string]*list.Element
	st          KVStats
}

type prefixEntry struct {
	key   string
	kv    *kvState
	bytes int64
}

// sessionEntry is a session's context. While a sentence of the session
// runs, busy is set and kv is nil: the sentence owns the state, and
// checkin puts the next one back.
type sessionEntry struct {
	id      string
	speaker string // digest of the embedding the state was made with
	kv      *kvState
	bytes   int64
	used    time.Time
	busy    bool
}

func newKVCaches(o PipelineOptions, log *slog.Logger) *kvCaches {
	return &kvCaches{
		now:             o.Clock,
		log:             log,
		maxPrefixes:     o.MaxPrefixes,
		maxPrefixBytes:  o.MaxPrefixBytes,
		maxSessions:     o.MaxSessions,
		maxSessionBytes: o.MaxSessionBytes,
		ttl:             o.SessionTTL,
		prefixes:        list.New(),
		prefixByKey:     make(map[string]*list.Element),
		sessions:        list.New(),
		sessionByID:     make(map[string]*list.Element),
	}
}

func (c *kvCaches) sessionsOn() bool { return c.maxSessions > 0 }

// prefix looks a speaker prefix up.
func (c *kvCaches) prefix(key string) (*kvState, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.prefixByKey[key]; ok {
		c.prefixes.MoveToFront(el)
		c.st.PrefixHits++
		return el.Value.(*prefixEntry).kv, true
	}
	c.st.PrefixMisses++
	return nil, false
}

// putPrefix stores a prefix and returns the one to use: an entry another
// request stored meanwhile wins, so that all users share one copy.
func (c *kvCaches) putPrefix(key string, kv *kvState) *kvState {
	if c.maxPrefixes < 0 {
		return kv
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.prefixByKey[key]; ok {
		c.prefixes.MoveToFront(el)
		return el.Value.(*prefixEntry).kv
	}
	e := &prefixEntry{key: key, kv: kv, bytes: kv.bytes()}
	if e.bytes > c.maxPrefixBytes {
		c.log.Warn("speaker prefix larger than the whole prefix cache, not cached",
			"bytes", e.bytes, "max_prefix_bytes", c.maxPrefixBytes)
		return kv
	}
	c.prefixByKey[key] = c.prefixes.PushFront(e)
	c.st.Prefixes++
	c.st.PrefixBytes += e.bytes
	for c.st.Prefixes > c.maxPrefixes || c.st.PrefixBytes > c.maxPrefixBytes {
		c.dropPrefix(c.prefixes.Back())
		c.st.Evicted++
	}
	return kv
}

func (c *kvCaches) dropPrefix(el *list.Element) int64 {
	e := c.prefixes.Remove(el).(*prefixEntry)
	delete(c.prefixByKey, e.key)
	c.st.Prefixes--
	c.st.PrefixBytes -= e.bytes
	return e.bytes
}

// checkout hands a session's state (nil for a new session) and the digest
// of the speaker it was made with to the sentence about to run. The entry
// stays in the cache, busy and empty, until checkin.
func (c *kvCaches) checkout(id string) (e *sessionEntry, kv *kvState, speaker string, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	if el, ok := c.sessionByID[id]; ok {
		e = el.Value.(*sessionEntry)
		if e.busy {
			return nil, nil, "", fmt.Errorf("%w: session %q", ErrSessionBusy, truncate(id, 64))
		}
		c.sessions.MoveToFront(el)
		kv, speaker = e.kv, e.speaker
		c.st.SessionBytes -= e.bytes
		e.kv, e.bytes, e.busy = nil, 0, true
		return e, kv, speaker, nil
	}
	e = &sessionEntry{id: id, busy: true, used: c.now()}
	c.sessionByID[id] = c.sessions.PushFront(e)
	c.st.Sessions++
	c.trimSessions()
	return e, nil, "", nil
}

// checkin gives a session its state after a sentence. A session dropped
// (or evicted) while its sentence ran stays dropped.
func (c *kvCaches) checkin(e *sessionEntry, kv *kvState, speaker string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.sessionByID[e.id]
	if !ok || el.Value.(*sessionEntry) != e {
		return
	}
	e.busy = false
	e.used = c.now()
	if kv == nil {
		// The session's first sentence failed: nothing to continue from.
		c.dropSessionElem(el)
		return
	}
	e.kv, e.speaker, e.bytes = kv, speaker, kv.bytes()
	c.st.SessionBytes += e.bytes
	c.sessions.MoveToFront(el)
	if e.bytes > c.maxSessionBytes {
		c.log.Warn("session state larger than the whole session cache, dropped",
			"session", e.id, "bytes", e.bytes, "max_session_bytes", c.maxSessionBytes)
		c.dropSessionElem(el)
		c.st.Evicted++
		return
	}
	c.trimSessions()
}

// trimSessions drops idle sessions, least recently used first, while the
// cache is over its count or byte bound. Busy sessions stay: their
// sentences are running, and their states are not counted in bytes.
func (c *kvCaches) trimSessions() {
	for el := c.sessions.Back(); el != nil && (c.st.Sessions > c.maxSessions || c.st.SessionBytes > c.maxSessionBytes); {
		prev := el.Prev()
		if !el.Value.(*sessionEntry).busy {
			c.dropSessionElem(el)
			c.st.Evicted++
		}
		el = prev
	}
}

// expire drops sessions idle for longer than the TTL.
func (c *kvCaches) expire() {
	now := c.now()
	for el := c.sessions.Back(); el != nil; {
		prev := el.Prev()
		if e := el.Value.(*sessionEntry); !e.busy && now.Sub(e.used) > c.ttl {
			c.dropSessionElem(el)
			c.st.SessionsExpired++
		}
		el = prev
	}
}

func (c *kvCaches) dropSessionElem(el *list.Element) int64 {
	e := c.sessions.Remove(el).(*sessionEntry)
	delete(c.sessionByID, e.id)
	c.st.Sessions--
	c.st.SessionBytes -= e.bytes
	return e.bytes
}

func (c *kvCaches) dropSession(id string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.sessionByID[id]
	if ok {
		c.dropSessionElem(el)
	}
	return ok
}

func (c *kvCaches) countRestart() {
	c.mu.Lock()
	c.st.SessionRestarts++
	c.mu.Unlock()
}

// evict frees at least want bytes if it can: expired sessions, then idle
// sessions least recently used first, then prefixes the same way.
func (c *kvCaches) evict(want int64) int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	before := c.st.SessionBytes
	c.expire()
	freed := before - c.st.SessionBytes
	for el := c.sessions.Back(); el != nil && freed < want; {
		prev := el.Prev()
		if !el.Value.(*sessionEntry).busy {
			freed += c.dropSessionElem(el)
			c.st.Evicted++
		}
		el = prev
	}
	for freed < want && c.prefixes.Len() > 0 {
		freed += c.dropPrefix(c.prefixes.Back())
		c.st.Evicted++
	}
	return freed
}

func (c *kvCaches) stats() KVStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.expire()
	return c.st
}
