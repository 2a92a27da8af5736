package demo

// The style kit is a style_vector voice bundle the project makes itself: a
// model with the Kokoro contract (tokens int64 [1, L+2] padded with 0 at
// both ends, style float32 [1, 256], speed float32 [1] → audio float32
// [1, T] at 24 kHz), a voice pack of three voices (raw float32
// [510, 1, 256] each) and the voice.json that ties them together.
//
// The model is the demo voice's synthesizer with a different front door:
// the tokens are demo phoneme ids (a sequence without Piper's pads, which
// the synthesizer reads as well), speed divides the durations, and the
// speaker comes from the style vector through a fixed projection onto four
// directions that set the pitch, formant scale, spectral tilt and breath,
// each squashed into a bounded range. A voice's rows are the same speaker
// with a small per-row change in pitch and formant scale, so which row a
// sentence uses (the token count) is audible in the output, as it is in
// Kokoro.

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// The style kit's fixed shape: Kokoro's.
const (
	StyleName       = "mynah-style"
	StyleSampleRate = 24000
	StyleDim        = 256
	StyleRows       = 510
	StyleModelFile  = "model.onnx"
)

// Bounds of what a style vector can ask for. Any vector, even a hostile
// one, gives a speaker inside them.
const (
	styleF0Centre    = 150  // Hz at projection 0
	styleF0Octaves   = 1.25 // ± this many octaves at the extremes: 63..357 Hz
	styleScaleCentre = 1.1
	styleScaleRange  = 0.25 // ± octaves of formant scale: 0.92..1.31
	styleTiltCentre  = 0.85
	styleTiltRange   = 0.2
	styleBreathMid   = 0.02
	styleBreathRange = 0.015
	// Row-to-row variation of a voice: pitch by up to ±3%, formant scale
	// by up to ±1%.
	styleRowF0    = 0.03
	styleRowScale = 0.01
	// styleResidual is the RMS of each voice's component outside the four
	// directions: real style vectors carry much more than a speaker's
	// pitch, and the model must ignore what it does not read.
	styleResidual = 0.05
	seedStyle     = 0x7374796c65 // "style"
)

// StyleVoice is one voice of the kit's pack, with the speaker its rows
// aim at (before the per-row change).
type StyleVoice struct {
	Name         string
	F0           float64 // base pitch in Hz; a sentence's median f0 stays close to it
	FormantScale float64
	tilt, breath float64
}

var styleVoices = []StyleVoice{
	{Name: "amber", F0: 105, FormantScale: 1.0, tilt: 1.0, breath: 0.01},
	{Name: "iris", F0: 235, FormantScale: 1.22, tilt: 0.75, breath: 0.03},
	{Name: "jade", F0: 165, FormantScale: 1.12, tilt: 0.85, breath: 0.02},
}

// StyleVoices returns the pack's voices, sorted by name.
func StyleVoices() []StyleVoice { return slices.Clone(styleVoices) }

// StyleOptions configure BuildStyle. A nil *StyleOptions means defaults.
type StyleOptions struct {
	// MaxSeconds caps the audio of one run, 1..MaxMaxSeconds; 0 means
	// DefaultMaxSeconds.
	MaxSeconds int
	// RowRule is the manifest's style.row_rule; "" means
	// bundle.RowRuleTokens. The model does not depend on it; it only says
	// which row an engine picks.
	RowRule string
}

func (o *StyleOptions) resolve() (StyleOptions, Options, error) {
	var r StyleOptions
	if o != nil {
		r = *o
	}
	if r.RowRule == "" {
		r.RowRule = bundle.RowRuleTokens
	}
	if r.RowRule != bundle.RowRuleTokens && r.RowRule != bundle.RowRuleTokensMinusOne {
		return r, Options{}, fmt.Errorf("%w: RowRule %q: want %q or %q", ErrInvalidOptions, r.RowRule, bundle.RowRuleTokens, bundle.RowRuleTokensMinusOne)
	}
	vo, err := (&Options{SampleRate: StyleSampleRate, MaxSeconds: r.MaxSeconds}).resolve()
	if err != nil {
		return r, vo, err
	}
	r.MaxSeconds = vo.MaxSeconds
	return r, vo, nil
}

