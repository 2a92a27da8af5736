package quant

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

// Test models built with quant/onnx's graph builder, and the Go
// references their quantized forms are checked against.

func randn(rng *rand.Rand, n int, std float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64() * std)
	}
	return v
}

func build(t testing.TB, g *onnx.Graph, opsets map[string]int64) *onnx.Model {
	t.Helper()
	m, err := g.Model(&onnx.ModelOptions{Opsets: opsets})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// matMulModel is y = x·W, x [rows, k] (rows dynamic), W [k, n].
func matMulModel(t testing.TB, w []float32, k, n int) *onnx.Model {
	g := onnx.NewGraph("matmul")
	x := g.Input("x", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(k)))
	g.Node("MatMul", []string{x, g.Float32s("W", []int64{int64(k), int64(n)}, w)}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(n)))
	return build(t, g, nil)
}

// gemmModel is y = alpha·x·Wᵀ + beta·C with W stored [n, k] (transB=1).
func gemmModel(t testing.TB, w, c []float32, k, n int, alpha, beta float32) *onnx.Model {
	g := onnx.NewGraph("gemm")
	x := g.Input("x", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(k)))
	wn := g.Float32s("W", []int64{int64(n), int64(k)}, w)
	cn := g.Float32s("C", []int64{int64(n)}, c)
	g.Node("Gemm", []string{x, wn, cn}, []string{"y"}, onnx.AttrInt("transB", 1),
		onnx.AttrFloat("alpha", alpha), onnx.AttrFloat("beta", beta))
	g.Output("y", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(n)))
	return build(t, g, nil)
}

// mlpModel is y = relu(x·W1 + b1)·W2 + b2, x [1, rows, k] (3-D, as in a
// transformer's feed-forward layer).
func mlpModel(t testing.TB, w1, b1, w2, b2 []float32, k, h, n int) *onnx.Model {
	g := onnx.NewGraph("mlp")
	x := g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Dynamic("rows"), onnx.Fixed(int64(k)))
	h1 := g.Op("MatMul", []string{x, g.Float32s("W1", []int64{int64(k), int64(h)}, w1)})
	h1 = g.Op("Relu", []string{g.Op("Add", []string{h1, g.Float32s("b1", []int64{int64(h)}, b1)})})
	y := g.Op("MatMul", []string{h1, g.Float32s("W2", []int64{int64(h), int64(n)}, w2)})
	g.Node("Add", []string{y, g.Float32s("b2", []int64{int64(n)}, b2)}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Fixed(1), onnx.Dynamic("rows"), onnx.Fixed(int64(n)))
	return build(t, g, nil)
}

// sharedModel reads x twice and W twice: y = x·W + relu(x·V)·W, W and V
// [d, d]. One DynamicQuantizeLinear for x and one copy of W must serve.
func sharedModel(t testing.TB, w, v []float32, d int) *onnx.Model {
	g := onnx.NewGraph("shared")
	x := g.Input("x", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(d)))
	wn := g.Float32s("W", []int64{int64(d), int64(d)}, w)
	vn := g.Float32s("V", []int64{int64(d), int64(d)}, v)
	a := g.Op("MatMul", []string{x, wn})
	b := g.Op("MatMul", []string{g.Op("Relu", []string{g.Op("MatMul", []string{x, vn})}), wn})
	g.Node("Add", []string{a, b}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(d)))
	return build(t, g, nil)
}

// convModel is a 1-D convolution y = conv(x, W) + B, x [1, c, len], W [m, c, kw].
func convModel(t testing.TB, w, b []float32, c, m, kw int) *onnx.Model {
	g := onnx.NewGraph("conv")
	x := g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Fixed(int64(c)), onnx.Dynamic("len"))
	g.Node("Conv", []string{x, g.Float32s("W", []int64{int64(m), int64(c), int64(kw)}, w), g.Float32s("B", []int64{int64(m)}, b)},
		[]string{"y"}, onnx.AttrInts("pads", int64(kw/2), int64(kw/2)), onnx.AttrInts("kernel_shape", int64(kw)))
	g.Output("y", onnx.Float, onnx.Fixed(1), onnx.Fixed(int64(m)), onnx.Dynamic("len"))
	return build(t, g, nil)
}

