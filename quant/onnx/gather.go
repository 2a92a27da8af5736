package onnx

import (
	"fmt"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// GatherTableRows rewrites the main graph's gathers along the last axis
// of a constant 2-D table as gathers of whole rows of the table
// transposed: Gather(T [R, L], idx, axis=1) becomes
// Reshape(Transpose(Gather(Transpose(T), Reshape(idx, [-1]), axis=0)),
// [R, shape(idx)...]). ONNX Runtime's Gather copies one block per index
// and per row before the axis: along the last axis a block is a single
// element, R×N copies for N indices; of the transposed table it is a row
// of R elements, N copies, and the transposes are cheap (the table's is
// folded at load). The values are the same, bit for bit: only data moves.
// Demo voices written before 2026-12-07 read their two noise tables this
// way for every sample, a fifth of their synthesis time (audio/voice
// BenchmarkSynthesizeOneThread); today's demo voice tiles them instead.
//
// A table is an initializer no graph input can override, with at least
// two rows; anything else, and every gather along another axis, is left
// alone, as are subgraphs. Models of opset below 5 (Reshape with an
// attribute) are not touched. It returns how many gathers it rewrote; m
// is changed in place.
func GatherTableRows(m *Model) (int, error) {
	if m == nil || m.Graph() == nil {
		return 0, fmt.Errorf("%w: model has no graph", ErrInvalidModel)
	}
	if m.Opset("") < 5 {
		return 0, nil
	}
	g := m.Graph()
	inits := constants(g)
	count := 0
	for _, n := range g.GetNode() {
		if tableGather(n, inits) {
			count++
		}
	}
	if count == 0 {
		return 0, nil
	}

	fresh := namer(g)
	node := func(op string, in []string, out string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
		return &onnxpb.NodeProto{Name: fresh(out + "_" + op), OpType: op, Input: in, Output: []string{out}, Attribute: attrs}
	}
	flatDims := fresh("mynah_gather_flat")
	g.Initializer = append(g.Initializer, Int64Tensor(flatDims, []int64{1}, []int64{-1}))

	transposed := make(map[string]string) // table -> its transpose, made once
	nodes := make([]*onnxpb.NodeProto, 0, len(g.GetNode())+6*count)
	for _, n := range g.GetNode() {
		if !tableGather(n, inits) {
			nodes = append(nodes, n)
			continue
		}
		table, idx, out := n.GetInput()[0], n.GetInput()[1], n.GetOutput()[0]
		if transposed[table] == "" {
			transposed[table] = fresh(table + "_rows")
			nodes = append(nodes, node("Transpose", []string{table}, transposed[table], AttrInts("perm", 1, 0)))
		}
		rows := fresh(out + "_rows_dim")
		g.Initializer = append(g.Initializer, Int64Tensor(rows, []int64{1}, []int64{inits[table].GetDims()[0]}))
		flat, picked, cols, shape, dims := fresh(out+"_idx"), fresh(out+"_picked"), fresh(out+"_cols"), fresh(out+"_idx_shape"), fresh(out+"_dims")
		nodes = append(nodes,
			node("Reshape", []string{idx, flatDims}, flat),                    // [N]
			node("Gather", []string{transposed[table], flat}, picked),         // [N, R]
			node("Transpose", []string{picked}, cols, AttrInts("perm", 1, 0)), // [R, N]
			node("Shape", []string{idx}, shape),
			node("Concat", []string{rows, shape}, dims, AttrInt("axis", 0)),
			&onnxpb.NodeProto{Name: n.GetName(), OpType: "Reshape", Input: []string{cols, dims}, Output: []string{out}}, // [R, idx...]
		)
	}
	g.Node = nodes
	return count, nil
}

// tableGather reports whether n is a Gather along the last axis of a
// constant 2-D table of at least two rows (GatherTableRows).
func tableGather(n *onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto) bool {
	if n.GetOpType() != "Gather" || !isDefaultDomain(n.GetDomain()) || len(n.GetInput()) != 2 || len(n.GetOutput()) != 1 || n.GetOutput()[0] == "" {
		return false
	}
	t := inits[n.GetInput()[0]]
	if t == nil || len(t.GetDims()) != 2 || t.GetDims()[0] < 2 {
		return false
	}
	axis := int64(0)
	for _, a := range n.GetAttribute() {
		if a.GetName() == "axis" {
			axis = a.GetI()
		}
	}
	return axis == 1 || axis == -1
}
