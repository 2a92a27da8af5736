package onnx

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// convGraph starts a graph for the lift tests with input x [1, c, L], L
// dynamic.
func convGraph(c int64) (*Graph, string) {
	g := NewGraph("conv1d")
	return g, g.Input("x", Float, Fixed(1), Fixed(c), Dynamic("L"))
}

// weights adds a float initializer of shape dims with made-up values.
func weights(g *Graph, name string, dims ...int64) string {
	n, _ := NumElements(dims)
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(i%7-3) / 8
	}
	return g.Float32s(name, dims, v)
}

// finish declares outputs (rank 3, dynamic) and wraps g into a model of
// the given default-domain opset.
func finish(t testing.TB, g *Graph, opset int64, outputs ...string) *Model {
	t.Helper()
	for _, out := range outputs {
		g.Output(out, Float, Fixed(1), Dynamic("C"), Dynamic("L"))
	}
	m, err := g.Model(&ModelOptions{Opsets: map[string]int64{"": opset}})
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	return m
}

// ops is the op types of g's nodes in order.
func ops(g *onnxpb.GraphProto) string {
	var s []string
	for _, n := range g.GetNode() {
		s = append(s, n.GetOpType())
	}
	return strings.Join(s, " ")
}

func nodesOf(g *onnxpb.GraphProto, op string) []*onnxpb.NodeProto {
	var ns []*onnxpb.NodeProto
	for _, n := range g.GetNode() {
		if n.GetOpType() == op {
			ns = append(ns, n)
		}
	}
	return ns
}

func attrInts(n *onnxpb.NodeProto, name string) []int64 {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a.GetInts()
		}
	}
	return nil
}

func initializerOf(g *onnxpb.GraphProto, name string) *onnxpb.TensorProto {
	for _, t := range g.GetInitializer() {
		if t.GetName() == name {
			return t
		}
	}
	return nil
}

// wantInts fails unless the attribute name of n is want.
func wantInts(t *testing.T, n *onnxpb.NodeProto, name string, want ...int64) {
	t.Helper()
	if got := attrInts(n, name); !slices.Equal(got, want) {
		t.Errorf("%s %s %v, want %v", n.GetOpType(), name, got, want)
	}
}

func wantDims(t *testing.T, g *onnxpb.GraphProto, name string, want ...int64) {
	t.Helper()
	w := initializerOf(g, name)
	if w == nil {
		t.Fatalf("initializer %q is gone", name)
	}
	if !slices.Equal(w.GetDims(), want) {
		t.Errorf("%s dims %v, want %v", name, w.GetDims(), want)
	}
}

func ifBranch(name string, nodes []*onnxpb.NodeProto, out string) *onnxpb.GraphProto {
	return &onnxpb.GraphProto{Name: name, Node: nodes, Output: []*onnxpb.ValueInfoProto{valueInfo(out, Float, nil)}}
}

type liftCase struct {
	name  string
	build func(testing.TB) *Model
	// lifted is what LiftConv1D returns; with 0 the model must be
	// unchanged.
	lifted int
	ops    string // the op types of the result, in order
	check  func(t *testing.T, g *onnxpb.GraphProto)
}

