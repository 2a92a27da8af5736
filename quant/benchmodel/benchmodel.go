// Package benchmodel generates ONNX models of realistic size and shape for
// the quantization benchmarks and the quality gate's tests.
//
// The project cannot download real voices, and the demo voice is far
// smaller than what users run, so sizes and speeds measured on it say
// little. PiperMedium builds a model shaped like a Piper "medium" VITS
// voice — about 15 M parameters of fixed-seed random weights — that keeps
// Piper's input and output contract, so the same code runs it:
//
//   - text encoder: phoneme embedding (scaled by √hidden, masked by
//     input_lengths, plus a speaker embedding when there is a sid input),
//     then EncoderLayers post-norm transformer blocks whose attention
//     projections are MatMuls and whose feed-forward part is two 1-D
//     convolutions of kernel 3, as in VITS;
//   - a fixed number of frames per phoneme times length_scale (nearest
//     Resize) stands in for the duration predictor, and noise_scale scales
//     Gaussian noise added to the frame means;
//   - the flow: FlowLayers mean-only coupling layers, each a WaveNet-style
//     stack of gated dilated convolutions (kernel 5), run in reverse;
//   - the vocoder: a HiFi-GAN generator with Piper medium's settings —
//     upsample rates 8, 8, 4 (kernels 16, 16, 8), initial channels 256,
//     type-2 residual blocks with kernels 3, 5, 7 and dilations (1, 2),
//     (2, 6), (3, 12) — and a tanh output.
//
// Random weights make random but deterministic audio-rate noise: it is a
// benchmark and test subject, not a voice. What it reproduces is where the
// parameters and the compute are (mostly convolutions; a few MatMuls in the
// encoder), which is what decides how quantization pays off.
package benchmodel

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// ErrInvalidOptions means an Options field is out of range; the message
// names it and its limits.
var ErrInvalidOptions = errors.New("invalid bench model options")

// Fixed properties of the generated voice.
const (
	// SampleRate is the rate of the output, Piper medium's.
	SampleRate = 22050
	// HopLength is the number of samples per frame: the product of the
	// upsample rates.
	HopLength = 8 * 8 * 4
	// MaxPhonemes is the longest input the graph reads: longer inputs are
	// cut there, so a runaway sentence costs bounded memory (about 5 s of
	// frames' worth of intermediate tensors per 100 phonemes).
	MaxPhonemes = 1024
)

// Defaults of Options: Piper medium's shape.
const (
	DefaultSymbols          = 256
	DefaultHidden           = 192
	DefaultFilter           = 768
	DefaultEncoderLayers    = 6
	DefaultFlowLayers       = 4
	DefaultWaveNetLayers    = 4
	DefaultDecoderChannels  = 256
	DefaultFramesPerPhoneme = 7
	DefaultSeed             = 0x7069706572 // "piper"
)

// Options shape the model. A nil *Options means the defaults, and so does
// every zero field; tests use smaller widths to run quickly.
type Options struct {
	// Symbols is the size of the phoneme embedding, len(PhonemeIDMap())..4096.
	Symbols int
	// Speakers above 1 adds the sid input and a speaker embedding, 0..1024.
	Speakers int
	// Hidden is the text encoder's and flow's width: even, 8..1024.
	Hidden int
	// Filter is the width of the encoder's feed-forward convolutions, 8..4096.
	Filter int
	// EncoderLayers, FlowLayers and WaveNetLayers (per flow layer), 1..32.
	EncoderLayers, FlowLayers, WaveNetLayers int
	// DecoderChannels is the vocoder's initial width, a multiple of 8,
	// 8..1024; it halves at each upsampling.
	DecoderChannels int
	// FramesPerPhoneme at length_scale 1, 1..64.
	FramesPerPhoneme int
	// Seed of the weights.
	Seed uint64
}

