package main

import (
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Memory after speech (README "## Memory"). Synthesis memory is C memory:
// ONNX Runtime takes a run's intermediate tensors from its CPU arena
// (onnx.arena, on by default), which grows by large regions from malloc
// and gives back those left free at the end of each run (quant/ort
// SessionOptions.ArenaShrink); with the arena off, every tensor is a
// malloc of its own. glibc keeps what was freed: in one arena per thread
// that ever allocated (up to 8 per core), and, once a large block was
// freed, with its mmap threshold raised to that size, so that the next
// runs' memory comes from the heaps and stays there. Issue 12 measured
// 63 MB idle grow to 621 MB after 200 says with the Go heap at 5–14 MB.
// mynahd therefore
//
//   - limits glibc to mallocArenaMax arenas and fixes the mmap threshold
//     at mallocMMapThreshold as the binary loads (memory_cgo.go), so a
//     block over 256 KiB is its own mapping, returned the moment it is
//     freed;
//   - raises the threshold to ort.MaxMMapThreshold while ONNX Runtime
//     builds a session (sessionBuilding), whose graph rewrites copy the
//     weights several times over, and trims the heap after;
//   - after speech (engine.Options.ReleaseMemory: once the engine is idle
//     a second, and every 2 s while it keeps speaking), calls
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
)

// memoryReleaser is the engine's ReleaseMemory for mynahd: the C heap,
// the Go heap and the cache file's mapped pages go back to the kernel. It
// logs at debug level what it did; a failure to release the cache file's
// pages is logged once.
type memoryReleaser struct {
	store  *cache.Store // nil without a phrase cache
	log    *slog.Logger
	failed bool // only the engine's keeper goroutine calls release
}

func (m *memoryReleaser) release() {
	start := time.Now()
	trimmed := ort.TrimCHeap()
	debug.FreeOSMemory()
	var mapped int64
	if m.store != nil {
		var err error
		mapped, err = m.store.ReleaseMapped()
		if err != nil && !m.failed {
			m.failed = true
			m.log.Info("phrase cache pages stay mapped after speech", "err", err)
		}
	}
	m.log.Debug("memory released after speech", "malloc_trim", trimmed, "cache_mapped_bytes", mapped,
		"ms", float64(time.Since(start).Microseconds())/1000)
}

// logMallocTuning says once, at debug level, which C allocator settings
// are in effect.
func logMallocTuning(log *slog.Logger) {
	arenas, threshold, ok := mallocTuning()
	log.Debug("c allocator", "tuned", ok, "arena_max", arenas, "mmap_threshold", threshold)
}

// sessionBuilding is the ort.Options.Building for mynahd: the mmap
// threshold raised while a session is built, where mynahd set it itself
// (nil leaves building alone, as when MALLOC_MMAP_THRESHOLD_ says
// otherwise).
func sessionBuilding() func(build func()) {
	if _, threshold, _ := mallocTuning(); threshold == mallocMMapThreshold {
		return ort.LoadThreshold(mallocMMapThreshold, ort.MaxMMapThreshold)
	}
	return nil
}
