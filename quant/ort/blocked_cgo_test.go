//go:build cgo

package ort

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// TestBlockLeakyReluMatchesORT: a lifted HiFi-GAN stage (a ConvTranspose,
// two residual blocks of LeakyRelu and Conv, a LeakyRelu into the next
// ConvTranspose) gives the same values, bit for bit, with its LeakyRelus
// read through identity convolutions (BlockLeakyRelu, blocks of 8 and 16)
// as without, at graph optimization level "all", where ONNX Runtime
// blocks them on x86.
func TestBlockLeakyReluMatchesORT(t *testing.T) {
	rt := openRuntime(t, nil)
	const c = 32
	build := func() *onnx.Model {
		n := &liftNet{g: onnx.NewGraph("stage"), rng: rand.New(rand.NewPCG(5, 6))}
		g := n.g
		x := g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Fixed(c), onnx.Fixed(1), onnx.Dynamic("L"))
		conv := func(v string, k, d int64) string {
			return g.Op("Conv", []string{v, n.weight(c, c, 1, k), n.weight(c)},
				onnx.AttrInts("dilations", 1, d), onnx.AttrInts("pads", 0, d*(k-1)/2, 0, d*(k-1)/2))
		}
		s := g.Op("ConvTranspose", []string{x, n.weight(c, c, 1, 4), n.weight(c)}, onnx.AttrInts("strides", 1, 2), onnx.AttrInts("pads", 0, 1, 0, 1))
		for _, d := range []int64{1, 3} {
			s = g.Op("Add", []string{conv(n.leakyRelu(conv(n.leakyRelu(s), 3, d)), 3, 1), s})
		}
		g.Node("ConvTranspose", []string{n.leakyRelu(s), n.weight(c, c, 1, 4), n.weight(c)}, []string{"y"},
			onnx.AttrInts("strides", 1, 2), onnx.AttrInts("pads", 0, 1, 0, 1))
		g.Output("y", onnx.Float, onnx.Fixed(1), onnx.Fixed(c), onnx.Fixed(1), onnx.Dynamic("T"))
		m, err := g.Model(nil)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	encode := func(m *onnx.Model) []byte {
		b, err := onnx.Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	opts := &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1}
	plain := newSessionBytes(t, rt, encode(build()), opts)
	rng := rand.New(rand.NewPCG(7, 8))
	x := make([]float32, c*300)
	for i := range x {
		x[i] = 2*rng.Float32() - 1
	}
	in := []Tensor{{Name: "x", Shape: []int64{1, c, 1, 300}, Float32: x}}
	want, err := plain.Run(in)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range []int64{8, 16} {
		m := build()
		if n, err := onnx.BlockLeakyRelu(m, block); err != nil || n != 2 {
			t.Fatalf("block %d: BlockLeakyRelu = %d, %v; want 2", block, n, err)
		}
		got, err := newSessionBytes(t, rt, encode(m), opts).Run(in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got[0].Shape, want[0].Shape) || !slices.Equal(got[0].Float32, want[0].Float32) {
			d, size := maxAbsDiff(got[0].Float32, want[0].Float32)
			t.Errorf("block %d: output %v differs from %v by up to %g (largest %g)", block, got[0].Shape, want[0].Shape, d, size)
		}
	}
}
