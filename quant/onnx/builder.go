package onnx

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Graph builds an ONNX graph node by node. Because a node can only read
// names that already exist, a graph built this way is in topological order
// by construction; a name defined twice or read before it exists is recorded
// as the first error and returned by Model (or Err), so call sites stay
// free of error plumbing.
type Graph struct {
	p      *onnxpb.GraphProto
	names  map[string]bool
	consts map[string]string
	fresh  int
	err    error
}

// Dim is one dimension of an input or output: a fixed size, or a named
// dynamic one.
type Dim struct {
	Value int64
	Param string
}

// Fixed returns a dimension of size n.
func Fixed(n int64) Dim { return Dim{Value: n} }

// Dynamic returns a dimension whose size is given at run time.
func Dynamic(param string) Dim { return Dim{Param: param} }

// NewGraph returns an empty graph.
func NewGraph(name string) *Graph {
	return &Graph{
		p:      &onnxpb.GraphProto{Name: name},
		names:  make(map[string]bool),
		consts: make(map[string]string),
	}
}

// Err returns the first error recorded while building.
func (g *Graph) Err() error { return g.err }

func (g *Graph) fail(format string, args ...any) {
	if g.err == nil {
		g.err = fmt.Errorf("%w: "+format, append([]any{ErrGraph}, args...)...)
	}
}

func (g *Graph) define(name string) {
	if name == "" {
		g.fail("empty value name")
		return
	}
	if g.names[name] {
		g.fail("%q is defined twice", name)
		return
	}
	g.names[name] = true
}

// Fresh returns a name starting with base that is not yet used.
func (g *Graph) Fresh(base string) string {
	for {
		g.fresh++
		n := base + "_" + strconv.Itoa(g.fresh)
		if !g.names[n] {
			return n
		}
	}
}

func valueInfo(name string, dt DataType, dims []Dim) *onnxpb.ValueInfoProto {
	shape := &onnxpb.TensorShapeProto{}
	for _, d := range dims {
		dim := &onnxpb.TensorShapeProto_Dimension{}
		if d.Param != "" {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: d.Param}
		} else {
			dim.Value = &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: d.Value}
		}
		shape.Dim = append(shape.Dim, dim)
	}
	return &onnxpb.ValueInfoProto{
		Name: name,
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{
			TensorType: &onnxpb.TypeProto_Tensor{ElemType: int32(dt), Shape: shape},
		}},
	}
}

// Input declares a graph input and returns its name.
func (g *Graph) Input(name string, dt DataType, dims ...Dim) string {
	g.define(name)
	g.p.Input = append(g.p.Input, valueInfo(name, dt, dims))
	return name
}

// Output declares an existing value as a graph output.
func (g *Graph) Output(name string, dt DataType, dims ...Dim) {
	if !g.names[name] {
		g.fail("output %q is never produced", name)
	}
	g.p.Output = append(g.p.Output, valueInfo(name, dt, dims))
}

// Initializer adds a constant tensor and returns its name. An empty name in
// t is replaced by a fresh one.
func (g *Graph) Initializer(t *onnxpb.TensorProto) string {
	if t.Name == "" {
		t.Name = g.Fresh("const")
	}
	g.define(t.Name)
	g.p.Initializer = append(g.p.Initializer, t)
	return t.Name
}

// Float32s adds a float32 initializer (name "" for a fresh one).
func (g *Graph) Float32s(name string, dims []int64, v []float32) string {
	return g.Initializer(Float32Tensor(name, dims, v))
}

// Int64s adds an int64 initializer (name "" for a fresh one).
func (g *Graph) Int64s(name string, dims []int64, v []int64) string {
	return g.Initializer(Int64Tensor(name, dims, v))
}

// Scalar returns a float32 scalar constant, shared by every use of the same
// value.
func (g *Graph) Scalar(v float32) string {
	key := "f" + strconv.FormatUint(uint64(math.Float32bits(v)), 16)
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := g.Float32s("", nil, []float32{v})
	g.consts[key] = n
	return n
}

// ScalarInt returns an int64 scalar constant, shared like Scalar.
func (g *Graph) ScalarInt(v int64) string {
	key := "i" + strconv.FormatInt(v, 10)
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := g.Int64s("", nil, []int64{v})
	g.consts[key] = n
	return n
}

// Ints returns a 1-D int64 constant (axes, shapes, starts), shared like
// Scalar.
func (g *Graph) Ints(v ...int64) string {
	key := "v"
	for _, x := range v {
		key += "," + strconv.FormatInt(x, 10)
	}
	if n, ok := g.consts[key]; ok {
		return n
	}
	n := g.Int64s("", []int64{int64(len(v))}, v)
	g.consts[key] = n
	return n
}

// Node appends a node that reads inputs and writes outputs. Every non-empty
// input must already exist.
func (g *Graph) Node(op string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) {
	g.node("", op, inputs, outputs, attrs)
}

// NodeIn is Node for an operator of another domain (com.microsoft, ...).
func (g *Graph) NodeIn(domain, op string, inputs, outputs []string, attrs ...*onnxpb.AttributeProto) {
	g.node(domain, op, inputs, outputs, attrs)
}

