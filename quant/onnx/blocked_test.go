package onnx

import (
	"testing"
)

// residualModel is a lifted HiFi-GAN stage: a ConvTranspose (plain
// stream x0), then two residual blocks x = x + conv(leaky(conv(leaky(x)))),
// then a LeakyRelu into a ConvTranspose and one into a one-channel Conv.
func residualModel(t testing.TB, c int64) *Model {
	t.Helper()
	g := NewGraph("residual")
	x := g.Input("x", Float, Fixed(1), Fixed(c), Fixed(1), Dynamic("L"))
	leaky := func(v string) string { return g.Op("LeakyRelu", []string{v}, AttrFloat("alpha", 0.1)) }
	conv := func(v string, out int64) string {
		return g.Op("Conv", []string{v, weights(g, "", out, c, 1, 3), weights(g, "", out)}, AttrInts("pads", 0, 1, 0, 1))
	}
	s := g.Op("ConvTranspose", []string{x, weights(g, "", c, c, 1, 2)}, AttrInts("strides", 1, 2))
	for range 2 {
		s = g.Op("Add", []string{conv(leaky(conv(leaky(s), c)), c), s})
	}
	g.Node("ConvTranspose", []string{leaky(s), weights(g, "", c, c, 1, 2)}, []string{"up"}, AttrInts("strides", 1, 2))
	g.Node("Conv", []string{leaky(s), weights(g, "", 1, c, 1, 3)}, []string{"post"}, AttrInts("pads", 0, 1, 0, 1))
	g.Output("up", Float, Fixed(1), Fixed(c), Fixed(1), Dynamic("L2"))
	g.Output("post", Float, Fixed(1), Fixed(1), Fixed(1), Dynamic("L1"))
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBlockLeakyReluWhich: the first Add reads the plain stream through
// an identity convolution; the second block's LeakyRelu of the stream
// (read by the next Add too) gets its own; LeakyRelus of a convolution's
// sole output, into a ConvTranspose, or into a Conv that is not blocked
// stay; channel counts off the block change nothing.
func TestBlockLeakyReluWhich(t *testing.T) {
	m := residualModel(t, 32)
	n, err := BlockLeakyRelu(m, 16)
	if err != nil || n != 2 {
		t.Fatalf("BlockLeakyRelu = %d, %v; want 2: %s", n, err, ops(m.Graph()))
	}
	var ids int
	for _, c := range nodesOf(m.Graph(), "Conv") {
		for _, a := range c.GetAttribute() {
			if a.GetName() == "group" && a.GetI() == 32 {
				ids++
			}
		}
	}
	if ids != 2 {
		t.Errorf("%d identity convolutions, want 2", ids)
	}
	if err := Check(m, nil); err != nil {
		t.Errorf("rewritten model does not check: %v", err)
	}
	if n, err := BlockLeakyRelu(residualModel(t, 24), 16); err != nil || n != 0 {
		t.Errorf("24 channels, block 16: %d, %v; want 0", n, err)
	}
	if n, err := BlockLeakyRelu(residualModel(t, 24), 8); err != nil || n != 2 {
		t.Errorf("24 channels, block 8: %d, %v; want 2", n, err)
	}
	if _, err := BlockLeakyRelu(residualModel(t, 16), 0); err == nil {
		t.Error("block 0: no error")
	}
	if _, err := BlockLeakyRelu(&Model{}, 16); err == nil {
		t.Error("a model without a graph: no error")
	}
}

func FuzzBlockLeakyRelu(f *testing.F) {
	f.Add(encode(f, residualModel(f, 16)), int64(16))
	f.Add(encode(f, residualModel(f, 8)), int64(8))
	f.Fuzz(func(t *testing.T, data []byte, block int64) {
		if block < 1 || block > 64 {
			return
		}
		fuzzRewrite(t, data, func(m *Model) (int, error) { return BlockLeakyRelu(m, block) }, false)
	})
}
