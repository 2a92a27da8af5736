//go:build cgo && linux

package memory

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

// What mynah_malloc_tune set: bit 0 M_ARENA_MAX, bit 1 M_MMAP_THRESHOLD.
static int mynah_malloc_tuned;

// mynah_malloc_tune runs as the binary is loaded, before the Go runtime
// starts and long before ONNX Runtime starts its threads: mallopt's arena
// limit only holds for arenas not yet made. The C allocator's own
// variables (MALLOC_ARENA_MAX, MALLOC_MMAP_THRESHOLD_, GLIBC_TUNABLES)
// win over these defaults, and MYNAH_MALLOC_TUNE=0 leaves glibc's as
// they are (for measuring). See memory.go for the numbers; any binary
// that links this package runs it.
__attribute__((constructor)) static void mynah_malloc_tune(void) {
#ifdef __GLIBC__
	const char *tune = getenv("MYNAH_MALLOC_TUNE");
	if (tune != NULL && tune[0] == '0') {
		return;
	}
	if (getenv("GLIBC_TUNABLES") != NULL) {
		return;
	}
	if (getenv("MALLOC_ARENA_MAX") == NULL && mallopt(M_ARENA_MAX, 2) == 1) {
		mynah_malloc_tuned |= 1;
	}
	if (getenv("MALLOC_MMAP_THRESHOLD_") == NULL && mallopt(M_MMAP_THRESHOLD, 256 * 1024) == 1) {
		mynah_malloc_tuned |= 2;
	}
#endif
}

static int mynah_malloc_tuning(void) { return mynah_malloc_tuned; }

*/
import "C"

// cTuned is what mynah_malloc_tune set, a bit each (tunedArenaMax,
// tunedMMapThreshold).
func cTuned() int { return int(C.mynah_malloc_tuning()) }