func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&r.Symbols, DefaultSymbols)
	def(&r.Hidden, DefaultHidden)
	def(&r.Filter, DefaultFilter)
	def(&r.EncoderLayers, DefaultEncoderLayers)
	def(&r.FlowLayers, DefaultFlowLayers)
	def(&r.WaveNetLayers, DefaultWaveNetLayers)
	def(&r.DecoderChannels, DefaultDecoderChannels)
	def(&r.FramesPerPhoneme, DefaultFramesPerPhoneme)
	if r.Seed == 0 {
		r.Seed = DefaultSeed
	}
	for _, c := range []struct {
		name   string
		v      int
		lo, hi int
	}{
		{"Symbols", r.Symbols, len(symbols), 4096},
		{"Speakers", r.Speakers, 0, 1024},
		{"Hidden", r.Hidden, 8, 1024},
		{"Filter", r.Filter, 8, 4096},
		{"EncoderLayers", r.EncoderLayers, 1, 32},
		{"FlowLayers", r.FlowLayers, 1, 32},
		{"WaveNetLayers", r.WaveNetLayers, 1, 32},
		{"DecoderChannels", r.DecoderChannels, 8, 1024},
		{"FramesPerPhoneme", r.FramesPerPhoneme, 1, 64},
	} {
		if c.v < c.lo || c.v > c.hi {
			return r, fmt.Errorf("%w: %s %d: want %d..%d", ErrInvalidOptions, c.name, c.v, c.lo, c.hi)
		}
	}
	if r.Hidden%2 != 0 {
		return r, fmt.Errorf("%w: Hidden %d: want an even number", ErrInvalidOptions, r.Hidden)
	}
	if r.DecoderChannels%8 != 0 {
		return r, fmt.Errorf("%w: DecoderChannels %d: want a multiple of 8", ErrInvalidOptions, r.DecoderChannels)
	}
	return r, nil
}

// symbols is the phoneme_id_map's symbols in id order: Piper's pad, start
// and end first, then punctuation, Latin letters and the IPA symbols and
// marks espeak-ng emits for English.
var symbols = []rune("_^$ !'(),-.:;?abcdefghijklmnopqrstuvwxyz" +
	"æçðøħŋœɐɑɒɓɔɕɖɗɘəɚɛɜɞɟɠɡɢɣɤɥɦɧɨɪɫɬɭɮɯɰɱɲɳɴɵɶɸɹɺɻɽɾʀʁʂʃʄʈʉʊʋʌʍʎʏʐʑʒʔʕʘʙʛʜʝʟʡʢʲˈˌːˑ˞βθχᵻⱱ" +
	"\u0303\u0306\u0327\u0329\u032a\u032f\u0361")

// PhonemeIDMap returns the voice's phoneme_id_map: one id per symbol, "_"
// = 0, "^" = 1, "$" = 2 as in Piper's standard map.
func PhonemeIDMap() map[string][]int64 {
	m := make(map[string][]int64, len(symbols))
	for i, r := range symbols {
		m[string(r)] = []int64{int64(i)}
	}
	return m
}

// PiperConfig returns the .onnx.json a Piper voice of this model
// carries: its sample rate, espeak-ng's en-us, one speaker and
// PhonemeIDMap.
func PiperConfig() []byte {
	data, err := json.Marshal(map[string]any{
		"audio": map[string]any{"sample_rate": SampleRate}, "espeak": map[string]any{"voice": "en-us"},
		"phoneme_type": "espeak", "num_speakers": 1, "phoneme_id_map": PhonemeIDMap(),
	})
	if err != nil {
		panic(err) // maps of strings and numbers always encode
	}
	return data
}

// PiperMedium builds the model and returns its encoding. The same options
// give the same bytes.
func PiperMedium(opts *Options) ([]byte, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	m, err := build(o)
	if err != nil {
		return nil, fmt.Errorf("build bench model: %w", err)
	}
	data, err := onnx.Encode(m)
	if err != nil {
		return nil, fmt.Errorf("build bench model: %w", err)
	}
	return data, nil
}

