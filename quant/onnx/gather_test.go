package onnx

import (
	"testing"
)

// whichModel is TestGatherTableRowsWhich's model: gathers of every kind,
// two of them rewritable.
func whichModel(t testing.TB) *Model {
	t.Helper()
	g := NewGraph("which")
	idx := g.Input("idx", Int64, Dynamic("n"))
	over := g.Input("over", Float, Fixed(3), Fixed(5)) // an initializer a graph input overrides
	table := weights(g, "table", 3, 5)
	g.Node("Gather", []string{table, idx}, []string{"last"}, AttrInt("axis", 1))
	g.Node("Gather", []string{table, idx}, []string{"again"}, AttrInt("axis", -1))
	g.Node("Gather", []string{table, idx}, []string{"first"}, AttrInt("axis", 0))
	g.Node("Gather", []string{table, idx}, []string{"default"})
	g.Node("Gather", []string{weights(g, "row", 1, 5), idx}, []string{"one_row"}, AttrInt("axis", 1))
	g.Node("Gather", []string{weights(g, "cube", 2, 3, 5), idx}, []string{"rank3"}, AttrInt("axis", 2))
	g.Node("Gather", []string{over, idx}, []string{"overridden"}, AttrInt("axis", 1))
	g.Node("Gather", []string{g.Op("Identity", []string{table}), idx}, []string{"computed"}, AttrInt("axis", 1))
	for _, out := range []string{"last", "again", "first", "default", "one_row", "rank3", "overridden", "computed"} {
		g.Output(out, Float, Dynamic("a"), Dynamic("b"))
	}
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	// An initializer of the same name as a graph input is its default.
	m.Graph().Initializer = append(m.Graph().Initializer, Float32Tensor(over, []int64{3, 5}, make([]float32, 15)))
	return m
}

// TestGatherTableRowsWhich: only gathers along the last axis of a 2-D
// initializer of two rows or more are rewritten; one transpose per table.
func TestGatherTableRowsWhich(t *testing.T) {
	m := whichModel(t)
	n, err := GatherTableRows(m)
	if err != nil || n != 2 {
		t.Fatalf("GatherTableRows = %d, %v; want 2", n, err)
	}
	if got := len(nodesOf(m.Graph(), "Transpose")); got != 3 { // the table's, once, and one per gather
		t.Errorf("%d transposes, want 3: %s", got, ops(m.Graph()))
	}
	if err := Check(m, nil); err != nil {
		t.Errorf("rewritten model does not check: %v", err)
	}
	if n, err := GatherTableRows(m); err != nil || n != 0 {
		t.Errorf("second pass = %d, %v; want 0", n, err)
	}
	g4 := NewGraph("opset4")
	i4 := g4.Input("idx", Int64, Dynamic("n"))
	g4.Node("Gather", []string{weights(g4, "table", 3, 5), i4}, []string{"y"}, AttrInt("axis", 1))
	g4.Output("y", Float, Fixed(3), Dynamic("n"))
	old, err := g4.Model(&ModelOptions{Opsets: map[string]int64{"": 4}})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := GatherTableRows(old); err != nil || n != 0 {
		t.Errorf("opset 4: %d, %v; want 0", n, err)
	}
	if _, err := GatherTableRows(&Model{}); err == nil {
		t.Error("a model without a graph: no error")
	}
}

func FuzzGatherTableRows(f *testing.F) {
	f.Add(encode(f, whichModel(f)))
	for _, c := range liftCases() {
		f.Add(encode(f, c.build(f)))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRewrite(t, data, GatherTableRows, true) })
}
