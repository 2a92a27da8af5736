package ort

import "sync"

// The C allocator under ONNX Runtime. ONNX Runtime takes its memory from
// malloc, so how glibc hands memory out and back decides much of a
// process's resident set; mynahd fixes glibc's mmap threshold low (every
// block over it its own mapping, unmapped the moment it is freed) so that
// memory of a run does not outlast the run. Building a session is another
// matter: at graph optimization level "all" ONNX Runtime copies every
// convolution's weights a few times over while it reorders them for its
// blocked kernels, and with a low threshold each copy is mapped, faulted
// in and unmapped again (the 15 M-parameter bench voice with its
// convolutions lifted to 2-D: 250 ms a session under a 256 KiB threshold,
// 112 ms under glibc's own).

// MaxMMapThreshold is the largest mmap threshold every glibc accepts on
// 64-bit systems: half its 64 MiB heap size, the most its own dynamic
// threshold rises to. Older releases refuse a larger one; newer ones
// (2.36 among them) take it too.
const MaxMMapThreshold = 32 << 20

// SetMMapThreshold sets the C allocator's mmap threshold (glibc's
// M_MMAP_THRESHOLD: blocks of at least n bytes are mapped on their own)
// and reports whether it took; false without glibc or cgo.
func SetMMapThreshold(n int) bool { return setMMapThreshold(n) }

// TrimCHeap hands the C allocator's free pages back to the kernel (glibc's
// malloc_trim(0): every arena, not only the top of the main heap); false
// where there is no malloc_trim.
func TrimCHeap() bool { return trimMalloc() }

// LoadThreshold returns an Options.Building that raises the C allocator's
// mmap threshold to load while sessions are built (however many at once)
// and, once the last is built, sets it back to steady and trims the heap,
// so that what building left behind is not kept. Use it only where the
// process set the threshold to steady itself, and give every Runtime of
// the process the same function: the threshold is the process's, and two
// of them would each set it back while the other's sessions are built.
func LoadThreshold(steady, load int) func(build func()) {
	return loadThreshold(steady, load, setMMapThreshold, trimMalloc)
}

// loadThreshold is LoadThreshold with the allocator calls passed in, so
// that tests can watch them.
func loadThreshold(steady, load int, set func(int) bool, trim func() bool) func(build func()) {
	var (
		mu       sync.Mutex
		building int
	)
	return func(build func()) {
		mu.Lock()
		if building == 0 {
			set(load)
		}
		building++
		mu.Unlock()
		defer func() {
			mu.Lock()
			defer mu.Unlock()
			if building--; building == 0 {
				set(steady)
				trim()
			}
		}()
		build()
	}
}
