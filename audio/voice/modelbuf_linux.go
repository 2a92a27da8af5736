package voice

import (
	"errors"
	"io"
	"os"
	"runtime"
	"sync"

	"golang.org/x/sys/unix"
)

// newModelBuffer returns n bytes outside the Go heap and the function that
// unmaps them.
//
// A model is read whole, checked and handed to ONNX Runtime, which copies
// what it keeps; then the bytes are garbage. On the Go heap that garbage
// (60 MB for a Piper medium voice) stays resident until a collection and
// the scavenger get to it: BenchmarkLoadProcess has the figures. Unmapped,
// it is gone at once. The pages are faulted in by mmap itself
// (MAP_POPULATE), a fifth faster than one fault per page while they are
// written; transparent huge pages (MADV_HUGEPAGE) read faster still but
// stalled a load for up to 240 ms when the kernel compacted memory for
// them. The caller must not touch the bytes after free, nor keep anything
// that points into them.
func newModelBuffer(n int) (buf []byte, free func(), err error) {
	return mapBuffer(n, unix.MAP_POPULATE)
}

// mapBuffer maps n bytes of anonymous memory with the extra mmap flags.
func mapBuffer(n, flags int) (buf []byte, free func(), err error) {
	if n == 0 {
		return nil, func() {}, nil
	}
	buf, err = unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|flags)
	if err != nil {
		return nil, nil, err
	}
	return buf, func() { _ = unix.Munmap(buf) }, nil
}

// Reading a model file in parts.
const (
	// minReadPart is the smallest part worth a goroutine of its own.
	minReadPart = 8 << 20
	// maxReadParts bounds the parts: more cores than four gained nothing.
	maxReadParts = 4
)

// canPopulate reports whether the kernel populates pages on request
// (MADV_POPULATE_WRITE, Linux 5.14 and later; a Jetson on L4T 5.10 has
// not).
var canPopulate = sync.OnceValue(func() bool {
	page, free, err := mapBuffer(os.Getpagesize(), 0)
	if err != nil {
		return false
	}
	defer free()
	return unix.Madvise(page, unix.MADV_POPULATE_WRITE) == nil
})

// readModelBytes reads the first size bytes of f into a buffer as
// newModelBuffer's and returns it and the function that unmaps it. Most
// of a read's time is the kernel faulting in fresh pages for the copy
// (one 4 KiB page at a time, 15 000 for a 60 MB voice). Where the kernel
// populates pages on request (canPopulate) the file is read in up to
// maxReadParts parts at once, each populating its own pages and then
// reading into them, so the faults are taken on as many cores as there
// are parts: a 60 MB voice on 2 cores, 85-118 ms in one part, 61-69 ms in
// two. Elsewhere mmap populates the whole buffer (newModelBuffer) and one
// read fills it: faulting pages in during reads, even two at once, was
// slower (108-121 ms). A file shorter than size is io.ErrUnexpectedEOF.
func readModelBytes(f *os.File, size int) (buf []byte, free func(), err error) {
	return readModelBytesWith(f, size, canPopulate())
}

// readModelBytesWith is readModelBytes, in parts when populate is true.
func readModelBytesWith(f *os.File, size int, populate bool) (buf []byte, free func(), err error) {
	parts := 1
	if populate {
		buf, free, err = mapBuffer(size, 0)
		parts = max(1, min(size/minReadPart, runtime.GOMAXPROCS(0), maxReadParts))
	} else {
		buf, free, err = newModelBuffer(size)
	}
	if err != nil {
		return nil, nil, err
	}
	if err := readParts(f, buf, parts, populate); err != nil {
		free()
		return nil, nil, err
	}
	return buf, free, nil
}

// readParts reads buf from f in parts whole pages long, each in a
// goroutine of its own, populating its pages first when populate is true.
func readParts(f *os.File, buf []byte, parts int, populate bool) error {
	page := os.Getpagesize()
	step := ((len(buf)+parts-1)/parts + page - 1) / page * page
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for i := range parts {
		off := min(i*step, len(buf))
		end := min(off+step, len(buf))
		wg.Go(func() { errs[i] = readPart(f, buf[off:end], int64(off), populate) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// readPart reads part from f at off, populating its pages first when
// populate is true.
func readPart(f *os.File, part []byte, off int64, populate bool) error {
	if len(part) == 0 {
		return nil
	}
	if populate {
		_ = unix.Madvise(part, unix.MADV_POPULATE_WRITE) // on failure the read faults them in
	}
	n, err := f.ReadAt(part, off)
	if n == len(part) {
		return nil
	}
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
