package demo

import (
	"math"
	"math/rand/v2"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// Synthesis constants.
const (
	outputGain = 0.02 // keeps the loudest vowel (stressed ɑ, lowest voice) under 0.7
	stressLen  = 0.25 // a stressed phoneme is this much longer,
	stressF0   = 0.08 // this much higher,
	stressAmp  = 0.15 // and this much louder
	jitter     = 0.12 // duration jitter at noise_w 1
	minF0      = 50
	maxF0      = 500
	// idsPerFrame bounds the ids one run reads: Piper sequences have two
	// ids per phoneme and phonemes last several frames, so 8 per frame of
	// the audio cap is far more than any input that fits under it.
	idsPerFrame = 8
)

// ops wraps the graph builder with the few shorthands the synthesis uses.
type ops struct{ g *onnx.Graph }

func (b ops) op(op string, in ...string) string { return b.g.Op(op, in) }
func (b ops) f(v float64) string                { return b.g.Scalar(float32(v)) }
func (b ops) i(v int64) string                  { return b.g.ScalarInt(v) }
func (b ops) add(x, y string) string            { return b.op("Add", x, y) }
func (b ops) sub(x, y string) string            { return b.op("Sub", x, y) }
func (b ops) mul(x, y string) string            { return b.op("Mul", x, y) }
func (b ops) div(x, y string) string            { return b.op("Div", x, y) }
func (b ops) max(x, y string) string            { return b.op("Max", x, y) }
func (b ops) min(x, y string) string            { return b.op("Min", x, y) }
func (b ops) clip(x, lo, hi string) string      { return b.op("Clip", x, lo, hi) }

// accumulate returns sum + x, or x where sum is "" (nothing summed yet).
func (b ops) accumulate(sum, x string) string {
	if sum == "" {
		return x
	}
	return b.add(sum, x)
}

// affine returns x*a + c.
func (b ops) affine(x string, a, c float64) string {
	return b.add(b.mul(x, b.f(a)), b.f(c))
}

func (b ops) cast(x string, to onnx.DataType) string {
	return b.g.Op("Cast", []string{x}, onnx.AttrInt("to", int64(to)))
}

// col returns column c of a [rows, cols] matrix as a [rows] vector.
func (b ops) col(m string, c int) string {
	return b.g.Op("Gather", []string{m, b.i(int64(c))}, onnx.AttrInt("axis", 1))
}

// row returns row r of a [rows, cols] matrix as a [cols] vector.
func (b ops) row(m string, r int) string {
	return b.g.Op("Gather", []string{m, b.i(int64(r))}, onnx.AttrInt("axis", 0))
}

func (b ops) gather(data, idx string) string {
	return b.g.Op("Gather", []string{data, idx}, onnx.AttrInt("axis", 0))
}

// stack turns [n] vectors into an [len(vs), n] matrix.
func (b ops) stack(vs ...string) string {
	u := make([]string, len(vs))
	for k, v := range vs {
		u[k] = b.op("Unsqueeze", v, b.g.Ints(0))
	}
	return b.g.Op("Concat", u, onnx.AttrInt("axis", 0))
}

// columns turns [n] vectors into an [n, len(vs)] matrix.
func (b ops) columns(vs ...string) string {
	u := make([]string, len(vs))
	for k, v := range vs {
		u[k] = b.op("Unsqueeze", v, b.g.Ints(1))
	}
	return b.g.Op("Concat", u, onnx.AttrInt("axis", 1))
}

// sane replaces NaN by def and clips x into [lo, hi].
func (b ops) sane(x string, def, lo, hi float64) string {
	x = b.op("Where", b.op("IsNaN", x), b.f(def), x)
	return b.clip(x, b.f(lo), b.f(hi))
}

func (b ops) constFill(shape string, v float32) string {
	return b.g.Op("ConstantOfShape", []string{shape},
		onnx.AttrTensor("value", onnx.Float32Tensor("", []int64{1}, []float32{v})))
}

// buildModel assembles the demo voice for resolved options.
func buildModel(o Options) (*onnx.Model, error) {
	g := onnx.NewGraph(Name)
	synthesize(g, o, sidSpeaker{})
	return g.Model(&onnx.ModelOptions{
		Producer: "mynah",
		Version:  "1",
		Doc:      "mynah demo voice: formant synthesis in an ONNX graph, Piper voice contract",
		Metadata: map[string]string{
			"mynah.demo.sample_rate": strconv.Itoa(o.SampleRate),
			"mynah.demo.max_seconds": strconv.Itoa(o.MaxSeconds),
		},
	})
}

// conditioning is what differs between the models built around the
// synthesizer: the demo voice picks a speaker by sid, the cloning kit's
// vocoder derives one from a speaker embedding and adjusts each phoneme's
// duration, pitch and energy. synthesize calls the hooks at fixed points.
// Node and constant names come from one counter, so the demo voice stays
// byte-identical only because its hooks add exactly what the graph had
// before, in the same places, and a nil prosody adds nothing.
type conditioning interface {
	// declare adds the inputs that follow input, input_lengths and scales.
	declare(g *onnx.Graph)
	// tables adds constants where the demo voice keeps its speaker table.
	tables(g *onnx.Graph)
	// prosody returns [P, 3] adjustments in [-1, 1] (duration, pitch,
	// energy) for the P ids synthesize works on: a leading pad, then the
	// input ids it reads, where valid (bool, one per id read) marks the
	// ids kept. "" means none.
	prosody(b ops, valid string) string
	// speaker returns the speaker's f0 (Hz), formant scale, tilt and
	// breath level as [1] tensors.
	speaker(b ops) (f0, scale, tilt, breath string)
}

// Bounds of the prosody adjustments: an adjustment a in [-1, 1] multiplies
// a phoneme's duration by 1 + a·prosodyDur, and so on. Whatever a decoder
// says, speech stays within these factors of the voice's own.
const (
	prosodyDur    = 0.25
	prosodyPitch  = 0.1
	prosodyEnergy = 0.3
)

// sidSpeaker is the demo voice's conditioning: the sid input picks a row
// of the speakers table.
type sidSpeaker struct{}

func (sidSpeaker) declare(g *onnx.Graph) {
	g.Input("sid", onnx.Int64, onnx.Fixed(1))
}

func (sidSpeaker) tables(g *onnx.Graph) {
	spkTable := make([]float32, 0, 4*len(speakers))
	for _, s := range speakers {
		spkTable = append(spkTable, float32(s.F0), float32(s.FormantScale), float32(s.tilt), float32(s.breath*noiseLevel))
	}
	g.Float32s("speakers", []int64{int64(len(speakers)), 4}, spkTable)
}

func (sidSpeaker) prosody(ops, string) string { return "" }

func (sidSpeaker) speaker(b ops) (f0, scale, tilt, breath string) {
	who := b.gather("speakers", b.max(b.min("sid", b.i(int64(len(speakers)-1))), b.i(0))) // [1, 4]
	return b.col(who, 0), b.col(who, 1), b.col(who, 2), b.col(who, 3)
}

// synthesize builds the formant synthesizer into g, from the inputs input,
// input_lengths and scales (and whatever c declares) to the output
// "output" [1, 1, 1, T].
func synthesize(g *onnx.Graph, o Options, c conditioning) {
	b := ops{g}
	sr := float64(o.SampleRate)
	hop := int64(o.SampleRate / FramesPerSecond)
	frameRate := sr / float64(hop)
	maxFrames := math.Floor(float64(o.MaxSeconds) * frameRate)
	nSym := int64(len(inventory))

	input := g.Input("input", onnx.Int64, onnx.Fixed(1), onnx.Dynamic("phonemes"))
	inputLengths := g.Input("input_lengths", onnx.Int64, onnx.Fixed(1))
	scales := g.Input("scales", onnx.Float, onnx.Fixed(3))
	c.declare(g)

	table := g.Float32s("phoneme_params", []int64{int64(len(rows())), numCols}, paramTable())
	remapFinal := g.Int64s("pinyin_finals", []int64{nSym}, remap(len(inventory), pinyinFinals))
	remapInitial := g.Int64s("pinyin_initials", []int64{nSym}, remap(len(inventory)+len(pinyinFinals), pinyinInitials))
	c.tables(g)
	pert := g.Float32s("duration_jitter", []int64{pertLen}, pertTable())
	tones := g.Float32s("tone_contours", []int64{6, 3}, toneTable)
	inheritCols := make([]float32, numCols)
	for c := range inheritCols {
		switch c {
		case cDur, cInherit, cStress, cTone:
		default:
			inheritCols[c] = 1
		}
	}
	inheritMask := b.op("Greater", g.Float32s("inherit_columns", []int64{1, numCols}, inheritCols), b.f(0))

	// Ids: anything past input_lengths or outside the table becomes the pad,
	// which lasts zero. A pad is prepended so that even an empty input has
	// one phoneme to gather. Ids past maxIDs cannot fit under the audio cap
	// anyway and are dropped first, which bounds the per-phoneme tensors.
	ids := b.op("Reshape", input, g.Ints(-1))
	ids = b.op("Slice", ids, g.Ints(0), g.Ints(int64(maxFrames)*idsPerFrame), g.Ints(0))
	pos := b.op("Range", b.i(0), b.op("Size", ids), b.i(1))
	valid := b.op("And",
		b.op("Less", pos, b.op("Reshape", inputLengths, g.Ints(-1))),
		b.op("And", b.op("GreaterOrEqual", ids, b.i(0)), b.op("Less", ids, b.i(nSym))))
	ids = b.op("Where", valid, ids, b.i(padID))
	adj := c.prosody(b, valid)
	ids = g.Op("Concat", []string{g.Ints(padID), ids}, onnx.AttrInt("axis", 0))
	n := b.op("Size", ids)
	pos = b.op("Range", b.i(0), n, b.i(1))
	// Neighbours one and two away. In Piper's sequences a pad follows every
	// phoneme, so marks act two away; without pads, one away.
	back1 := b.max(b.sub(pos, b.i(1)), b.i(0))
	back2 := b.max(b.sub(pos, b.i(2)), b.i(0))
	last := b.sub(n, b.i(1))
	fwd1 := b.min(b.add(pos, b.i(1)), last)
	fwd2 := b.min(b.add(pos, b.i(2)), last)

	// A tone digit acts on the final before it. A sequence with tone digits
	// is pinyin: switch the letters pinyin reads differently to their
	// pinyin rows, as finals where a tone follows, as initials elsewhere.
	tn := b.col(b.gather(table, ids), cTone)
	tone := b.max(b.gather(tn, fwd1), b.gather(tn, fwd2))
	// An initial (two before its final) starts its syllable's contour.
	fwd4 := b.min(b.add(pos, b.i(4)), last)
	initialTone := b.op("Where", b.op("Greater", tone, b.f(0)), b.f(0), b.gather(tn, fwd4))
	isPinyin := b.op("Greater", g.Op("ReduceMax", []string{tn}, onnx.AttrInt("keepdims", 0)), b.f(0))
	pinyinIDs := b.op("Where", b.op("Greater", tone, b.f(0)), b.gather(remapFinal, ids), b.gather(remapInitial, ids))
	ids = b.op("Where", isPinyin, pinyinIDs, ids)
	prm := b.gather(table, ids) // [P, numCols]

	// Length marks take on the sound of the phoneme they lengthen.
	src := b.op("Where", b.op("Equal", b.gather(ids, back1), b.i(padID)), back2, back1)
	inherit := b.op("Unsqueeze", b.op("Greater", b.col(prm, cInherit), b.f(0)), g.Ints(1))
	prm = b.op("Where", b.op("And", inherit, inheritMask), b.gather(prm, src), prm)
	// A stress mark acts on what follows it.
	st := b.col(prm, cStress)
	stress := b.max(b.gather(st, back1), b.gather(st, back2))

	// Durations → frames.
	noiseScale := b.sane(b.row(scales, 0), 0, 0, 2)
	lengthScale := b.sane(b.row(scales, 1), 1, 0.1, 10)
	noiseW := b.sane(b.row(scales, 2), 0, 0, 2)
	jit := b.gather(pert, b.op("Mod", pos, b.i(pertLen)))
	dur := b.mul(b.col(prm, cDur), b.affine(stress, stressLen, 1))
	dur = b.mul(dur, lengthScale)
	dur = b.mul(dur, b.add(b.f(1), b.mul(b.mul(noiseW, b.f(jitter)), jit)))
	if adj != "" {
		dur = b.mul(dur, b.affine(b.col(adj, 0), prosodyDur, 1))
	}
	frames := b.mul(dur, b.f(frameRate/1000))
	ends := b.op("CumSum", frames, b.i(0))
	starts := b.sub(ends, frames)
	total := g.Op("ReduceSum", []string{frames}, onnx.AttrInt("keepdims", 0))
	numFrames := b.clip(b.op("Ceil", total), b.f(1), b.f(maxFrames))
	numFramesI := b.cast(numFrames, onnx.Int64)

	// Frame t (centre t+0.5) belongs to the first phoneme that ends after
	// it: count the phoneme ends at or before each frame with a scatter-add
	// of ones at each end's frame and a running sum. O(P + F), where
	// comparing every frame with every end would be O(P·F).
	endFrame := b.cast(b.clip(b.op("Ceil", b.sub(ends, b.f(0.5))), b.f(0), numFrames), onnx.Int64)
	zeros := b.constFill(b.op("Reshape", b.add(numFramesI, b.i(1)), g.Ints(1)), 0)
	ones := b.constFill(b.op("Shape", endFrame), 1)
	counts := g.Op("ScatterElements", []string{zeros, endFrame, ones},
		onnx.AttrInt("axis", 0), onnx.AttrString("reduction", "add"))
	passed := b.op("CumSum", counts, b.i(0))
	passed = b.op("Slice", passed, g.Ints(0), b.op("Reshape", numFramesI, g.Ints(1)), g.Ints(0))
	idx := b.min(b.cast(passed, onnx.Int64), last) // [F]

	extra := []string{stress, tone, initialTone, starts, frames}
	if adj != "" {
		extra = append(extra, b.col(adj, 1), b.col(adj, 2))
	}
	ext := g.Op("Concat", []string{prm, b.columns(extra...)}, onnx.AttrInt("axis", 1))
	const (
		xStress = numCols + iota
		xTone
		xInitialTone
		xStart
		xFrames
		xPitchAdj // only with prosody
		xEnergyAdj
	)
	fp := b.gather(ext, idx) // [F, numCols+5]
	t := b.cast(b.op("Range", b.i(0), numFramesI, b.i(1)), onnx.Float)
	// r is the position of each frame within its phoneme, 0..1.
	r := b.div(b.sub(b.add(t, b.f(0.5)), b.col(fp, xStart)), b.max(b.col(fp, xFrames), b.f(0.01)))
	r = b.clip(r, b.f(0), b.f(1))
	ws := b.max(b.affine(r, -2, 1), b.f(0))
	we := b.max(b.affine(r, 2, -1), b.f(0))
	wm := b.sub(b.sub(b.f(1), ws), we)
	interp3 := func(a, m, e string) string {
		return b.add(b.add(b.mul(ws, a), b.mul(wm, m)), b.mul(we, e))
	}
	tgt := func(c int) string {
		return interp3(b.col(fp, cTarget+c), b.col(fp, cTarget+targetCols+c), b.col(fp, cTarget+2*targetCols+c))
	}

	// Speaker.
	spkF0, spkScale, spkTilt, spkBreath := c.speaker(b)

	// Pitch: speaker × phoneme × stress × declination × a slow wobble ×
	// the pinyin tone contour.
	stressF := b.col(fp, xStress)
	f0 := b.mul(spkF0, b.col(fp, cPitch))
	f0 = b.mul(f0, b.affine(stressF, stressF0, 1))
	// Declination: from +8% to −8% across the utterance, less in short
	// ones (full from 2 s up) so that a single word does not fall.
	span := b.min(b.div(numFrames, b.f(2*frameRate)), b.f(1))
	f0 = b.mul(f0, b.add(b.f(1), b.mul(span, b.affine(b.div(t, numFrames), -0.16, 0.08))))
	f0 = b.mul(f0, b.affine(b.op("Sin", b.mul(t, b.f(2*math.Pi/43))), 0.025, 1))
	tc := b.gather(tones, b.cast(b.col(fp, xTone), onnx.Int64)) // [F, 3]
	f0 = b.mul(f0, interp3(b.col(tc, 0), b.col(tc, 1), b.col(tc, 2)))
	f0 = b.mul(f0, b.col(b.gather(tones, b.cast(b.col(fp, xInitialTone), onnx.Int64)), 0))
	if adj != "" {
		f0 = b.mul(f0, b.affine(b.col(fp, xPitchAdj), prosodyPitch, 1))
	}
	f0 = b.clip(f0, b.f(minF0), b.f(maxF0))

	// Stop closures: silence (or a weak voice bar) before the release.
	open := b.cast(b.op("GreaterOrEqual", r, b.col(fp, cClosure)), onnx.Float)
	vgate := b.add(open, b.mul(b.sub(b.f(1), open), b.col(fp, cVoicebar)))
	av := b.mul(b.mul(tgt(tAV), vgate), b.affine(stressF, stressAmp, 1))
	energy := ""
	if adj != "" {
		energy = b.affine(b.col(fp, xEnergyAdj), prosodyEnergy, 1)
		av = b.mul(av, energy)
	}

	tracks := []string{f0}
	for k := range 3 {
		tracks = append(tracks, b.mul(tgt(tF1+k), spkScale))
	}
	for k := range 3 {
		tracks = append(tracks, b.col(fp, cB1+k))
	}
	tilt := b.f(1)
	for k := range 4 {
		tracks = append(tracks, b.mul(b.mul(tgt(tG1+k), av), tilt))
		tilt = b.mul(tilt, spkTilt)
	}
	for k := range numBands {
		nb := b.mul(b.col(fp, cNoise+k), open)
		if energy != "" {
			nb = b.mul(nb, energy)
		}
		if k == bandAsp {
			nb = b.add(nb, b.mul(b.mul(spkBreath, noiseScale), av))
		}
		tracks = append(tracks, nb)
	}
	kernels := []([]float32){kernelPitch}
	for range 6 {
		kernels = append(kernels, kernelFormant)
	}
	for range 4 + numBands {
		kernels = append(kernels, kernelAmp)
	}
	sm := b.smooth(b.stack(tracks...), kernels) // [C, F]

	f0s := b.row(sm, 0)
	var ratio, gamma, amp [4]string
	for k := range 4 {
		var fk, bk string
		if k < 3 {
			fk, bk = b.row(sm, 1+k), b.row(sm, 4+k)
		} else {
			fk, bk = b.mul(b.f(f4Hz), spkScale), b.f(b4Hz)
		}
		ratio[k] = b.max(b.div(fk, f0s), b.f(1))
		q := b.div(bk, f0s)
		gamma[k] = b.mul(q, q)
		// exp(γ(cos θ − 1)) has a mean of I0(γ)e^−γ; dividing by a close
		// fit keeps a formant's level independent of f0 and bandwidth.
		gg := b.mul(gamma[k], gamma[k])
		norm := b.op("Sqrt", b.add(b.f(1), b.div(b.mul(gg, b.f(2*math.Pi)), b.add(gamma[k], b.f(1)))))
		amp[k] = b.mul(b.row(sm, 7+k), norm)
	}
	// upsample brings frame-rate rows to the sample rate by linear
	// interpolation: one row [F] → [T]; several → one [1, T] row each,
	// interpolated together and split. The tracks are brought up where
	// they are read, a few at a time, so a run holds a few rows of samples
	// rather than every track's (17 × 4 bytes a sample, 6 MB for a 4 s
	// sentence). The values are the same either way: each row is
	// interpolated on its own.
	upsample := func(rows ...string) []string {
		x := b.op("Unsqueeze", b.stack(rows...), g.Ints(0, 2)) // [1, k, 1, F]
		x = g.Op("Resize", []string{x, "", g.Float32s("", []int64{4}, []float32{1, 1, 1, float32(hop)})},
			onnx.AttrString("mode", "linear"), onnx.AttrString("coordinate_transformation_mode", "half_pixel"))
		if len(rows) == 1 {
			return []string{b.op("Reshape", x, g.Ints(-1))}
		}
		x = b.op("Reshape", x, g.Ints(int64(len(rows)), -1))
		return g.OpN("Split", len(rows), []string{x}, onnx.AttrInt("axis", 0))
	}

	// Phase of the fundamental in cycles, summed in float64 so that long
	// utterances keep the harmonics in tune, then wrapped to [0, 1).
	inc := b.cast(b.mul(upsample(f0s)[0], b.f(1/sr)), onnx.Double)
	phase := b.op("CumSum", inc, b.i(0))
	phase = b.cast(b.sub(phase, b.op("Floor", phase)), onnx.Float)
	theta := b.mul(phase, b.f(2*math.Pi))
	bell := b.sub(b.op("Cos", theta), b.f(1))
	var voicedSum string
	for k := range 4 {
		up := upsample(ratio[k], gamma[k], amp[k])
		rt := up[0]
		nh := b.op("Floor", rt)
		frac := b.sub(rt, nh)
		nt := b.mul(nh, theta)
		s0 := b.op("Sin", nt)
		s1 := b.op("Sin", b.add(nt, theta))
		carrier := b.add(s0, b.mul(frac, b.sub(s1, s0)))
		m := b.op("Exp", b.mul(up[1], bell))
		y := b.mul(b.mul(up[2], m), carrier)
		voicedSum = b.accumulate(voicedSum, y)
	}

	// Noise: the two band tables, read at the sample index modulo their
	// lengths, weighted by the band tracks. Reading a table at i mod L is
	// repeating it, so each band's row is tiled (block copies, where a
	// gather copied one value per sample) and cut to T, one band at a time.
	rng := rand.New(rand.NewPCG(seedNoise, uint64(o.SampleRate)))
	tabA := noiseTable(noiseLenA, o.SampleRate, rng)
	tabB := noiseTable(noiseLenB, o.SampleRate, rng)
	numSamples := b.op("Reshape", b.mul(numFramesI, b.i(hop)), g.Ints(1))
	// tiles returns how many repeats of a table of n cover the samples.
	tiles := func(n int) string {
		return b.op("Div", b.add(numSamples, b.i(int64(n-1))), b.i(int64(n)))
	}
	repsA, repsB := tiles(noiseLenA), tiles(noiseLenB)
	repeat := func(name string, table []float32, k, n int, reps string) string {
		row := g.Float32s(name+"_"+strconv.Itoa(k), []int64{int64(n)}, table[k*n:(k+1)*n])
		return b.op("Slice", b.op("Tile", row, reps), g.Ints(0), numSamples, g.Ints(0))
	}
	bands := make([]string, numBands)
	for k := range bands {
		bands[k] = b.row(sm, 11+k)
	}
	weights := upsample(bands...)
	var noiseSum string
	for k := range numBands {
		y := b.mul(b.add(repeat("noise_a", tabA, k, noiseLenA, repsA), repeat("noise_b", tabB, k, noiseLenB, repsB)), weights[k])
		noiseSum = b.accumulate(noiseSum, y)
	}

	out := b.mul(b.add(voicedSum, noiseSum), b.f(outputGain))
	out = b.clip(out, b.f(-1), b.f(1))
	g.Node("Reshape", []string{out, g.Ints(1, 1, 1, -1)}, []string{"output"})
	g.Output("output", onnx.Float, onnx.Fixed(1), onnx.Fixed(1), onnx.Fixed(1), onnx.Dynamic("samples"))
}

// smooth filters each row of a [C, F] matrix with its own kernel, padding
// with the edge values so tracks do not sag towards zero at the ends.
func (b ops) smooth(m string, kernels [][]float32) string {
	c := int64(len(kernels))
	w := make([]float32, 0, len(kernels)*kernelLen)
	for _, k := range kernels {
		w = append(w, k...)
	}
	half := int64(kernelLen / 2)
	x := b.op("Unsqueeze", m, b.g.Ints(0)) // [1, C, F]
	x = b.g.Op("Pad", []string{x, b.g.Ints(0, 0, half, 0, 0, half)}, onnx.AttrString("mode", "edge"))
	wt := b.g.Float32s("", []int64{c, 1, kernelLen}, w)
	x = b.g.Op("Conv", []string{x, wt}, onnx.AttrInt("group", c), onnx.AttrInts("kernel_shape", kernelLen))
	return b.op("Squeeze", x, b.g.Ints(0))
}
