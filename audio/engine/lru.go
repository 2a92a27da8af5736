package engine

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// sessionLRU is the Engine's in-memory least-recently-used cache of loaded
// voices. It only sees a value of type V, its size in bytes and the Load
// and Close functions, so its tests run on fakes, without ONNX Runtime.
//
// Why it exists: switching voices must not reload models. A warm Get costs a
// map lookup; a cold Get loads once no matter how many callers ask for the
// key at the same time.
//
// Ownership: every successful Get takes a reference that its release function
// gives back. A session is closed only when it has been removed from the
// cache (LRU bound, memory pressure, Evict or Close) and no reference is left,
// so eviction never pulls a session out from under a running synthesis.
type sessionLRU[V any] struct {
	load      func(ctx context.Context, key string) (V, int64, error)
	closeFn   func(V) error
	maxCount  int
	maxBytes  int64
	pinned    map[string]bool
	memory    memoryProbe
	lowWater  int64
	log       *slog.Logger
	closing   context.Context // canceled by Close; parent of every load's context
	stopLoads context.CancelFunc
	stopTick  chan struct{}
	wg        sync.WaitGroup // load goroutines and the memory ticker

	// probing keeps concurrent Gets from acting on the same memory reading
	// twice (and closing twice as much as the deficit asks for).
	probing   sync.Mutex
	probeGap  time.Duration
	lastProbe atomic.Int64 // UnixNano of the last probe

	mu          sync.Mutex
	entries     map[string]*sessionEntry[V]
	lru         list.List // of *sessionEntry[V]; front is the most recently used
	flights     map[string]*sessionFlight[V]
	bytes       int64 // sizes of all open sessions, including evicted ones still in use
	closed      bool
	overWarned  bool // "over budget but nothing evictable" was logged; reset when back under
	stats       lruStats
	inUse       int
	pinnedCount int
}

// lruOptions configures a sessionLRU. Load is required; the rest
// has defaults.
type lruOptions[V any] struct {
	// Load opens the session for key and reports its size in bytes (0 if
	// unknown; a negative size is an error). ctx is canceled when every
	// caller waiting for this key has given up, or when the cache is closed;
	// it carries the values of the Get that started the load, not its
	// deadline. Load must return soon after ctx is canceled: Close waits for
	// running loads.
	Load func(ctx context.Context, key string) (V, int64, error)
	// Close releases a session. nil means sessions need no closing. Its
	// errors are logged and counted (lruStats.CloseErrors); Close of the
	// cache returns the first error of the sessions it closes itself.
	Close func(V) error
	// MaxCount bounds the number of cached sessions: 0 means
	// DefaultMaxSessions, a negative value means no count bound.
	MaxCount int
	// MaxBytes bounds the summed sizes of open sessions, counting evicted
	// sessions that are still in use (their memory is not free yet). 0 means
	// no byte bound.
	MaxBytes int64
	// Pinned keys are never evicted by the count or byte bound nor closed
	// under memory pressure; Evict and Close still remove them. Pins are not
	// loaded by newSessionLRU: pass them to Preload. When the pinned sessions
	// alone exceed MaxCount or MaxBytes the cache stays over its bound
	// (every unpinned idle session is evicted, nothing else) and logs one
	// warning until it is back under.
	Pinned []string
	// Memory reports available memory. When it reports less than LowWater,
	// least-recently-used idle unpinned sessions are closed until their
	// recorded sizes cover the shortfall; a session of unknown size (0) ends
	// the round, as what it gave back shows only in the next probe. Sessions
	// in use are never closed for pressure. The probe runs before every
	// Load, on warm Gets (see ProbeGap) and, if MemoryInterval > 0, on a
	// timer. nil disables the pressure check.
	Memory memoryProbe
	// LowWater is the available-memory threshold in bytes; 0 disables the
	// pressure check.
	LowWater int64
	// MemoryInterval, when positive, starts a goroutine (stopped by Close)
	// that runs the pressure check on this interval, so memory is given back
	// even while no request arrives.
	MemoryInterval time.Duration
	// ProbeGap rate-limits the check on warm Gets: one probes only if the
	// last probe is at least ProbeGap old, because reading the cgroup files
	// costs far more than a warm hit (see BenchmarkCgroupMemory). 0 means
	// defaultProbeGap; a negative value probes on every warm Get.
	ProbeGap time.Duration
	// Logger receives evictions, load failures and close errors. nil
	// discards.
	Logger *slog.Logger
}

