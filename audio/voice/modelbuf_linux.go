package voice

import "golang.org/x/sys/unix"

// newModelBuffer returns n bytes outside the Go heap and the function that
// unmaps them.
//
// A model is read whole, checked and handed to ONNX Runtime, which copies
// what it keeps; then the bytes are garbage. On the Go heap that garbage
// (60 MB for a Piper medium voice) stays resident until a collection and
// the scavenger get to it: BenchmarkLoadProcess has the figures. Unmapped,
// it is gone at once. The pages are faulted in by mmap itself
// (MAP_POPULATE), a fifth faster than one fault per page during the read;
// transparent huge pages (MADV_HUGEPAGE) read faster still but stalled a
// load for up to 240 ms when the kernel compacted memory for them. The
// caller must not touch the bytes after free, nor keep anything that
// points into them.
func newModelBuffer(n int) (buf []byte, free func(), err error) {
	if n == 0 {
		return nil, func() {}, nil
	}
	buf, err = unix.Mmap(-1, 0, n, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS|unix.MAP_POPULATE)
	if err != nil {
		return nil, nil, err
	}
	return buf, func() { _ = unix.Munmap(buf) }, nil
}
