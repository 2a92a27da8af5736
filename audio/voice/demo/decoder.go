package demo

import (
	"math"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// The decoder is a small GPT: token embedding plus a projection of the
// previous step's prosody plus sinusoidal positions, then pre-norm blocks
// of causal multi-head self-attention and a feed-forward layer, a final
// norm and a tanh head of ProsodyDim. Its weights are fixed pseudo-random
// numbers: it models nothing, but it computes exactly what a trained model
// of its shape computes, so the engine's prefill, KV reuse and session
// continuation are tested against real attention, and quantization
// against real weight matrices.
//
// The weights follow GPT-2's initialization scales rather than one rule
// for all: token embeddings at unit spread, like the positional encodings
// they are added to; projections with variance 1/fan_in; and the two
// projections that write into the residual stream (attention output,
// feed-forward down) scaled by a further 1/√(2·layers), so the stream
// grows with depth as in a trained GPT instead of each block replacing
// it. That balance decides how errors in one layer's weights carry into
// the next, so it matters for what a quantization gate sees.
//
// At the defaults (4 layers, width 256, feed-forward 1024) the decoder has
// 3.2 M weights, 12.9 MB as float32: a fraction of a real cloning model's
// decoder, but wide enough that a step's time is spent in its matrix
// products, as in a real one, rather than in per-operator overhead.
//
// Each layer i reads past_key_values.{i}.key|value [1, heads, P, head_dim]
// and writes present.{i}.key|value [1, heads, P+S, head_dim] (the past
// with the S new keys appended on axis 2). Token t of the S new ones sits
// at position P+t and attends to every past token and to new tokens up to
// itself, so one run over S tokens equals S runs of one token each.
//
// The graph does not enforce MaxContext: any past length runs, at a cost
// that grows with it. Keeping past+S within the manifest's max_context
// (and a request within max_steps) is the engine's job.

// ffnFactor sizes the feed-forward layer: ffnFactor times the model width,
// as in GPTs.
const ffnFactor = 4

// maskValue is added to the scores of keys a query must not see. It is
// large enough to zero them after softmax and far from float32's range.
const maskValue = -1e9

// buildDecoder assembles the decoder for resolved options.
func buildDecoder(o CloningOptions) (*onnx.Model, error) {
	g := onnx.NewGraph(CloneName + "-decoder")
	b := ops{g}
	heads, hd := int64(o.Heads), int64(o.HeadDim)
	d := heads * hd
	ff := ffnFactor * d
	vocab := int64(o.vocab())
	rng := splitmix{o.Seed}
	// Weights with variance 1/fan_in keep each layer's output on the scale
	// of its input; the residual stream is normalized before every use.
	// residual draws the projections into the stream (see above).
	weight := func(name string, in, out int64) string {
		return g.Float32s(name, []int64{in, out}, rng.normals(int(in*out), 1/math.Sqrt(float64(in))))
	}
	resid := 1 / math.Sqrt(float64(2*o.Layers))
	residual := func(name string, in, out int64) string {
		return g.Float32s(name, []int64{in, out}, rng.normals(int(in*out), resid/math.Sqrt(float64(in))))
	}
	ones := func(name string, n int64) string {
		v := make([]float32, n)
		for i := range v {
			v[i] = 1
		}
		return g.Float32s(name, []int64{n}, v)
	}
	zeros := func(name string, n int64) string { return g.Float32s(name, []int64{n}, make([]float32, n)) }
	norm := func(x, prefix string) string {
		return g.Op("LayerNormalization", []string{x, ones(prefix+".weight", d), zeros(prefix+".bias", d)},
			onnx.AttrInt("axis", -1), onnx.AttrFloat("epsilon", 1e-5))
	}

	ids := g.Input(decIDs, onnx.Int64, onnx.Fixed(1), onnx.Dynamic("sequence"))
	prev := g.Input(decPrev, onnx.Float, onnx.Fixed(1), onnx.Dynamic("sequence"), onnx.Fixed(ProsodyDim))
	pastDims := []onnx.Dim{onnx.Fixed(1), onnx.Fixed(heads), onnx.Dynamic("past_sequence"), onnx.Fixed(hd)}
	presentDims := []onnx.Dim{onnx.Fixed(1), onnx.Fixed(heads), onnx.Dynamic("total_sequence"), onnx.Fixed(hd)}
	pastK := make([]string, o.Layers)
	pastV := make([]string, o.Layers)
	for i := range o.Layers {
		pastK[i] = g.Input(kvName(kvPastKey, i), onnx.Float, pastDims...)
		pastV[i] = g.Input(kvName(kvPastValue, i), onnx.Float, pastDims...)
	}

	// An id outside the vocabulary reads the nearest row instead of
	// failing the run; prosody from outside is sanitized into [-1, 1].
	tok := b.max(b.min(ids, b.i(vocab-1)), b.i(0))
	x := b.gather(g.Float32s("token_embedding", []int64{vocab, d}, rng.normals(int(vocab*d), 1)), tok) // [1, S, d]
	x = b.add(x, b.op("MatMul", b.sane(prev, 0, -1, 1), weight("prosody_embedding", ProsodyDim, d)))

	// Positions P..P+S-1, P from the first layer's past.
	past := b.op("Gather", b.op("Shape", pastK[0]), b.i(2))
	s := b.op("Gather", b.op("Shape", ids), b.i(1))
	total := b.add(past, s)
	qpos := b.op("Range", past, total, b.i(1)) // [S]
	inv := make([]float32, d/2)
	for i := range inv {
		inv[i] = float32(math.Pow(10000, -2*float64(i)/float64(d)))
	}
	angle := b.mul(b.op("Unsqueeze", b.cast(qpos, onnx.Float), g.Ints(1)), g.Float32s("inverse_frequencies", []int64{1, d / 2}, inv))
	pe := g.Op("Concat", []string{b.op("Sin", angle), b.op("Cos", angle)}, onnx.AttrInt("axis", 1)) // [S, d]
	x = b.add(x, pe)

	// mask[t, j] is 0 where query t (position P+t) may see key j, else
	// maskValue: every past key and the new ones up to t.
	kpos := b.op("Range", b.i(0), total, b.i(1))
	allowed := b.op("LessOrEqual", b.op("Unsqueeze", kpos, g.Ints(0)), b.op("Unsqueeze", qpos, g.Ints(1)))
	mask := b.op("Where", allowed, b.f(0), b.f(maskValue)) // [S, P+S]

	splitHeads := func(t string) string { // [1, S, d] → [1, heads, S, hd]
		t = b.op("Reshape", t, g.Ints(1, -1, heads, hd))
		return g.Op("Transpose", []string{t}, onnx.AttrInts("perm", 0, 2, 1, 3))
	}
	for i := range o.Layers {
		p := "layers." + kvName("{i}", i)
		h := norm(x, p+".attention_norm")
		q := splitHeads(b.op("MatMul", h, weight(p+".q", d, d)))
		kNew := splitHeads(b.op("MatMul", h, weight(p+".k", d, d)))
		vNew := splitHeads(b.op("MatMul", h, weight(p+".v", d, d)))
		kAll, vAll := kvName(kvPresentKey, i), kvName(kvPresentVal, i)
		g.Node("Concat", []string{pastK[i], kNew}, []string{kAll}, onnx.AttrInt("axis", 2))
		g.Node("Concat", []string{pastV[i], vNew}, []string{vAll}, onnx.AttrInt("axis", 2))
		scores := b.op("MatMul", q, g.Op("Transpose", []string{kAll}, onnx.AttrInts("perm", 0, 1, 3, 2)))
		scores = b.add(b.mul(scores, b.f(1/math.Sqrt(float64(hd)))), mask)
		att := g.Op("Softmax", []string{scores}, onnx.AttrInt("axis", -1))
		ctx := g.Op("Transpose", []string{b.op("MatMul", att, vAll)}, onnx.AttrInts("perm", 0, 2, 1, 3))
		ctx = b.op("Reshape", ctx, g.Ints(1, -1, d))
		x = b.add(x, b.op("MatMul", ctx, residual(p+".o", d, d)))

		h = norm(x, p+".ffn_norm")
		u := b.op("MatMul", h, weight(p+".up", d, ff))
		u = b.mul(u, b.op("Sigmoid", b.mul(u, b.f(1.702)))) // GELU, sigmoid approximation
		x = b.add(x, b.op("MatMul", u, residual(p+".down", ff, d)))
	}
	x = norm(x, "final_norm")
	// The head's scale puts the pre-tanh values near unit spread, so the
	// adjustments use their range without sitting at ±1.
	head := g.Float32s("head", []int64{d, ProsodyDim}, rng.normals(int(d*ProsodyDim), 0.6/math.Sqrt(float64(d))))
	g.Node("Tanh", []string{b.op("MatMul", x, head)}, []string{decProsody})
	g.Output(decProsody, onnx.Float, onnx.Fixed(1), onnx.Dynamic("sequence"), onnx.Fixed(ProsodyDim))
	for i := range o.Layers {
		g.Output(kvName(kvPresentKey, i), onnx.Float, presentDims...)
		g.Output(kvName(kvPresentVal, i), onnx.Float, presentDims...)
	}

	return g.Model(&onnx.ModelOptions{
		Producer: "mynah",
		Version:  "1",
		Doc:      "mynah cloning kit decoder: GPT with KV cache, bounded prosody per phoneme",
		Metadata: map[string]string{
			"mynah.clone.role":  "decoder",
			"mynah.clone.vocab": strconv.Itoa(o.vocab()),
		},
	})
}