// DefaultMaxSessions is the count bound used when lruOptions.MaxCount
// is 0: enough for a household's few voices at two precisions.
const DefaultMaxSessions = 4

// defaultProbeGap is the ProbeGap used when lruOptions.ProbeGap is 0.
const defaultProbeGap = 250 * time.Millisecond

// errSessionsClosed is returned by Get and Preload after Close, and to
// callers whose load was still running when Close was called: what the
// Engine's methods fail with after Engine.Close.
var errSessionsClosed = errors.New("session cache closed")

// lruStats are counters since newSessionLRU plus a snapshot of the
// contents.
type lruStats struct {
	Hits       uint64 // Gets served by a cached session
	Misses     uint64 // Gets that had to wait for a load (their own or a shared one)
	Loads      uint64 // calls of Load
	LoadErrors uint64 // Loads that returned an error, also those canceled because every caller gave up
	// Evictions counts sessions removed by the count or byte bound, by
	// memory pressure or by Evict; PressureEvictions is the memory-pressure
	// share of them.
	Evictions         uint64
	PressureEvictions uint64
	CloseErrors       uint64 // Close calls on sessions that returned an error
	Replacements      uint64 // sessions put in place of another by Replace
	Sessions          int    // sessions in the cache (Len)
	InUse             int    // sessions, cached or evicted, with at least one unreleased Get
	Bytes             int64  // as Bytes
}

type sessionEntry[V any] struct {
	key     string
	val     V
	size    int64
	refs    int
	pinned  bool
	evicted bool // out of the map and the list; closed by the last release
	elem    *list.Element
}

// sessionFlight is one running Load that any number of Gets wait for.
type sessionFlight[V any] struct {
	done     chan struct{} // closed when the result is set and displaced sessions are closed
	cancel   context.CancelFunc
	waiters  int  // Gets waiting; each gets one reference on success
	finished bool // result set (under sessionLRU.mu)
	entry    *sessionEntry[V]
	err      error
}

// newSessionLRU returns an empty cache. It fails only by panicking on a nil
// Load, which is a programming error.
func newSessionLRU[V any](opts *lruOptions[V]) *sessionLRU[V] {
	if opts == nil || opts.Load == nil {
		panic("engine: newSessionLRU needs lruOptions.Load")
	}
	s := &sessionLRU[V]{
		load:     opts.Load,
		closeFn:  opts.Close,
		maxCount: opts.MaxCount,
		maxBytes: opts.MaxBytes,
		pinned:   make(map[string]bool, len(opts.Pinned)),
		memory:   opts.Memory,
		lowWater: opts.LowWater,
		probeGap: opts.ProbeGap,
		log:      opts.Logger,
		entries:  make(map[string]*sessionEntry[V]),
		flights:  make(map[string]*sessionFlight[V]),
		stopTick: make(chan struct{}),
	}
	if s.maxCount == 0 {
		s.maxCount = DefaultMaxSessions
	}
	if s.probeGap == 0 {
		s.probeGap = defaultProbeGap
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	for _, k := range opts.Pinned {
		s.pinned[k] = true
	}
	s.closing, s.stopLoads = context.WithCancel(context.Background())
	if s.memory != nil && s.lowWater > 0 && opts.MemoryInterval > 0 {
		s.wg.Add(1)
		go s.tick(opts.MemoryInterval)
	}
	return s
}

// Get returns the session for key and a release function that must be
// called exactly once when the caller is done with it (further calls do
// nothing). A cached session costs no load. Otherwise Get waits for a load
// that it starts or that another Get already started: concurrent Gets of one
// cold key call Load once. A failed load is not cached; the next Get tries
// again. If ctx is done before the session is ready Get returns ctx.Err(),
// and the load goes on for the other callers; it is canceled only when no
// caller is left.
func (s *sessionLRU[V]) Get(ctx context.Context, key string) (V, func(), error) {
	var zero V
	if err := ctx.Err(); err != nil {
		return zero, nil, err
	}
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return zero, nil, errSessionsClosed
	}
	if e := s.entries[key]; e != nil {
		s.acquireLocked(e)
		s.lru.MoveToFront(e.elem)
		s.stats.Hits++
		s.mu.Unlock()
		// After taking the reference, so the check cannot close this one.
		s.relieveRateLimited()
		return e.val, s.releaser(e), nil
	}
	s.stats.Misses++
	f := s.flights[key]
	if f == nil {
		f = s.startLocked(ctx, key)
	}
	f.waiters++
	s.mu.Unlock()

	select {
	case <-f.done:
	case <-ctx.Done():
		s.mu.Lock()
		if !f.finished {
			f.waiters--
			if f.waiters == 0 {
				// Nobody wants it any more: cancel, and let the next Get
				// start a fresh load instead of joining a doomed one.
				if s.flights[key] == f {
					delete(s.flights, key)
				}
				f.cancel()
			}
			s.mu.Unlock()
			return zero, nil, ctx.Err()
		}
		s.mu.Unlock()
		// The load finished at the same moment; this caller holds a
		// reference that it must give back.
		if f.err == nil {
			s.releaser(f.entry)()
		}
		return zero, nil, ctx.Err()
	}
	if f.err != nil {
		return zero, nil, f.err
	}
	return f.entry.val, s.releaser(f.entry), nil
}

