package main

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"
)

// Memory after speech (README "## Memory"). Synthesis memory is C memory:
// ONNX Runtime allocates every intermediate tensor of a run with malloc
// (its arena is off, quant/ort SessionOptions.CPUArena) and frees it at
// the end. glibc keeps what was freed: in one arena per thread that ever
// allocated (up to 8 per core), and, once a large block was freed, with
// its mmap threshold raised to that size, so that the next runs' tensors
// come from the arenas and stay there. The issue measured 63 MB idle
// grow to 621 MB after 200 says with the Go heap at 5–14 MB. mynahd
// therefore
//
//   - limits glibc to mallocArenaMax arenas and fixes the mmap threshold
//     at mallocMMapThreshold as the binary loads (memory_cgo.go), so a
//     tensor over 256 KiB is its own mapping, returned the moment it is
//     freed;
//   - after speech, once the engine is idle for memoryIdleRelease (and
//     every memoryBusyRelease while it keeps speaking), calls
//     malloc_trim(0) for the small blocks' free pages, returns the Go
//     heap's free pages, and drops the phrase cache file's mapped pages
//     from RSS (cache.Store.ReleaseMapped);
//   - caps the audio of one model run (audio/voice MaxRunAudio), which
//     bounds the peak of a run whatever the text and rate.
const (
	// Keep in step with mynah_malloc_tune (memory_cgo.go) and the unit's
	// MALLOC_ARENA_MAX.
	mallocArenaMax      = 2
	mallocMMapThreshold = 256 << 10

	memoryIdleRelease = time.Second
	memoryBusyRelease = 2 * time.Second
	memoryTick        = 250 * time.Millisecond
)

// memoryKeeper gives memory back to the kernel after speech: the engine
// marks when synthesis starts and ends, the keeper's goroutine releases
// once the engine has been idle a while after a burst, and every so often
// during a long one.
type memoryKeeper struct {
	release func()
	idle    time.Duration // after the last synthesis ended
	busy    time.Duration // between releases while synthesis goes on

	running atomic.Int64 // synthesis calls in progress
	dirty   atomic.Bool  // synthesis since the last release
	lastEnd atomic.Int64 // unix nanos: the last synthesis ended
	wg      sync.WaitGroup
	stop    chan struct{}
	once    sync.Once
}

// startMemoryKeeper starts the keeper's goroutine; close stops it.
func startMemoryKeeper(release func(), idle, busy time.Duration) *memoryKeeper {
	k := &memoryKeeper{release: release, idle: idle, busy: busy, stop: make(chan struct{})}
	k.wg.Add(1)
	go k.loop()
	return k
}

// begin marks synthesis starting; call the func it returns when it ends.
func (k *memoryKeeper) begin() (end func()) {
	k.running.Add(1)
	k.dirty.Store(true)
	return func() {
		k.lastEnd.Store(time.Now().UnixNano())
		// Again: a release during the synthesis did not see its end.
		k.dirty.Store(true)
		k.running.Add(-1)
	}
}

func (k *memoryKeeper) loop() {
	defer k.wg.Done()
	t := time.NewTicker(memoryTick)
	defer t.Stop()
	lastRelease := time.Now()
	for {
		select {
		case <-k.stop:
			return
		case now := <-t.C:
			if !k.due(now, lastRelease) {
				continue
			}
			k.dirty.Store(false)
			k.release()
			lastRelease = time.Now()
		}
	}
}

// due reports whether the keeper should release now.
func (k *memoryKeeper) due(now, lastRelease time.Time) bool {
	if !k.dirty.Load() {
		return false
	}
	if k.running.Load() > 0 {
		return now.Sub(lastRelease) >= k.busy
	}
	return now.Sub(time.Unix(0, k.lastEnd.Load())) >= k.idle
}

// close stops the keeper and waits for its goroutine.
func (k *memoryKeeper) close() {
	k.once.Do(func() { close(k.stop) })
	k.wg.Wait()
}

// releaseMemory is the keeper's release for a voice set: the C heap, the
// Go heap and the cache file's mapped pages go back to the kernel. It
// logs at debug level what it did; a failure to page the cache out is
// logged once.
func (vs *voiceSet) releaseMemory() {
	start := time.Now()
	trimmed := trimCHeap()
	debug.FreeOSMemory()
	var paged int64
	if store := vs.store; store != nil {
		var err error
		paged, err = store.ReleaseMapped()
		if err != nil && !vs.releaseFailed {
			vs.releaseFailed = true
			vs.log.Info("phrase cache pages stay mapped after speech", "err", err)
		}
	}
	vs.log.Debug("memory released after speech", "malloc_trim", trimmed, "cache_mapped_bytes", paged,
		"ms", float64(time.Since(start).Microseconds())/1000)
}

// logMallocTuning says once, at debug level, which C allocator settings
// are in effect.
func logMallocTuning(log *slog.Logger) {
	arenas, threshold, ok := mallocTuning()
	log.Debug("c allocator", "tuned", ok, "arena_max", arenas, "mmap_threshold", threshold)
}
