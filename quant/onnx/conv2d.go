package onnx

import (
	"fmt"
	"slices"
	"strconv"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// LiftConv1D rewrites the 1-D convolutions of the main graph as 2-D ones
// over a height of 1: each Conv and ConvTranspose whose weight is a float
// initializer of rank 3 gets its input unsqueezed to [N, C, 1, L], its
// weight reshaped to [.., .., 1, K] (the same bytes: only the dims
// change) and its attributes given a leading height entry. The 2-D form
// flows on through the element-wise nodes after it (activations, and
// Add/Sub/Mul/Div with another 2-D value or a constant of rank 0 or 1),
// and is squeezed back only where something still reads the 1-D value,
// so the rest of the graph and the model's inputs and outputs are as
// before. The result is the same convolution, but ONNX
// Runtime's CPU kernels run the 2-D form faster: its blocked (NCHWc)
// convolutions, which graph optimization level "all" chooses on x86, are
// for 2-D convolutions only, and its 1-D ConvTranspose is a slower path
// (audio/voice BenchmarkSynthesizeOneThread has the figures).
//
// A weight shared with anything else than lifted convolutions, or that a
// graph input can override, is left alone, and so is its node, as is any
// node whose attributes do not have the 1-D lengths. Subgraphs are not
// touched. It returns how many convolutions it rewrote; m is changed in
// place.
func LiftConv1D(m *Model) (int, error) {
	if m == nil || m.Graph() == nil {
		return 0, fmt.Errorf("%w: model has no graph", ErrInvalidModel)
	}
	g := m.Graph()
	inits := constants(g)

	// Convolutions whose weight nothing else reads.
	uses := make(map[string]int)
	weightUses := make(map[string]int)
	for _, n := range g.GetNode() {
		for _, in := range n.GetInput() {
			uses[in]++
		}
		for _, a := range n.GetAttribute() {
			countSubgraphUses(a, uses, nil)
		}
		if liftableConv(n, inits) {
			weightUses[n.GetInput()[1]]++
		}
	}
	for _, out := range g.GetOutput() {
		uses[out.GetName()]++
	}

	// Which nodes run in 2-D: the convolutions, and the element-wise
	// nodes after them whose every input is 2-D already or a constant that
	// broadcasts the same in both ranks.
	lifted := make(map[*onnxpb.NodeProto]bool)
	is2D := make(map[string]bool) // values produced in 2-D form
	for _, n := range g.GetNode() {
		switch {
		case liftableConv(n, inits):
			w := n.GetInput()[1]
			lifted[n] = uses[w] == weightUses[w]
		case unaryOps[n.GetOpType()] && isDefaultDomain(n.GetDomain()):
			lifted[n] = len(n.GetInput()) > 0 && is2D[n.GetInput()[0]] && constantRest(n.GetInput()[1:], inits)
		case binaryOps[n.GetOpType()] && isDefaultDomain(n.GetDomain()) && len(n.GetInput()) == 2:
			a, b := n.GetInput()[0], n.GetInput()[1]
			lifted[n] = (is2D[a] || broadcastsAlike(a, inits)) && (is2D[b] || broadcastsAlike(b, inits)) && (is2D[a] || is2D[b])
		}
		if lifted[n] {
			for _, out := range n.GetOutput() {
				if out != "" { // "" is an omitted output, and an omitted input too
					is2D[out] = true
				}
			}
		}
	}
	count := 0
	for n, ok := range lifted {
		if !ok {
			delete(lifted, n)
		} else if n.GetOpType() == "Conv" || n.GetOpType() == "ConvTranspose" {
			count++
		}
	}
	if count == 0 {
		return 0, nil
	}

	// Values whose 1-D form is still read: by a node that stays, a
	// subgraph or the graph's outputs.
	need1D := make(map[string]bool)
	for _, n := range g.GetNode() {
		if !lifted[n] {
			for _, in := range n.GetInput() {
				if is2D[in] {
					need1D[in] = true
				}
			}
		}
		for _, a := range n.GetAttribute() {
			countSubgraphUses(a, nil, func(name string) {
				if is2D[name] {
					need1D[name] = true
				}
			})
		}
	}
	for _, out := range g.GetOutput() {
		if is2D[out.GetName()] {
			need1D[out.GetName()] = true
		}
	}

	fresh := namer(g)
	// Unsqueeze and Squeeze take their axes as an input from opset 13 on,
	// as an attribute before.
	axesInput := m.Opset("") >= 13
	var axes string
	if axesInput {
		axes = fresh("mynah_lift2d_axes")
		g.Initializer = append(g.Initializer, Int64Tensor(axes, []int64{1}, []int64{2}))
	}
	reshape := func(op, in, out string) *onnxpb.NodeProto {
		n := &onnxpb.NodeProto{Name: fresh(out + "_" + op), OpType: op, Input: []string{in}, Output: []string{out}}
		if axesInput {
			n.Input = append(n.Input, axes)
		} else {
			n.Attribute = []*onnxpb.AttributeProto{AttrInts("axes", 2)}
		}
		return n
	}

	name2D := make(map[string]string) // 1-D name -> its 2-D value
	reshaped := make(map[string]bool)
	nodes := make([]*onnxpb.NodeProto, 0, len(g.GetNode())+len(need1D)+count)
	for _, n := range g.GetNode() {
		if !lifted[n] {
			nodes = append(nodes, n)
			continue
		}
		isConv := n.GetOpType() == "Conv" || n.GetOpType() == "ConvTranspose"
		for i, in := range n.GetInput() {
			switch {
			case is2D[in]:
				n.Input[i] = name2D[in]
			case isConv && i == 0:
				// A 1-D input: unsqueezed once, however many read it.
				if name2D[in] == "" {
					name2D[in] = fresh(in + "_2d")
					nodes = append(nodes, reshape("Unsqueeze", in, name2D[in]))
				}
				n.Input[i] = name2D[in]
			}
		}
		if isConv {
			if w := n.GetInput()[1]; !reshaped[w] {
				reshaped[w] = true
				t := inits[w]
				t.Dims = []int64{t.Dims[0], t.Dims[1], 1, t.Dims[2]}
			}
			for j, a := range n.GetAttribute() {
				var ints []int64
				switch a.GetName() {
				case "kernel_shape", "dilations", "strides", "output_shape":
					ints = []int64{1, a.Ints[0]}
				case "output_padding":
					// Less than the stride, which is 1 in height.
					ints = []int64{0, a.Ints[0]}
				case "pads":
					ints = []int64{0, a.Ints[0], 0, a.Ints[1]}
				default:
					continue
				}
				// A new attribute: a model built in Go may share one
				// between nodes, and each must be changed once.
				a = proto.Clone(a).(*onnxpb.AttributeProto)
				a.Ints = ints
				n.Attribute[j] = a
			}
		}
		nodes = append(nodes, n)
		for i, out := range n.GetOutput() {
			if out == "" {
				continue
			}
			name2D[out] = fresh(out + "_2d")
			n.Output[i] = name2D[out]
			if need1D[out] {
				nodes = append(nodes, reshape("Squeeze", name2D[out], out))
			}
		}
	}
	g.Node = nodes
	// Shapes recorded for values that no longer exist in 1-D form, and for
	// the weights, which have a new one.
	g.ValueInfo = slices.DeleteFunc(g.ValueInfo, func(v *onnxpb.ValueInfoProto) bool {
		return is2D[v.GetName()] && !need1D[v.GetName()] || reshaped[v.GetName()]
	})
	return count, nil
}

// Element-wise operators that run unchanged on the 2-D form of a value.
var (
	unaryOps = map[string]bool{
		"Relu": true, "LeakyRelu": true, "Tanh": true, "Sigmoid": true, "Elu": true,
		"Softplus": true, "Neg": true, "Abs": true, "Exp": true, "Erf": true, "Sqrt": true,
		"Clip": true, // its min and max are scalars
	}
	binaryOps = map[string]bool{"Add": true, "Sub": true, "Mul": true, "Div": true}
)

// broadcastsAlike reports whether name is an initializer of rank 0 or 1,
// which broadcasts against [N, C, L] and [N, C, 1, L] alike (along the
// last axis).
func broadcastsAlike(name string, inits map[string]*onnxpb.TensorProto) bool {
	t := inits[name]
	return t != nil && len(t.GetDims()) <= 1
}

func constantRest(names []string, inits map[string]*onnxpb.TensorProto) bool {
	for _, n := range names {
		if n != "" && !broadcastsAlike(n, inits) {
			return false
		}
	}
	return true
}

// liftableConv reports whether n is a 1-D float Conv or ConvTranspose
// whose weight is one of inits and whose attributes have the 1-D lengths.
func liftableConv(n *onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto) bool {
	if (n.GetOpType() != "Conv" && n.GetOpType() != "ConvTranspose") || !isDefaultDomain(n.GetDomain()) {
		return false
	}
	if len(n.GetInput()) < 2 || len(n.GetOutput()) != 1 || n.GetInput()[0] == "" {
		return false
	}
	w := inits[n.GetInput()[1]]
	if w == nil || len(w.GetDims()) != 3 || w.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
		return false
	}
	for _, a := range n.GetAttribute() {
		want := 1
		switch a.GetName() {
		case "pads":
			want = 2
		case "kernel_shape", "dilations", "strides", "output_padding", "output_shape":
		default:
			continue // group, auto_pad: the same in 2-D
		}
		if a.GetType() != onnxpb.AttributeProto_INTS || len(a.GetInts()) != want {
			return false
		}
	}
	return true
}

