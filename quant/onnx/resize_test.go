package onnx

import (
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// resizeModel has Resizes of every kind; ResizeLinearMatMul rewrites
// three (hop, default_coords and cast; the first two share a factor, so
// a weight table).
func resizeModel(t testing.TB) *Model {
	t.Helper()
	g := NewGraph("resizes")
	x := g.Input("x", Float, Fixed(1), Fixed(4), Dynamic("F"))
	xi := g.Input("xi", Int64, Fixed(1), Fixed(4), Dynamic("F"))
	over := g.Input("over", Float, Fixed(3))
	linear := func(extra ...*onnxpb.AttributeProto) []*onnxpb.AttributeProto {
		return append([]*onnxpb.AttributeProto{AttrString("mode", "linear")}, extra...)
	}
	scales := func(v ...float32) string { return g.Float32s("", []int64{int64(len(v))}, v) }
	add := func(out string, in []string, attrs []*onnxpb.AttributeProto) {
		g.Node("Resize", in, []string{out}, attrs...)
		g.Output(out, Float, Dynamic("a"), Dynamic("b"), Dynamic("c"))
	}
	s := scales(1, 1, 220)
	add("hop", []string{x, "", s}, linear(AttrString("coordinate_transformation_mode", "half_pixel")))
	add("default_coords", []string{x, "", s}, linear())
	add("cast", []string{g.Op("Cast", []string{xi}, AttrInt("to", int64(onnxpb.TensorProto_FLOAT))), "", scales(1, 1, 2)}, linear())
	add("ints", []string{xi, "", s}, linear()) // not float
	add("nearest", []string{x, "", s}, nil)
	add("asymmetric", []string{x, "", s}, linear(AttrString("coordinate_transformation_mode", "asymmetric")))
	add("two_axes", []string{x, "", scales(1, 2, 2)}, linear())
	add("fraction", []string{x, "", scales(1, 1, 2.5)}, linear())
	add("one", []string{x, "", scales(1, 1, 1)}, linear())
	add("sizes", []string{x, "", "", g.Int64s("", []int64{3}, []int64{1, 4, 8})}, linear())
	add("antialias", []string{x, "", s}, linear(AttrInt("antialias", 1)))
	add("overridden", []string{x, "", over}, linear())
	add("computed", []string{x, "", g.Op("Identity", []string{s})}, linear())
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	m.Graph().Initializer = append(m.Graph().Initializer, Float32Tensor(over, []int64{3}, []float32{1, 1, 4}))
	return m
}

// TestResizeLinearMatMulWhich: only linear, half-pixel, whole-factor
// upsampling of the last axis of a float input with constant scales is
// rewritten; one weight table per factor.
func TestResizeLinearMatMulWhich(t *testing.T) {
	m := resizeModel(t)
	n, err := ResizeLinearMatMul(m)
	if err != nil || n != 3 {
		t.Fatalf("ResizeLinearMatMul = %d, %v; want 3 (hop, default_coords, cast)", n, err)
	}
	if got := len(nodesOf(m.Graph(), "MatMul")); got != 3 {
		t.Errorf("%d MatMuls, want 3", got)
	}
	tables := 0
	for _, init := range m.Graph().GetInitializer() {
		if len(init.GetDims()) == 2 && init.GetDims()[0] == 3 {
			tables++
		}
	}
	if tables != 2 {
		t.Errorf("%d weight tables, want 2 (x220 and x2)", tables)
	}
	if err := Check(m, nil); err != nil {
		t.Errorf("rewritten model does not check: %v", err)
	}
	if n, err := ResizeLinearMatMul(m); err != nil || n != 0 {
		t.Errorf("second pass = %d, %v; want 0", n, err)
	}
	if _, err := ResizeLinearMatMul(&Model{}); err == nil {
		t.Error("a model without a graph: no error")
	}
}

// TestLinearTaps: each output sample's weights sum to 1, and only one
// neighbour is used: the left one in a sample's first half, the right one
// in its second.
func TestLinearTaps(t *testing.T) {
	for _, s := range []int64{2, 3, 220} {
		w := linearTaps(s)
		for k := range s {
			l, c, r := w[k], w[s+k], w[2*s+k]
			if sum := l + c + r; sum < 1-1e-6 || sum > 1+1e-6 {
				t.Errorf("s=%d k=%d: weights sum to %g", s, k, sum)
			}
			if l != 0 && r != 0 {
				t.Errorf("s=%d k=%d: both neighbours (%g, %g)", s, k, l, r)
			}
		}
	}
	if w := linearTaps(2); w[0] != 0.25 || w[2] != 0.75 || w[3] != 0.75 || w[5] != 0.25 {
		t.Errorf("x2 taps %v, want [0.25 0 | 0.75 0.75 | 0 0.25]", w)
	}
}

func FuzzResizeLinearMatMul(f *testing.F) {
	f.Add(encode(f, resizeModel(f)))
	f.Add(encode(f, whichModel(f)))
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRewrite(t, data, ResizeLinearMatMul, true) })
}
