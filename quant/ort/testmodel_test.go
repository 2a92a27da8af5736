package ort

import (
	"encoding/binary"
	"math"

	"google.golang.org/protobuf/encoding/protowire"
)

// This file writes tiny ONNX models byte by byte with protowire, so the tests
// of this package depend on nothing but ONNX Runtime itself.

// ONNX TensorProto.DataType values used by the test models.
const (
	onnxFloat   = 1
	onnxUint8   = 2
	onnxInt8    = 3
	onnxInt32   = 6
	onnxInt64   = 7
	onnxString  = 8
	onnxBool    = 9
	onnxFloat16 = 10
	onnxDouble  = 11
)

// dim is a model dimension: an int64 for a fixed size, a string for a named
// dynamic one.
type dim any

type valueInfo struct {
	name  string
	elem  int
	dims  []dim
	shape bool // false leaves the shape out entirely (unknown rank)
}

func tensorValue(name string, elem int, dims ...dim) valueInfo {
	return valueInfo{name: name, elem: elem, dims: dims, shape: true}
}

type attribute struct {
	name string
	i    int64
}

type node struct {
	op      string
	inputs  []string
	outputs []string
	attrs   []attribute
}

type initializer struct {
	name string
	elem int
	dims []int64
	raw  []byte
}

type testModel struct {
	opset        int64
	nodes        []node
	inputs       []valueInfo
	outputs      []valueInfo
	initializers []initializer
	metadata     [][2]string
}

func (m testModel) bytes() []byte {
	var b []byte
	b = protowire.AppendTag(b, 1, protowire.VarintType) // ir_version
	b = protowire.AppendVarint(b, 8)
	b = appendString(b, 2, "mynah-ort-test") // producer_name
	opset := m.opset
	if opset == 0 {
		opset = 17
	}
	var op []byte
	op = appendString(op, 1, "")
	op = protowire.AppendTag(op, 2, protowire.VarintType)
	op = protowire.AppendVarint(op, uint64(opset))
	b = appendMessage(b, 8, op)
	b = appendMessage(b, 7, m.graph())
	for _, kv := range m.metadata {
		var e []byte
		e = appendString(e, 1, kv[0])
		e = appendString(e, 2, kv[1])
		b = appendMessage(b, 14, e)
	}
	return b
}

func (m testModel) graph() []byte {
	var g []byte
	for i, n := range m.nodes {
		var nb []byte
		for _, in := range n.inputs {
			nb = appendString(nb, 1, in)
		}
		for _, out := range n.outputs {
			nb = appendString(nb, 2, out)
		}
		nb = appendString(nb, 3, n.op+"_"+string(rune('a'+i)))
		nb = appendString(nb, 4, n.op)
		for _, a := range n.attrs {
			var ab []byte
			ab = appendString(ab, 1, a.name)
			ab = protowire.AppendTag(ab, 3, protowire.VarintType)
			ab = protowire.AppendVarint(ab, uint64(a.i))
			ab = protowire.AppendTag(ab, 20, protowire.VarintType)
			ab = protowire.AppendVarint(ab, 2) // AttributeType INT
			nb = appendMessage(nb, 5, ab)
		}
		g = appendMessage(g, 1, nb)
	}
	g = appendString(g, 2, "test")
	for _, in := range m.initializers {
		var tb []byte
		for _, d := range in.dims {
			tb = protowire.AppendTag(tb, 1, protowire.VarintType)
			tb = protowire.AppendVarint(tb, uint64(d))
		}
		tb = protowire.AppendTag(tb, 2, protowire.VarintType)
		tb = protowire.AppendVarint(tb, uint64(in.elem))
		tb = appendString(tb, 8, in.name)
		tb = protowire.AppendTag(tb, 9, protowire.BytesType)
		tb = protowire.AppendBytes(tb, in.raw)
		g = appendMessage(g, 5, tb)
	}
	for _, v := range m.inputs {
		g = appendMessage(g, 11, v.bytes())
	}
	for _, v := range m.outputs {
		g = appendMessage(g, 12, v.bytes())
	}
	return g
}

func (v valueInfo) bytes() []byte {
	var tt []byte
	tt = protowire.AppendTag(tt, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(v.elem))
	if v.shape {
		var shape []byte
		for _, d := range v.dims {
			var db []byte
			switch d := d.(type) {
			case int:
				db = protowire.AppendTag(db, 1, protowire.VarintType)
				db = protowire.AppendVarint(db, uint64(d))
			case string:
				db = appendString(db, 2, d)
			default:
				panic("dim must be int or string")
			}
			shape = appendMessage(shape, 1, db)
		}
		// An empty TensorShapeProto is a scalar, and must still be present.
		tt = protowire.AppendTag(tt, 2, protowire.BytesType)
		tt = protowire.AppendBytes(tt, shape)
	}
	var vb []byte
	vb = appendString(vb, 1, v.name)
	vb = appendMessage(vb, 2, appendMessage(nil, 1, tt))
	return vb
}