// startLocked starts the load of key in its own goroutine, so that the
// caller that started it can give up without failing the others.
func (s *sessionLRU[V]) startLocked(ctx context.Context, key string) *sessionFlight[V] {
	// The load keeps the first caller's values (trace ids) but not its
	// cancellation, and it stops when the cache closes.
	lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	stop := context.AfterFunc(s.closing, cancel)
	f := &sessionFlight[V]{done: make(chan struct{}), cancel: func() { stop(); cancel() }}
	s.flights[key] = f
	s.stats.Loads++
	s.wg.Add(1)
	go s.runLoad(lctx, key, f)
	return f
}

func (s *sessionLRU[V]) runLoad(ctx context.Context, key string, f *sessionFlight[V]) {
	defer s.wg.Done()
	s.relieve() // make room before the new session takes memory
	start := time.Now()
	v, size, err := s.load(ctx, key)
	if err == nil && size < 0 {
		err = fmt.Errorf("negative size %d", size)
		s.closeValue(key, v)
	}
	canceled := ctx.Err() != nil // before f.cancel cancels it anyway
	f.cancel()

	var victims []*sessionEntry[V]
	var discard bool
	s.mu.Lock()
	if s.flights[key] == f {
		delete(s.flights, key)
	}
	f.finished = true
	switch {
	case s.closed:
		f.err = errSessionsClosed
		discard = err == nil
	case err != nil:
		s.stats.LoadErrors++
		f.err = fmt.Errorf("load session %q: %w", key, err)
	case f.waiters == 0:
		discard = true // every caller gave up; the load happened to win anyway
	case s.entries[key] != nil:
		// Cannot happen while flights are keyed like entries; if it ever
		// does, keep the cached one and drop the duplicate.
		f.entry = s.entries[key]
		for range f.waiters {
			s.acquireLocked(f.entry)
		}
		discard = true
	default:
		e := &sessionEntry[V]{key: key, val: v, size: size, pinned: s.pinned[key]}
		e.elem = s.lru.PushFront(e)
		s.entries[key] = e
		s.bytes += size
		if e.pinned {
			s.pinnedCount++
		}
		for range f.waiters {
			s.acquireLocked(e)
		}
		f.entry = e
		victims = s.enforceLocked()
	}
	s.mu.Unlock()

	switch {
	case err != nil && canceled:
		s.log.Debug("session load canceled", "key", key, "err", err)
	case err != nil:
		s.log.Warn("session load failed", "key", key, "err", err)
	default:
		s.log.Debug("session loaded", "key", key, "bytes", size, "took", time.Since(start))
	}
	if discard {
		s.closeValue(key, v)
	}
	// The waiters wake only after the sessions this load displaced are
	// closed, so a Get returns with the cache back within its bounds and
	// their memory given back; closing an idle session costs little next
	// to the load. Waiters that gave up meanwhile read f under s.mu
	// (finished is set), not f.done.
	s.closeEntries(victims)
	close(f.done)
}

