//go:build cgo

package quant

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

func TestConvInt8InORT(t *testing.T) {
	rt := openORT(t)
	rng := rand.New(rand.NewPCG(13, 14))
	const c, m, kw, length = 8, 12, 5, 40
	w, b, x := randn(rng, m*c*kw, 0.2), randn(rng, m, 0.5), randn(rng, c*length, 1)
	model := convModel(t, w, b, c, m, kw)
	res, err := Quantize(model, &Options{Mode: ModeInt8, IncludeConv: true})
	if err != nil {
		t.Fatal(err)
	}
	if ops := Inspect(res.Model).Ops; ops["ConvInteger"] != 1 || ops["Conv"] != 0 {
		t.Fatalf("ops %v, want the Conv rewritten as ConvInteger", ops)
	}
	// Dequantize: uint8 values offset by 128, one scale per output channel.
	var wq []byte
	var scale []float32
	for _, init := range res.Model.Graph().GetInitializer() {
		switch {
		case onnx.DataType(init.GetDataType()) == onnx.Uint8 && len(init.GetDims()) == 3:
			wq = init.GetRawData()
		case isScale(init.GetName()):
			scale, _ = onnx.Float32Data(init)
		}
	}
	wd := make([]float32, len(w))
	per := c * kw
	for i, q := range wq {
		wd[i] = float32(int(q)-128) * scale[i/per]
	}
	conv := func(w []float32) []float32 {
		y := make([]float32, m*length)
		for o := range m {
			for p := range length {
				s := float64(b[o])
				for ch := range c {
					for j := range kw {
						if q := p + j - kw/2; q >= 0 && q < length {
							s += float64(w[(o*c+ch)*kw+j]) * float64(x[ch*length+q])
						}
					}
				}
				y[o*length+p] = float32(s)
			}
		}
		return y
	}
	in := ort.Tensor{Name: "x", Shape: []int64{1, c, length}, Float32: x}
	within(t, "float model", run(t, rt, model, in), conv(w), flat(1, 1e-4))
	// Bound per output channel: half an activation step times Σ|w|.
	lo, hi := 0.0, 0.0
	for _, v := range x {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	bound := make([]float64, m*length)
	for o := range m {
		var s float64
		for i := range per {
			s += math.Abs(float64(wd[o*per+i]))
		}
		for p := range length {
			bound[o*length+p] = (hi-lo)/255/2*s*1.01 + 1e-4
		}
	}
	within(t, "quantized model", run(t, rt, res.Model, in), conv(wd), bound)
}

func isScale(name string) bool { return strings.HasPrefix(name, "W_scale_q") }

func TestGatherInt8InORT(t *testing.T) {
	rt := openORT(t)
	rng := rand.New(rand.NewPCG(15, 16))
	const vocab, d = 50, 24
	table := randn(rng, vocab*d, 1)
	g := onnx.NewGraph("gather")
	ids := g.Input("ids", onnx.Int64, onnx.Fixed(1), onnx.Dynamic("n"))
	g.Node("Gather", []string{g.Float32s("E", []int64{vocab, d}, table), ids}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Fixed(1), onnx.Dynamic("n"), onnx.Fixed(d))
	m := build(t, g, nil)
	q := quantize(t, m, &Options{Mode: ModeInt8, EmbeddingsInt8: true})
	if Inspect(q).BytesByDType["FLOAT"] >= 4*vocab*d/2 {
		t.Fatalf("table still float: %v", Inspect(q).BytesByDType)
	}
	// Reference: rows dequantized from the rewritten model's int8 and scales.
	var wq []byte
	var scale []float32
	for _, init := range q.Graph().GetInitializer() {
		if onnx.DataType(init.GetDataType()) == onnx.Int8 {
			wq = init.GetRawData()
		} else if strings.HasPrefix(init.GetName(), "E_scale_q") {
			scale, _ = onnx.Float32Data(init)
		}
	}
	idv := []int64{0, 49, 7, 7, 23}
	var want []float32
	for _, id := range idv {
		for c := range d {
			want = append(want, float32(int8(wq[int(id)*d+c]))*scale[id])
		}
	}
	got := run(t, rt, q, ort.Tensor{Name: "ids", Shape: []int64{1, int64(len(idv))}, Int64: idv})
	within(t, "quantized model", got, want, flat(1, 1e-6))
	// And the dequantized rows are the table within half a step.
	for i, id := range idv {
		for c := range d {
			if diff := math.Abs(float64(want[i*d+c] - table[int(id)*d+c])); diff > float64(scale[id])/2*1.001 {
				t.Fatalf("row %d col %d: %v vs table %v", id, c, want[i*d+c], table[int(id)*d+c])
			}
		}
	}
}
