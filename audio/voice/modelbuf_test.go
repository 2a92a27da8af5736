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
// was said to be is an error, not zeros.
func TestReadModelBytes(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		runtime.GOMAXPROCS(2) // parts need two Ps; restored below
		defer runtime.GOMAXPROCS(1)
	}
	page := os.Getpagesize()
	rng := rand.New(rand.NewPCG(1, 2))
	big := make([]byte, 3*minReadPart+page+7)
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	dir := t.TempDir()
	for _, size := range []int{0, 1, page - 1, page, page + 1, minReadPart - 1, 2 * minReadPart, 2*minReadPart + 1, len(big)} {
		path := filepath.Join(dir, "model")
		if err := os.WriteFile(path, big[:size], 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		got, free, err := readModelBytes(f, size)
		if err != nil {
			t.Errorf("%d bytes: %v", size, err)
		} else {
			if !bytes.Equal(got, big[:size]) {
				t.Errorf("%d bytes: read back other bytes", size)
			}
			free()
		}
		// The file lost its tail after its size was taken.
		if size > 0 {
			if _, _, err := readModelBytes(f, size+page); !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("%d bytes read as %d: err %v, want io.ErrUnexpectedEOF", size, size+page, err)
			}
		}
		f.Close()
	}
}
