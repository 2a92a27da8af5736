//go:build cgo

package ort

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// liftNet builds the 1-D networks of TestLiftConv1DMatchesORT with random
// weights of a fixed seed.
type liftNet struct {
	g   *onnx.Graph
	rng *rand.Rand
}

// weight adds a random initializer of shape dims, scaled by its fan-in so
// that values keep their size through a chain of layers.
func (n *liftNet) weight(dims ...int64) string {
	size, fanIn := int64(1), int64(1)
	for i, d := range dims {
		size *= d
		if i > 0 {
			fanIn *= d
		}
	}
	scale := float32(1 / math.Sqrt(float64(fanIn)))
	v := make([]float32, size)
	for i := range v {
		v[i] = (2*n.rng.Float32() - 1) * scale
	}
	return n.g.Float32s("", dims, v)
}

// conv is a Conv with bias from in channels (per group) to out channels.
func (n *liftNet) conv(x string, out, in, k int64, attrs ...*onnxpb.AttributeProto) string {
	return n.g.Op("Conv", []string{x, n.weight(out, in, k), n.weight(out)}, attrs...)
}

// convTranspose is a ConvTranspose with bias, weight [in, out, k].
func (n *liftNet) convTranspose(x string, in, out, k int64, attrs ...*onnxpb.AttributeProto) string {
	return n.g.Op("ConvTranspose", []string{x, n.weight(in, out, k), n.weight(out)}, attrs...)
}

func (n *liftNet) leakyRelu(x string) string {
	return n.g.Op("LeakyRelu", []string{x}, onnx.AttrFloat("alpha", 0.1))
}

type liftNetCase struct {
	name     string
	channels int64 // of the input x [1, channels, length]
	lengths  []int64
	opset    int64 // 0 is 17
	lifted   int
	build    func(n *liftNet, x string) []string // returns the outputs
}

var liftNetCases = []liftNetCase{
	{
		name: "dilated convs k=3..7", channels: 1, lengths: []int64{1000, 4097}, lifted: 5,
		build: func(n *liftNet, x string) []string {
			c := []int64{1, 3, 16, 32, 16, 3}
			for i, k := range []int64{3, 4, 5, 6, 7} {
				d := int64(2*i + 1)
				pad := d * (k - 1)
				x = n.conv(x, c[i+1], c[i], k, onnx.AttrInts("dilations", d), onnx.AttrInts("pads", pad/2, pad-pad/2),
					onnx.AttrInts("kernel_shape", k))
			}
			return []string{x}
		},
	},
	{
		name: "grouped convs", channels: 32, lengths: []int64{1000}, lifted: 2,
		build: func(n *liftNet, x string) []string {
			x = n.conv(x, 32, 8, 3, onnx.AttrInt("group", 4), onnx.AttrInts("pads", 1, 1))
			// depthwise
			return []string{n.conv(x, 32, 1, 5, onnx.AttrInt("group", 32), onnx.AttrInts("pads", 2, 2))}
		},
	},
	{
		name: "stride 2", channels: 3, lengths: []int64{4097, 1000}, lifted: 2,
		build: func(n *liftNet, x string) []string {
			x = n.conv(x, 16, 3, 4, onnx.AttrInts("strides", 2), onnx.AttrInts("pads", 1, 1))
			return []string{n.conv(x, 16, 16, 3, onnx.AttrInts("strides", 2), onnx.AttrString("auto_pad", "SAME_UPPER"))}
		},
	},
	{
		name: "conv transpose stride 4 kernel 8", channels: 32, lengths: []int64{1000, 257}, lifted: 1,
		build: func(n *liftNet, x string) []string {
			return []string{n.convTranspose(x, 32, 16, 8, onnx.AttrInts("strides", 4), onnx.AttrInts("pads", 2, 2),
				onnx.AttrInts("kernel_shape", 8))}
		},
	},
	{
		name: "conv transpose output_padding", channels: 16, lengths: []int64{1000, 4097}, lifted: 2,
		build: func(n *liftNet, x string) []string {
			x = n.convTranspose(x, 16, 3, 5, onnx.AttrInts("strides", 3), onnx.AttrInts("pads", 1, 2), onnx.AttrInts("output_padding", 2))
			return []string{n.convTranspose(x, 3, 1, 4, onnx.AttrInts("strides", 2), onnx.AttrInts("output_padding", 1),
				onnx.AttrInts("dilations", 2))}
		},
	},
	{
		// HiFi-GAN's ResBlock1: x += Conv(LeakyRelu(Conv(LeakyRelu(x))))
		// with dilations 1, 3, 5, after an upsampling layer.
		name: "residual blocks", channels: 32, lengths: []int64{1000}, lifted: 7,
		build: func(n *liftNet, x string) []string {
			x = n.convTranspose(n.leakyRelu(x), 32, 16, 16, onnx.AttrInts("strides", 8), onnx.AttrInts("pads", 4, 4))
			for _, d := range []int64{1, 3, 5} {
				xt := n.conv(n.leakyRelu(x), 16, 16, 3, onnx.AttrInts("dilations", d), onnx.AttrInts("pads", d, d))
				xt = n.conv(n.leakyRelu(xt), 16, 16, 3, onnx.AttrInts("pads", 1, 1))
				x = n.g.Op("Add", []string{xt, x})
			}
			return []string{x}
		},
	},
	{
		name: "residual blocks, opset 11", channels: 16, lengths: []int64{1000}, opset: 11, lifted: 4,
		build: func(n *liftNet, x string) []string {
			for _, d := range []int64{1, 3} {
				xt := n.conv(n.leakyRelu(x), 16, 16, 3, onnx.AttrInts("dilations", d), onnx.AttrInts("pads", d, d))
				xt = n.conv(n.leakyRelu(xt), 16, 16, 3, onnx.AttrInts("pads", 1, 1))
				x = n.g.Op("Add", []string{xt, x})
			}
			return []string{x}
		},
	},
	{
		// The end of a vocoder: scaled, biased, squashed.
		name: "mul by a scalar", channels: 16, lengths: []int64{4097}, lifted: 1,
		build: func(n *liftNet, x string) []string {
			y := n.conv(n.leakyRelu(x), 1, 16, 7, onnx.AttrInts("pads", 3, 3))
			y = n.g.Op("Mul", []string{n.g.Scalar(0.5), y})
			y = n.g.Op("Add", []string{y, n.weight(1)})
			y = n.g.Op("Clip", []string{n.g.Op("Tanh", []string{y}), n.g.Scalar(-0.99), n.g.Scalar(0.99)})
			return []string{y}
		},
	},
	{
		// A conv output read in 1-D too, squeezed back for the nodes that
		// stay and the graph's outputs.
		name: "read in both forms", channels: 3, lengths: []int64{1000}, lifted: 2,
		build: func(n *liftNet, x string) []string {
			h := n.conv(x, 16, 3, 3, onnx.AttrInts("pads", 1, 1))
			y := n.conv(n.g.Op("Relu", []string{h}), 3, 16, 3)
			t := n.g.Op("Transpose", []string{h}, onnx.AttrInts("perm", 0, 2, 1))
			return []string{y, t, h, n.g.Op("Add", []string{h, n.weight(16, 1)})}
		},
	},
}