// BuildStyle returns the kit's files by bundle-relative path: model.onnx,
// voices/NAME.bin for each voice and voice.json. The same options give the
// same bytes.
func BuildStyle(opts *StyleOptions) (files map[string][]byte, err error) {
	o, vo, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	m, err := buildStyleModel(vo)
	if err != nil {
		return nil, fmt.Errorf("build style kit: %w", err)
	}
	model, err := onnx.Encode(m)
	if err != nil {
		return nil, fmt.Errorf("build style kit: %w", err)
	}
	files = map[string][]byte{StyleModelFile: model}
	for _, v := range styleVoices {
		files[styleVoicePath(v.Name)] = styleVoiceBytes(v)
	}
	manifest, err := styleManifest(o, files).Marshal()
	if err != nil {
		return nil, fmt.Errorf("build style kit: %w", err)
	}
	files[bundle.ManifestName] = manifest
	return files, nil
}

// WriteStyle builds the kit into dir (which must exist), each file written
// atomically, voice.json last so that a loader never sees a manifest
// whose files are not there yet.
func WriteStyle(dir string, opts *StyleOptions) error {
	files, err := BuildStyle(opts)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "voices"), 0o755); err != nil {
		return fmt.Errorf("write style kit: %w", err)
	}
	names := make([]string, 0, len(files))
	for name := range files {
		if name != bundle.ManifestName {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	for _, name := range append(names, bundle.ManifestName) {
		if err := writeAtomic(filepath.Join(dir, filepath.FromSlash(name)), files[name]); err != nil {
			return err
		}
	}
	return nil
}

func styleVoicePath(name string) string { return path.Join("voices", name+".bin") }

func styleManifest(o StyleOptions, files map[string][]byte) *bundle.Manifest {
	ref := func(p string) bundle.FileRef {
		sum := sha256.Sum256(files[p])
		return bundle.FileRef{Path: p, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(files[p]))}
	}
	m := &bundle.Manifest{
		Format:     bundle.FormatVersion,
		Engine:     bundle.EngineStyleVector,
		Name:       StyleName,
		SampleRate: StyleSampleRate,
		Text: bundle.Text{
			Phonemes:     bundle.PhonemesEspeak,
			Language:     "en-us",
			PhonemeIDMap: PhonemeIDMap(),
		},
		Files: map[string]bundle.FileRef{"model": ref(StyleModelFile)},
		Model: &bundle.ModelRole{Tensors: bundle.Tensors{
			File:    "model",
			Inputs:  map[string]string{"tokens": "tokens", "style": "style", "speed": "speed"},
			Outputs: map[string]string{"audio": "audio"},
		}},
		Style:  &bundle.Style{Dim: StyleDim, Rows: StyleRows, RowRule: o.RowRule},
		Voices: make(map[string]bundle.FileRef, len(styleVoices)),
	}
	for _, v := range styleVoices {
		m.Voices[v.Name] = ref(styleVoicePath(v.Name))
	}
	return m
}

// styleDirections are four orthonormal vectors of StyleDim: the
// projection the model reads a speaker through.
func styleDirections() [4][]float64 {
	rng := rand.New(rand.NewPCG(seedStyle, 1))
	var w [4][]float64
	for k := range w {
		v := make([]float64, StyleDim)
		for i := range v {
			v[i] = rng.NormFloat64()
		}
		for j := range k { // Gram-Schmidt
			d := dot(v, w[j])
			for i := range v {
				v[i] -= d * w[j][i]
			}
		}
		n := math.Sqrt(dot(v, v))
		for i := range v {
			v[i] /= n
		}
		w[k] = v
	}
	return w
}

