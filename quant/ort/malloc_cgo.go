//go:build cgo && linux

package ort

/*
#include <stdlib.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

static int mynah_set_mmap_threshold(int n) {
#ifdef __GLIBC__
	return mallopt(M_MMAP_THRESHOLD, n);
#else
	return 0;
#endif
}

static int mynah_trim(void) {
#ifdef __GLIBC__
	return malloc_trim(0);
#else
	return -1;
#endif
}
*/
import "C"

func setMMapThreshold(n int) bool { return C.mynah_set_mmap_threshold(C.int(n)) == 1 }

func trimMalloc() bool { return C.mynah_trim() >= 0 }