// ifModel runs x·W inside the then-branch of an If, W being an
// initializer of the main graph, and x·W + 1 in the else-branch.
func ifModel(t testing.TB, w []float32, k, n int) *onnx.Model {
	g := onnx.NewGraph("if")
	x := g.Input("x", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(k)))
	cond := g.Input("cond", onnx.Bool)
	wn := g.Float32s("W", []int64{int64(k), int64(n)}, w)
	branch := func(name string, plusOne bool) *onnxpb.GraphProto {
		sg := &onnxpb.GraphProto{Name: name}
		sg.Node = append(sg.Node, &onnxpb.NodeProto{OpType: "MatMul", Name: name + "_mm", Input: []string{x, wn}, Output: []string{name + "_y"}})
		out := name + "_y"
		if plusOne {
			sg.Initializer = append(sg.Initializer, onnx.Float32Tensor(name+"_one", nil, []float32{1}))
			sg.Node = append(sg.Node, &onnxpb.NodeProto{OpType: "Add", Name: name + "_add", Input: []string{out, name + "_one"}, Output: []string{name + "_z"}})
			out = name + "_z"
		}
		sg.Output = append(sg.Output, &onnxpb.ValueInfoProto{Name: out, Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(onnx.Float)}}}})
		return sg
	}
	g.Node("If", []string{cond}, []string{"y"}, onnx.AttrGraph("then_branch", branch("then", false)),
		onnx.AttrGraph("else_branch", branch("else", true)))
	g.Output("y", onnx.Float, onnx.Dynamic("rows"), onnx.Fixed(int64(n)))
	return build(t, g, nil)
}

// matmul returns x [rows, k] · w [k, n].
func matmul(x, w []float32, rows, k, n int) []float32 {
	y := make([]float32, rows*n)
	for r := range rows {
		for c := range n {
			var s float64
			for i := range k {
				s += float64(x[r*k+i]) * float64(w[i*n+c])
			}
			y[r*n+c] = float32(s)
		}
	}
	return y
}

// activationBound is how far int8 activation rounding can move x·W: each
// x is off by at most half a step (scale/2, scale = range/255), so column
// c is off by at most scale/2 · Σ|w[·,c]|, plus float rounding.
func activationBound(x, w []float32, k, n int, levels float64) []float64 {
	lo, hi := 0.0, 0.0
	for _, v := range x {
		lo, hi = math.Min(lo, float64(v)), math.Max(hi, float64(v))
	}
	step := (hi - lo) / levels
	b := make([]float64, n)
	for c := range n {
		var s float64
		for i := range k {
			s += math.Abs(float64(w[i*n+c]))
		}
		b[c] = step/2*s*1.01 + 1e-4
	}
	return b
}

// dequantized returns the [k, n] weight that replaced name in a quantized
// model, read back from its initializers: the reference the run in ONNX
// Runtime must match.
func dequantized(t testing.TB, m *onnx.Model, name string, k, n, blockSize int) []float32 {
	t.Helper()
	inits := map[string]*onnxpb.TensorProto{}
	walkGraphs(m.Graph(), func(g *onnxpb.GraphProto) {
		for _, x := range g.GetInitializer() {
			inits[x.GetName()] = x
		}
	})
	find := func(suffix string) *onnxpb.TensorProto {
		for nm, x := range inits {
			// Exactly name+suffix+"_q<n>": not a per-node copy derived from it.
			rest, ok := strings.CutPrefix(nm, name+suffix+"_q")
			if _, err := strconv.Atoi(rest); ok && err == nil {
				return x
			}
		}
		return nil
	}
	floats := func(x *onnxpb.TensorProto) []float32 {
		v, err := onnx.Float32Data(x)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if h := find("_fp16"); h != nil {
		raw := h.GetRawData()
		w := make([]float32, len(raw)/2)
		for i := range w {
			w[i] = vecpack.HalfToFloat32(uint16(raw[2*i]) | uint16(raw[2*i+1])<<8)
		}
		return w
	}
	if q := find("_int8"); q != nil {
		s := floats(find("_scale"))
		w := make([]float32, k*n)
		for i, b := range q.GetRawData() {
			w[i] = float32(int8(b)) * s[i%n]
		}
		return w
	}
	if q := find("_uint8"); q != nil {
		s := floats(find("_scale"))
		w := make([]float32, k*n)
		for i, b := range q.GetRawData() {
			w[i] = float32(int(b)-128) * s[i%n]
		}
		return w
	}
	if q := find("_q4"); q != nil {
		return unblockwise4(q.GetRawData(), floats(find("_scales")), k, n, blockSize)
	}
	t.Fatalf("no quantized copy of %q in the model", name)
	return nil
}

// decoderModel is the cloning kit's decoder, the main beneficiary of int8
// and nbits.
func decoderModel(t testing.TB) *onnx.Model {
	t.Helper()
	kit, err := demo.BuildCloning(nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := onnx.Decode(kit[demo.DecoderFile], nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
