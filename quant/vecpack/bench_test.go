package vecpack

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The sizes of common speaker embeddings (ECAPA 192, WavLM-style 256) and
// of a Kokoro style vector row (256), plus a large one.
var benchDims = []int{192, 256, 1024}

// BenchmarkCodecs encodes and decodes unit vectors with each precision.
func BenchmarkCodecs(b *testing.B) {
	codecs := []struct {
		name   string
		encode func([]float32) []byte
		decode func([]byte) ([]float32, error)
	}{
		{"fp16", EncodeFP16, DecodeFP16},
		{"int8", EncodeInt8, DecodeInt8},
	}
	for _, c := range codecs {
		for _, dim := range benchDims {
			v := unitVector(rand.New(rand.NewPCG(1, 1)), dim)
			b.Run(fmt.Sprintf("encode-%s/%d", c.name, dim), func(b *testing.B) {
				b.SetBytes(int64(4 * dim))
				b.ReportAllocs()
				for b.Loop() {
					_ = c.encode(v)
				}
			})
			enc := c.encode(v)
			b.Run(fmt.Sprintf("decode-%s/%d", c.name, dim), func(b *testing.B) {
				b.SetBytes(int64(4 * dim))
				b.ReportAllocs()
				for b.Loop() {
					if _, err := c.decode(enc); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkCosine(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	x, y := unitVector(rng, 256), unitVector(rng, 256)
	b.ReportAllocs()
	for b.Loop() {
		_ = Cosine(x, y)
	}
}

// BenchmarkQuality reports what each encoding does to random unit vectors
// of 256 dimensions: the mean of 1-cosine in parts per million, the mean
// relative L2 error and the bytes per vector. The time per op is one round
// trip.
func BenchmarkQuality(b *testing.B) {
	const dim = 256
	for _, c := range []struct {
		name string
		trip func([]float32) []float32
		size int
	}{{"fp16", fp16Trip, FP16Len(dim)}, {"int8", int8Trip, Int8Len(dim)}} {
		b.Run(c.name, func(b *testing.B) {
			rng := rand.New(rand.NewPCG(9, 9))
			vs := make([][]float32, 64)
			for i := range vs {
				vs[i] = unitVector(rng, dim)
			}
			var cos, rel float64
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				v := vs[n%len(vs)]
				w := c.trip(v)
				cos += Cosine(v, w)
				rel += RelativeL2(v, w)
				n++
			}
			b.ReportMetric(1e6*(1-cos/float64(n)), "ppm-1-cosine")
			b.ReportMetric(rel/float64(n), "rel-L2")
			b.ReportMetric(float64(c.size), "bytes/vector")
		})
	}
}