func dot(a, b []float64) float64 {
	var s float64
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

// styleCoords inverts the model's squashing: the projections that give a
// speaker with these values.
func styleCoords(f0, scale, tilt, breath float64) [4]float64 {
	return [4]float64{
		math.Atanh(math.Log2(f0/styleF0Centre) / styleF0Octaves),
		math.Atanh(math.Log2(scale/styleScaleCentre) / styleScaleRange),
		math.Atanh((tilt - styleTiltCentre) / styleTiltRange),
		math.Atanh((breath - styleBreathMid) / styleBreathRange),
	}
}

// styleVoiceBytes is the voice file: StyleRows rows of StyleDim float32s,
// little-endian. Row r aims at the voice's speaker with its pitch and
// formant scale moved by a fixed pseudo-random amount, plus a residual
// outside the projection.
func styleVoiceBytes(v StyleVoice) []byte {
	w := styleDirections()
	seed := uint64(0)
	for _, c := range v.Name {
		seed = seed*131 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(seedStyle, seed))
	out := make([]byte, 0, StyleRows*StyleDim*4)
	row := make([]float64, StyleDim)
	for range StyleRows {
		f0 := v.F0 * (1 + styleRowF0*(2*rng.Float64()-1))
		scale := v.FormantScale * (1 + styleRowScale*(2*rng.Float64()-1))
		c := styleCoords(f0, scale, v.tilt, v.breath)
		for i := range row {
			row[i] = styleResidual * rng.NormFloat64()
		}
		for k := range w { // keep the residual out of the four directions
			d := dot(row, w[k])
			for i := range row {
				row[i] += (c[k] - d) * w[k][i]
			}
		}
		for _, x := range row {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(float32(x)))
		}
	}
	return out
}

// buildStyleModel builds the demo voice for vo and rewires its inputs and
// output to the Kokoro contract. The synthesizer is untouched; what
// changes is where input, input_lengths, scales, sid and the speakers table
// come from, which a small front graph computes from tokens, style and
// speed.
func buildStyleModel(vo Options) (*onnx.Model, error) {
	piper, err := buildModel(vo)
	if err != nil {
		return nil, err
	}
	front, err := styleFront()
	if err != nil {
		return nil, err
	}
	pg := piper.Graph()
	replaced := map[string]bool{"input": true, "input_lengths": true, "scales": true, "sid": true, "speakers": true}
	inits := slices.Clone(front.Initializer)
	n := 0
	for _, t := range pg.Initializer {
		if !replaced[t.GetName()] {
			inits = append(inits, t)
			n++
		}
	}
	if n != len(pg.Initializer)-1 {
		return nil, fmt.Errorf("demo voice graph has no speakers table to replace")
	}
	for _, in := range pg.Input {
		if !replaced[in.GetName()] {
			return nil, fmt.Errorf("demo voice graph has an input %q the style front does not make", in.GetName())
		}
	}
	g := &onnxpb.GraphProto{
		Name:        StyleName,
		Input:       front.Input,
		Initializer: inits,
		Node:        append(slices.Clone(front.Node), pg.Node...),
	}
	g.Node = append(g.Node, &onnxpb.NodeProto{
		Name:   "style/audio",
		OpType: "Reshape",
		Input:  []string{"output", "style/audio_shape"},
		Output: []string{"audio"},
	})
	g.Initializer = append(g.Initializer, onnx.Int64Tensor("style/audio_shape", []int64{2}, []int64{1, -1}))
	g.Output = []*onnxpb.ValueInfoProto{{
		Name: "audio",
		Type: &onnxpb.TypeProto{Value: &onnxpb.TypeProto_TensorType{TensorType: &onnxpb.TypeProto_Tensor{
			ElemType: int32(onnx.Float),
			Shape: &onnxpb.TensorShapeProto{Dim: []*onnxpb.TensorShapeProto_Dimension{
				{Value: &onnxpb.TensorShapeProto_Dimension_DimValue{DimValue: 1}},
				{Value: &onnxpb.TensorShapeProto_Dimension_DimParam{DimParam: "samples"}},
			}},
		}}},
	}}
	mp := piper.Proto
	mp.Graph = g
	mp.DocString = "mynah style kit: the demo voice's formant synthesis behind the Kokoro style-vector contract"
	mp.MetadataProps = append(mp.MetadataProps, &onnxpb.StringStringEntryProto{Key: "mynah.style.dim", Value: strconv.Itoa(StyleDim)})
	m := &onnx.Model{Proto: mp}
	if err := onnx.Check(m, nil); err != nil {
		return nil, err
	}
	return m, nil
}

