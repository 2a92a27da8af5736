package bundle_test

import (
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// BenchmarkParse: the contract's pipeline manifest.
func BenchmarkParse(b *testing.B) {
	data := []byte(pipelineJSON)
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := bundle.Parse(data); err != nil {
			b.Fatal(err)
		}
	}
}