func build(o Options) (*onnx.Model, error) {
	g := onnx.NewGraph("piper-medium-bench")
	b := &builder{g: g, rng: splitmix{o.Seed}}
	h := int64(o.Hidden)

	ids := g.Input("input", onnx.Int64, onnx.Fixed(1), onnx.Dynamic("phonemes"))
	lengths := g.Input("input_lengths", onnx.Int64, onnx.Fixed(1))
	scales := g.Input("scales", onnx.Float, onnx.Fixed(3))
	var sid string
	if o.Speakers > 1 {
		sid = g.Input("sid", onnx.Int64, onnx.Fixed(1))
	}

	// Cut at MaxPhonemes and clamp ids into the table: Gather fails the run
	// on an index out of range, and an unknown id should not.
	ids = g.Op("Slice", []string{ids, g.Ints(0), g.Ints(MaxPhonemes), g.Ints(1)})
	ids = g.Op("Max", []string{g.Op("Min", []string{ids, g.ScalarInt(int64(o.Symbols - 1))}), g.ScalarInt(0)})
	x := g.Op("Gather", []string{b.normals("emb.weight", []int64{int64(o.Symbols), h}, 1), ids}) // [1, P, H]
	x = g.Op("Mul", []string{x, g.Scalar(float32(math.Sqrt(float64(h))))})
	p := g.Op("Gather", []string{g.Op("Shape", []string{ids}), g.ScalarInt(1)})
	valid := g.Op("Less", []string{g.Op("Range", []string{g.ScalarInt(0), p, g.ScalarInt(1)}), lengths})
	mask := g.Op("Unsqueeze", []string{g.Op("Cast", []string{valid}, onnx.AttrInt("to", int64(onnx.Float))), g.Ints(0, 2)}) // [1, P, 1]
	x = g.Op("Mul", []string{x, mask})
	if sid != "" {
		sid = g.Op("Max", []string{g.Op("Min", []string{sid, g.ScalarInt(int64(o.Speakers - 1))}), g.ScalarInt(0)})
		spk := g.Op("Gather", []string{b.normals("emb_g.weight", []int64{int64(o.Speakers), h}, 1), sid}) // [1, H]
		x = g.Op("Add", []string{x, g.Op("Unsqueeze", []string{spk, g.Ints(1)})})
	}

	for i := range o.EncoderLayers {
		x = b.encoderLayer(x, fmt.Sprintf("enc.%d", i), h, int64(o.Filter))
	}
	x = b.transpose(x, 0, 2, 1) // [1, H, P]
	means := b.conv(x, "enc.proj", h, h, 1, 1)
	means = g.Op("Mul", []string{means, b.transpose(mask, 0, 2, 1)})

	// Frames: FramesPerPhoneme × length_scale per phoneme.
	lengthScale := g.Op("Slice", []string{scales, g.Ints(1), g.Ints(2), g.Ints(0)})
	factor := g.Op("Mul", []string{lengthScale, g.Scalar(float32(o.FramesPerPhoneme))})
	resizeScales := g.Op("Concat", []string{g.Float32s("", []int64{2}, []float32{1, 1}), factor}, onnx.AttrInt("axis", 0))
	z := g.Op("Resize", []string{means, "", resizeScales},
		onnx.AttrString("mode", "nearest"),
		onnx.AttrString("coordinate_transformation_mode", "asymmetric"),
		onnx.AttrString("nearest_mode", "floor"))
	noiseScale := g.Op("Slice", []string{scales, g.Ints(0), g.Ints(1), g.Ints(0)})
	noise := g.Op("RandomNormalLike", []string{z}, onnx.AttrFloat("seed", 1))
	z = g.Op("Add", []string{z, g.Op("Mul", []string{noise, noiseScale})})

	for i := o.FlowLayers - 1; i >= 0; i-- {
		z = b.coupling(z, fmt.Sprintf("flow.%d", i), h, o.WaveNetLayers)
	}
	return b.vocoder(z, h, int64(o.DecoderChannels))
}

