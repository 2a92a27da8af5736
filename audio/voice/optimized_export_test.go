package voice

import (
	"encoding/json"
	"testing"
)

// Hooks for the optimized-model cache tests in package voice_test.

// OptimizedMeta is an entry's sidecar.
type OptimizedMeta = optimizedMeta

const (
	OptimizedFormat  = optimizedFormat
	MaxOptimizedMeta = maxOptimizedMeta
)

// ReadOptimizedMeta is readOptimizedMeta.
var ReadOptimizedMeta = readOptimizedMeta

// EncodeOptimizedMeta is the sidecar store writes for m: its Check set
// to the sum of its values.
func EncodeOptimizedMeta(m OptimizedMeta) []byte {
	m.Check = m.checksum()
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		panic(err)
	}
	return js
}

// SetOptimizedTempHook has f called with the path of every temp file ONNX
// Runtime is to write an optimized model to, until the test ends. Tests
// that set it must not run in parallel.
func SetOptimizedTempHook(tb testing.TB, f func(path string)) {
	optimizedTempHook = f
	tb.Cleanup(func() { optimizedTempHook = nil })
}
