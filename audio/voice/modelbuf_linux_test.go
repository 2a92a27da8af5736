package voice

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// TestReadModelBytes: a file read in parts comes back byte for byte,
// whatever its size against the parts and pages, and one shorter than it
// was said to be is an error, not zeros; the same read whole into a
// buffer mmap populated, as on kernels without MADV_POPULATE_WRITE.
func TestReadModelBytes(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(2, runtime.GOMAXPROCS(0)))) // parts need two Ps
	if !canPopulate() {
		t.Log("this kernel has no MADV_POPULATE_WRITE: the parts fault their pages in as they read")
	}
	page := os.Getpagesize()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 3*minReadPart+page+7)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	dir := t.TempDir()
	for _, populate := range []bool{true, false} {
		for _, size := range []int{0, 1, page - 1, page, page + 1, minReadPart - 1, 2 * minReadPart, 2*minReadPart + 1, len(big)} {
			path := filepath.Join(dir, "model")
			if err := os.WriteFile(path, big[:size], 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			got, free, err := readModelBytesWith(f, size, populate)
			if err != nil {
				t.Errorf("populate %v, %d bytes: %v", populate, size, err)
			} else {
				if !bytes.Equal(got, big[:size]) {
					t.Errorf("populate %v, %d bytes: read back other bytes", populate, size)
				}
				free()
			}
			// The file lost its tail after its size was taken.
			if size > 0 {
				if _, _, err := readModelBytesWith(f, size+page, populate); !errors.Is(err, io.ErrUnexpectedEOF) {
					t.Errorf("populate %v, %d bytes read as %d: err %v, want io.ErrUnexpectedEOF", populate, size, size+page, err)
				}
			}
			f.Close()
		}
	}
}
