package demo

import (
	"math"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// The speaker encoder measures a clip the way the vocoder can use it: the
// distribution of the voice's pitch over its voiced frames, the spectral
// centroid of those frames (it rises with a shorter vocal tract), and the
// mean and spread over them of the log-mel spectrum's shape. Each of the
// four blocks is normalized to a fixed weight, so no block drowns the
// others whatever the recording level, and the whole is rotated into
// EmbeddingDim dimensions by a fixed orthonormal projection and
// L2-normalized. Because the projection is orthonormal, cosines between
// embeddings are cosines between feature vectors, and the vocoder undoes
// it to read pitch and centroid back as ratios within their blocks, which
// the final normalization leaves intact.
//
// Pitch and centroid are coded as soft histograms over fixed log-frequency
// bins: each voiced frame adds a Gaussian bump at its pitch, the centroid
// adds one bump. Two clips of one speaker give overlapping histograms, two
// speakers an octave apart nearly orthogonal ones.
//
// A clip without a voiced frame (silence, noise, a whisper, nothing but
// NaN) gives the all-zero embedding: an engine should refuse it as a
// reference rather than store it.

// Analysis.
const (
	encFFT      = 1024 // DFT size
	encWindow   = 800  // Hann window, 50 ms, zero-padded to encFFT so that the autocorrelation does not wrap
	encHop      = 160  // 10 ms
	encBins     = encFFT/2 + 1
	encMels     = 40
	encMelLowHz = 60
	encMelHiHz  = 7600
	// Pitch search: lags for 60..400 Hz.
	encLagMin = EncoderSampleRate / 400
	encLagMax = (EncoderSampleRate + 59) / 60
	encLags   = encLagMax - encLagMin + 1
	// octaveCost favours the shorter of two lags that fit about equally
	// well (per octave of lag), so a periodic frame gives its period and
	// not twice it.
	octaveCost = 0.05
	// voicing is the least normalized autocorrelation of a voiced frame.
	voicing = 0.5
	// quietDB: frames more than this far below the loudest are pauses.
	quietDB = 40
	// silentPower is the frame power (sum over the one-sided spectrum)
	// under which a frame is silence whatever the loudest: about −60 dBFS.
	silentPower = 0.1
	// Centroid band: where formants are, above the fundamental.
	centroidLowHz = 250
	centroidHiHz  = 4000
)

// Feature layout: the blocks in order, with their bins and weights.
const (
	pitchBins    = 14
	pitchLowHz   = 50   // centre of the first bin
	pitchStep    = 0.25 // octaves between bins
	pitchWidth   = 0.2  // octaves, the bump's standard deviation
	centroidBins = 14
	centroidLoHz = 350
	centroidStep = 0.125
	centroidWide = 0.25

	featPitch    = 0
	featCentroid = featPitch + pitchBins
	featMelMean  = featCentroid + centroidBins
	featMelSd    = featMelMean + encMels
	featureDim   = featMelSd + encMels
)

// Block weights (their squares sum to 1): the share of each block in the
// cosine between two embeddings. Pitch and the mean shape tell speakers
// apart; the centroid and the spread vary with what a short clip says
// (measured on the demo speakers: a centroid cosine as low as 0.5 between
// two sentences of one speaker), so they weigh little.
var (
	weightPitch    = math.Sqrt(0.45)
	weightCentroid = math.Sqrt(0.05)
	weightMelMean  = math.Sqrt(0.45)
	weightMelSd    = math.Sqrt(0.05)
)

// seedProjection fixes the embedding space; the encoder and the vocoder
// both derive the projection from it.
const seedProjection = 0x656d626564 // "embed"

// projection returns a [featureDim, EmbeddingDim] matrix with orthonormal
// rows: Gram–Schmidt on fixed-seed Gaussian vectors, in float64.
func projection() []float32 {
	rng := splitmix{seedProjection}
	rows := make([][]float64, featureDim)
	for i := range rows {
		v := make([]float64, EmbeddingDim)
		for {
			for k := range v {
				v[k] = rng.normal()
			}
			for _, u := range rows[:i] {
				var d float64
				for k := range v {
					d += v[k] * u[k]
				}
				for k := range v {
					v[k] -= d * u[k]
				}
			}
			var n float64
			for _, x := range v {
				n += x * x
			}
			// A vector nearly inside the span of the others would lose
			// its precision to cancellation: draw another.
			if n > 1e-3 {
				n = math.Sqrt(n)
				for k := range v {
					v[k] /= n
				}
				break
			}
		}
		rows[i] = v
	}
	out := make([]float32, 0, featureDim*EmbeddingDim)
	for _, r := range rows {
		for _, x := range r {
			out = append(out, float32(x))
		}
	}
	return out
}

// binCentres returns n log2 frequencies starting at lowHz, step octaves
// apart.
func binCentres(n int, lowHz, step float64) []float32 {
	c := make([]float32, n)
	for i := range c {
		c[i] = float32(math.Log2(lowHz) + float64(i)*step)
	}
	return c
}

func hzToMel(f float64) float64 { return 2595 * math.Log10(1+f/700) }
func melToHz(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }

// melFilterbank returns [encBins, encMels] triangular filters on the mel
// scale, each with unit area so that bands of different widths compare.
func melFilterbank() []float32 {
	lo, hi := hzToMel(encMelLowHz), hzToMel(encMelHiHz)
	edges := make([]float64, encMels+2)
	for i := range edges {
		edges[i] = melToHz(lo + (hi-lo)*float64(i)/float64(encMels+1))
	}
	fb := make([]float64, encBins*encMels)
	for m := range encMels {
		var sum float64
		for k := range encBins {
			f := float64(k) * EncoderSampleRate / encFFT
			var w float64
			switch {
			case f > edges[m] && f <= edges[m+1]:
				w = (f - edges[m]) / (edges[m+1] - edges[m])
			case f > edges[m+1] && f < edges[m+2]:
				w = (edges[m+2] - f) / (edges[m+2] - edges[m+1])
			}
			fb[k*encMels+m] = w
			sum += w
		}
		for k := range encBins {
			fb[k*encMels+m] /= sum
		}
	}
	out := make([]float32, len(fb))
	for i, v := range fb {
		out[i] = float32(v)
	}
	return out
}

// analysisWindow is a Hann window of encWindow samples zero-padded to
// encFFT.
func analysisWindow() []float64 {
	w := make([]float64, encFFT)
	for n := range encWindow {
		s := math.Sin(math.Pi * (float64(n) + 0.5) / encWindow)
		w[n] = s * s
	}
	return w
}

// lagNorm returns, for each searched lag, the window's own autocorrelation
// relative to lag 0: dividing by it makes a periodic frame score about 1
// at its period whatever the period.
func lagNorm() []float32 {
	w := analysisWindow()
	ac := func(l int) float64 {
		var s float64
		for n := 0; n+l < len(w); n++ {
			s += w[n] * w[n+l]
		}
		return s
	}
	a0 := ac(0)
	out := make([]float32, encLags)
	for i := range out {
		out[i] = float32(ac(encLagMin+i) / a0)
	}
	return out
}

// buildEncoder assembles the speaker encoder: audio [1, N] at
// EncoderSampleRate → embedding [1, EmbeddingDim], prompt_ids [1, K].
func buildEncoder(o CloningOptions) (*onnx.Model, error) {
	g := onnx.NewGraph(CloneName + "-encoder")
	b := ops{g}
	reduce := func(op, x string, keep int64, axes ...int64) string {
		return g.Op(op, []string{x}, onnx.AttrInts("axes", axes...), onnx.AttrInt("keepdims", keep))
	}
	sum := func(x string, keep int64, axes ...int64) string {
		return g.Op("ReduceSum", []string{x, g.Ints(axes...)}, onnx.AttrInt("keepdims", keep))
	}

	audio := g.Input(encAudio, onnx.Float, onnx.Fixed(1), onnx.Dynamic("samples"))
	// Read at most EncoderMaxSeconds; NaN and out-of-range samples become
	// silence and full scale.
	x := b.op("Reshape", audio, g.Ints(-1))
	x = b.op("Slice", x, g.Ints(0), g.Ints(EncoderMaxSeconds*EncoderSampleRate), g.Ints(0))
	x = b.sane(x, 0, -1, 1)
	count := b.cast(b.op("Size", x), onnx.Float)
	x = b.sub(x, b.div(sum(x, 1, 0), b.max(count, b.f(1)))) // no DC: it would pose as low pitch
	// Half a frame of silence each side centres the frames and gives even
	// an empty clip one frame.
	x = g.Op("Pad", []string{x, g.Ints(encFFT/2, encFFT/2)})
	x = b.op("Reshape", x, g.Ints(1, -1, 1))
	win := make([]float32, encFFT)
	for i, v := range analysisWindow() {
		win[i] = float32(v)
	}
	spec := g.Op("STFT", []string{x, b.i(encHop), g.Float32s("window", []int64{encFFT}, win), b.i(encFFT)},
		onnx.AttrInt("onesided", 1)) // [1, F, bins, 2]
	power := b.op("Squeeze", reduce("ReduceSumSquare", spec, 0, 3), g.Ints(0)) // [F, bins]

	// Which frames count: loud ones, and of those the voiced ones.
	framePower := sum(power, 0, 1) // [F]
	logPower := b.op("Log", b.add(framePower, b.f(1e-10)))
	loudest := reduce("ReduceMax", logPower, 1, 0)
	loud := b.op("And",
		b.op("Greater", logPower, b.sub(loudest, b.f(quietDB*math.Ln10/10))),
		b.op("Greater", framePower, b.f(silentPower)))
	wLoud := b.cast(loud, onnx.Float)

	// Autocorrelation at lag 0 and the searched lags: the inverse DFT of
	// the power spectrum, as a product with a cosine matrix the graph makes
	// itself (constant-folded at load, so the file stays small). k·l is
	// reduced modulo the DFT size in integers to keep the angle small.
	lags := make([]int64, 0, encLags+1)
	lags = append(lags, 0)
	for l := encLagMin; l <= encLagMax; l++ {
		lags = append(lags, int64(l))
	}
	k := b.op("Unsqueeze", b.op("Range", b.i(0), b.i(encBins), b.i(1)), g.Ints(1))
	kl := b.op("Mod", b.mul(k, g.Int64s("", []int64{1, int64(len(lags))}, lags)), b.i(encFFT))
	cosM := b.op("Cos", b.mul(b.cast(kl, onnx.Float), b.f(2*math.Pi/encFFT)))
	sym := make([]float32, encBins) // one-sided bins stand for two, except DC and Nyquist
	for i := range sym {
		sym[i] = 2
	}
	sym[0], sym[encBins-1] = 1, 1
	cosM = b.mul(cosM, g.Float32s("", []int64{encBins, 1}, sym))
	ac := b.op("MatMul", power, cosM) // [F, 1+lags]
	r0 := b.max(b.op("Slice", ac, g.Ints(0), g.Ints(1), g.Ints(1)), b.f(1e-10))
	rl := b.op("Slice", ac, g.Ints(1), g.Ints(int64(len(lags))), g.Ints(1))
	rho := b.div(b.div(rl, r0), g.Float32s("lag_norm", []int64{1, encLags}, lagNorm()))
	cost := make([]float32, encLags)
	for i := range cost {
		cost[i] = float32(octaveCost * math.Log2(float64(encLagMin+i)/encLagMin))
	}
	rho = b.sub(rho, g.Float32s("octave_cost", []int64{1, encLags}, cost))
	best := reduce("ReduceMax", rho, 0, 1)
	lag := g.Op("ArgMax", []string{rho}, onnx.AttrInt("axis", 1), onnx.AttrInt("keepdims", 0))
	f0 := b.div(b.f(EncoderSampleRate), b.cast(b.add(lag, b.i(encLagMin)), onnx.Float))
	voiced := b.cast(b.op("And", loud, b.op("Greater", best, b.f(voicing))), onnx.Float) // [F]

	// Soft histograms: each voiced frame adds a bump at its pitch; the
	// centroid (log2 Hz, power-weighted over the formant band) of the
	// voiced frames' summed spectrum adds one bump. Summing spectra before
	// taking the centroid lets the loud vowels, where the formants are
	// clear, outweigh the weak transitions.
	voicedRow := b.op("Unsqueeze", voiced, g.Ints(0)) // [1, F]
	nVoiced := b.max(sum(voiced, 0, 0), b.f(1e-6))
	hist := func(log2Hz string, centres []float32, width float64) string {
		d := b.sub(b.op("Unsqueeze", log2Hz, g.Ints(1)), g.Float32s("", []int64{1, int64(len(centres))}, centres))
		return b.op("Exp", b.mul(b.mul(d, d), b.f(-0.5/(width*width)))) // [len(log2Hz), bins]
	}
	log2 := func(x string) string { return b.mul(b.op("Log", x), b.f(1/math.Ln2)) }
	pitchHist := b.div(b.op("MatMul", voicedRow, hist(log2(f0), binCentres(pitchBins, pitchLowHz, pitchStep), pitchWidth)), nVoiced)
	lw := make([]float32, 0, 2*encBins)
	for i := range encBins {
		f := float64(i) * EncoderSampleRate / encFFT
		if f >= centroidLowHz && f <= centroidHiHz {
			lw = append(lw, float32(math.Log2(f)), 1)
		} else {
			lw = append(lw, 0, 0)
		}
	}
	ltas := b.op("MatMul", voicedRow, power)                                                 // [1, bins]
	moments := b.op("MatMul", ltas, g.Float32s("centroid_weights", []int64{encBins, 2}, lw)) // [1, 2]
	centroid := b.div(b.col(moments, 0), b.max(b.col(moments, 1), b.f(1e-10)))               // [1]
	centroid = b.clip(centroid, b.f(math.Log2(centroidLowHz)), b.f(math.Log2(centroidHiHz)))
	centroidHist := hist(centroid, binCentres(centroidBins, centroidLoHz, centroidStep), centroidWide)
	// Without a voiced frame there is no centroid to speak of.
	centroidHist = b.mul(centroidHist, b.cast(b.op("Greater", sum(voiced, 0, 0), b.f(0)), onnx.Float))

	// Log-mel shape (level removed per frame), mean and spread over the
	// voiced frames: fricatives and pauses vary with what is said, vowels
	// with who says it.
	logMel := b.op("Log", b.add(b.op("MatMul", power, g.Float32s("mel_filters", []int64{encBins, encMels}, melFilterbank())), b.f(1e-10)))
	shape := b.sub(logMel, reduce("ReduceMean", logMel, 1, 1))                         // [F, mels]
	mean := b.div(b.op("MatMul", voicedRow, shape), nVoiced)                           // [1, mels]
	meanSq := b.div(b.op("MatMul", voicedRow, b.mul(shape, shape)), nVoiced)           // [1, mels]
	spread := b.op("Sqrt", b.max(b.sub(meanSq, b.mul(mean, mean)), b.f(0)))            // [1, mels]
	centre := func(v string) string { return b.sub(v, reduce("ReduceMean", v, 1, 1)) } // a shape, not a level

	block := func(v string, w float64) string {
		n := b.op("Sqrt", b.add(reduce("ReduceSumSquare", v, 1, 1), b.f(1e-12)))
		return b.mul(b.div(v, n), b.f(w))
	}
	feat := g.Op("Concat", []string{
		block(pitchHist, weightPitch),
		block(centroidHist, weightCentroid),
		block(centre(mean), weightMelMean),
		block(centre(spread), weightMelSd),
	}, onnx.AttrInt("axis", 1)) // [1, featureDim]
	emb := b.op("MatMul", feat, g.Float32s("projection", []int64{featureDim, EmbeddingDim}, projection()))
	norm := b.op("Sqrt", b.add(reduce("ReduceSumSquare", emb, 1, 1), b.f(1e-12)))
	g.Node("Div", []string{emb, norm}, []string{encEmbedding})
	g.Output(encEmbedding, onnx.Float, onnx.Fixed(1), onnx.Fixed(EmbeddingDim))

	// Prompt: the loud frames' shapes averaged over K equal stretches of
	// the clip, each matched to the nearest of C fixed code directions.
	// A stretch with no loud frame gets code 0.
	kTok := int64(o.PromptTokens)
	nFrames := b.op("Shape", wLoud) // [1]
	t := b.op("Range", b.i(0), b.op("Squeeze", nFrames, g.Ints(0)), b.i(1))
	seg := b.div(b.mul(t, b.i(kTok)), b.op("Squeeze", nFrames, g.Ints(0))) // integer division
	onehot := b.op("Equal", b.op("Unsqueeze", b.op("Range", b.i(0), b.i(kTok), b.i(1)), g.Ints(1)), b.op("Unsqueeze", seg, g.Ints(0)))
	avg := b.mul(b.cast(onehot, onnx.Float), b.op("Unsqueeze", wLoud, g.Ints(0))) // [K, F]
	avg = b.div(avg, b.max(sum(avg, 1, 1), b.f(1e-6)))
	segShape := b.op("MatMul", avg, shape) // [K, mels]
	rng := splitmix{o.Seed ^ 0x636f6465}   // "code"
	codebook := g.Float32s("codebook", []int64{encMels, int64(o.Codes)}, rng.normals(encMels*o.Codes, 1))
	code := g.Op("ArgMax", []string{b.op("MatMul", segShape, codebook)}, onnx.AttrInt("axis", 1), onnx.AttrInt("keepdims", 0))
	g.Node("Reshape", []string{b.add(code, b.i(int64(len(inventory)))), g.Ints(1, kTok)}, []string{encPrompt})
	g.Output(encPrompt, onnx.Int64, onnx.Fixed(1), onnx.Fixed(kTok))

	return g.Model(&onnx.ModelOptions{
		Producer: "mynah",
		Version:  "1",
		Doc:      "mynah cloning kit speaker encoder: pitch, centroid and log-mel statistics, fixed projection",
		Metadata: map[string]string{"mynah.clone.role": "encoder"},
	})
}
