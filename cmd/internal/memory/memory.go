// Package memory keeps the memory of a process that runs voices (mynahd,
// mynah say) in bounds: glibc's allocator tuned as the binary loads, the
// mmap threshold raised while ONNX Runtime builds a session, and the
// memory of speech given back after it (README "## Memory"). A binary
// gets the tuning by importing the package.
//
// Synthesis memory is C memory: ONNX Runtime takes a run's intermediate
// tensors from its CPU arena (onnx.arena, on by default), which grows by
// large regions from malloc and gives back those left free at the end of
// each run (quant/ort SessionOptions.ArenaShrink); with the arena off,
// every tensor is a malloc of its own. glibc keeps what was freed: in one
// arena per thread that ever allocated (up to 8 per core), and, once a
// large block was freed, with its mmap threshold raised to that size, so
// that the next runs' memory comes from the heaps and stays there. Issue
// 12 measured mynahd's 63 MB idle grow to 621 MB after 200 says with the
// Go heap at 5–14 MB. A binary that imports this package therefore
//
//   - limits glibc to ArenaMax arenas and fixes the mmap threshold at
//     MMapThreshold as it loads (memory_cgo.go), so a block over 256 KiB
//     is its own mapping, returned the moment it is freed;
//   - raises the threshold to ort.MaxMMapThreshold while ONNX Runtime
//     builds a session (SessionBuilding), whose graph rewrites copy the
//     weights several times over, and trims the heap after;
//   - after speech (engine.Options.ReleaseMemory: once the engine is idle
//     a second, and every 2 s while it keeps speaking), calls
//     malloc_trim(0) for the small blocks' free pages, returns the Go
//     heap's free pages, and drops the phrase cache file's mapped pages
//     from RSS (Releaser);
//   - caps the audio of one model run (audio/voice MaxRunAudio), which
//     bounds the peak of a run whatever the text and rate.
package memory

import (
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The C allocator settings made as the binary loads.
const (
	// Keep in step with mynah_malloc_tune (memory_cgo.go) and mynahd's
	// unit's MALLOC_ARENA_MAX.
	ArenaMax      = 2
	MMapThreshold = 256 << 10
)

// Tuning says which of the C allocator settings are in effect: ArenaMax
// and MMapThreshold where the binary made them, 0 where the environment
// said otherwise (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_ or
// GLIBC_TUNABLES win, and MYNAH_MALLOC_TUNE=0 leaves glibc's defaults),
// and ok false where none was made (also without cgo or off Linux).
func Tuning() (arenaMax, mmapThreshold int, ok bool) {
	t := cTuned()
	if t&tunedArenaMax != 0 {
		arenaMax = ArenaMax
	}
	if t&tunedMMapThreshold != 0 {
		mmapThreshold = MMapThreshold
	}
	return arenaMax, mmapThreshold, t != 0
}

// What cTuned reports, a bit each.
const (
	tunedArenaMax = 1 << iota
	tunedMMapThreshold
)

// LogTuning says once, at debug level, which C allocator settings are in
// effect.
func LogTuning(log *slog.Logger) {
	arenas, threshold, ok := Tuning()
	log.Debug("c allocator", "tuned", ok, "arena_max", arenas, "mmap_threshold", threshold)
}

// SessionBuilding is the ort.Options.Building for every Runtime of the
// process: the mmap threshold raised while a session is built, where the
// binary set it itself (nil leaves building alone, as when
// MALLOC_MMAP_THRESHOLD_ says otherwise). Every call returns the same
// function, as ort.LoadThreshold asks: the threshold is the process's.
var SessionBuilding = sync.OnceValue(func() func(build func()) {
	if _, threshold, _ := Tuning(); threshold == MMapThreshold {
		return ort.LoadThreshold(MMapThreshold, ort.MaxMMapThreshold)
	}
	return nil
})

// Releaser is the engine's ReleaseMemory (Release): the C heap, the Go
// heap and the phrase cache file's mapped pages go back to the kernel. It
// logs at debug level what it did; a failure to release the cache file's
// pages is logged once. Only the engine's keeper goroutine calls Release.
type Releaser struct {
	Store *cache.Store // nil without a phrase cache
	Log   *slog.Logger

	failed bool
}

// Release gives back the memory kept after speech.
func (m *Releaser) Release() {
	start := time.Now()
	trimmed := ort.TrimCHeap()
	debug.FreeOSMemory()
	var mapped int64
	if m.Store != nil {
		var err error
		mapped, err = m.Store.ReleaseMapped()
		if err != nil && !m.failed {
			m.failed = true
			m.Log.Info("phrase cache pages stay mapped after speech", "err", err)
		}
	}
	m.Log.Debug("memory released after speech", "malloc_trim", trimmed, "cache_mapped_bytes", mapped,
		"ms", float64(time.Since(start).Microseconds())/1000)
}