// vocoder is the HiFi-GAN generator; z is [1, hidden, frames].
func (b *builder) vocoder(z string, hidden, ch int64) (*onnx.Model, error) {
	g := b.g
	y := b.conv(z, "dec.conv_pre", hidden, ch, 7, 1)
	rates := []int64{8, 8, 4}
	kernels := []int64{16, 16, 8}
	resKernels := []int64{3, 5, 7}
	resDilations := [][]int64{{1, 2}, {2, 6}, {3, 12}}
	for s, u := range rates {
		y = g.Op("LeakyRelu", []string{y}, onnx.AttrFloat("alpha", 0.1))
		y = b.convTranspose(y, fmt.Sprintf("dec.ups.%d", s), ch, ch/2, kernels[s], u)
		ch /= 2
		var sum string
		for r, k := range resKernels {
			out := y
			for d, dil := range resDilations[r] {
				t := g.Op("LeakyRelu", []string{out}, onnx.AttrFloat("alpha", 0.1))
				t = b.convDilated(t, fmt.Sprintf("dec.resblocks.%d.convs.%d", s*len(resKernels)+r, d), ch, ch, k, dil, 0.5)
				out = g.Op("Add", []string{out, t})
			}
			if sum == "" {
				sum = out
			} else {
				sum = g.Op("Add", []string{sum, out})
			}
		}
		y = g.Op("Mul", []string{sum, g.Scalar(1 / float32(len(resKernels)))})
	}
	y = g.Op("LeakyRelu", []string{y}, onnx.AttrFloat("alpha", 0.01))
	y = b.convDilated(y, "dec.conv_post", ch, 1, 7, 1, 1)
	y = g.Op("Tanh", []string{y}) // [1, 1, T]
	g.Node("Unsqueeze", []string{y, g.Ints(1)}, []string{"output"})
	g.Output("output", onnx.Float, onnx.Fixed(1), onnx.Fixed(1), onnx.Fixed(1), onnx.Dynamic("samples"))
	return g.Model(&onnx.ModelOptions{
		Producer: "mynah",
		Version:  "1",
		Doc:      "mynah benchmark model shaped like a Piper medium voice (random weights)",
		Metadata: map[string]string{"mynah.bench": "piper-medium"},
	})
}

// encoderLayer is a post-norm transformer block on x [1, P, H] with two
// heads; the feed-forward part is VITS's pair of kernel-3 convolutions.
func (b *builder) encoderLayer(x, name string, h, filter int64) string {
	g := b.g
	const heads = 2
	hd := h / heads
	proj := func(in, n string) string {
		return g.Op("Add", []string{g.Op("MatMul", []string{in, b.normals(name+".attn."+n+".weight", []int64{h, h}, 1/math.Sqrt(float64(h)))}),
			b.zeros(name+".attn."+n+".bias", h)})
	}
	split := func(t string) string { // [1, P, H] → [1, heads, P, hd]
		return b.transpose(g.Op("Reshape", []string{t, g.Ints(1, -1, heads, hd)}), 0, 2, 1, 3)
	}
	q := split(proj(x, "q"))
	k := b.transpose(g.Op("Reshape", []string{proj(x, "k"), g.Ints(1, -1, heads, hd)}), 0, 2, 3, 1) // [1, heads, hd, P]
	v := split(proj(x, "v"))
	scores := g.Op("Mul", []string{g.Op("MatMul", []string{q, k}), g.Scalar(float32(1 / math.Sqrt(float64(hd))))})
	att := g.Op("Softmax", []string{scores}, onnx.AttrInt("axis", -1))
	ctx := g.Op("Reshape", []string{b.transpose(g.Op("MatMul", []string{att, v}), 0, 2, 1, 3), g.Ints(1, -1, h)})
	x = b.layerNorm(g.Op("Add", []string{x, proj(ctx, "o")}), name+".norm1", h)

	t := b.transpose(x, 0, 2, 1)
	t = g.Op("Relu", []string{b.conv(t, name+".ffn.conv_1", h, filter, 3, 1)})
	t = b.conv(t, name+".ffn.conv_2", filter, h, 3, 1)
	return b.layerNorm(g.Op("Add", []string{x, b.transpose(t, 0, 2, 1)}), name+".norm2", h)
}