func (s *sessionLRU[V]) acquireLocked(e *sessionEntry[V]) {
	if e.refs == 0 {
		s.inUse++
	}
	e.refs++
}

// releaser returns the release function of one reference to e.
func (s *sessionLRU[V]) releaser(e *sessionEntry[V]) func() {
	var once sync.Once
	return func() { once.Do(func() { s.release(e) }) }
}

func (s *sessionLRU[V]) release(e *sessionEntry[V]) {
	var victims []*sessionEntry[V]
	s.mu.Lock()
	e.refs--
	if e.refs == 0 {
		s.inUse--
		if e.evicted {
			s.bytes -= e.size
			victims = append(victims, e)
		} else {
			// An idle session may now be evicted to get back under a bound.
			victims = s.enforceLocked()
		}
	}
	s.mu.Unlock()
	s.closeEntries(victims)
}

// overLocked reports whether the count or byte bound is exceeded.
func (s *sessionLRU[V]) overLocked() bool {
	return (s.maxCount > 0 && len(s.entries) > s.maxCount) ||
		(s.maxBytes > 0 && s.bytes > s.maxBytes)
}

// enforceLocked evicts idle unpinned sessions, least recently used first,
// until the cache is within its bounds or nothing more can be evicted. It
// returns the sessions to close once the lock is released.
func (s *sessionLRU[V]) enforceLocked() []*sessionEntry[V] {
	var victims []*sessionEntry[V]
	for s.overLocked() {
		e := s.victimLocked()
		if e == nil {
			if !s.overWarned {
				s.overWarned = true
				s.log.Warn("session cache over its bound: the rest are pinned or in use",
					"sessions", len(s.entries), "max_sessions", s.maxCount,
					"bytes", s.bytes, "max_bytes", s.maxBytes, "pinned", s.pinnedCount)
			}
			return victims
		}
		victims = s.evictLocked(e, victims)
		s.stats.Evictions++
	}
	s.overWarned = false
	return victims
}

// victimLocked returns the least recently used idle unpinned session.
func (s *sessionLRU[V]) victimLocked() *sessionEntry[V] {
	for el := s.lru.Back(); el != nil; el = el.Prev() {
		if e := el.Value.(*sessionEntry[V]); e.refs == 0 && !e.pinned {
			return e
		}
	}
	return nil
}

// evictLocked removes e from the cache. An idle session is appended to
// victims for closing; one in use is closed by its last release.
func (s *sessionLRU[V]) evictLocked(e *sessionEntry[V], victims []*sessionEntry[V]) []*sessionEntry[V] {
	delete(s.entries, e.key)
	s.lru.Remove(e.elem)
	e.evicted = true
	if e.pinned {
		s.pinnedCount--
	}
	if e.refs > 0 {
		return victims
	}
	s.bytes -= e.size
	return append(victims, e)
}

