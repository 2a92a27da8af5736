//go:build cgo

package bundle_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// tinyStyleModel is a real ONNX model with the style_vector tensors:
// audio [1, L] = float(tokens)·speed + sum(style).
func tinyStyleModel(t *testing.T, tokenType onnx.DataType, styleDim int64) []byte {
	t.Helper()
	g := onnx.NewGraph("tiny-style")
	tokens := g.Input("tokens", tokenType, onnx.Fixed(1), onnx.Dynamic("L"))
	style := g.Input("style", onnx.Float, onnx.Fixed(1), onnx.Fixed(styleDim))
	speed := g.Input("speed", onnx.Float, onnx.Fixed(1))
	tf := g.Op("Cast", []string{tokens}, onnx.AttrInt("to", int64(onnx.Float)))
	sum := g.Op("ReduceSum", []string{style, g.Ints(1)}, onnx.AttrInt("keepdims", 1))
	g.Node("Add", []string{g.Op("Mul", []string{tf, speed}), sum}, []string{"audio"})
	g.Output("audio", onnx.Float, onnx.Fixed(1), onnx.Dynamic("L"))
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := onnx.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestCheckModelWithONNXRuntime compares the manifest with what ONNX
// Runtime itself reports for real models.
func TestCheckModelWithONNXRuntime(t *testing.T) {
	rt, err := ort.Open(nil)
	if err != nil {
		t.Fatalf("onnx runtime (run scripts/setup.sh): %v", err)
	}
	defer rt.Close()
	session := func(model []byte) *ort.Session {
		s, err := rt.NewSession(model, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	good := session(tinyStyleModel(t, onnx.Int64, 256))
	m := styleManifest()
	if err := m.CheckModel(bundle.RoleModel, good); err != nil {
		t.Fatal(err)
	}
	out, err := good.Run([]ort.Tensor{
		{Name: "tokens", Shape: []int64{1, 3}, Int64: []int64{0, 5, 0}},
		{Name: "style", Shape: []int64{1, 256}, Float32: make([]float32, 256)},
		{Name: "speed", Shape: []int64{1}, Float32: []float32{2}},
	})
	if err != nil || out[0].Float32[1] != 10 {
		t.Fatalf("the checked model does not run as declared: %v %v", out, err)
	}

	for _, c := range []struct {
		name  string
		model []byte
		edit  func(*bundle.Manifest)
		want  string
	}{
		{"int32 tokens", tinyStyleModel(t, onnx.Int32, 256), nil, `tokens ("tokens") is int32 in the model, want int64`},
		{"style dim", tinyStyleModel(t, onnx.Int64, 128), nil, `style ("style") has dimension 1 = 128 in the model`},
		{"wrong output name", tinyStyleModel(t, onnx.Int64, 256), func(m *bundle.Manifest) { m.Model.Outputs["audio"] = "waveform" },
			`model output audio: model has no output "waveform" (model outputs: audio)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := styleManifest()
			if c.edit != nil {
				c.edit(m)
			}
			err := m.CheckModel(bundle.RoleModel, session(c.model))
			if !errors.Is(err, bundle.ErrModelMismatch) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want one mentioning %q", err, c.want)
			}
		})
	}
}