// styleFront builds the graph that feeds the synthesizer: every name it
// makes is prefixed "style/" except the five the synthesizer reads.
func styleFront() (*onnxpb.GraphProto, error) {
	g := onnx.NewGraph("front")
	b := ops{g}
	tokens := g.Input("tokens", onnx.Int64, onnx.Fixed(1), onnx.Dynamic("tokens"))
	style := g.Input("style", onnx.Float, onnx.Fixed(1), onnx.Fixed(StyleDim))
	speed := g.Input("speed", onnx.Float, onnx.Fixed(1))

	g.Node("Identity", []string{tokens}, []string{"input"})
	g.Node("Slice", []string{b.op("Shape", tokens), g.Ints(1), g.Ints(2)}, []string{"input_lengths"})
	sp := b.sane(speed, 1, 0.1, 10)
	// Piper's default noise settings: the synthesizer's noise comes from
	// fixed tables, so the output stays deterministic.
	g.Node("Concat", []string{g.Float32s("", []int64{1}, []float32{0.667}), b.div(b.f(1), sp), g.Float32s("", []int64{1}, []float32{0.8})},
		[]string{"scales"}, onnx.AttrInt("axis", 0))
	g.Int64s("sid", []int64{1}, []int64{0})

	w := styleDirections()
	proj := make([]float32, 0, StyleDim*4)
	for i := range StyleDim {
		for k := range w {
			proj = append(proj, exact(w[k][i])) // exact in float16, as the pitch needs (see paramTable)
		}
	}
	z := b.op("MatMul", b.sane(style, 0, -100, 100), g.Float32s("", []int64{StyleDim, 4}, proj)) // [1, 4]
	th := b.op("Tanh", z)
	exp2 := func(x string) string { return b.op("Exp", b.mul(x, b.f(math.Ln2))) }
	f0 := b.mul(b.f(styleF0Centre), exp2(b.mul(b.col(th, 0), b.f(styleF0Octaves))))
	scale := b.mul(b.f(styleScaleCentre), exp2(b.mul(b.col(th, 1), b.f(styleScaleRange))))
	tilt := b.affine(b.col(th, 2), styleTiltRange, styleTiltCentre)
	breath := b.mul(b.affine(b.col(th, 3), styleBreathRange, styleBreathMid), b.f(noiseLevel))
	g.Node("Identity", []string{b.columns(f0, scale, tilt, breath)}, []string{"speakers"}) // [1, 4], one row

	p, err := g.Proto()
	if err != nil {
		return nil, err
	}
	keep := map[string]bool{"tokens": true, "style": true, "speed": true, "input": true, "input_lengths": true, "scales": true, "sid": true, "speakers": true}
	rename := func(s string) string {
		if s == "" || keep[s] {
			return s
		}
		return "style/" + s
	}
	for _, t := range p.Initializer {
		t.Name = rename(t.Name)
	}
	for _, nd := range p.Node {
		nd.Name = "style/" + nd.Name
		for i := range nd.Input {
			nd.Input[i] = rename(nd.Input[i])
		}
		for i := range nd.Output {
			nd.Output[i] = rename(nd.Output[i])
		}
	}
	return p, nil
}
