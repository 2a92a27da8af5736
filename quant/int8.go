package quant

import (
	"math"
	"strconv"

	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// qkey names one quantized copy of a weight: the same tensor quantized the
// same way is stored once however many nodes read it.
type qkey struct {
	t    *onnxpb.TensorProto
	kind string
}

// SymmetricInt8 quantizes a [rows, cols] row-major matrix per column to
// integers in [-qmax, qmax] with value ≈ q × scale[col]. An all-zero
// column gets scale 1 so that dequantizing never divides by zero.
func SymmetricInt8(w []float32, rows, cols, qmax int) (q []int8, scale []float32) {
	scale = make([]float32, cols)
	for c := range cols {
		var m float32
		for r := range rows {
			m = max(m, float32(math.Abs(float64(w[r*cols+c]))))
		}
		scale[c] = 1
		if m > 0 {
			scale[c] = m / float32(qmax)
		}
	}
	q = make([]int8, len(w))
	for r := range rows {
		for c := range cols {
			v := math.RoundToEven(float64(w[r*cols+c] / scale[c]))
			q[r*cols+c] = int8(max(-float64(qmax), min(float64(qmax), v)))
		}
	}
	return q, scale
}

// matMulQMax is the largest weight magnitude MatMulInteger weights take
// in the chosen format; convolutions and embedding tables always take
// 127 (see Options.Int8Format).
func (rw *rewriter) matMulQMax() int {
	if rw.o.Int8Format == cpuclass.ReducedRange {
		return 63
	}
	return 127
}

// transposed returns w [rows, cols] as [cols, rows].
func transposed(w []float32, rows, cols int) []float32 {
	t := make([]float32, len(w))
	for r := range rows {
		for c := range cols {
			t[c*rows+r] = w[r*cols+c]
		}
	}
	return t
}

// matrix returns a 2-D weight as [K, N], transposing it for transB.
func (rw *rewriter) matrix(t *onnxpb.TensorProto, transB bool) ([]float32, int, int, error) {
	v, err := rw.floats(t)
	if err != nil {
		return nil, 0, 0, err
	}
	r, c := int(t.GetDims()[0]), int(t.GetDims()[1])
	if transB {
		return transposed(v, r, c), c, r, nil
	}
	return v, r, c, nil
}

// int8Weight returns the names of t's quantized values [K, N] and scales
// [N], and the weight zero point MatMulInteger takes ("" for signed
// formats), making them on first use in the graph that owns t.
func (rw *rewriter) int8Weight(u use, t *onnxpb.TensorProto, owner *scope, transB bool) ([]string, error) {
	key := qkey{t, "int8"}
	if transB {
		key.kind = "int8T"
	}
	if names, ok := rw.qcache[key]; ok {
		return names, nil
	}
	w, k, n, err := rw.matrix(t, transB)
	if err != nil {
		return nil, err
	}
	q, scale := SymmetricInt8(w, k, n, rw.matMulQMax())
	// Unsigned weights are the same values offset by 128, with zero
	// point 128.
	dtype, suffix, zp, offset := onnx.Int8, "_int8", "", 0
	if rw.o.Int8Format == cpuclass.Unsigned {
		dtype, suffix, zp, offset = onnx.Uint8, "_uint8", rw.zeroPoint128(), 128
	}
	raw := make([]byte, len(q))
	for i, x := range q {
		raw[i] = byte(int(x) + offset)
	}
	wq := &onnxpb.TensorProto{Name: rw.name(t.GetName() + suffix), Dims: []int64{int64(k), int64(n)},
		DataType: int32(dtype), RawData: raw}
	ws := onnx.Float32Tensor(rw.name(t.GetName()+"_scale"), []int64{int64(n)}, scale)
	owner.added = append(owner.added, wq, ws)
	names := []string{wq.Name, ws.Name, zp}
	rw.qcache[key] = names
	rw.addRow(u, t, int64(len(raw)+4*n), ModeInt8)
	rw.report.Int8Format = rw.o.Int8Format
	rw.step(t)
	return names, nil
}

// activation returns the uint8 value, scale and zero point of activation
// x, adding one DynamicQuantizeLinear per activation and graph.
func (rw *rewriter) activation(s *scope, x string) ([3]string, []*onnxpb.NodeProto) {
	if q, ok := s.dql[x]; ok {
		return q, nil
	}
	q := [3]string{rw.name(x + "_quant"), rw.name(x + "_scale"), rw.name(x + "_zero_point")}
	s.dql[x] = q
	return q, []*onnxpb.NodeProto{rw.node("DynamicQuantizeLinear", []string{x}, q[:])}
}

// gemmParams returns Gemm's alpha, beta and transB (MatMul: 1, 0, false).
func gemmParams(n *onnxpb.NodeProto) (alpha, beta float32, transB bool) {
	if n.GetOpType() != "Gemm" {
		return 1, 0, false
	}
	return attrFloat(n, "alpha", 1), attrFloat(n, "beta", 1), attrInt(n, "transB", 0) != 0
}

// scaled returns the name of scale × alpha: the scale itself when alpha is
// 1, else a per-node copy.
func (rw *rewriter) scaled(s *scope, scaleName string, alpha float32) (string, error) {
	if alpha == 1 {
		return scaleName, nil
	}
	t, _ := s.constant(scaleName)
	if t == nil {
		t = rw.findAdded(scaleName)
	}
	v, err := onnx.Float32Data(t)
	if err != nil {
		return "", err
	}
	for i := range v {
		v[i] *= alpha
	}
	c := onnx.Float32Tensor(rw.name(scaleName+"_alpha"), t.GetDims(), v)
	s.added = append(s.added, c)
	return c.Name, nil
}

// findAdded finds an initializer made by this rewrite.
func (rw *rewriter) findAdded(name string) *onnxpb.TensorProto {
	for _, s := range rw.scopes {
		for _, t := range s.added {
			if t.GetName() == name {
				return t
			}
		}
	}
	return nil
}

// gemmBias appends Gemm's β·C to the product pre, writing out. Without C
// (or β = 0) pre is renamed to out by the caller's choice of names.
func (rw *rewriter) gemmBias(s *scope, n *onnxpb.NodeProto, pre, out string, beta float32) ([]*onnxpb.NodeProto, error) {
	c := n.GetInput()[2]
	bias := c
	var nodes []*onnxpb.NodeProto
	if beta != 1 {
		if t, _ := s.constant(c); t != nil && onnx.DataType(t.GetDataType()) == onnx.Float {
			v, err := rw.floats(t)
			if err != nil {
				return nil, err
			}
			b := make([]float32, len(v))
			for i, x := range v {
				b[i] = beta * x
			}
			bt := onnx.Float32Tensor(rw.name(c+"_beta"), t.GetDims(), b)
			s.added = append(s.added, bt)
			bias = bt.Name
		} else {
			bt := onnx.Float32Tensor(rw.name("beta"), nil, []float32{beta})
			s.added = append(s.added, bt)
			bias = rw.name(c + "_beta")
			nodes = append(nodes, rw.node("Mul", []string{c, bt.Name}, []string{bias}))
		}
	}
	return append(nodes, rw.node("Add", []string{pre, bias}, []string{out})), nil
}

func hasBias(n *onnxpb.NodeProto, beta float32) bool {
	return n.GetOpType() == "Gemm" && len(n.GetInput()) > 2 && n.GetInput()[2] != "" && beta != 0
}

// matMulInt8 rewrites MatMul(x, W) or Gemm(x, W, C) as
// DynamicQuantizeLinear(x) → MatMulInteger → Cast → Mul(x_scale × w_scale) [→ Add C].
func (rw *rewriter) matMulInt8(s *scope, n *onnxpb.NodeProto) ([]*onnxpb.NodeProto, error) {
	t, owner := s.constant(n.GetInput()[1])
	alpha, beta, transB := gemmParams(n)
	w, err := rw.int8Weight(use{node: n, slot: 1}, t, owner, transB)
	if err != nil {
		return nil, err
	}
	q, nodes := rw.activation(s, n.GetInput()[0])
	out := n.GetOutput()[0]
	y32 := rw.name(out + "_int32")
	yf := rw.name(out + "_float")
	scale, err := rw.scaled(s, w[1], alpha)
	if err != nil {
		return nil, err
	}
	sc := rw.name(out + "_scale")
	mmIn := []string{q[0], w[0], q[2]}
	if w[2] != "" {
		mmIn = append(mmIn, w[2])
	}
	nodes = append(nodes,
		rw.node("MatMulInteger", mmIn, []string{y32}),
		rw.node("Cast", []string{y32}, []string{yf}, onnx.AttrInt("to", int64(onnx.Float))),
		rw.node("Mul", []string{q[1], scale}, []string{sc}))
	if !hasBias(n, beta) {
		return append(nodes, rw.node("Mul", []string{yf, sc}, []string{out})), nil
	}
	pre := rw.name(out + "_product")
	nodes = append(nodes, rw.node("Mul", []string{yf, sc}, []string{pre}))
	tail, err := rw.gemmBias(s, n, pre, out, beta)
	return append(nodes, tail...), err
}

// convInt8 rewrites Conv(x, W, B) as DynamicQuantizeLinear(x) →
// ConvInteger → Cast → Mul(x_scale × w_scale[channel]) [→ Add B]. ONNX
// Runtime's ConvInteger takes uint8 weights with a scalar zero point, so
// the symmetric per-channel values are stored offset by 128.
func (rw *rewriter) convInt8(s *scope, n *onnxpb.NodeProto) ([]*onnxpb.NodeProto, error) {
	t, owner := s.constant(n.GetInput()[1])
	w, err := rw.convWeight(use{node: n, slot: 1}, t, owner)
	if err != nil {
		return nil, err
	}
	zp := rw.zeroPoint128()
	q, nodes := rw.activation(s, n.GetInput()[0])
	out := n.GetOutput()[0]
	y32 := rw.name(out + "_int32")
	yf := rw.name(out + "_float")
	sc := rw.name(out + "_scale")
	nodes = append(nodes,
		rw.node("ConvInteger", []string{q[0], w[0], q[2], zp}, []string{y32}, n.GetAttribute()...),
		rw.node("Cast", []string{y32}, []string{yf}, onnx.AttrInt("to", int64(onnx.Float))),
		rw.node("Mul", []string{q[1], w[1]}, []string{sc}))
	in := n.GetInput()
	if len(in) < 3 || in[2] == "" {
		return append(nodes, rw.node("Mul", []string{yf, sc}, []string{out})), nil
	}
	bt, bowner := s.constant(in[2])
	bias, err := rw.convBias(bt, bowner, len(t.GetDims()))
	if err != nil {
		return nil, err
	}
	pre := rw.name(out + "_product")
	return append(nodes,
		rw.node("Mul", []string{yf, sc}, []string{pre}),
		rw.node("Add", []string{pre, bias}, []string{out})), nil
}

// convWeight returns t's uint8 values (q+128, same shape) and its
// per-output-channel scales shaped [M, 1, ...] to broadcast over the output.
func (rw *rewriter) convWeight(u use, t *onnxpb.TensorProto, owner *scope) ([]string, error) {
	key := qkey{t, "conv"}
	if names, ok := rw.qcache[key]; ok {
		return names, nil
	}
	v, err := rw.floats(t)
	if err != nil {
		return nil, err
	}
	m := int(t.GetDims()[0])
	per := len(v) / max(m, 1)
	// Rows are output channels: quantize the transposed view per column.
	q, scale := SymmetricInt8(transposed(v, m, per), per, m, 127)
	raw := make([]byte, len(v))
	for ch := range m {
		for j := range per {
			raw[ch*per+j] = byte(int(q[j*m+ch]) + 128)
		}
	}
	wq := &onnxpb.TensorProto{Name: rw.name(t.GetName() + "_uint8"), Dims: t.GetDims(), DataType: int32(onnx.Uint8), RawData: raw}
	// Scales and bias are [M, 1, ...] with one axis per spatial axis, so
	// they broadcast over the output [batch, M, spatial...].
	sdims := make([]int64, len(t.GetDims())-1)
	for i := range sdims {
		sdims[i] = 1
	}
	sdims[0] = int64(m)
	ws := onnx.Float32Tensor(rw.name(t.GetName()+"_scale"), sdims, scale)
	owner.added = append(owner.added, wq, ws)
	names := []string{wq.Name, ws.Name}
	rw.qcache[key] = names
	rw.addRow(u, t, int64(len(raw)+4*m), ModeInt8)
	rw.step(t)
	return names, nil
}

// convBias returns a copy of bias [M] shaped [M, 1, ...] for a weight of
// the given rank.
func (rw *rewriter) convBias(t *onnxpb.TensorProto, owner *scope, rank int) (string, error) {
	key := qkey{t, "bias" + strconv.Itoa(rank)}
	if names, ok := rw.qcache[key]; ok {
		return names[0], nil
	}
	v, err := rw.floats(t)
	if err != nil {
		return "", err
	}
	dims := make([]int64, rank-1)
	for i := range dims {
		dims[i] = 1
	}
	dims[0] = int64(len(v))
	b := onnx.Float32Tensor(rw.name(t.GetName()+"_channels"), dims, v)
	owner.added = append(owner.added, b)
	rw.qcache[key] = []string{b.Name}
	rw.progressed[t] = true // the [M] original is dropped if nothing else reads it
	return b.Name, nil
}

// zeroPoint128 returns a uint8 scalar 128 in the main graph.
func (rw *rewriter) zeroPoint128() string {
	key := qkey{nil, "zp128"}
	if names, ok := rw.qcache[key]; ok {
		return names[0]
	}
	root := rw.scopes[rw.mp.GetGraph()]
	zp := &onnxpb.TensorProto{Name: rw.name("weight_zero_point"), DataType: int32(onnx.Uint8), RawData: []byte{128}}
	root.added = append(root.added, zp)
	rw.qcache[key] = []string{zp.Name}
	return zp.Name
}

// gatherInt8 rewrites Gather(table, ids) as
// Cast(Gather(int8 rows, ids)) × Gather(row scales, ids).
func (rw *rewriter) gatherInt8(s *scope, n *onnxpb.NodeProto) ([]*onnxpb.NodeProto, error) {
	t, owner := s.constant(n.GetInput()[0])
	key := qkey{t, "rows"}
	names, ok := rw.qcache[key]
	if !ok {
		v, err := rw.floats(t)
		if err != nil {
			return nil, err
		}
		rows, cols := int(t.GetDims()[0]), int(t.GetDims()[1])
		q, scale := SymmetricInt8(transposed(v, rows, cols), cols, rows, 127)
		raw := make([]byte, len(v))
		for r := range rows {
			for c := range cols {
				raw[r*cols+c] = byte(q[c*rows+r])
			}
		}
		wq := &onnxpb.TensorProto{Name: rw.name(t.GetName() + "_int8"), Dims: t.GetDims(), DataType: int32(onnx.Int8), RawData: raw}
		ws := onnx.Float32Tensor(rw.name(t.GetName()+"_scale"), []int64{int64(rows), 1}, scale)
		owner.added = append(owner.added, wq, ws)
		names = []string{wq.Name, ws.Name}
		rw.qcache[key] = names
		rw.addRow(use{node: n}, t, int64(len(raw)+4*rows), ModeInt8)
		rw.step(t)
	}
	out := n.GetOutput()[0]
	ids := n.GetInput()[1]
	gq, gf, gs := rw.name(out+"_int8"), rw.name(out+"_float"), rw.name(out+"_scale")
	return []*onnxpb.NodeProto{
		rw.node("Gather", []string{names[0], ids}, []string{gq}),
		rw.node("Cast", []string{gq}, []string{gf}, onnx.AttrInt("to", int64(onnx.Float))),
		rw.node("Gather", []string{names[1], ids}, []string{gs}),
		rw.node("Mul", []string{gf, gs}, []string{out}),
	}, nil
}
