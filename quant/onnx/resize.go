package onnx

import (
	"fmt"
	"math"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// ResizeLinearMatMul rewrites the main graph's linear upsampling of the
// last axis by a whole factor as a small matrix product. A Resize with
// mode "linear", coordinate_transformation_mode "half_pixel" and
// constant scales of 1 but for an integer s ≥ 2 on the last axis makes
// each output sample k of input position i from x[i-1], x[i] and x[i+1]
// with weights that depend on k alone (the ends repeat the edge values,
// as Resize clamps). So it becomes Pad (edge) by one on each side, the
// three shifted copies stacked [..., F, 3], a MatMul with the [3, s]
// weights and a Reshape to [..., F·s]. ONNX Runtime's linear Resize
// works out coordinates and four taps per output element; the product
// runs on its matrix kernels. The values agree to float rounding (the
// weights are the same, the sums in another order): TestResizeLinear-
// MatMulMatchesORT. The demo voice upsamples its 17 synthesis tracks from
// frames to samples so, a fifth of its synthesis time.
//
// The input must be float, as far as the graph tells (elemTypes). Scales
// must be an initializer no graph input overrides, the sizes input
// absent or empty, and the other attributes at their defaults
// (antialias 0, exclude_outside 0; cubic_coeff_a and nearest_mode do not
// apply to linear). An input whose last axis is empty fails at run time
// (Pad cannot repeat an edge of nothing) where Resize gave an empty
// output. Models of opset below 13 (Resize without its roi input, Slice
// and Unsqueeze with attributes) are not touched, nor are subgraphs. It
// returns how many it rewrote; m is changed in place.
func ResizeLinearMatMul(m *Model) (int, error) {
	if m == nil || m.Graph() == nil {
		return 0, fmt.Errorf("%w: model has no graph", ErrInvalidModel)
	}
	if m.Opset("") < 13 {
		return 0, nil
	}
	g := m.Graph()
	inits := constants(g)
	factors := make(map[*onnxpb.NodeProto]int64)
	var types map[string]int32
	for _, n := range g.GetNode() {
		s := lastAxisUpsampling(n, inits)
		if s == 0 {
			continue
		}
		if types == nil {
			types = elemTypes(g)
		}
		if types[n.GetInput()[0]] == int32(onnxpb.TensorProto_FLOAT) { // the weights' type
			factors[n] = s
		}
	}
	if len(factors) == 0 {
		return 0, nil
	}

	fresh := namer(g)
	ints := func(base string, v ...int64) string {
		name := fresh(base)
		g.Initializer = append(g.Initializer, Int64Tensor(name, []int64{int64(len(v))}, v))
		return name
	}
	node := func(op string, in []string, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: fresh(out + "_" + op), OpType: op, Input: in, Output: []string{out}, Attribute: attrs}
	}
	last := ints("mynah_resize_last_axis", -1)
	zero, one, two := ints("mynah_resize_0", 0), ints("mynah_resize_1", 1), ints("mynah_resize_2", 2)
	minus1, minus2 := ints("mynah_resize_minus1", -1), ints("mynah_resize_minus2", -2)
	end := ints("mynah_resize_end", math.MaxInt64)
	weights := make(map[int64]string) // one [3, s] table per factor

	nodes := make([]*onnxpb.NodeProto, 0, len(g.GetNode())+16*len(factors))
	for _, n := range g.GetNode() {
		s, ok := factors[n]
		if !ok {
			nodes = append(nodes, n)
			continue
		}
		if weights[s] == "" {
			weights[s] = fresh("mynah_resize_linear_x" + strconv.FormatInt(s, 10))
			g.Initializer = append(g.Initializer, Float32Tensor(weights[s], []int64{3, s}, linearTaps(s)))
		}
		x, out := n.GetInput()[0], n.GetOutput()[0]
		v := func(suffix string) string { return fresh(out + "_" + suffix) }
		shape, rank, lessOne, zeros, pads, padded := v("in_shape"), v("rank"), v("rank_1"), v("pad_zeros"), v("pads"), v("padded")
		taps, product, lead, dims := v("taps"), v("taps_product"), v("lead_dims"), v("dims")
		shifted := [3]string{v("left"), v("mid"), v("right")}
		nodes = append(nodes,
			node("Shape", []string{x}, shape),
			node("Shape", []string{shape}, rank),
			// Pad's pads: a begin per axis, then an end per axis, all 0
			// but the last axis's 1s.
			node("Sub", []string{rank, one}, lessOne),
			node("ConstantOfShape", []string{lessOne}, zeros, AttrTensor("value", Int64Tensor("", []int64{1}, []int64{0}))),
			node("Concat", []string{zeros, one, zeros, one}, pads, AttrInt("axis", 0)),
			node("Pad", []string{x, pads}, padded, AttrString("mode", "edge")), // [..., F+2]
		)
		for i, r := range [3][2]string{{zero, minus2}, {one, minus1}, {two, end}} {
			sl := v("shift_" + strconv.Itoa(i))
			nodes = append(nodes,
				node("Slice", []string{padded, r[0], r[1], last}, sl), // x[i-1], x[i], x[i+1]: [..., F]
				node("Unsqueeze", []string{sl, last}, shifted[i]))     // [..., F, 1]
		}
		nodes = append(nodes,
			node("Concat", shifted[:], taps, AttrInt("axis", -1)), // [..., F, 3]
			node("MatMul", []string{taps, weights[s]}, product),   // [..., F, s]
			node("Slice", []string{shape, zero, minus1, zero}, lead),
			node("Concat", []string{lead, minus1}, dims, AttrInt("axis", 0)),
			&onnxpb.NodeProto{Name: n.GetName(), OpType: "Reshape", Input: []string{product, dims}, Output: []string{out}}, // [..., F·s]
		)
	}
	g.Node = nodes
	return len(factors), nil
}

