package quant

import (
	"math"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// msDomain is ONNX Runtime's contrib operator domain.
const msDomain = "com.microsoft"

// blockwise4 quantizes a [k, n] row-major weight for MatMulNBits: for each
// output column and each block of blockSize rows, a signed scale and
// levels q in [lo, hi] (lo = -2^(bits-1), hi = 2^(bits-1)-1), stored as
// q+8 in 4-bit nibbles. The scale maps the value of largest magnitude to
// lo exactly (it is negative when that value is positive), which uses
// all 2^bits levels: every value comes back within half a step, except
// those beyond hi steps on the other side, clamped to hi (within one
// step). ONNX Runtime's own block quantizer makes the same choice. The layout is ONNX Runtime's:
//
//	packed [n][blocks][blockSize/2]: element j of a block is in byte j/2,
//	    the low nibble for even j
//	scales [n*blocks], column-major: scales[col*blocks+block]
//
// with no zero points, which MatMulNBits then takes to be 8. Rows past k
// (the last block's padding) are stored as 8, i.e. zero.
func blockwise4(w []float32, k, n, bits, blockSize int) (packed []byte, scales []float32) {
	blocks := (k + blockSize - 1) / blockSize
	blob := blockSize / 2
	packed = make([]byte, n*blocks*blob)
	for i := range packed {
		packed[i] = 0x88
	}
	scales = make([]float32, n*blocks)
	lo := -float64(int(1) << (bits - 1))
	hi := -lo - 1
	for col := range n {
		for b := range blocks {
			r0, r1 := b*blockSize, min(k, (b+1)*blockSize)
			var extreme float32
			for r := r0; r < r1; r++ {
				if x := w[r*n+col]; math.Abs(float64(x)) > math.Abs(float64(extreme)) {
					extreme = x
				}
			}
			scale := float32(1)
			if extreme != 0 {
				scale = extreme / float32(lo)
			}
			scales[col*blocks+b] = scale
			base := (col*blocks + b) * blob
			for r := r0; r < r1; r++ {
				q := math.RoundToEven(float64(w[r*n+col] / scale))
				nib := byte(int(max(lo, min(hi, q))) + 8)
				j := r - r0
				if j%2 == 0 {
					packed[base+j/2] = packed[base+j/2]&0xf0 | nib
				} else {
					packed[base+j/2] = packed[base+j/2]&0x0f | nib<<4
				}
			}
		}
	}
	return packed, scales
}

// unblockwise4 is blockwise4's inverse: the dequantized [k, n] weight the
// MatMulNBits node computes with.
func unblockwise4(packed []byte, scales []float32, k, n, blockSize int) []float32 {
	blocks := (k + blockSize - 1) / blockSize
	blob := blockSize / 2
	w := make([]float32, k*n)
	for col := range n {
		for r := range k {
			b, j := r/blockSize, r%blockSize
			byt := packed[(col*blocks+b)*blob+j/2]
			nib := byt & 0x0f
			if j%2 == 1 {
				nib = byt >> 4
			}
			w[r*n+col] = float32(int(nib)-8) * scales[col*blocks+b]
		}
	}
	return w
}

// nbitsWeight returns the names of t's packed blocks and scales.
func (rw *rewriter) nbitsWeight(u use, t *onnxpb.TensorProto, owner *scope, transB bool) ([]string, int, int, error) {
	key := qkey{t, "nbits"}
	if transB {
		key.kind = "nbitsT"
	}
	k, n := int(t.GetDims()[0]), int(t.GetDims()[1])
	if transB {
		k, n = n, k
	}
	if names, ok := rw.qcache[key]; ok {
		return names, k, n, nil
	}
	w, _, _, err := rw.matrix(t, transB)
	if err != nil {
		return nil, 0, 0, err
	}
	bs := rw.o.BlockSize
	packed, scales := blockwise4(w, k, n, rw.o.Bits, bs)
	blocks := (k + bs - 1) / bs
	bq := &onnxpb.TensorProto{Name: rw.name(t.GetName() + "_q4"), Dims: []int64{int64(n), int64(blocks), int64(bs / 2)},
		DataType: int32(onnx.Uint8), RawData: packed}
	bsc := onnx.Float32Tensor(rw.name(t.GetName()+"_scales"), []int64{int64(n * blocks)}, scales)
	owner.added = append(owner.added, bq, bsc)
	names := []string{bq.Name, bsc.Name}
	rw.qcache[key] = names
	rw.addRow(u, t, int64(len(packed)+4*len(scales)), ModeNBits)
	rw.step(t)
	return names, k, n, nil
}

// matMulNBits rewrites MatMul(x, W) or Gemm(x, W, C) as com.microsoft
// MatMulNBits(x, packed W, scales) [→ Add C].
func (rw *rewriter) matMulNBits(s *scope, n *onnxpb.NodeProto) ([]*onnxpb.NodeProto, error) {
	t, owner := s.constant(n.GetInput()[1])
	alpha, beta, transB := gemmParams(n)
	w, k, cols, err := rw.nbitsWeight(use{node: n, slot: 1}, t, owner, transB)
	if err != nil {
		return nil, err
	}
	rw.importMicrosoft()
	scale, err := rw.scaled(s, w[1], alpha)
	if err != nil {
		return nil, err
	}
	out := n.GetOutput()[0]
	mm := out
	if hasBias(n, beta) {
		mm = rw.name(out + "_product")
	}
	node := rw.node("MatMulNBits", []string{n.GetInput()[0], w[0], scale}, []string{mm},
		onnx.AttrInt("K", int64(k)), onnx.AttrInt("N", int64(cols)), onnx.AttrInt("bits", 4),
		onnx.AttrInt("block_size", int64(rw.o.BlockSize)), onnx.AttrInt("accuracy_level", int64(rw.o.AccuracyLevel)))
	node.Domain = msDomain
	if mm == out {
		return []*onnxpb.NodeProto{node}, nil
	}
	tail, err := rw.gemmBias(s, n, mm, out, beta)
	return append([]*onnxpb.NodeProto{node}, tail...), err
}

// importMicrosoft adds the com.microsoft opset import if the model lacks it.
func (rw *rewriter) importMicrosoft() {
	for _, o := range rw.mp.GetOpsetImport() {
		if o.GetDomain() == msDomain {
			return
		}
	}
	rw.mp.OpsetImport = append(rw.mp.OpsetImport, &onnxpb.OperatorSetIdProto{Domain: msDomain, Version: 1})
	rw.report.OpsetsAdded = append(rw.report.OpsetsAdded, msDomain)
}
