//go:build cgo

package ort

import (
	"fmt"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// TestGatherTableRowsMatchesORT: a gather along the last axis of a
// constant table gives the same values, bit for bit, once GatherTableRows
// has rewritten it, for index tensors of rank 0, 1 and 2 with negative
// indices among them, float and int64 tables, one table read by two
// gathers, and at every graph optimization level.
func TestGatherTableRowsMatchesORT(t *testing.T) {
	rt := openRuntime(t, nil)
	const rows, cols = 4, 37
	for rank := range 3 {
		t.Run(fmt.Sprintf("indices of rank %d", rank), func(t *testing.T) {
			g := onnx.NewGraph("gathers")
			dims := make([]onnx.Dim, rank)
			for i := range dims {
				dims[i] = onnx.Dynamic(fmt.Sprintf("n%d", i))
			}
			idx := g.Input("idx", onnx.Int64, dims...)
			f := make([]float32, rows*cols)
			n := make([]int64, rows*cols)
			for i := range f {
				f[i] = float32(i)*0.37 - 11
				n[i] = int64(i*i) - 500
			}
			table := g.Float32s("table", []int64{rows, cols}, f)
			ints := g.Int64s("ints", []int64{rows, cols}, n)
			g.Node("Gather", []string{table, idx}, []string{"a"}, onnx.AttrInt("axis", 1))
			g.Node("Gather", []string{table, g.Op("Neg", []string{idx})}, []string{"b"}, onnx.AttrInt("axis", -1))
			g.Node("Gather", []string{ints, idx}, []string{"c"}, onnx.AttrInt("axis", 1))
			out := append([]onnx.Dim{onnx.Fixed(rows)}, dims...)
			g.Output("a", onnx.Float, out...)
			g.Output("b", onnx.Float, out...)
			g.Output("c", onnx.Int64, out...)
			orig, rewritten := beforeAfter(t, g, "GatherTableRows", onnx.GatherTableRows, 3)
			shape := []int64{5, 3}[:rank]
			count := int64(1)
			for _, d := range shape {
				count *= d
			}
			in := make([]int64, count)
			for i := range in {
				in[i] = int64(i*11)%(2*cols-1) - (cols - 1) // -36 .. 36, negated too
			}
			for _, level := range []GraphOptimization{GraphOptimizationAll, GraphOptimizationBasic, GraphOptimizationDisabled} {
				opts := &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1, GraphOptimization: level}
				want, err := newSessionBytes(t, rt, orig, opts).Run([]Tensor{{Name: "idx", Shape: shape, Int64: in}})
				if err != nil {
					t.Fatal(err)
				}
				got, err := newSessionBytes(t, rt, rewritten, opts).Run([]Tensor{{Name: "idx", Shape: shape, Int64: in}})
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if !slices.Equal(got[i].Shape, want[i].Shape) || !slices.Equal(got[i].Float32, want[i].Float32) || !slices.Equal(got[i].Int64, want[i].Int64) {
						t.Errorf("level %v, %s: got %v %v%v, want %v %v%v", level, want[i].Name,
							got[i].Shape, got[i].Float32, got[i].Int64, want[i].Shape, want[i].Float32, want[i].Int64)
					}
				}
			}
		})
	}
}

// beforeAfter encodes the model of g as built and after rewrite, which
// must report want rewrites: the two models an equality test runs.
func beforeAfter(t *testing.T, g *onnx.Graph, name string, rewrite func(*onnx.Model) (int, error), want int) (orig, rewritten []byte) {
	t.Helper()
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	if orig, err = onnx.Encode(m); err != nil {
		t.Fatal(err)
	}
	if n, err := rewrite(m); err != nil || n != want {
		t.Fatalf("%s = %d, %v; want %d", name, n, err, want)
	}
	if rewritten, err = onnx.Encode(m); err != nil {
		t.Fatal(err)
	}
	return orig, rewritten
}