// constants is g's initializers by name, less those a graph input of the
// same name overrides at run time: the values a rewrite may take as
// fixed.
func constants(g *onnxpb.GraphProto) map[string]*onnxpb.TensorProto {
	inits := make(map[string]*onnxpb.TensorProto, len(g.GetInitializer()))
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = t
	}
	for _, in := range g.GetInput() {
		delete(inits, in.GetName())
	}
	return inits
}

// namer returns a function that makes names new to g (graphNames) from a
// base, base itself where it is free, else base_1, base_2, …
func namer(g *onnxpb.GraphProto) func(base string) string {
	names := graphNames(g)
	return func(base string) string {
		name := base
		for i := 1; names[name]; i++ {
			name = base + "_" + strconv.Itoa(i)
		}
		names[name] = true
		return name
	}
}

// graphNames is every value and node name of g and of its subgraphs, so
// that new ones differ: a subgraph sees the names around it, and ONNX
// wants each name defined once in all the scopes that see it.
func graphNames(g *onnxpb.GraphProto) map[string]bool {
	names := make(map[string]bool)
	addNames(g, names)
	return names
}

func addNames(g *onnxpb.GraphProto, names map[string]bool) {
	for _, v := range g.GetInput() {
		names[v.GetName()] = true
	}
	for _, v := range g.GetOutput() {
		names[v.GetName()] = true
	}
	for _, v := range g.GetValueInfo() {
		names[v.GetName()] = true
	}
	for _, t := range g.GetInitializer() {
		names[t.GetName()] = true
	}
	for _, t := range g.GetSparseInitializer() {
		names[t.GetValues().GetName()] = true
	}
	for _, n := range g.GetNode() {
		names[n.GetName()] = true
		for _, s := range n.GetInput() {
			names[s] = true
		}
		for _, s := range n.GetOutput() {
			names[s] = true
		}
		for _, a := range n.GetAttribute() {
			for _, sub := range subgraphs(a) {
				addNames(sub, names)
			}
		}
	}
}

// subgraphs returns the graphs an attribute holds (If branches, Loop and
// Scan bodies).
func subgraphs(a *onnxpb.AttributeProto) []*onnxpb.GraphProto {
	graphs := a.GetGraphs()
	if a.GetG() != nil {
		graphs = append(slices.Clip(graphs), a.GetG())
	}
	return graphs
}

// countSubgraphUses counts in uses (when not nil) what the subgraphs of a
// read, and calls seen (when not nil) with each name.
func countSubgraphUses(a *onnxpb.AttributeProto, uses map[string]int, seen func(string)) {
	for _, sub := range subgraphs(a) {
		for _, n := range sub.GetNode() {
			for _, in := range n.GetInput() {
				if uses != nil {
					uses[in]++
				}
				if seen != nil {
					seen(in)
				}
			}
			for _, sa := range n.GetAttribute() {
				countSubgraphUses(sa, uses, seen)
			}
		}
		for _, out := range sub.GetOutput() {
			if uses != nil {
				uses[out.GetName()]++
			}
			if seen != nil {
				seen(out.GetName())
			}
		}
	}
}