// liftCases are the models of TestLiftConv1D, also the fuzz target's seeds.
func liftCases() []liftCase {
	return []liftCase{
		{
			name: "conv",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 4, 2, 3), weights(g, "b", 4)}, []string{"y"},
					AttrInts("kernel_shape", 3), AttrInts("pads", 2, 1), AttrInts("dilations", 2),
					AttrInts("strides", 1), AttrInt("group", 1))
				return finish(t, g, 17, "y")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				un, conv, sq := g.Node[0], g.Node[1], g.Node[2]
				wantInts(t, conv, "kernel_shape", 1, 3)
				wantInts(t, conv, "pads", 0, 2, 0, 1)
				wantInts(t, conv, "dilations", 1, 2)
				wantInts(t, conv, "strides", 1, 1)
				if a := conv.GetAttribute()[4]; a.GetName() != "group" || a.GetI() != 1 {
					t.Errorf("group became %v", a)
				}
				wantDims(t, g, "w", 4, 2, 1, 3)
				wantDims(t, g, "b", 4)
				if un.Input[0] != "x" || conv.Input[0] != un.Output[0] || sq.Input[0] != conv.Output[0] || sq.Output[0] != "y" {
					t.Errorf("not x -> Unsqueeze -> Conv -> Squeeze -> y: %v", g.Node)
				}
				if conv.Input[1] != "w" || conv.Input[2] != "b" {
					t.Errorf("conv reads %v, want its weight and bias as before", conv.Input)
				}
			},
		},
		{
			name: "conv transpose",
			build: func(t testing.TB) *Model {
				g, x := convGraph(4)
				g.Node("ConvTranspose", []string{x, weights(g, "w", 4, 2, 8)}, []string{"y"},
					AttrInts("strides", 4), AttrInts("pads", 2, 2), AttrInts("output_padding", 1))
				g.Node("ConvTranspose", []string{"y", weights(g, "w2", 2, 3, 4), weights(g, "b2", 3)}, []string{"z"},
					AttrInts("strides", 2), AttrInts("output_shape", 100), AttrInt("group", 1))
				return finish(t, g, 17, "z")
			},
			lifted: 2,
			ops:    "Unsqueeze ConvTranspose ConvTranspose Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				ct := nodesOf(g, "ConvTranspose")
				wantInts(t, ct[0], "strides", 1, 4)
				wantInts(t, ct[0], "pads", 0, 2, 0, 2)
				// output_padding must stay below the stride, 1 in height.
				wantInts(t, ct[0], "output_padding", 0, 1)
				wantInts(t, ct[1], "strides", 1, 2)
				wantInts(t, ct[1], "output_shape", 1, 100)
				wantDims(t, g, "w", 4, 2, 1, 8)
				wantDims(t, g, "w2", 2, 3, 1, 4)
			},
		},
		{
			// HiFi-GAN's residual blocks: nothing in between needs 1-D.
			name: "residual chain",
			build: func(t testing.TB) *Model {
				g, x := convGraph(3)
				h1 := g.Op("Conv", []string{x, weights(g, "w1", 3, 3, 3)}, AttrInts("pads", 1, 1))
				h2 := g.Op("Conv", []string{h1, weights(g, "w2", 3, 3, 5)}, AttrInts("pads", 2, 2), AttrInts("dilations", 1))
				s := g.Op("Add", []string{h1, h2})
				a := g.Op("LeakyRelu", []string{s}, AttrFloat("alpha", 0.1))
				b := g.Op("Add", []string{weights(g, "bias", 1), g.Op("Mul", []string{a, g.Scalar(0.5)})})
				g.Node("Conv", []string{g.Op("Tanh", []string{b}), weights(g, "w3", 1, 3, 7)}, []string{"y"}, AttrInts("pads", 3, 3))
				return finish(t, g, 17, "y")
			},
			lifted: 3,
			ops:    "Unsqueeze Conv Conv Add LeakyRelu Mul Add Tanh Conv Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				if lr := nodesOf(g, "LeakyRelu")[0]; lr.GetAttribute()[0].GetF() != 0.1 {
					t.Errorf("LeakyRelu's alpha changed: %v", lr.GetAttribute())
				}
				wantDims(t, g, "bias", 1)
			},
		},
		{
			name: "read in both forms",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 1)}, []string{"h"})
				g.Node("Conv", []string{g.Op("Relu", []string{"h"}), weights(g, "w2", 2, 2, 3)}, []string{"y"})
				g.Node("Transpose", []string{"h"}, []string{"t"}, AttrInts("perm", 0, 2, 1))
				return finish(t, g, 17, "y", "t")
			},
			lifted: 2,
			ops:    "Unsqueeze Conv Squeeze Relu Conv Squeeze Transpose",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				sq, relu, tr := g.Node[2], g.Node[3], g.Node[6]
				if sq.Input[0] != g.Node[1].Output[0] || sq.Output[0] != "h" || tr.Input[0] != "h" {
					t.Errorf("Transpose does not read the squeezed h: %v", g.Node)
				}
				if relu.Input[0] != g.Node[1].Output[0] {
					t.Errorf("Relu reads %q, want the 2-D %q", relu.Input[0], g.Node[1].Output[0])
				}
			},
		},
		{
			name: "conv output is a graph output",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				g.Node("Relu", []string{"y"}, []string{"z"})
				return finish(t, g, 17, "y", "z")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze Relu Squeeze",
		},
		{
			name: "next conv stays",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				h := g.Op("Conv", []string{x, weights(g, "w", 2, 2, 3)})
				w2 := weights(g, "w2", 2, 2, 3)
				g.Node("Conv", []string{h, w2}, []string{"y"})
				g.Node("MatMul", []string{"y", w2}, []string{"z"})
				return finish(t, g, 17, "z")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze Conv MatMul",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				wantDims(t, g, "w2", 2, 2, 3)
			},
		},
		{
			name: "element-wise with a 1-D value or a rank-2 constant stays",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				h := g.Op("Conv", []string{x, weights(g, "w", 2, 2, 1)})
				a := g.Op("Add", []string{h, x})
				g.Node("Mul", []string{g.Op("Relu", []string{h}), weights(g, "scale", 2, 1)}, []string{"y"})
				return finish(t, g, 17, a, "y")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze Add Relu Squeeze Mul",
		},
		{
			name: "weight shared by two convs",
			build: func(t testing.TB) *Model {
				g, x := convGraph(4)
				w := weights(g, "w", 4, 4, 3)
				g.Node("Conv", []string{g.Op("Conv", []string{x, w}), w}, []string{"y"})
				return finish(t, g, 17, "y")
			},
			lifted: 2,
			ops:    "Unsqueeze Conv Conv Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				wantDims(t, g, "w", 4, 4, 1, 3)
			},
		},
		{
			// Built in Go, two nodes may hold the same attribute.
			name: "attribute shared by two convs",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				stride := AttrInts("strides", 2)
				h := g.Op("Conv", []string{x, weights(g, "w", 2, 2, 3)}, stride)
				g.Node("Conv", []string{h, weights(g, "w2", 2, 2, 3)}, []string{"y"}, stride)
				return finish(t, g, 17, "y")
			},
			lifted: 2,
			ops:    "Unsqueeze Conv Conv Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				for _, n := range nodesOf(g, "Conv") {
					wantInts(t, n, "strides", 1, 2)
				}
			},
		},
		{
			name: "weight shared with a MatMul",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				w := weights(g, "w", 2, 2, 3)
				g.Node("Conv", []string{x, w}, []string{"y"})
				g.Node("MatMul", []string{x, w}, []string{"z"})
				return finish(t, g, 17, "y", "z")
			},
		},
		{
			name: "weight is also a graph output",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				return finish(t, g, 17, "y", "w")
			},
		},
		{
			name: "weight read by a subgraph",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				branch := ifBranch("b", []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"w"}, Output: []string{"b_out"}}}, "b_out")
				cond := g.Initializer(&onnxpb.TensorProto{DataType: int32(Bool), RawData: []byte{1}})
				g.Node("If", []string{cond}, []string{"z"}, AttrGraph("then_branch", branch), AttrGraph("else_branch", branch))
				return finish(t, g, 17, "y", "z")
			},
		},
		{
			name: "weight is a graph input",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				m := finish(t, g, 17, "y")
				// As IR 3 had it: an initializer a caller may override.
				m.Graph().Input = append(m.Graph().Input, valueInfo("w", Float, []Dim{Fixed(2), Fixed(2), Fixed(3)}))
				return m
			},
		},
		{
			name: "double weight",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				w := g.Initializer(&onnxpb.TensorProto{Name: "w", DataType: int32(Double), Dims: []int64{2, 2, 3}, RawData: make([]byte, 8*12)})
				g.Node("Conv", []string{x, w}, []string{"y"})
				return finish(t, g, 17, "y")
			},
		},
		{
			name: "rank-4 weight",
			build: func(t testing.TB) *Model {
				g := NewGraph("conv2d")
				x := g.Input("x", Float, Fixed(1), Fixed(2), Fixed(1), Dynamic("L"))
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 1, 3)}, []string{"y"}, AttrInts("pads", 0, 1, 0, 1))
				return finish(t, g, 17, "y")
			},
		},
		{
			name: "pads of the 2-D length",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"}, AttrInts("pads", 1, 1, 1, 1))
				return finish(t, g, 17, "y")
			},
		},
		{
			name: "strides as an int",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"}, AttrInt("strides", 2))
				return finish(t, g, 17, "y")
			},
		},
		{
			name: "conv in another domain",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.NodeIn("com.example", "Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				g.Output("y", Float)
				m, err := g.Model(&ModelOptions{Opsets: map[string]int64{"": 17, "com.example": 1}})
				if err != nil {
					t.Fatal(err)
				}
				return m
			},
		},
		{
			name: "no convolutions",
			build: func(t testing.TB) *Model {
				return mlp(t)
			},
		},
		{
			name: "opset 11",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				h := g.Op("Conv", []string{x, weights(g, "w", 2, 2, 3)}, AttrInts("pads", 1, 1))
				g.Node("Clip", []string{h, g.Scalar(-1), g.Scalar(1)}, []string{"y"})
				return finish(t, g, 11, "y")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Clip Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				for _, n := range append(nodesOf(g, "Unsqueeze"), nodesOf(g, "Squeeze")...) {
					if len(n.Input) != 1 {
						t.Errorf("%s reads %v, want its axes as an attribute", n.GetOpType(), n.Input)
					}
					wantInts(t, n, "axes", 2)
				}
				if len(g.Initializer) != 3 {
					t.Errorf("initializers %d, want the 3 there were", len(g.Initializer))
				}
			},
		},
		{
			name: "opset 17",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				h := g.Op("Conv", []string{x, weights(g, "w", 2, 2, 3)}, AttrInts("pads", 1, 1))
				g.Node("Clip", []string{h, g.Scalar(-1), g.Scalar(1)}, []string{"y"})
				return finish(t, g, 17, "y")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Clip Squeeze",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				un, sq := g.Node[0], g.Node[3]
				if len(un.Input) != 2 || len(sq.Input) != 2 || un.Input[1] != sq.Input[1] || len(un.Attribute)+len(sq.Attribute) != 0 {
					t.Fatalf("Unsqueeze %v and Squeeze %v, want one axes input for both", un, sq)
				}
				axes := initializerOf(g, un.Input[1])
				if axes == nil || DataType(axes.GetDataType()) != Int64 || !slices.Equal(axes.GetDims(), []int64{1}) ||
					!slices.Equal(axes.GetRawData(), Int64Tensor("", nil, []int64{2}).RawData) {
					t.Errorf("axes %v, want int64 [2]", axes)
				}
			},
		},
		{
			name: "name collisions",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				x2d := g.Input("x_2d", Float, Fixed(1), Fixed(2), Dynamic("L"))
				g.Int64s("mynah_lift2d_axes", []int64{1}, []int64{7})
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				g.Node("Neg", []string{x2d}, []string{"y_2d"})
				g.Node("Add", []string{"y", "y_2d"}, []string{"z"})
				m := finish(t, g, 17, "z")
				m.Graph().SparseInitializer = []*onnxpb.SparseTensorProto{{
					Values: Float32Tensor("x_2d_1", []int64{1}, []float32{1}), Indices: Int64Tensor("", []int64{1}, []int64{0}), Dims: []int64{4},
				}}
				return m
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze Neg Add",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				un, conv := g.Node[0], g.Node[1]
				if un.Output[0] == "x_2d" || un.Output[0] == "x_2d_1" || conv.Output[0] == "y_2d" || un.Input[1] == "mynah_lift2d_axes" {
					t.Errorf("a new name is an old one: %v %v", un, conv)
				}
				wantDims(t, g, "mynah_lift2d_axes", 1)
			},
		},
		{
			name: "read by a subgraph that has a name like a new one",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"y"})
				g.Node("Relu", []string{"y"}, []string{"r"})
				then := ifBranch("then", []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{"y"}, Output: []string{"y_2d"}}}, "y_2d")
				els := ifBranch("else", []*onnxpb.NodeProto{{OpType: "Neg", Input: []string{"r"}, Output: []string{"r_2d"}}}, "r_2d")
				cond := g.Initializer(&onnxpb.TensorProto{Name: "cond", DataType: int32(Bool), RawData: []byte{1}})
				g.Node("If", []string{cond}, []string{"z"}, AttrGraph("then_branch", then), AttrGraph("else_branch", els))
				return finish(t, g, 17, "z")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Squeeze Relu Squeeze If",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				if y, r := g.Node[1].Output[0], g.Node[3].Output[0]; y == "y_2d" || r == "r_2d" {
					t.Errorf("2-D values %q and %q shadow a subgraph's", y, r)
				}
			},
		},
		{
			name: "value info",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3)}, []string{"h"})
				g.Node("Relu", []string{"h"}, []string{"r"})
				g.Node("Shape", []string{"r"}, []string{"s"})
				g.Output("s", Int64, Fixed(3))
				m, err := g.Model(nil)
				if err != nil {
					t.Fatal(err)
				}
				rank3 := []Dim{Fixed(1), Fixed(2), Dynamic("L")}
				m.Graph().ValueInfo = []*onnxpb.ValueInfoProto{
					valueInfo("h", Float, rank3), valueInfo("r", Float, rank3),
					valueInfo("w", Float, []Dim{Fixed(2), Fixed(2), Fixed(3)}), valueInfo("s", Int64, []Dim{Fixed(3)}),
				}
				return m
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Relu Squeeze Shape",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				var kept []string
				for _, v := range g.ValueInfo {
					kept = append(kept, v.GetName())
				}
				// h is 2-D only, w has a new shape; r is squeezed back.
				if !slices.Equal(kept, []string{"r", "s"}) {
					t.Errorf("value_info for %v, want r and s", kept)
				}
			},
		},
		{
			// An empty name is an omitted optional value, not a value.
			name: "omitted inputs and outputs",
			build: func(t testing.TB) *Model {
				g, x := convGraph(2)
				g.Node("Conv", []string{x, weights(g, "w", 2, 2, 3), ""}, []string{"y"})
				g.Node("Relu", []string{"y"}, []string{""})
				g.Node("Clip", []string{"y", "", g.Scalar(6)}, []string{"z"})
				g.Node("Pad", []string{"z", g.Ints(0, 0, 1, 0, 0, 1), ""}, []string{"p"})
				return finish(t, g, 17, "p")
			},
			lifted: 1,
			ops:    "Unsqueeze Conv Relu Clip Squeeze Pad",
			check: func(t *testing.T, g *onnxpb.GraphProto) {
				relu, clip, pad := g.Node[2], g.Node[3], g.Node[5]
				if relu.Output[0] != "" || clip.Input[1] != "" || pad.Input[2] != "" || g.Node[1].Input[2] != "" {
					t.Errorf("an omitted value got a name: %v", g.Node)
				}
			},
		},
	}
}

