//go:build cgo

package benchmodel

import (
	"math"
	"testing"

	"github.com/mynah-tts/mynah/quant/ort"
)

func openRuntime(t testing.TB) *ort.Runtime {
	t.Helper()
	rt, err := ort.Open(nil)
	if err != nil {
		t.Fatalf("these tests need ONNX Runtime (scripts/setup.sh): %v", err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

var small = &Options{Hidden: 32, Filter: 64, EncoderLayers: 1, FlowLayers: 1, WaveNetLayers: 2, DecoderChannels: 32}

func synth(t testing.TB, s *ort.Session, ids []int64, noise, length float32, sid int64) []float32 {
	t.Helper()
	in := []ort.Tensor{
		{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
		{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
		{Name: "scales", Shape: []int64{3}, Float32: []float32{noise, length, 0.8}},
	}
	if sid >= 0 {
		in = append(in, ort.Tensor{Name: "sid", Shape: []int64{1}, Int64: []int64{sid}})
	}
	out, err := s.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	y := out[0]
	if out[0].Name != "output" || len(y.Shape) != 4 || y.Shape[0] != 1 || y.Shape[1] != 1 || y.Shape[2] != 1 || y.Shape[3] != int64(len(y.Float32)) {
		t.Fatalf("output %s %v, want output [1 1 1 T]", y.Name, y.Shape)
	}
	return y.Float32
}

func TestPiperContractInORT(t *testing.T) {
	rt := openRuntime(t)
	data, err := PiperMedium(small)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession(data, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := piperIDsForTest()
	y := synth(t, s, ids, 0, 1, -1)
	if want := len(ids) * DefaultFramesPerPhoneme * HopLength; len(y) != want {
		t.Errorf("%d samples for %d phonemes, want %d", len(y), len(ids), want)
	}
	var rms float64
	for i, v := range y {
		if math.IsNaN(float64(v)) || math.Abs(float64(v)) >= 1 {
			t.Fatalf("sample %d = %v", i, v)
		}
		rms += float64(v) * float64(v)
	}
	if rms = math.Sqrt(rms / float64(len(y))); rms < 0.01 || rms > 0.7 {
		t.Errorf("rms %v: want audible, unsaturated output", rms)
	}
	if z := synth(t, s, ids, 0, 1, -1); !equal(y, z) {
		t.Error("noise_scale 0 must be deterministic")
	}
	if z := synth(t, s, ids, 0.667, 1, -1); equal(y, z) {
		t.Error("noise_scale must change the output")
	}
	if z := synth(t, s, ids, 0, 2, -1); len(z) != 2*len(y) {
		t.Errorf("length_scale 2: %d samples, want %d", len(z), 2*len(y))
	}
	// Out-of-range ids are clamped, not a failed run.
	synth(t, s, []int64{1, 9999, -5, 2}, 0, 1, -1)
}

func TestSpeakers(t *testing.T) {
	rt := openRuntime(t)
	o := *small
	o.Speakers = 3
	data, err := PiperMedium(&o)
	if err != nil {
		t.Fatal(err)
	}
	s, err := rt.NewSession(data, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids := piperIDsForTest()
	if equal(synth(t, s, ids, 0, 1, 0), synth(t, s, ids, 0, 1, 1)) {
		t.Error("two speakers sound the same")
	}
}

func equal(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// BenchmarkPiperMediumInference synthesizes one sentence of about 3 s with
// the full-size model and reports the real-time factor.
func BenchmarkPiperMediumInference(b *testing.B) {
	rt := openRuntime(b)
	data, err := PiperMedium(nil)
	if err != nil {
		b.Fatal(err)
	}
	s, err := rt.NewSession(data, &ort.SessionOptions{Provider: ort.ProviderCPU})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	ids := piperIDsForTest()
	var samples int
	b.ReportAllocs()
	for b.Loop() {
		samples = len(synth(b, s, ids, 0, 1, -1))
	}
	audio := float64(samples) / SampleRate
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/audio, "rtf")
	b.ReportMetric(float64(len(data))/(1<<20), "MiB")
}