func (s *sessionLRU[V]) closeEntries(victims []*sessionEntry[V]) error {
	var first error
	for _, e := range victims {
		s.log.Debug("session closed", "key", e.key, "bytes", e.size)
		if err := s.closeValue(e.key, e.val); err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (s *sessionLRU[V]) closeValue(key string, v V) error {
	if s.closeFn == nil {
		return nil
	}
	if err := s.closeFn(v); err != nil {
		s.mu.Lock()
		s.stats.CloseErrors++
		s.mu.Unlock()
		s.log.Warn("session close failed", "key", key, "err", err)
		return fmt.Errorf("close session %q: %w", key, err)
	}
	return nil
}

// Preload loads keys one after another (not in parallel: two models loading
// at once double the peak memory) and leaves them cached. It goes on past
// failures and returns them all joined. Keys beyond the count or byte bound
// evict the earlier unpinned ones, so a preload list should fit the bounds.
func (s *sessionLRU[V]) Preload(ctx context.Context, keys ...string) error {
	var errs []error
	for _, k := range keys {
		_, release, err := s.Get(ctx, k)
		if err != nil {
			errs = append(errs, fmt.Errorf("preload: %w", err))
			if ctx.Err() != nil || errors.Is(err, errSessionsClosed) {
				break
			}
			continue
		}
		release()
	}
	return errors.Join(errs...)
}

// Evict removes key from the cache, pinned or not (for example after its
// model file changed), and reports whether it was cached. An idle session is
// closed before Evict returns; one in use is closed by its last release. A
// load of key that is running is not affected.
func (s *sessionLRU[V]) Evict(key string) bool {
	s.mu.Lock()
	e := s.entries[key]
	var victims []*sessionEntry[V]
	if e != nil {
		victims = s.evictLocked(e, nil)
		s.stats.Evictions++
	}
	s.mu.Unlock()
	s.closeEntries(victims)
	return e != nil
}

// Replace puts v, of size bytes, in place of key's cached session when
// replace, called with it under the cache's lock (it must be quick and
// must not call the cache), says so, and reports whether it did. Gets
// after it have v; those before keep the old session, which is closed by
// its last release, or now when it is idle, as Evict closes it. v takes
// the old one's place in the LRU order and its pin. Nothing is replaced
// when key is not cached (its next Get loads it), nor after Close; v is
// then the caller's to close. The bounds are not enforced here: the
// count is unchanged, and the bytes over a bound are those of the old
// session in use, which its release gives back.
func (s *sessionLRU[V]) Replace(key string, replace func(old V) bool, v V, size int64) bool {
	s.mu.Lock()
	e := s.entries[key]
	if s.closed || e == nil || !replace(e.val) {
		s.mu.Unlock()
		return false
	}
	mark := e.elem.Prev()
	victims := s.evictLocked(e, nil)
	ne := &sessionEntry[V]{key: key, val: v, size: size, pinned: e.pinned}
	if mark == nil {
		ne.elem = s.lru.PushFront(ne)
	} else {
		ne.elem = s.lru.InsertAfter(ne, mark)
	}
	s.entries[key] = ne
	s.bytes += size
	if ne.pinned {
		s.pinnedCount++
	}
	s.stats.Replacements++
	s.mu.Unlock()
	s.closeEntries(victims)
	return true
}

// Len returns the number of cached sessions (not counting evicted ones
// still in use).
func (s *sessionLRU[V]) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.entries)
}

// Each calls f for every cached session, most recently used first,
// without marking it used. f runs with the cache locked: it must be quick
// and must not call the cache. A session evicted but still in use is not
// visited.
func (s *sessionLRU[V]) Each(f func(key string, v V)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for el := s.lru.Front(); el != nil; el = el.Next() {
		e := el.Value.(*sessionEntry[V])
		f(e.key, e.val)
	}
}

// Bytes returns the summed sizes of the open sessions, including evicted
// ones that are still in use: the memory the sessions hold right now.
func (s *sessionLRU[V]) Bytes() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bytes
}

// Stats returns the counters and a snapshot of the contents.
func (s *sessionLRU[V]) Stats() lruStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Sessions = len(s.entries)
	st.InUse = s.inUse
	st.Bytes = s.bytes
	return st
}

// Close empties the cache and stops its goroutines. Idle sessions are closed
// now; sessions still in use are closed when their last release is called,
// so Close never waits on a caller. Running loads are canceled and waited
// for; their callers get errSessionsClosed. Close returns the first error of
// the sessions it closed itself. Further Gets return errSessionsClosed;
// calling Close again does nothing.
func (s *sessionLRU[V]) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	var victims []*sessionEntry[V]
	for el := s.lru.Front(); el != nil; {
		next := el.Next()
		victims = s.evictLocked(el.Value.(*sessionEntry[V]), victims)
		el = next
	}
	s.mu.Unlock()

	close(s.stopTick)
	s.stopLoads()
	s.wg.Wait()
	return s.closeEntries(victims)
}
