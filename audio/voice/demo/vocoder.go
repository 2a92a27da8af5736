package demo

import (
	"math"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// The vocoder is the demo voice's synthesizer with two changes: the
// speaker comes from a speaker embedding instead of sid, and every phoneme
// carries the decoder's three adjustments. Inputs: input, input_lengths
// and scales as in Piper, prosody float32 [1, n, 3] aligned with input
// (missing rows count as zero, extra rows are ignored), speaker_embedding
// float32 [1, EmbeddingDim]. Output: output [1, 1, 1, T].
//
// The embedding is read back through the encoder's projection: the pitch
// and centroid histograms come out as ratios within their blocks, and
// their weighted mean bins give the speaker's typical pitch and centroid.

// Reading the speaker.
const (
	// defaultF0 is the pitch of an embedding without a pitch histogram
	// (a silent or unvoiced reference, or a foreign vector).
	defaultF0 = 150
	// vocoderMinF0 and vocoderMaxF0 bound the speaker's base pitch.
	vocoderMinF0 = 60
	vocoderMaxF0 = 400
	// The formant scale blends two estimates in the log domain, half
	// each: the measured centroid relative to centroidRefHz, to the power
	// centroidGain, and the pitch relative to the demo voice's lowest
	// speaker, to the power pitchToScale. The centroid of a short clip
	// moves with its vowels by as much as the speakers differ (measured on
	// the demo speakers, heron 575..636 Hz, wren 618..729 Hz over three
	// sentences), so it is not trusted alone; the pitch rule fits the demo
	// speakers exactly and adult voices roughly (a shorter vocal tract
	// tends to come with a higher voice).
	centroidRefHz   = 610
	centroidGain    = 1.5
	minFormantScale = 0.8
	maxFormantScale = 1.35
)

// pitchToScale is the exponent that maps the demo speakers' pitch ratios
// to their formant scale ratios: heron (100 Hz, 1.0) to wren (240 Hz,
// 1.22), and robin (165 Hz, 1.12) on the way.
func pitchToScale() float64 {
	lo, hi := speakers[0], speakers[len(speakers)-1]
	return math.Log(hi.FormantScale/lo.FormantScale) / math.Log(hi.F0/lo.F0)
}

// embeddingSpeaker is the vocoder's conditioning.
type embeddingSpeaker struct{}

func (embeddingSpeaker) declare(g *onnx.Graph) {
	g.Input(vocProsody, onnx.Float, onnx.Fixed(1), onnx.Dynamic("phonemes"), onnx.Fixed(ProsodyDim))
	g.Input(vocEmbedding, onnx.Float, onnx.Fixed(1), onnx.Fixed(EmbeddingDim))
}

// readoutCols are the feature columns the vocoder reads: the two
// histograms.
const readoutCols = pitchBins + centroidBins

func (embeddingSpeaker) tables(g *onnx.Graph) {
	w := projection()
	r := make([]float32, EmbeddingDim*readoutCols)
	for k := range EmbeddingDim {
		for j := range readoutCols {
			// Exact in float16: the readout gives the pitch, which the
			// synthesizer integrates into phase (see paramTable).
			r[k*readoutCols+j] = exact(float64(w[(featPitch+j)*EmbeddingDim+k]))
		}
	}
	g.Float32s("speaker_readout", []int64{EmbeddingDim, readoutCols}, r)
}

func (embeddingSpeaker) prosody(b ops, valid string) string {
	g := b.g
	n := b.op("Shape", valid) // the ids synthesize reads
	p := b.sane(b.op("Reshape", vocProsody, g.Ints(-1, ProsodyDim)), 0, -1, 1)
	pad := b.constFill(g.Op("Concat", []string{n, g.Ints(ProsodyDim)}, onnx.AttrInt("axis", 0)), 0)
	p = g.Op("Concat", []string{p, pad}, onnx.AttrInt("axis", 0))
	p = b.op("Slice", p, g.Ints(0), n, g.Ints(0))
	p = b.op("Where", b.op("Unsqueeze", valid, g.Ints(1)), p, b.f(0))
	// The leading pad synthesize prepends has no adjustment.
	return g.Op("Concat", []string{g.Float32s("", []int64{1, ProsodyDim}, make([]float32, ProsodyDim)), p}, onnx.AttrInt("axis", 0))
}

func (embeddingSpeaker) speaker(b ops) (f0, scale, tilt, breath string) {
	g := b.g
	e := b.sane(vocEmbedding, 0, -1, 1)
	r := b.op("MatMul", e, "speaker_readout") // [1, readoutCols]
	// mean returns the histogram's weighted mean bin (log2 Hz) and
	// whether the histogram has any weight.
	mean := func(from, n int, centres []float32) (string, string) {
		h := b.op("Relu", b.op("Slice", r, g.Ints(int64(from)), g.Ints(int64(from+n)), g.Ints(1)))
		sum := g.Op("ReduceSum", []string{h, g.Ints(1)}, onnx.AttrInt("keepdims", 0))
		weighted := g.Op("ReduceSum", []string{b.mul(h, g.Float32s("", []int64{1, int64(n)}, centres)), g.Ints(1)}, onnx.AttrInt("keepdims", 0))
		return b.div(weighted, b.max(sum, b.f(1e-6))), b.op("Greater", sum, b.f(1e-3))
	}
	exp2 := func(x string) string { return b.op("Exp", b.mul(x, b.f(math.Ln2))) }

	lf0, ok := mean(featPitch, pitchBins, binCentres(pitchBins, pitchLowHz, pitchStep))
	lf0 = b.op("Where", ok, lf0, b.f(math.Log2(defaultF0)))
	f0 = b.clip(exp2(lf0), b.f(vocoderMinF0), b.f(vocoderMaxF0))

	lc, ok := mean(featCentroid, centroidBins, binCentres(centroidBins, centroidLoHz, centroidStep))
	lc = b.op("Where", ok, lc, b.f(math.Log2(centroidRefHz)))
	fromCentroid := b.mul(b.sub(lc, b.f(math.Log2(centroidRefHz))), b.f(centroidGain))
	lo := speakers[0]
	fromPitch := b.mul(b.sub(b.mul(b.op("Log", f0), b.f(1/math.Ln2)), b.f(math.Log2(lo.F0))), b.f(pitchToScale()))
	scale = b.clip(exp2(b.mul(b.add(fromCentroid, fromPitch), b.f(0.5))), b.f(minFormantScale), b.f(maxFormantScale))

	// Tilt and breath follow the demo speakers: a shorter tract with a
	// softer voice, a higher pitch with more breath.
	hi := speakers[len(speakers)-1]
	tiltSlope := (hi.tilt - lo.tilt) / (hi.FormantScale - lo.FormantScale)
	tilt = b.clip(b.affine(scale, tiltSlope, lo.tilt-tiltSlope*lo.FormantScale), b.f(0.6), b.f(1.1))
	breathSlope := (hi.breath - lo.breath) / (hi.F0 - lo.F0)
	breath = b.clip(b.affine(f0, breathSlope, lo.breath-breathSlope*lo.F0), b.f(lo.breath/2), b.f(2*hi.breath))
	return f0, scale, tilt, b.mul(breath, b.f(noiseLevel))
}

// buildVocoder assembles the vocoder for resolved options.
func buildVocoder(vo Options) (*onnx.Model, error) {
	g := onnx.NewGraph(CloneName + "-vocoder")
	synthesize(g, vo, embeddingSpeaker{})
	return g.Model(&onnx.ModelOptions{
		Producer: "mynah",
		Version:  "1",
		Doc:      "mynah cloning kit vocoder: the demo voice's synthesizer, speaker from an embedding, prosody per phoneme",
		Metadata: map[string]string{
			"mynah.clone.role":       "vocoder",
			"mynah.demo.sample_rate": strconv.Itoa(vo.SampleRate),
			"mynah.demo.max_seconds": strconv.Itoa(vo.MaxSeconds),
			"mynah.clone.embedding":  strconv.Itoa(EmbeddingDim),
		},
	})
}