// linearTaps is the [3, s] weights of ResizeLinearMatMul: row 0 for
// x[i-1], row 1 for x[i], row 2 for x[i+1], column k for output sample
// i·s + k. Half-pixel coordinates put sample k at i + (k + 0.5)/s − 0.5.
func linearTaps(s int64) []float32 {
	w := make([]float32, 3*s)
	for k := range s {
		d := (float64(k)+0.5)/float64(s) - 0.5
		w[k] = float32(max(-d, 0))
		w[s+k] = float32(1 - math.Abs(d))
		w[2*s+k] = float32(max(d, 0))
	}
	return w
}

// lastAxisUpsampling returns the factor of n when ResizeLinearMatMul
// rewrites it, else 0.
func lastAxisUpsampling(n *onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto) int64 {
	in := n.GetInput()
	if n.GetOpType() != "Resize" || !isDefaultDomain(n.GetDomain()) || len(in) < 3 || len(in) > 4 || in[0] == "" ||
		len(n.GetOutput()) != 1 || n.GetOutput()[0] == "" {
		return 0
	}
	if len(in) == 4 && in[3] != "" {
		return 0 // sizes
	}
	for _, a := range n.GetAttribute() {
		switch a.GetName() {
		case "mode":
			if string(a.GetS()) != "linear" {
				return 0
			}
		case "coordinate_transformation_mode":
			if string(a.GetS()) != "half_pixel" {
				return 0
			}
		case "antialias", "exclude_outside":
			if a.GetI() != 0 {
				return 0
			}
		case "cubic_coeff_a", "nearest_mode", "extrapolation_value":
		default:
			return 0 // keep_aspect_ratio_policy and axes, and anything newer
		}
	}
	if !hasAttr(n, "mode") {
		return 0 // nearest; half_pixel is the default coordinate mode
	}
	t := inits[in[2]]
	if t == nil || t.GetDataType() != int32(onnxpb.TensorProto_FLOAT) || len(t.GetDims()) != 1 {
		return 0
	}
	scales, err := Float32Data(t)
	if err != nil || len(scales) == 0 {
		return 0
	}
	for _, v := range scales[:len(scales)-1] {
		if v != 1 {
			return 0
		}
	}
	s := scales[len(scales)-1]
	if s < 2 || s > 1<<16 || s != float32(math.Trunc(float64(s))) {
		return 0
	}
	return int64(s)
}

func hasAttr(n *onnxpb.NodeProto, name string) bool {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return true
		}
	}
	return false
}

// sameTypeOps are the default-domain ops whose first output has the
// element type of their first input (for Where, of its second).
var sameTypeOps = map[string]bool{
	"Identity": true, "Unsqueeze": true, "Squeeze": true, "Reshape": true, "Flatten": true, "Transpose": true,
	"Concat": true, "Slice": true, "Gather": true, "GatherElements": true, "Expand": true, "Tile": true, "Pad": true,
	"Resize": true, "Split": true, "Add": true, "Sub": true, "Mul": true, "Div": true, "Pow": true, "Neg": true,
	"Abs": true, "Relu": true, "LeakyRelu": true, "Sigmoid": true, "Tanh": true, "Exp": true, "Log": true,
	"Sqrt": true, "Sin": true, "Cos": true, "Floor": true, "Ceil": true, "Round": true, "Clip": true, "Max": true,
	"Min": true, "MatMul": true, "Conv": true, "ConvTranspose": true, "ReduceSum": true, "ReduceMean": true,
	"ReduceMax": true, "ReduceMin": true, "ReduceSumSquare": true, "CumSum": true, "Softmax": true, "Softplus": true,
	"Erf": true, "Reciprocal": true, "Sign": true, "Mod": true, "Range": true, "Where": true,
}

// elemTypes is the element type of every value of g's main graph that
// can be told without running it: declared (inputs, initializers,
// value_info), set by Cast, or kept from an input by sameTypeOps. A value
// missing from the map has a type not known here.
func elemTypes(g *onnxpb.GraphProto) map[string]int32 {
	types := make(map[string]int32)
	for _, v := range g.GetInput() {
		types[v.GetName()] = v.GetType().GetTensorType().GetElemType()
	}
	for _, v := range g.GetValueInfo() {
		types[v.GetName()] = v.GetType().GetTensorType().GetElemType()
	}
	for _, t := range g.GetInitializer() {
		if _, ok := types[t.GetName()]; !ok {
			types[t.GetName()] = t.GetDataType()
		}
	}
	for _, n := range g.GetNode() {
		if !isDefaultDomain(n.GetDomain()) || len(n.GetOutput()) == 0 || n.GetOutput()[0] == "" {
			continue
		}
		var dt int32
		switch op, in := n.GetOpType(), n.GetInput(); {
		case op == "Cast":
			for _, a := range n.GetAttribute() {
				if a.GetName() == "to" {
					dt = int32(a.GetI())
				}
			}
		case op == "Where" && len(in) == 3:
			dt = types[in[1]]
		case sameTypeOps[op] && len(in) > 0:
			dt = types[in[0]]
		}
		if dt != 0 {
			for _, out := range n.GetOutput() {
				if out != "" {
					types[out] = dt
				}
			}
		}
	}
	delete(types, "")
	return types
}
