package quant

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Inspection summarizes a model: what it computes with and what its
// weights weigh.
type Inspection struct {
	// Ops counts nodes by operator, in all graphs; operators of another
	// domain are prefixed with it ("com.microsoft.MatMulNBits").
	Ops map[string]int
	// Nodes, Subgraphs and Initializers count what their names say.
	Nodes, Subgraphs, Initializers int
	// Parameters is the number of initializer elements.
	Parameters int64
	// WeightBytes is the initializers' stored size; BytesByDType splits it
	// by element type ("FLOAT", "FLOAT16", ...).
	WeightBytes  int64
	BytesByDType map[string]int64
	// BytesByOp attributes each initializer to the operator of its first
	// reader ("(unused)" when nothing reads it), so that a table shows
	// where a model's size is: Conv, MatMul, Gather, ...
	BytesByOp map[string]int64
	// External counts initializers whose data is in another file.
	External int
	// Opsets maps each imported domain ("" for the default) to its version.
	Opsets map[string]int64
	// Quantized is set when Quantize would refuse the model as already
	// quantized; QuantizedReason says why.
	Quantized       bool
	QuantizedReason string
}

// Inspect summarizes m. It reads only the model's structure, never
// external data.
func Inspect(m *onnx.Model) Inspection {
	in := Inspection{Ops: map[string]int{}, BytesByDType: map[string]int64{}, BytesByOp: map[string]int64{}, Opsets: map[string]int64{}}
	if m == nil || m.Proto == nil {
		return in
	}
	for _, o := range m.Proto.GetOpsetImport() {
		d := o.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		in.Opsets[d] = o.GetVersion()
	}
	// firstReader maps a name to the op of the first node reading it.
	firstReader := map[string]string{}
	walkGraphs(m.Proto.GetGraph(), func(g *onnxpb.GraphProto) {
		in.Subgraphs++
		for _, n := range g.GetNode() {
			in.Nodes++
			in.Ops[opName(n)]++
			for _, x := range n.GetInput() {
				if _, ok := firstReader[x]; !ok {
					firstReader[x] = opName(n)
				}
			}
		}
	})
	in.Subgraphs-- // the main graph is not a subgraph
	walkGraphs(m.Proto.GetGraph(), func(g *onnxpb.GraphProto) {
		for _, t := range g.GetInitializer() {
			in.Initializers++
			n, err := onnx.NumElements(t.GetDims())
			if err != nil {
				continue
			}
			in.Parameters += n
			dt := onnx.DataType(t.GetDataType())
			size := (n*int64(dt.Bits()) + 7) / 8
			if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
				in.External++
			}
			in.WeightBytes += size
			in.BytesByDType[dt.String()] += size
			op, ok := firstReader[t.GetName()]
			if !ok {
				op = "(unused)"
			}
			in.BytesByOp[op] += size
		}
	})
	if why := quantizedReason(m.Proto); why != "" {
		in.Quantized, in.QuantizedReason = true, why
	}
	return in
}

func opName(n *onnxpb.NodeProto) string {
	if d := n.GetDomain(); d != "" && d != "ai.onnx" {
		return d + "." + n.GetOpType()
	}
	return n.GetOpType()
}

// String formats the inspection as the tables `mynah quantize inspect` prints.
func (in Inspection) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "nodes %d (subgraphs %d), initializers %d, parameters %d, weights %s",
		in.Nodes, in.Subgraphs, in.Initializers, in.Parameters, humanBytes(in.WeightBytes))
	if in.External > 0 {
		fmt.Fprintf(&b, " (%d external)", in.External)
	}
	b.WriteString("\nopsets:")
	for _, d := range slices.Sorted(maps.Keys(in.Opsets)) {
		name := d
		if name == "" {
			name = "ai.onnx"
		}
		fmt.Fprintf(&b, " %s=%d", name, in.Opsets[d])
	}
	if in.Quantized {
		fmt.Fprintf(&b, "\nalready quantized: %s", in.QuantizedReason)
	} else {
		b.WriteString("\nnot quantized")
	}
	b.WriteString("\n\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "op\tnodes\tweights")
	ops := slices.Collect(maps.Keys(in.Ops))
	for k := range in.BytesByOp {
		if _, ok := in.Ops[k]; !ok {
			ops = append(ops, k)
		}
	}
	slices.SortFunc(ops, func(a, c string) int {
		if d := in.BytesByOp[c] - in.BytesByOp[a]; d != 0 {
			return int(max(-1, min(1, d)))
		}
		return strings.Compare(a, c)
	})
	for _, op := range ops {
		fmt.Fprintf(tw, "%s\t%d\t%s\n", op, in.Ops[op], humanBytes(in.BytesByOp[op]))
	}
	fmt.Fprintln(tw, "\ndtype\t\tweights")
	for _, dt := range slices.Sorted(maps.Keys(in.BytesByDType)) {
		fmt.Fprintf(tw, "%s\t\t%s\n", dt, humanBytes(in.BytesByDType[dt]))
	}
	tw.Flush()
	return b.String()
}

// quantizedOps are operators that only appear in quantized models.
var quantizedOps = map[string]bool{
	"QuantizeLinear": true, "DequantizeLinear": true, "DynamicQuantizeLinear": true,
	"MatMulInteger": true, "ConvInteger": true, "MatMulNBits": true, "MatMulIntegerToFloat": true,
	"DynamicQuantizeMatMul": true, "DynamicQuantizeLSTM": true, "QAttention": true, "QGemm": true,
	"MatMulBnb4": true, "GatherBlockQuantized": true, "QOrderedMatMul": true,
}

// lowPrecision are weight types that mean the model was already reduced.
var lowPrecision = map[onnx.DataType]bool{
	onnx.Float16: true, onnx.BFloat16: true, onnx.Int8: true, onnx.Uint8: true,
	onnx.Int4: true, onnx.Uint4: true, onnx.Float4E2M1: true,
	onnx.DataType(onnxpb.TensorProto_FLOAT8E4M3FN): true, onnx.DataType(onnxpb.TensorProto_FLOAT8E4M3FNUZ): true,
	onnx.DataType(onnxpb.TensorProto_FLOAT8E5M2): true, onnx.DataType(onnxpb.TensorProto_FLOAT8E5M2FNUZ): true,
}

// quantizedReason says why mp counts as already quantized, or "".
func quantizedReason(mp *onnxpb.ModelProto) string {
	why := ""
	walkGraphs(mp.GetGraph(), func(g *onnxpb.GraphProto) {
		if why != "" {
			return
		}
		for _, n := range g.GetNode() {
			if quantizedOps[n.GetOpType()] || strings.HasPrefix(n.GetOpType(), "QLinear") {
				why = fmt.Sprintf("node %q is %s", n.GetName(), opName(n))
				return
			}
		}
		for _, t := range g.GetInitializer() {
			dt := onnx.DataType(t.GetDataType())
			if n, err := onnx.NumElements(t.GetDims()); err == nil && n >= MinElements && lowPrecision[dt] {
				why = fmt.Sprintf("weight %q is %s", t.GetName(), dt)
				return
			}
		}
	})
	return why
}
