//go:build cgo

package ort

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// TestResizeLinearMatMulMatchesORT: linear upsampling of the last axis
// by a whole factor, once ResizeLinearMatMul has rewritten it, gives the
// half-pixel interpolation worked out in float64 to float rounding, and
// ONNX Runtime's Resize within its own rounding: inputs of rank 2 to 4
// (ONNX Runtime's linear mode refuses rank 1), lengths from one sample
// (all edge) up, factors 2 to 220 (the demo voice's hop), at every graph
// optimization level. (Its rank-3 path works out coordinates less
// exactly: up to 3e-5 of the values' size from the float64 answer.)
func TestResizeLinearMatMulMatchesORT(t *testing.T) {
	rt := openRuntime(t, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, c := range []struct {
		lead    []int64 // the axes before the last
		factor  float32
		lengths []int64
	}{
		{[]int64{1}, 2, []int64{1, 2, 9}},
		{[]int64{3}, 3, []int64{1, 5}},
		{[]int64{1, 17}, 220, []int64{1, 2, 322}},
		{[]int64{1, 17, 1}, 220, []int64{1, 40}},
		{[]int64{2, 1, 3}, 7, []int64{11}},
	} {
		t.Run(fmt.Sprintf("rank %d, x%g", len(c.lead)+1, c.factor), func(t *testing.T) {
			g := onnx.NewGraph("resize")
			dims := make([]onnx.Dim, 0, len(c.lead)+1)
			scales := make([]float32, 0, len(c.lead)+1)
			for _, d := range c.lead {
				dims, scales = append(dims, onnx.Fixed(d)), append(scales, 1)
			}
			dims, scales = append(dims, onnx.Dynamic("F")), append(scales, c.factor)
			x := g.Input("x", onnx.Float, dims...)
			g.Node("Resize", []string{x, "", g.Float32s("scales", []int64{int64(len(scales))}, scales)}, []string{"y"},
				onnx.AttrString("mode", "linear"), onnx.AttrString("coordinate_transformation_mode", "half_pixel"))
			g.Output("y", onnx.Float, append(dims[:len(dims)-1:len(dims)-1], onnx.Dynamic("T"))...)
			orig, rewritten := beforeAfter(t, g, "ResizeLinearMatMul", onnx.ResizeLinearMatMul, 1)
			for _, level := range []GraphOptimization{GraphOptimizationAll, GraphOptimizationBasic, GraphOptimizationDisabled} {
				opts := &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1, GraphOptimization: level}
				s1, s2 := newSessionBytes(t, rt, orig, opts), newSessionBytes(t, rt, rewritten, opts)
				for _, length := range c.lengths {
					shape := append(slices.Clone(c.lead), length)
					n := length
					for _, d := range c.lead {
						n *= d
					}
					v := make([]float32, n)
					for i := range v {
						v[i] = 200*rng.Float32() - 100
					}
					in := []Tensor{{Name: "x", Shape: shape, Float32: v}}
					want, err := s1.Run(in)
					if err != nil {
						t.Fatal(err)
					}
					got, err := s2.Run(in)
					if err != nil {
						t.Fatal(err)
					}
					if !slices.Equal(got[0].Shape, want[0].Shape) {
						t.Fatalf("level %v, length %d: shape %v, want %v", level, length, got[0].Shape, want[0].Shape)
					}
					// Each output is a weighted sum of two values of at most
					// 100: float rounding is a few times 2^-24 of that.
					exact := linearUpsample(v, length, int64(c.factor))
					if diff, size := maxAbsDiff(got[0].Float32, exact); diff > 1e-6*size {
						t.Errorf("level %v, length %d: differs from the exact interpolation by %g (largest value %g)", level, length, diff, size)
					}
					if diff, size := maxAbsDiff(got[0].Float32, want[0].Float32); diff > 1e-4*size {
						t.Errorf("level %v, length %d: differs from Resize by %g (largest value %g)", level, length, diff, size)
					}
				}
			}
		})
	}
}

// linearUpsample is half-pixel linear interpolation of each row of
// length f of x by factor s, worked out in float64 (Resize's definition:
// coordinates clamped to the row, so the ends repeat the edge values).
func linearUpsample(x []float32, f, s int64) []float32 {
	out := make([]float32, 0, int64(len(x))*s)
	for r := int64(0); r < int64(len(x))/f; r++ {
		row := x[r*f : (r+1)*f]
		for t := range f * s {
			c := min(max((float64(t)+0.5)/float64(s)-0.5, 0), float64(f-1))
			i := int64(c)
			j := min(i+1, f-1)
			w := c - float64(i)
			out = append(out, float32(float64(row[i])*(1-w)+float64(row[j])*w))
		}
	}
	return out
}
