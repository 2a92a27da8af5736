package voice_test

import (
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// BenchmarkSentenceParts splits one sentence's synthesis on the demo
// voice, set up as the peer comparison's mynah worker sets it up (one
// intra-op thread, the CPU arena, the optimized-model copy), into what
// is not the model and what is: phonemize is the front end alone
// (espeak-ng through cgo, then the phoneme ids), sentence is
// SynthesizeSentence (front end, ONNX Runtime run, float to int16). The
// model's own time is sentence − phonemize, less what quant/ort spends
// around the run (BenchmarkRunOverhead there). ms/sentence is per
// sentence of synthSentences, spoken in turn.
func BenchmarkSentenceParts(b *testing.B) {
	rt := enginetest.OpenRuntime(b)
	opts := &voice.PiperOptions{
		Session:      &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1, CPUArena: true},
		OptimizedDir: b.TempDir(),
	}
	// The first load builds the optimized copy; the voice benchmarked is
	// a later start's, which loads it.
	first, err := voice.LoadPiper(rt, demoVoice(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	first.Close()
	v, err := voice.LoadPiper(rt, demoVoice(b), opts)
	if err != nil {
		b.Fatal(err)
	}
	defer v.Close()
	if !v.Info().Optimized {
		b.Fatal("the second load did not take the optimized copy")
	}
	prm, err := v.Resolve(voice.Request{})
	if err != nil {
		b.Fatal(err)
	}
	if _, _, err := v.SynthesizeSentence("Hello.", prm); err != nil { // ONNX Runtime's first run
		b.Fatal(err)
	}
	per := func(b *testing.B, start time.Time, n int) {
		b.ReportMetric(float64(time.Since(start).Nanoseconds())/1e6/float64(n), "ms/sentence")
	}
	b.Run("phonemize", func(b *testing.B) {
		b.ReportAllocs()
		start, n := time.Now(), 0
		for ; b.Loop(); n++ {
			if _, err := v.Transcribe(synthSentences[n%len(synthSentences)]); err != nil {
				b.Fatal(err)
			}
		}
		per(b, start, n)
	})
	b.Run("sentence", func(b *testing.B) {
		b.ReportAllocs()
		start, n := time.Now(), 0
		for ; b.Loop(); n++ {
			if _, _, err := v.SynthesizeSentence(synthSentences[n%len(synthSentences)], prm); err != nil {
				b.Fatal(err)
			}
		}
		per(b, start, n)
	})
}