func appendString(b []byte, field protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendMessage(b []byte, field protowire.Number, msg []byte) []byte {
	b = protowire.AppendTag(b, field, protowire.BytesType)
	return protowire.AppendBytes(b, msg)
}

func float32Raw(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, f := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(f))
	}
	return b
}

func int64Raw(v []int64) []byte {
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], uint64(x))
	}
	return b
}

// addModel: z = x + y, float32 [N, 3] with N dynamic.
func addModel() testModel {
	return testModel{
		nodes:   []node{{op: "Add", inputs: []string{"x", "y"}, outputs: []string{"z"}}},
		inputs:  []valueInfo{tensorValue("x", onnxFloat, "N", 3), tensorValue("y", onnxFloat, "N", 3)},
		outputs: []valueInfo{tensorValue("z", onnxFloat, "N", 3)},
	}
}

// matMulWeights is the [4, 3] initializer of matMulModel, row major.
var matMulWeights = []float32{
	1, 2, 3,
	4, 5, 6,
	7, 8, 9,
	10, 11, 12,
}

// matMulModel: y = x · W with W an initializer; x float32 [batch, 4]; it
// carries custom metadata.
func matMulModel() testModel {
	return testModel{
		nodes:        []node{{op: "MatMul", inputs: []string{"x", "W"}, outputs: []string{"y"}}},
		inputs:       []valueInfo{tensorValue("x", onnxFloat, "batch", 4)},
		outputs:      []valueInfo{tensorValue("y", onnxFloat, "batch", 3)},
		initializers: []initializer{{name: "W", elem: onnxFloat, dims: []int64{4, 3}, raw: float32Raw(matMulWeights)}},
		metadata:     [][2]string{{"voice", "test"}, {"sample_rate", "22050"}},
	}
}

// idsModel: out = ids * 2 + offset, int64 [1, seq] plus a scalar int64
// offset, and a scalar output sum = ReduceSum(out) (keepdims 0).
func idsModel() testModel {
	return testModel{
		nodes: []node{
			{op: "Mul", inputs: []string{"ids", "two"}, outputs: []string{"doubled"}},
			{op: "Add", inputs: []string{"doubled", "offset"}, outputs: []string{"out"}},
			{op: "ReduceSum", inputs: []string{"out"}, outputs: []string{"sum"}, attrs: []attribute{{"keepdims", 0}}},
		},
		inputs:       []valueInfo{tensorValue("ids", onnxInt64, 1, "seq"), tensorValue("offset", onnxInt64)},
		outputs:      []valueInfo{tensorValue("out", onnxInt64, 1, "seq"), tensorValue("sum", onnxInt64)},
		initializers: []initializer{{name: "two", elem: onnxInt64, dims: []int64{1}, raw: int64Raw([]int64{2})}},
	}
}

// concatModel: present = Concat(past, new, axis 2) as in a KV cache,
// [1, 2, past|new, 4]; past may be zero-length.
func concatModel() testModel {
	return testModel{
		nodes: []node{{op: "Concat", inputs: []string{"past", "new"}, outputs: []string{"present"},
			attrs: []attribute{{"axis", 2}}}},
		inputs: []valueInfo{
			tensorValue("past", onnxFloat, 1, 2, "past_seq", 4),
			tensorValue("new", onnxFloat, 1, 2, "new_seq", 4),
		},
		outputs: []valueInfo{tensorValue("present", onnxFloat, 1, 2, "total_seq", 4)},
	}
}

// identityModel passes one tensor of each element type Tensor supports
// straight through, [2, ?].
func identityModel() testModel {
	types := []struct {
		name string
		elem int
	}{
		{"f16", onnxFloat16}, {"f64", onnxDouble}, {"i32", onnxInt32},
		{"i8", onnxInt8}, {"u8", onnxUint8}, {"b", onnxBool},
	}
	var m testModel
	for _, t := range types {
		m.nodes = append(m.nodes, node{op: "Identity", inputs: []string{t.name}, outputs: []string{t.name + "_out"}})
		m.inputs = append(m.inputs, tensorValue(t.name, t.elem, 2, "n"))
		m.outputs = append(m.outputs, tensorValue(t.name+"_out", t.elem, 2, "n"))
	}
	return m
}
