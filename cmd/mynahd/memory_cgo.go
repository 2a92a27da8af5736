//go:build cgo && linux

package main

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
// they are (for measuring). See memory.go for the numbers.
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

static int mynah_malloc_trim(void) {
#ifdef __GLIBC__
	return malloc_trim(0);
#else
	return -1;
#endif
}
*/
import "C"

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// mallocTuning says which of mynah's C allocator settings are in effect
// (the environment may have set its own).
func mallocTuning() (arenaMax, mmapThreshold int, ok bool) {
	t := int(C.mynah_malloc_tuning())
	if t&1 != 0 {
		arenaMax = mallocArenaMax
	}
	if t&2 != 0 {
		mmapThreshold = mallocMMapThreshold
	}
	return arenaMax, mmapThreshold, t != 0
}

// trimCHeap hands the C allocator's free pages back to the kernel
// (malloc_trim(0): every arena, not only the top of the main heap). It
// reports false where the C library has no malloc_trim (musl).
func trimCHeap() bool { return C.mynah_malloc_trim() >= 0 }

// pageOutFile asks the kernel to reclaim this process's mapped pages of
// the file at path (madvise MADV_PAGEOUT on each of its mappings, found in
// /proc/self/maps by device and inode) and returns the bytes of mapping
// it covered. The phrase cache's bbolt file is mapped read-only, and
// bbolt's writes copy neighbouring values through that map, so its pages
// pile up in RSS as phrases are stored; they are clean (bbolt writes with
// pwrite and fdatasync) and read back from the page cache or the disk
// when needed. MADV_PAGEOUT never discards data: were a mapping replaced
// between reading the list and the call (bbolt remaps as the file grows),
// the worst it does to what lies there now is page it out. Kernels before
// 5.4 refuse it; that is errPageOutUnsupported.
func pageOutFile(path string) (int64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("page out %s: %w", path, err)
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0, fmt.Errorf("page out %s: %w", path, err)
	}
	dev := fmt.Sprintf("%02x:%02x", unix.Major(uint64(st.Dev)), unix.Minor(uint64(st.Dev)))
	ino := strconv.FormatUint(uint64(st.Ino), 10)
	var covered int64
	for _, line := range strings.Split(string(maps), "\n") {
		// start-end perms offset dev inode path
		f := strings.Fields(line)
		if len(f) < 6 || f[3] != dev || f[4] != ino {
			continue
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		start, err1 := strconv.ParseUint(lo, 16, 64)
		end, err2 := strconv.ParseUint(hi, 16, 64)
		if !ok || err1 != nil || err2 != nil || end <= start {
			continue
		}
		_, _, errno := unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_PAGEOUT)
		switch {
		case errno == unix.EINVAL:
			return covered, fmt.Errorf("page out %s: %w", path, errPageOutUnsupported)
		case errno != 0 && errno != unix.ENOMEM: // ENOMEM: unmapped meanwhile
			return covered, fmt.Errorf("page out %s: madvise: %w", path, errno)
		}
		covered += int64(end - start)
	}
	return covered, nil
}