// buildLiftNet returns c's model and the same model lifted, both encoded.
func buildLiftNet(t *testing.T, c liftNetCase) (orig, lifted []byte) {
	t.Helper()
	n := &liftNet{g: onnx.NewGraph("conv1d"), rng: rand.New(rand.NewPCG(7, uint64(len(c.name))))}
	x := n.g.Input("x", onnx.Float, onnx.Fixed(1), onnx.Fixed(c.channels), onnx.Dynamic("L"))
	for _, out := range c.build(n, x) {
		n.g.Output(out, onnx.Float, onnx.Dynamic("N"), onnx.Dynamic("C"), onnx.Dynamic("L2"))
	}
	opset := c.opset
	if opset == 0 {
		opset = 17
	}
	m, err := n.g.Model(&onnx.ModelOptions{Opsets: map[string]int64{"": opset}})
	if err != nil {
		t.Fatal(err)
	}
	if orig, err = onnx.Encode(m); err != nil {
		t.Fatal(err)
	}
	if k, err := onnx.LiftConv1D(m); err != nil || k != c.lifted {
		t.Fatalf("LiftConv1D lifted %d (%v), want %d", k, err, c.lifted)
	}
	if err := onnx.Check(m, nil); err != nil {
		t.Fatal(err)
	}
	if lifted, err = onnx.Encode(m); err != nil {
		t.Fatal(err)
	}
	return orig, lifted
}

// TestLiftConv1DMatchesORT runs each network as built and as LiftConv1D
// rewrites it. The 2-D kernels sum in another order than the 1-D ones,
// differently on each CPU, so the outputs agree to a tolerance relative to
// their size, not exactly.
func TestLiftConv1DMatchesORT(t *testing.T) {
	rt := openRuntime(t, nil)
	opts := &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1}
	for _, c := range liftNetCases {
		t.Run(c.name, func(t *testing.T) {
			orig, lifted := buildLiftNet(t, c)
			s1 := newSessionBytes(t, rt, orig, opts)
			s2 := newSessionBytes(t, rt, lifted, opts)
			rng := rand.New(rand.NewPCG(1, 2))
			for _, length := range c.lengths {
				x := make([]float32, c.channels*length)
				for i := range x {
					x[i] = 2*rng.Float32() - 1
				}
				in := []Tensor{{Name: "x", Shape: []int64{1, c.channels, length}, Float32: x}}
				want, err := s1.Run(in)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s2.Run(in)
				if err != nil {
					t.Fatal(err)
				}
				for i := range want {
					if got[i].Name != want[i].Name || !slices.Equal(got[i].Shape, want[i].Shape) {
						t.Fatalf("length %d: output %s %v, want %s %v", length, got[i].Name, got[i].Shape, want[i].Name, want[i].Shape)
					}
					if diff, size := maxAbsDiff(got[i].Float32, want[i].Float32); diff > 1e-4*size || size == 0 {
						t.Errorf("length %d: %s differs by %g, %g of its largest value %g", length, want[i].Name, diff, diff/size, size)
					}
				}
			}
		})
	}
}

// maxAbsDiff returns the largest |a[i] - b[i]| and the largest |b[i]|.
func maxAbsDiff(a, b []float32) (diff, size float64) {
	for i := range b {
		diff = max(diff, math.Abs(float64(a[i])-float64(b[i])))
		size = max(size, math.Abs(float64(b[i])))
	}
	return diff, size
}
