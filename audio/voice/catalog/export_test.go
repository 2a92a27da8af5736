package catalog

import "io"

// SetPartWriterHook sets partWriterHook for one test.
func SetPartWriterHook(h func(io.Writer) io.Writer) (restore func()) {
	partWriterHook = h
	return func() { partWriterHook = nil }
}
