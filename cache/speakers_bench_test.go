package cache

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
)

// benchSpeaker is a speaker of dim dimensions with a 200-id prompt.
func benchSpeaker(rng *rand.Rand, name string, dim int) Speaker {
	prompt := make([]int64, 200)
	for i := range prompt {
		prompt[i] = rng.Int64N(8192)
	}
	return Speaker{Name: name, Embedding: unitVector(rng, dim), Prompt: prompt, EncoderDigest: testEncoder}
}

// BenchmarkGetSpeaker is the cached side of a speaker switch: a lookup in
// memory and a copy of the embedding and prompt, no disk read.
func BenchmarkGetSpeaker(b *testing.B) {
	for _, dim := range []int{192, 1024} {
		b.Run(fmt.Sprint(dim), func(b *testing.B) {
			s := openTemp(b, nil)
			rng := rand.New(rand.NewPCG(1, 2))
			names := []string{"a", "b", "c", "d", "e"}
			for _, n := range names {
				mustPutSpeaker(b, s, benchSpeaker(rng, n, dim))
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, ok, err := s.GetSpeaker("", names[i%len(names)]); !ok || err != nil {
					b.Fatal(ok, err)
				}
				i++
			}
		})
	}
}

// BenchmarkPutSpeaker enrolls speakers one after another into a full
// store (each put evicts one): one committed, synced write transaction
// per put.
func BenchmarkPutSpeaker(b *testing.B) {
	for _, precision := range []string{PrecisionFP16, PrecisionInt8} {
		b.Run(precision, func(b *testing.B) {
			s := openTemp(b, &Options{SpeakerPrecision: precision})
			rng := rand.New(rand.NewPCG(3, 4))
			sps := make([]Speaker, 16)
			for i := range sps {
				sps[i] = benchSpeaker(rng, fmt.Sprint("s", i), 256)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := s.PutSpeaker(sps[i%len(sps)]); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/put")
		})
	}
}

// BenchmarkOpenSpeakers opens a file holding speakers, which Open checks
// and decodes into memory: the default 5 of 256 dimensions, and the
// largest allowed, 64 of 4096 with 4096-id prompts.
func BenchmarkOpenSpeakers(b *testing.B) {
	for _, c := range []struct{ n, dim, prompt int }{{5, 256, 200}, {MaxSpeakersLimit, MaxEmbeddingDims, MaxPromptIDs}} {
		b.Run(fmt.Sprintf("%dx%d", c.n, c.dim), func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "cache.db")
			opts := &Options{MaxSpeakers: c.n}
			s, err := Open(path, opts)
			if err != nil {
				b.Fatal(err)
			}
			rng := rand.New(rand.NewPCG(5, 6))
			for i := range c.n {
				sp := benchSpeaker(rng, fmt.Sprint("s", i), c.dim)
				sp.Prompt = make([]int64, c.prompt)
				mustPutSpeaker(b, s, sp)
			}
			s.Close()
			b.ReportAllocs()
			for b.Loop() {
				s, err := Open(path, opts)
				if err != nil || s.Stats().Speakers != c.n {
					b.Fatal(err)
				}
				s.Close()
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/open")
		})
	}
}
