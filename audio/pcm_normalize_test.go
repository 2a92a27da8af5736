package audio

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// peakNormalizeFloat64 is PeakNormalize as first written, all in float64
// with math.Round: the reference the float32 version must equal bit for
// bit.
func peakNormalizeFloat64(samples []float32) []int16 {
	peak := 0.0
	for _, s := range samples {
		v := math.Abs(float64(s))
		if v > peak && !math.IsInf(v, 0) {
			peak = v
		}
	}
	gain := float64(math.MaxInt16)
	if peak >= SilencePeak {
		gain = PeakTarget * math.MaxInt16 / peak
	}
	out := make([]int16, len(samples))
	for i, s := range samples {
		v := float64(s)
		if math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		out[i] = clampInt16(v * gain)
	}
	return out
}

// edgeSamples are the values where rounding and clamping could part:
// halves, the peak itself, the silence threshold, denormals, non-finite.
var edgeSamples = []float32{
	0, float32(math.Copysign(0, -1)), 1, -1, 0.5, -0.5,
	SilencePeak, -SilencePeak, math.Nextafter32(SilencePeak, 0), math.Nextafter32(SilencePeak, 1),
	math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32, math.MaxFloat32, -math.MaxFloat32,
	float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)),
	0.5 / math.MaxInt16, 1.5 / math.MaxInt16, -2.5 / math.MaxInt16, 32766.5 / math.MaxInt16,
	math.Nextafter32(0.5/math.MaxInt16, 0), math.Nextafter32(0.5/math.MaxInt16, 1),
}

func TestPeakNormalizeMatchesFloat64(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	check := func(name string, in []float32) {
		t.Helper()
		if got, want := PeakNormalize(in), peakNormalizeFloat64(in); !slices.Equal(got, want) {
			for i := range got {
				if got[i] != want[i] {
					t.Fatalf("%s: sample %d (%v): %d, want %d", name, i, in[i], got[i], want[i])
				}
			}
		}
	}
	for _, scale := range []float32{1, 0.3, 3, 1e-4, 5e-5, 1e3} {
		in := make([]float32, 50000)
		for i := range in {
			in[i] = scale * float32(rng.NormFloat64())
		}
		check("gaussian", in)
		// Unity gain: every sample a quarter step apart, so halves occur.
		for i := range in {
			in[i] = float32(rng.IntN(400)-200) / 4 / math.MaxInt16
		}
		check("quarter steps", in)
	}
	for _, peak := range edgeSamples {
		for _, s := range edgeSamples {
			check("edges", []float32{peak, s})
		}
	}
}

func FuzzPeakNormalize(f *testing.F) {
	f.Add(float32(0.3), float32(-1), float32(0.5), float32(1e-5))
	f.Fuzz(func(t *testing.T, a, b, c, d float32) {
		in := []float32{a, b, c, d}
		if got, want := PeakNormalize(in), peakNormalizeFloat64(in); !slices.Equal(got, want) {
			t.Fatalf("PeakNormalize(%v) = %v, want %v", in, got, want)
		}
	})
}

// BenchmarkPeakNormalize converts one sentence's model output (2.5 s at
// 22050 Hz) to int16, as every Piper sentence does; float64 is the
// former all-float64 version.
func BenchmarkPeakNormalize(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 2))
	in := make([]float32, 56540)
	for i := range in {
		in[i] = 0.3 * float32(rng.NormFloat64())
	}
	for _, impl := range []struct {
		name string
		f    func([]float32) []int16
	}{{"float32", PeakNormalize}, {"float64", peakNormalizeFloat64}} {
		b.Run(impl.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(4 * len(in)))
			for b.Loop() {
				impl.f(in)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(len(in)), "ns/sample")
		})
	}
}
