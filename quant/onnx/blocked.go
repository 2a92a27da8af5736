package onnx

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// BlockLeakyRelu keeps the residual stream of a lifted (LiftConv1D)
// convolution stack in ONNX Runtime's blocked layout. At graph
// optimization level "all" on x86 its NCHWc transformer runs 2-D
// convolutions of block-multiple channel counts on blocked tensors
// (block is 8 with AVX2, 16 with AVX-512), along with Add of two blocked
// values and the activations it can fuse into a convolution; LeakyRelu
// is not one it keeps blocked on its own. So in a HiFi-GAN residual
// block, x = x + conv2(leaky(conv1(leaky(x)))), every x leaves the
// blocked layout and comes back: a reorder out before the Add and one in
// after the LeakyRelu, a copy of the stream each, at the decoder's
// sample rate. Two rewrites keep it blocked:
//
//   - An Add of a blocked value and a plain one (the stream as it comes
//     out of a ConvTranspose) reads the plain one through an identity
//     convolution (depthwise 1×1, weights 1, no bias), made once per
//     value: both sides blocked, the Add stays blocked.
//   - A LeakyRelu of a blocked value that is not a convolution's alone
//     (the stream, which the next Add reads too), and whose readers are
//     all convolutions, reads it through an identity convolution of its
//     own: ONNX Runtime fuses the LeakyRelu into that convolution, blocked.
//
// An identity convolution is one pass over the stream where the reorders
// were two. x·1 is x and LeakyRelu is the same function fused or not, so
// the values are the same, bit for bit. Only values whose channel count
// is known (from the convolutions' float weights: the identities are
// float) and a multiple of block are touched. It returns how many
// identity convolutions it added; m is changed in place. Run it after
// LiftConv1D, and only where ONNX Runtime blocks (x86, level "all"):
// elsewhere the identities are work for nothing.
func BlockLeakyRelu(m *Model, block int64) (int, error) {
	if m == nil || m.Graph() == nil {
		return 0, fmt.Errorf("%w: model has no graph", ErrInvalidModel)
	}
	if block < 1 {
		return 0, fmt.Errorf("block %d: want at least 1", block)
	}
	g := m.Graph()
	inits := constants(g)
	producer := make(map[string]*onnxpb.NodeProto)
	readers := make(map[string][]*onnxpb.NodeProto)
	for _, n := range g.GetNode() {
		for _, out := range n.GetOutput() {
			producer[out] = n
		}
		for _, in := range n.GetInput() {
			readers[in] = append(readers[in], n)
		}
		for _, a := range n.GetAttribute() {
			countSubgraphUses(a, nil, func(name string) { readers[name] = append(readers[name], nil) })
		}
	}
	for _, out := range g.GetOutput() {
		readers[out.GetName()] = append(readers[out.GetName()], nil)
	}

	fresh := namer(g)
	ones := make(map[int64]string) // identity weights per channel count
	identity := func(x string, c int64) *onnxpb.NodeProto {
		if ones[c] == "" {
			ones[c] = fresh("mynah_identity_" + strconv.FormatInt(c, 10))
			w := make([]float32, c)
			for i := range w {
				w[i] = 1
			}
			g.Initializer = append(g.Initializer, Float32Tensor(ones[c], []int64{c, 1, 1, 1}, w))
		}
		out := fresh(x + "_blocked")
		return &onnxpb.NodeProto{Name: fresh(out + "_Conv"), OpType: "Conv", Input: []string{x, ones[c]}, Output: []string{out},
			Attribute: []*onnxpb.AttributeProto{AttrInt("group", c), AttrInts("kernel_shape", 1, 1)}}
	}

	channels := make(map[string]int64) // of 4-D values made by what is tracked
	blocked := make(map[string]bool)   // values ONNX Runtime keeps blocked
	viaIdentity := make(map[string]string)
	count := 0
	nodes := make([]*onnxpb.NodeProto, 0, len(g.GetNode()))
	for _, n := range g.GetNode() {
		in, outs := n.GetInput(), n.GetOutput()
		if !isDefaultDomain(n.GetDomain()) || len(outs) != 1 || outs[0] == "" {
			nodes = append(nodes, n)
			continue
		}
		out := outs[0]
		switch n.GetOpType() {
		case "Conv":
			if c := conv2DChannels(n, inits); c > 0 {
				channels[out], blocked[out] = c, c%block == 0
			}
		case "ConvTranspose":
			if w := floatWeight(n, inits); w != nil {
				channels[out] = w.GetDims()[1] * attrInt(n, "group", 1)
			}
		case "Add":
			if len(in) != 2 {
				break
			}
			c := channels[in[0]]
			if c == 0 || channels[in[1]] != c {
				break
			}
			channels[out] = c
			if blocked[in[0]] == blocked[in[1]] {
				blocked[out] = blocked[in[0]]
				break
			}
			if c%block != 0 {
				break
			}
			plain := 0
			if blocked[in[0]] {
				plain = 1
			}
			x := in[plain]
			if viaIdentity[x] == "" {
				id := identity(x, c)
				nodes = append(nodes, id)
				viaIdentity[x] = id.GetOutput()[0]
				count++
			}
			n.Input[plain] = viaIdentity[x]
			blocked[out] = true
		case "LeakyRelu":
			x := input(in, 0)
			c := channels[x]
			if c == 0 {
				break
			}
			channels[out] = c
			if !blocked[x] {
				break
			}
			if p := producer[x]; p != nil && p.GetOpType() == "Conv" && len(readers[x]) == 1 {
				blocked[out] = true // fused into its convolution already
				break
			}
			if !allBlockedConvs(readers[out], inits, block) {
				break
			}
			id := identity(x, c)
			nodes = append(nodes, id)
			n.Input[0] = id.GetOutput()[0]
			blocked[out] = true
			count++
		}
		nodes = append(nodes, n)
	}
	if count == 0 {
		return 0, nil
	}
	g.Node = nodes
	return count, nil
}

// conv2DChannels is the output channel count of a 2-D Conv whose weight
// is a float initializer (the identities' type), else 0.
func conv2DChannels(n *onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto) int64 {
	w := floatWeight(n, inits)
	if w == nil {
		return 0
	}
	return w.GetDims()[0]
}

// floatWeight is a convolution's weight when it is a 4-D float
// initializer, else nil.
func floatWeight(n *onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto) *onnxpb.TensorProto {
	w := inits[input(n.GetInput(), 1)]
	if w == nil || len(w.GetDims()) != 4 || w.GetDataType() != int32(onnxpb.TensorProto_FLOAT) {
		return nil
	}
	return w
}

// allBlockedConvs reports whether every reader is a 2-D Conv that ONNX
// Runtime runs blocked: input and output channels multiples of block (a
// nil reader is a graph output or a subgraph).
func allBlockedConvs(readers []*onnxpb.NodeProto, inits map[string]*onnxpb.TensorProto, block int64) bool {
	return len(readers) > 0 && !slices.ContainsFunc(readers, func(r *onnxpb.NodeProto) bool {
		if r == nil || r.GetOpType() != "Conv" || !isDefaultDomain(r.GetDomain()) {
			return true
		}
		out := conv2DChannels(r, inits)
		in := int64(0)
		if out > 0 {
			in = inits[r.GetInput()[1]].GetDims()[1] * attrInt(r, "group", 1)
		}
		return out == 0 || out%block != 0 || in%block != 0
	})
}

func input(in []string, i int) string {
	if i < len(in) {
		return in[i]
	}
	return ""
}

func attrInt(n *onnxpb.NodeProto, name string, def int64) int64 {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a.GetI()
		}
	}
	return def
}