func TestLiftConv1D(t *testing.T) {
	for _, c := range liftCases() {
		t.Run(c.name, func(t *testing.T) {
			m := c.build(t)
			before := proto.Clone(m.Proto).(*onnxpb.ModelProto)
			n, err := LiftConv1D(m)
			if err != nil {
				t.Fatal(err)
			}
			if n != c.lifted {
				t.Errorf("lifted %d, want %d", n, c.lifted)
			}
			if c.lifted == 0 {
				if !proto.Equal(m.Proto, before) {
					t.Errorf("model changed:\n%v", m.Graph().GetNode())
				}
				return
			}
			g := m.Graph()
			if got := ops(g); got != c.ops {
				t.Errorf("ops\n  %s\nwant\n  %s", got, c.ops)
			}
			if err := Check(m, nil); err != nil {
				t.Fatalf("result does not check: %v", err)
			}
			if !proto.Equal(&onnxpb.GraphProto{Input: g.Input, Output: g.Output}, &onnxpb.GraphProto{Input: before.Graph.Input, Output: before.Graph.Output}) {
				t.Errorf("graph inputs or outputs changed")
			}
			if c.check != nil {
				c.check(t, g)
			}
			if again, err := LiftConv1D(m); again != 0 || err != nil {
				t.Errorf("second pass lifted %d (%v), want 0", again, err)
			}
		})
	}
}

func TestLiftConv1DNoGraph(t *testing.T) {
	for name, m := range map[string]*Model{
		"nil model": nil,
		"nil proto": {},
		"nil graph": {Proto: &onnxpb.ModelProto{IrVersion: 8}},
	} {
		if n, err := LiftConv1D(m); n != 0 || !errors.Is(err, ErrInvalidModel) {
			t.Errorf("%s: %d, %v; want ErrInvalidModel", name, n, err)
		}
	}
}
