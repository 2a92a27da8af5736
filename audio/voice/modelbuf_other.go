//go:build !linux

package voice

import (
	"io"
	"os"
)

// newModelBuffer returns n bytes for a model file; see modelbuf_linux.go.
// Elsewhere they are on the Go heap and free leaves them to the collector.
func newModelBuffer(n int) (buf []byte, free func(), err error) {
	return make([]byte, n), func() {}, nil
}

// readModelBytes reads the first size bytes of f into a newModelBuffer;
// see modelbuf_linux.go. A file shorter than size is io.ErrUnexpectedEOF.
func readModelBytes(f *os.File, size int) (buf []byte, free func(), err error) {
	buf, free, err = newModelBuffer(size)
	if err != nil {
		return nil, nil, err
	}
	if _, err := io.ReadFull(f, buf); err != nil {
		free()
		return nil, nil, err
	}
	return buf, free, nil
}
