//go:build cgo

package quant

import (
	"math/rand/v2"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

// benchModes are the variants every benchmark model is measured in.
var benchModes = []struct {
	name string
	opts *Options // nil: the float32 original
}{
	{"fp32", nil},
	{"fp16-store", &Options{Mode: ModeFP16Store}},
	{"int8", &Options{Mode: ModeInt8, IncludeConv: true}},
	{"nbits", &Options{Mode: ModeNBits}},
}

// convStack is four 1-D convolutions of 128 channels, kernel 5, with
// ReLU between them: the shape of a vocoder's residual stack.
func convStack(b *testing.B) *onnx.Model {
	rng := rand.New(rand.NewPCG(21, 22))
	const ch, kw = 128, 5
	g := onnx.NewGraph("convstack")
	x := g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Fixed(ch), onnx.Dynamic("len"))
	for range 4 {
		w := g.Float32s("", []int64{ch, ch, kw}, randn(rng, ch*ch*kw, 0.04))
		x = g.Op("Relu", []string{g.Op("Conv", []string{x, w, g.Float32s("", []int64{ch}, randn(rng, ch, 0.1))},
			onnx.AttrInts("pads", 2, 2), onnx.AttrInts("kernel_shape", kw))})
	}
	g.Node("Identity", []string{x}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Fixed(1), onnx.Fixed(ch), onnx.Dynamic("len"))
	return build(b, g, nil)
}

// BenchmarkInference runs a transformer feed-forward block (MatMul-heavy)
// and a convolution stack (conv-heavy) in every variant, reporting the
// file size relative to float32 as size_ratio. Compare ns/op across
// variants of one model: int8 wins on the MatMuls and is not expected to
// on the convolutions.
func BenchmarkInference(b *testing.B) {
	rt := openORT(b)
	rng := rand.New(rand.NewPCG(23, 24))
	const rows, d, h = 64, 256, 1024
	ffn := mlpModel(b, randn(rng, d*h, 1/16.0), randn(rng, h, 0.1), randn(rng, h*d, 1/32.0), randn(rng, d, 0.1), d, h, d)
	ffnIn := []ort.Tensor{{Name: "x", Shape: []int64{1, rows, d}, Float32: randn(rng, rows*d, 1)}}
	conv := convStack(b)
	convIn := []ort.Tensor{{Name: "x", Shape: []int64{1, 128, 2000}, Float32: randn(rng, 128*2000, 1)}}
	for _, model := range []struct {
		name string
		m    *onnx.Model
		in   []ort.Tensor
	}{{"ffn", ffn, ffnIn}, {"conv", conv, convIn}} {
		for _, v := range benchModes {
			b.Run(model.name+"/"+v.name, func(b *testing.B) {
				m := model.m
				if v.opts != nil {
					m = quantize(b, m, v.opts)
				}
				data, err := onnx.Encode(m)
				if err != nil {
					b.Fatal(err)
				}
				s, err := rt.NewSession(data, &ort.SessionOptions{IntraOpThreads: 1})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					if _, err := s.Run(model.in); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(m.Size)/float64(model.m.Size), "size_ratio")
			})
		}
	}
}

// BenchmarkQuantizeDecoder measures the rewrite itself on the cloning
// kit's decoder and reports the size it reaches.
func BenchmarkQuantizeDecoder(b *testing.B) {
	m := decoderModel(b)
	for _, v := range benchModes[1:] {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			var res *Result
			for b.Loop() {
				var err error
				if res, err = Quantize(m, v.opts); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(res.Report.Ratio(), "size_ratio")
		})
	}
}

// BenchmarkInt8Formats runs the cloning kit's decoder (a 64-token prompt,
// then 48 single-token steps, as the engine decodes) quantized to int8 in
// every weight format, on this CPU, against float32. Metrics:
//
//   - 1-cosine: one minus the cosine of the prosody the variant decodes
//     with the float32 one's (0 is identical);
//   - exact: 1 when ONNX Runtime computes the format exactly on this
//     CPU's class (cpuclass.Int8Format.ExactOn), 0 where pairs of
//     products may saturate;
//   - time-x: ns/op over the float32 sub-benchmark's, when run in the
//     same invocation (compare the rows; these machines are noisy).
//
// On x86 CPUs with VNNI, valgrind's CPU (AVX2, no VNNI) runs the AVX2
// kernels: scripts/bench-int8-avx2.sh counts their instructions there.
func BenchmarkInt8Formats(b *testing.B) {
	rt := openORT(b)
	kit, err := demo.BuildCloning(nil)
	if err != nil {
		b.Fatal(err)
	}
	fp32 := kit[demo.DecoderFile]
	m, err := onnx.Decode(fp32, nil)
	if err != nil {
		b.Fatal(err)
	}
	open := func(b *testing.B, data []byte) *ort.Session {
		s, err := rt.NewSession(data, &ort.SessionOptions{IntraOpThreads: 1})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { s.Close() })
		return s
	}
	want, err := decodeProsody(open(b, fp32))
	if err != nil {
		b.Fatal(err)
	}
	var fp32NS float64
	host := cpuclass.Host()
	for _, f := range append([]cpuclass.Int8Format{""}, cpuclass.Formats...) {
		name := "fp32"
		if f != "" {
			name = string(f)
		}
		b.Run(name, func(b *testing.B) {
			data := fp32
			if f != "" {
				data = encoded(b, quantize(b, m, &Options{Mode: ModeInt8, Int8Format: f}))
			}
			s := open(b, data)
			var got []float32
			b.ReportAllocs()
			for b.Loop() {
				if got, err = decodeProsody(s); err != nil {
					b.Fatal(err)
				}
			}
			ns := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
			if f == "" {
				fp32NS = ns
				return
			}
			b.ReportMetric(1-vecpack.Cosine(got, want), "1-cosine")
			exact := 0.0
			if f.ExactOn(host) {
				exact = 1
			}
			b.ReportMetric(exact, "exact")
			if fp32NS > 0 {
				b.ReportMetric(ns/fp32NS, "time-x")
			}
		})
	}
}

func encoded(b *testing.B, m *onnx.Model) []byte {
	data, err := onnx.Encode(m)
	if err != nil {
		b.Fatal(err)
	}
	return data
}