func (g *Graph) node(domain, op string, inputs, outputs []string, attrs []*onnxpb.AttributeProto) {
	if op == "" {
		g.fail("node without op_type")
	}
	for _, in := range inputs {
		if in != "" && !g.names[in] {
			g.fail("%s reads %q before anything produces it", op, in)
		}
	}
	for _, out := range outputs {
		if out != "" {
			g.define(out)
		}
	}
	g.p.Node = append(g.p.Node, &onnxpb.NodeProto{
		Name:      g.Fresh(op),
		OpType:    op,
		Domain:    domain,
		Input:     append([]string(nil), inputs...),
		Output:    append([]string(nil), outputs...),
		Attribute: attrs,
	})
}

// Op appends a node with one output and returns the output's fresh name, so
// expressions nest: g.Op("Mul", g.Op("Sin", x), a).
func (g *Graph) Op(op string, inputs []string, attrs ...*onnxpb.AttributeProto) string {
	out := g.Fresh(op)
	g.node("", op, inputs, []string{out}, attrs)
	return out
}

// OpN appends a node with n outputs and returns their fresh names.
func (g *Graph) OpN(op string, n int, inputs []string, attrs ...*onnxpb.AttributeProto) []string {
	outs := make([]string, n)
	for i := range outs {
		outs[i] = g.Fresh(op)
	}
	g.node("", op, inputs, outs, attrs)
	return outs
}

// Proto returns the graph built so far, for use as a subgraph attribute.
func (g *Graph) Proto() (*onnxpb.GraphProto, error) {
	if g.err != nil {
		return nil, g.err
	}
	return g.p, nil
}

// ModelOptions describe the model wrapped around a built graph. A nil
// *ModelOptions means IR version 8, default-domain opset 17.
type ModelOptions struct {
	IRVersion int64
	Opsets    map[string]int64 // domain → version; "" is the default domain
	Producer  string
	Version   string
	Doc       string
	Metadata  map[string]string
}

// Model wraps the graph into a checked model with its Digest set.
func (g *Graph) Model(opts *ModelOptions) (*Model, error) {
	if g.err != nil {
		return nil, g.err
	}
	var o ModelOptions
	if opts != nil {
		o = *opts
	}
	if o.IRVersion == 0 {
		o.IRVersion = 8
	}
	if o.Opsets == nil {
		o.Opsets = map[string]int64{"": 17}
	}
	if o.Producer == "" {
		o.Producer = "mynah"
	}
	mp := &onnxpb.ModelProto{
		IrVersion:       o.IRVersion,
		ProducerName:    o.Producer,
		ProducerVersion: o.Version,
		DocString:       o.Doc,
		Graph:           g.p,
	}
	for _, d := range sortedKeys(o.Opsets) {
		mp.OpsetImport = append(mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: d, Version: o.Opsets[d]})
	}
	for _, k := range sortedKeys(o.Metadata) {
		mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: k, Value: o.Metadata[k]})
	}
	m := &Model{Proto: mp}
	if err := Check(m, nil); err != nil {
		return nil, err
	}
	if _, err := Encode(m); err != nil {
		return nil, err
	}
	return m, nil
}

// Float32Tensor returns a float32 tensor stored as little-endian raw_data.
func Float32Tensor(name string, dims []int64, v []float32) *onnxpb.TensorProto {
	raw := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(raw[4*i:], math.Float32bits(x))
	}
	return &onnxpb.TensorProto{Name: name, Dims: append([]int64(nil), dims...), DataType: int32(Float), RawData: raw}
}

// Int64Tensor returns an int64 tensor stored as little-endian raw_data.
func Int64Tensor(name string, dims []int64, v []int64) *onnxpb.TensorProto {
	raw := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(raw[8*i:], uint64(x))
	}
	return &onnxpb.TensorProto{Name: name, Dims: append([]int64(nil), dims...), DataType: int32(Int64), RawData: raw}
}

// Float32Data returns a float tensor's values, from raw_data or float_data.
func Float32Data(t *onnxpb.TensorProto) ([]float32, error) {
	if DataType(t.GetDataType()) != Float {
		return nil, fmt.Errorf("tensor %q is %s, not FLOAT", t.GetName(), DataType(t.GetDataType()))
	}
	if raw := t.GetRawData(); raw != nil {
		if len(raw)%4 != 0 {
			return nil, fmt.Errorf("tensor %q: raw_data length %d is not a multiple of 4", t.GetName(), len(raw))
		}
		v := make([]float32, len(raw)/4)
		for i := range v {
			v[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return v, nil
	}
	return append([]float32(nil), t.GetFloatData()...), nil
}

// Attribute constructors.

// AttrInt returns an INT attribute.
func AttrInt(name string, v int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INT, I: v}
}

// AttrFloat returns a FLOAT attribute.
func AttrFloat(name string, v float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_FLOAT, F: v}
}

// AttrString returns a STRING attribute.
func AttrString(name, v string) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_STRING, S: []byte(v)}
}

// AttrInts returns an INTS attribute.
func AttrInts(name string, v ...int64) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_INTS, Ints: v}
}

// AttrFloats returns a FLOATS attribute.
func AttrFloats(name string, v ...float32) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_FLOATS, Floats: v}
}

// AttrTensor returns a TENSOR attribute.
func AttrTensor(name string, t *onnxpb.TensorProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_TENSOR, T: t}
}

// AttrGraph returns a GRAPH attribute (If branches, Loop bodies).
func AttrGraph(name string, sub *onnxpb.GraphProto) *onnxpb.AttributeProto {
	return &onnxpb.AttributeProto{Name: name, Type: onnxpb.AttributeProto_GRAPH, G: sub}
}

func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
