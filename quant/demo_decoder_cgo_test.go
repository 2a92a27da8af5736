//go:build cgo

package quant

import (
	"math"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

// TestDemoDecoderRunsInORT loads the cloning kit's decoder quantized every
// way into ONNX Runtime and runs one step: every rewrite must give a model
// ONNX Runtime accepts, with outputs near the original's. (How near is
// near enough is the gate's call, in quant/gate.)
func TestDemoDecoderRunsInORT(t *testing.T) {
	rt := openORT(t)
	m := decoderModel(t)
	inputs := func(s *ort.Session) []ort.Tensor {
		var in []ort.Tensor
		for _, info := range s.Inputs() {
			shape := make([]int64, len(info.Dims))
			n := 1
			for i, d := range info.Dims {
				shape[i] = d
				if d < 0 {
					shape[i] = 6
					if strings.Contains(info.Name, "past") {
						shape[i] = 0
					}
				}
				n *= int(shape[i])
			}
			tn := ort.Tensor{Name: info.Name, Shape: shape}
			switch info.Type {
			case ort.Int64:
				tn.Int64 = make([]int64, n)
				for i := range tn.Int64 {
					tn.Int64[i] = int64(3 + 5*i)
				}
			case ort.Float32:
				tn.Float32 = make([]float32, n)
				for i := range tn.Float32 {
					tn.Float32[i] = float32(math.Sin(float64(i)))
				}
			default:
				t.Fatalf("decoder input %v", info)
			}
			in = append(in, tn)
		}
		return in
	}
	runAll := func(model *onnx.Model) []ort.Tensor {
		data, err := onnx.Encode(model)
		if err != nil {
			t.Fatal(err)
		}
		s, err := rt.NewSession(data, &ort.SessionOptions{IntraOpThreads: 1})
		if err != nil {
			t.Fatalf("onnx runtime refused the model: %v", err)
		}
		defer s.Close()
		out, err := s.Run(inputs(s))
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := runAll(m)
	for _, c := range []struct {
		opts      Options
		minCosine float64
	}{
		{Options{Mode: ModeFP16Store}, 0.99999},
		{Options{Mode: ModeInt8, RestFP16: true, EmbeddingsInt8: true}, 0.999},
		{Options{Mode: ModeNBits, RestFP16: true}, 0.98},
		{Options{Mode: ModeAuto}, 0.999},
	} {
		got := runAll(quantize(t, m, &c.opts))
		worst := 1.0
		for i := range want {
			if want[i].Type != ort.Float32 || len(want[i].Float32) == 0 {
				continue
			}
			cos := vecpack.Cosine(got[i].Float32, want[i].Float32)
			worst = min(worst, cos)
			if cos < c.minCosine || math.IsNaN(cos) {
				t.Errorf("%s: output %s has cosine %.6f with the original's, want ≥ %v", c.opts.Mode, want[i].Name, cos, c.minCosine)
			}
		}
		t.Logf("%s: worst output cosine %.6f", c.opts.Mode, worst)
	}
}
