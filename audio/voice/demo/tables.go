package demo

import (
	"math"
	"math/rand/v2"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

// Columns of the per-symbol parameter table the model gathers by phoneme id.
const (
	cDur      = iota // ms
	cClosure         // fraction of the duration that is a stop closure
	cVoicebar        // voicing kept during the closure
	cPitch           // f0 factor
	cStress          // stress a mark gives the phoneme after it
	cInherit         // 1 for length marks
	cTone            // pinyin tone 1..5
	cB1              // formant bandwidths, Hz
	cB2
	cB3
	cNoise // numBands noise band amplitudes start here
)

// cTarget is the first column of the three targets (start, middle, end),
// each targetCols wide.
const cTarget = cNoise + numBands

// Columns within one target.
const (
	tF1 = iota // formant frequencies, Hz
	tF2
	tF3
	tG1 // formant peak gains (see gains)
	tG2
	tG3
	tG4
	tAV // voicing amplitude
	targetCols
)

const numCols = cTarget + 3*targetCols

// paramTable returns the [len(rows()), numCols] table: row i for id i,
// then the pinyin readings.
//
// The columns that decide timing and pitch (duration, closure, pitch,
// stress) hold values float16 represents exactly (exact reports what
// they are rounded to), so that a copy of the model with its weights
// stored as fp16 (mynah quantize --mode fp16-store) keeps the pitch track
// to the bit. The synthesizer integrates f0 into the phase of every
// harmonic: an f0 off by float16's 1/2048 drifts a 2 kHz harmonic a
// full cycle within a second, which leaves the sound unchanged but the
// waveform unrelated (SNR below 0 dB). The other columns (formants,
// gains, bandwidths, noise) round as any weight does.
func paramTable() []float32 {
	all := rows()
	t := make([]float32, 0, len(all)*numCols)
	for _, s := range all {
		row := make([]float32, numCols)
		row[cDur] = exact(s.dur)
		row[cClosure] = exact(s.closure)
		row[cVoicebar] = float32(s.voicebar)
		row[cPitch] = 1
		if s.pitch != 0 {
			row[cPitch] = exact(s.pitch)
		}
		row[cStress] = exact(s.stress)
		if s.inherit {
			row[cInherit] = 1
		}
		row[cTone] = float32(s.tone)
		b := bandwidths(s)
		for i := range b {
			row[cB1+i] = float32(b[i])
		}
		for i, n := range s.noise {
			row[cNoise+i] = float32(n * noiseLevel)
		}
		for k, tr := range s.tr {
			base := cTarget + k*targetCols
			g := gains(tr, b)
			row[base+tF1] = float32(tr.f1)
			row[base+tF2] = float32(tr.f2)
			row[base+tF3] = float32(tr.f3)
			for i := range g {
				row[base+tG1+i] = float32(g[i])
			}
			row[base+tAV] = float32(tr.av)
		}
		t = append(t, row...)
	}
	return t
}

// exact returns the float16 value nearest x, as a float32: stored as
// fp16, it comes back unchanged.
func exact(x float64) float32 { return vecpack.HalfToFloat32(vecpack.Float32ToHalf(float32(x))) }

// noiseLevel puts the unit-RMS noise bands on the scale of the formant
// gains, so that a fricative sits some 10 dB under an open vowel.
const noiseLevel = 6

// Fixed seeds: the model must be byte-identical for the same options.
const (
	seedNoise = 0x6d796e6168 // "mynah"
	seedPert  = 0x64656d6f   // "demo"
)

// Two noise tables of coprime lengths are summed, so the noise only
// repeats after noiseLenA*noiseLenB samples (over three minutes) while the
// model stays small.
const (
	noiseLenA = 2039
	noiseLenB = 2053
)

// bandShape is the magnitude of noise band b at frequency f.
func bandShape(b int, f, nyquist float64) float64 {
	if f < 60 || f > 0.97*nyquist {
		return 0
	}
	gauss := func(center, octaves float64) float64 {
		d := math.Log2(f/center) / octaves
		return math.Exp(-0.5 * d * d)
	}
	switch b {
	case bandAsp:
		return gauss(1500, 1.2)
	case bandPalatal:
		return gauss(3000, 0.5)
	case bandAlveol:
		return gauss(6500, 0.45)
	default: // bandFlat
		lo := 1 / (1 + math.Pow(800/f, 4))
		hi := 1 / (1 + math.Pow(f/10000, 4))
		return lo * hi
	}
}

// noiseTable returns a [numBands, n] table of periodic band-limited noise
// at sampleRate: random phases with each band's magnitude on every DFT
// bin, so the table loops without a seam. Each band has RMS 1/√2; the two
// tables together have RMS 1.
func noiseTable(n, sampleRate int, rng *rand.Rand) []float32 {
	cosT := make([]float64, n)
	sinT := make([]float64, n)
	for m := range n {
		a := 2 * math.Pi * float64(m) / float64(n)
		cosT[m], sinT[m] = math.Cos(a), math.Sin(a)
	}
	nyq := float64(sampleRate) / 2
	out := make([]float32, 0, numBands*n)
	x := make([]float64, n)
	for b := range numBands {
		clear(x)
		for k := 1; k <= (n-1)/2; k++ {
			mag := bandShape(b, float64(k)*float64(sampleRate)/float64(n), nyq)
			phase := 2 * math.Pi * rng.Float64()
			if mag == 0 {
				continue
			}
			re, im := mag*math.Cos(phase), mag*math.Sin(phase)
			for i := range n {
				m := (k * i) % n
				x[i] += re*cosT[m] - im*sinT[m]
			}
		}
		var e float64
		for _, v := range x {
			e += v * v
		}
		scale := 0.0
		if e > 0 {
			scale = 1 / math.Sqrt(2*e/float64(n))
		}
		for _, v := range x {
			out = append(out, float32(v*scale))
		}
	}
	return out
}

// pertLen is the period of the duration jitter noise_w scales.
const pertLen = 61

// pertTable is a fixed sequence in [-1, 1]: the duration jitter noise_w
// scales. noise_w 0 means no jitter at all.
func pertTable() []float32 {
	rng := rand.New(rand.NewPCG(seedPert, seedPert))
	p := make([]float32, pertLen)
	for i := range p {
		p[i] = float32(2*rng.Float64() - 1)
	}
	return p
}

// toneTable gives the pitch factor at the start, middle and end of a
// syllable for pinyin tones 0 (none) to 5 (neutral).
var toneTable = []float32{
	1, 1, 1,
	1.22, 1.22, 1.22, // 1: high level
	0.9, 1.0, 1.32, // 2: rising
	0.88, 0.72, 0.86, // 3: dipping
	1.35, 1.1, 0.72, // 4: falling
	1, 0.95, 0.9, // 5: neutral
}

// smoothing kernels (frames of 10 ms), all centred in kernelLen taps.
const kernelLen = 11

func kernel(taps []float64) []float32 {
	k := make([]float32, kernelLen)
	var sum float64
	for _, v := range taps {
		sum += v
	}
	off := (kernelLen - len(taps)) / 2
	for i, v := range taps {
		k[off+i] = float32(v / sum)
	}
	return k
}

var (
	// f0 glides between phonemes but must still follow a falling tone
	// within one syllable. The taps sum to a power of two, so they are
	// exact in float16 (see paramTable).
	kernelPitch = kernel([]float64{1, 4, 7, 8, 7, 4, 1})
	// Formants glide over ~60 ms, like articulators do.
	kernelFormant = kernel([]float64{1, 2, 3, 4, 3, 2, 1})
	// Amplitudes are not smoothed: the linear interpolation to the sample
	// rate already ramps every step over one frame (10 ms), which is free
	// of clicks and keeps stop closures silent.
	kernelAmp = kernel([]float64{1})
)