// coupling is one mean-only coupling layer in reverse: the second half of
// the channels minus a WaveNet's prediction from the first half, then the
// halves swapped (Piper's Flip).
func (b *builder) coupling(z, name string, h int64, layers int) string {
	g := b.g
	half := h / 2
	parts := g.OpN("Split", 2, []string{z, g.Ints(half, half)}, onnx.AttrInt("axis", 1))
	x0, x1 := parts[0], parts[1]
	hid := b.conv(x0, name+".pre", half, h, 1, 1)
	var skip string
	for j := range layers {
		a := b.conv(hid, fmt.Sprintf("%s.enc.in_layers.%d", name, j), h, 2*h, 5, 1)
		ab := g.OpN("Split", 2, []string{a, g.Ints(h, h)}, onnx.AttrInt("axis", 1))
		act := g.Op("Mul", []string{g.Op("Tanh", []string{ab[0]}), g.Op("Sigmoid", []string{ab[1]})})
		outCh := 2 * h
		if j == layers-1 {
			outCh = h
		}
		rs := b.conv(act, fmt.Sprintf("%s.enc.res_skip_layers.%d", name, j), h, outCh, 1, 1)
		s := rs
		if j < layers-1 {
			rsp := g.OpN("Split", 2, []string{rs, g.Ints(h, h)}, onnx.AttrInt("axis", 1))
			hid = g.Op("Add", []string{hid, rsp[0]})
			s = rsp[1]
		}
		if skip == "" {
			skip = s
		} else {
			skip = g.Op("Add", []string{skip, s})
		}
	}
	mean := b.convDilated(skip, name+".post", h, half, 1, 1, 0.1)
	x1 = g.Op("Sub", []string{x1, mean})
	return g.Op("Concat", []string{x1, x0}, onnx.AttrInt("axis", 1))
}

// builder adds layers with fixed-seed weights to a graph.
type builder struct {
	g   *onnx.Graph
	rng splitmix
}

func (b *builder) normals(name string, dims []int64, std float64) string {
	n := int64(1)
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(b.rng.normal() * std)
	}
	return b.g.Float32s(name, dims, v)
}

func (b *builder) zeros(name string, n int64) string {
	return b.g.Float32s(name, []int64{n}, make([]float32, n))
}

func (b *builder) ones(name string, n int64) string {
	v := make([]float32, n)
	for i := range v {
		v[i] = 1
	}
	return b.g.Float32s(name, []int64{n}, v)
}

func (b *builder) transpose(x string, perm ...int64) string {
	return b.g.Op("Transpose", []string{x}, onnx.AttrInts("perm", perm...))
}

func (b *builder) layerNorm(x, name string, h int64) string {
	return b.g.Op("LayerNormalization", []string{x, b.ones(name+".gamma", h), b.zeros(name+".beta", h)},
		onnx.AttrInt("axis", -1), onnx.AttrFloat("epsilon", 1e-5))
}

// conv is a same-length 1-D convolution with bias; weights have variance
// gain²/fan_in so activations keep their scale.
func (b *builder) conv(x, name string, in, out, k, dilation int64) string {
	return b.convDilated(x, name, in, out, k, dilation, 1)
}

func (b *builder) convDilated(x, name string, in, out, k, dilation int64, gain float64) string {
	w := b.normals(name+".weight", []int64{out, in, k}, gain/math.Sqrt(float64(in*k)))
	pad := dilation * (k - 1) / 2
	return b.g.Op("Conv", []string{x, w, b.normals(name+".bias", []int64{out}, 0.01)},
		onnx.AttrInts("dilations", dilation), onnx.AttrInts("kernel_shape", k),
		onnx.AttrInts("pads", pad, pad), onnx.AttrInts("strides", 1))
}

// convTranspose upsamples by stride with kernel 2·stride: output length =
// input length × stride.
func (b *builder) convTranspose(x, name string, in, out, k, stride int64) string {
	// Each output sample sums in·k/stride products.
	w := b.normals(name+".weight", []int64{in, out, k}, 1/math.Sqrt(float64(in*k/stride)))
	pad := (k - stride) / 2
	return b.g.Op("ConvTranspose", []string{x, w, b.normals(name+".bias", []int64{out}, 0.01)},
		onnx.AttrInts("kernel_shape", k), onnx.AttrInts("pads", pad, pad), onnx.AttrInts("strides", stride))
}

// splitmix is SplitMix64: the same weights on every machine and Go
// version, which math/rand does not promise for its normal values.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// normal is a standard normal value (Box–Muller, one of the pair).
func (r *splitmix) normal() float64 {
	u := 1 - float64(r.next()>>11)/(1<<53) // (0, 1]: the log stays finite
	v := float64(r.next()>>11) / (1 << 53)
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}
