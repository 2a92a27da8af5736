package gate

import (
	"fmt"
	"math"
	"math/cmplx"
	"sync"

	"github.com/mynah-tts/mynah/audio/fourier"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The sample rates the audio checks accept.
const (
	minRate = 8000
	maxRate = 192000
)

// Analysis parameters of CompareAudio.
const (
	// MelBands is the number of bands of the log-mel spectrogram.
	MelBands = 80
	// frameSeconds is the analysis frame (rounded up to a power of two in
	// samples): 46 ms, 1024 samples at 22050 Hz, the usual TTS window.
	frameSeconds = 0.046
	// activeFloor is the energy, relative to the loudest frame of either
	// signal, under which a frame counts as silence in both and is left out
	// of the spectral measures: the spectrum of digital silence is noise.
	activeFloor = 1e-6 // −60 dB
	// melFloorDB is how far under the loudest mel band of the original a
	// band is clamped before the log: differences in bands 60 dB down are
	// beyond what a small speaker plays and would otherwise dominate the
	// mean (an exact digital silence against a faint noise is an infinite
	// ratio).
	melFloorDB = 60
	// speechFloor is the energy, relative to the original's loudest frame,
	// over which a frame counts as speech for the spectral correlation.
	speechFloor = 1e-5 // −50 dB
	// MaxAlignSeconds is how far AlignedSNR moves each frame: 5 ms, half
	// the period of a 100 Hz voice.
	MaxAlignSeconds = 0.005
)

// AudioMetrics compare a candidate waveform with the original's.
type AudioMetrics struct {
	// SNR in dB: the original's energy over the energy of the difference,
	// the shorter signal padded with zeros. +Inf when identical.
	SNR float64
	// AlignedSNR is the SNR with each frame (46 ms) of the candidate moved
	// by up to MaxAlignSeconds to where it matches the original best. It
	// forgives what waveform SNR cannot: a slow phase drift (a pitch track
	// a hundredth of a percent off, integrated over a sentence) or a
	// phoneme boundary moved by a few samples, which leave the sound the
	// same; noise and distortion lower it as much as they lower SNR.
	AlignedSNR float64
	// SpectralCorrelation is the mean, over frames that are not silent in
	// both, of the Pearson correlation of the two magnitude spectra. 1 when
	// identical (or both silent); a pitch or formant shift lowers it.
	SpectralCorrelation float64
	// LogMelDistance is the mean absolute difference of the MelBands-band
	// log-mel spectra in dB over the same frames.
	LogMelDistance float64
	// WarpedSpectralCorrelation and WarpedLogMelDistance are the same two
	// measures with each frame of the original paired with frames of the
	// candidate by dynamic time warping on log-mel distance (within
	// MaxWarp) instead of by time, as mel-cepstral distance between two
	// renditions of a text is measured. They judge a candidate that may
	// move phoneme boundaries by a frame, such as a voice whose quantized
	// decoder predicts durations: one phoneme a frame longer shifts every
	// later frame, which the unwarped measures count as a spectral change
	// for the rest of the sentence. Where timing is given (a vocoder on
	// fixed durations) the unwarped measures are the ones to use.
	WarpedSpectralCorrelation, WarpedLogMelDistance float64
	// LengthDiff is len(test) − len(ref) in samples.
	LengthDiff int
	// RefSamples and TestSamples are the two lengths.
	RefSamples, TestSamples int
	// NonFinite counts NaN and ±Inf samples in test. Any makes every other
	// measure NaN, so the checks fail.
	NonFinite int
}

// LengthDiffFraction is |LengthDiff| as a fraction of the original's
// length (0 when both are empty, 1 when only the original is).
func (m AudioMetrics) LengthDiffFraction() float64 {
	d := math.Abs(float64(m.LengthDiff))
	if m.RefSamples == 0 {
		if d == 0 {
			return 0
		}
		return 1
	}
	return d / float64(m.RefSamples)
}

// CompareAudio measures test against ref, two mono waveforms at the same
// rate (Hz; it sets the frame length and the mel scale). Samples are
// float32 PCM in [-1, 1]; use Int16ToFloat32 for 16-bit PCM.
func CompareAudio(ref, test []float32, rate int) AudioMetrics {
	return compareAudio(ref, test, rate, true)
}

// compareAudio is CompareAudio; without warp it leaves the warped
// measures NaN and saves their time warping, which the checks of a
// candidate whose timing is given never read.
func compareAudio(ref, test []float32, rate int, warp bool) AudioMetrics {
	m := AudioMetrics{LengthDiff: len(test) - len(ref), RefSamples: len(ref), TestSamples: len(test)}
	for _, v := range test {
		if !finite32(v) {
			m.NonFinite++
		}
	}
	if m.NonFinite > 0 || !allFinite(ref) {
		m.SNR, m.AlignedSNR, m.SpectralCorrelation, m.LogMelDistance = math.NaN(), math.NaN(), math.NaN(), math.NaN()
		m.WarpedSpectralCorrelation, m.WarpedLogMelDistance = math.NaN(), math.NaN()
		return m
	}
	if rate <= 0 {
		rate = 22050
	}
	n := max(len(ref), len(test))
	var sig, noise float64
	for i := range n {
		r, t := at(ref, i), at(test, i)
		sig += r * r
		noise += (r - t) * (r - t)
	}
	switch {
	case noise == 0:
		m.SNR = math.Inf(1)
	case sig == 0:
		m.SNR = math.Inf(-1)
	default:
		m.SNR = 10 * math.Log10(sig/noise)
	}
	m.AlignedSNR = alignedSNR(ref, test, rate)
	m.SpectralCorrelation, m.LogMelDistance, m.WarpedSpectralCorrelation, m.WarpedLogMelDistance = spectralMeasures(ref, test, rate, warp)
	return m
}

// Int16ToFloat32 converts 16-bit PCM to float32 in [-1, 1).
func Int16ToFloat32(pcm []int16) []float32 {
	out := make([]float32, len(pcm))
	for i, v := range pcm {
		out[i] = float32(v) / 32768
	}
	return out
}

func at(x []float32, i int) float64 {
	if i < len(x) {
		return float64(x[i])
	}
	return 0
}

func finite32(v float32) bool {
	f := float64(v)
	return !math.IsNaN(f) && !math.IsInf(f, 0)
}

func allFinite(x []float32) bool {
	for _, v := range x {
		if !finite32(v) {
			return false
		}
	}
	return true
}

// alignedSNR is the SNR over non-overlapping frames of ref, each compared
// with the stretch of test shifted by the lag (within ±MaxAlignSeconds)
// that leaves the least error.
func alignedSNR(ref, test []float32, rate int) float64 {
	size := frameLength(rate)
	maxLag := int(MaxAlignSeconds * float64(rate))
	n := max(len(ref), len(test))
	var sig, noise float64
	for start := 0; start < n; start += size {
		end := min(start+size, n)
		best := math.Inf(1)
		for lag := -maxLag; lag <= maxLag; lag++ {
			var e float64
			for i := start; i < end && e < best; i++ {
				d := at(ref, i) - atSigned(test, i+lag)
				e += d * d
			}
			best = min(best, e)
		}
		for i := start; i < end; i++ {
			sig += at(ref, i) * at(ref, i)
		}
		noise += best
	}
	switch {
	case noise == 0:
		return math.Inf(1)
	case sig == 0:
		return math.Inf(-1)
	}
	return 10 * math.Log10(sig/noise)
}

func atSigned(x []float32, i int) float64 {
	if i < 0 {
		return 0
	}
	return at(x, i)
}

// frameLength is the analysis frame for rate: frameSeconds rounded up to a
// power of two, at least 64 samples.
func frameLength(rate int) int {
	n := 64
	for float64(n) < frameSeconds*float64(rate) {
		n *= 2
	}
	return n
}

// frames is the short-time analysis of one signal: per frame its energy,
// magnitude spectrum and mel spectrum.
type frames struct {
	energy []float64
	mag    [][]float64
	mel    [][]float64
}

// analyze cuts sig, zero-padded to n samples, into frames of size with
// hop size/4.
func analyze(sig []float32, n, size int, an *analyzer) frames {
	hop := size / 4
	count := 1
	if n > size {
		count = 1 + (n-size+hop-1)/hop
	}
	f := frames{energy: make([]float64, count), mag: make([][]float64, count), mel: make([][]float64, count)}
	buf := make([]complex128, size)
	for i := range count {
		start := i * hop
		var e float64
		for j := range size {
			v := at(sig, start+j)
			e += v * v
			buf[j] = complex(v*an.window[j], 0)
		}
		an.fft.Transform(buf)
		mag := make([]float64, size/2+1)
		for j := range mag {
			mag[j] = cmplx.Abs(buf[j])
		}
		f.energy[i], f.mag[i], f.mel[i] = e, mag, an.mel(mag)
	}
	return f
}

// spectralMeasures returns the spectral correlation and the log-mel
// distance of two signals (zero-padded to the same length), frame i of
// one against frame i of the other, and with warp the same two along the
// time warping path between them (else NaN).
func spectralMeasures(ref, test []float32, rate int, warp bool) (corr, melDist, warpedCorr, warpedMel float64) {
	size := frameLength(rate)
	an := analyzerFor(size, rate)
	n := max(len(ref), len(test))
	a, b := analyze(ref, n, size, an), analyze(test, n, size, an)
	pairs := make([][2]int, len(a.energy))
	for i := range pairs {
		pairs[i] = [2]int{i, i}
	}
	corr, melDist = pairMeasures(a, b, pairs, size)
	if !warp {
		return corr, melDist, math.NaN(), math.NaN()
	}
	var loudestMel float64
	for _, m := range a.mel {
		for _, v := range m {
			loudestMel = max(loudestMel, v)
		}
	}
	warpedCorr, warpedMel = pairMeasures(a, b, warpPath(a, b, melFloorOf(loudestMel, size), rate, size), size)
	return corr, melDist, warpedCorr, warpedMel
}

// pairMeasures averages the spectral correlation and the log-mel distance
// over pairs of frames (a's index, b's index).
func pairMeasures(a, b frames, pairs [][2]int, size int) (corr, melDist float64) {
	var loudest, loudestRef, loudestMel float64
	for i, e := range a.energy {
		loudest, loudestRef = max(loudest, e), max(loudestRef, e)
		for _, v := range a.mel[i] {
			loudestMel = max(loudestMel, v)
		}
	}
	for _, e := range b.energy {
		loudest = max(loudest, e)
	}
	if loudest == 0 {
		return 1, 0 // both silent throughout: nothing differs
	}
	melFloor := melFloorOf(loudestMel, size)
	var sumCorr, sumMel float64
	corrFrames, melFrames := 0, 0
	for _, p := range pairs {
		i, j := p[0], p[1]
		// The spectral shape is compared where the original speaks; noise
		// the candidate adds in pauses is the log-mel distance's to see.
		if a.energy[i] >= speechFloor*loudestRef && loudestRef > 0 {
			corrFrames++
			sumCorr += pearson(a.mag[i], b.mag[j])
		}
		if a.energy[i] < activeFloor*loudest && b.energy[j] < activeFloor*loudest {
			continue
		}
		melFrames++
		sumMel += melDistance(a.mel[i], b.mel[j], melFloor)
	}
	corr = 1
	if corrFrames > 0 {
		corr = sumCorr / float64(corrFrames)
	} else if loudestRef == 0 {
		corr = 0 // the original is silent and the candidate is not
	}
	return corr, sumMel / float64(max(melFrames, 1))
}

// melFloorOf is the level bands are clamped to before the log: melFloorDB
// under the original's loudest band, or under full scale when the
// original is silent (the candidate is then measured against that).
func melFloorOf(loudestMel float64, size int) float64 {
	if f := loudestMel * math.Pow(10, -melFloorDB/10); f > 0 {
		return f
	}
	return float64(size) * math.Pow(10, -melFloorDB/10)
}

// melDistance is the mean absolute difference of two mel spectra in dB.
func melDistance(x, y []float64, floor float64) float64 {
	var d float64
	for k := range x {
		// Without the conversions arm64 fuses one product into the
		// subtraction and identical spectra differ by an ulp; an explicit
		// conversion rounds, and the Go spec forbids fusing across it.
		d += math.Abs(float64(10*math.Log10(max(x[k], floor))) - float64(10*math.Log10(max(y[k], floor))))
	}
	return d / float64(len(x))
}

// MaxWarp bounds the time warping of the warped measures: a frame of the
// candidate pairs with one of the original at most this fraction of the
// original's length (and at least 100 ms) from where the straight line
// between the two lengths puts it.
const MaxWarp = 0.1

// warpPath is the cheapest path of frame pairs from (0, 0) to the last
// frames of a and b, in steps of one frame in either or both, within the
// MaxWarp band; a pair costs its log-mel distance.
func warpPath(a, b frames, floor float64, rate, size int) [][2]int {
	n, m := len(a.mel), len(b.mel)
	// The band holds at least the straight line's own slope.
	band := max(int(MaxWarp*float64(n)), int(0.1*float64(rate)/float64(size/4)), m/n+1)
	lo := func(i int) int { return max(0, i*m/n-band) }
	hi := func(i int) int { return min(m-1, i*m/n+band) }
	db := func(f frames) [][]float64 { // log-mel in dB, once per frame
		out := make([][]float64, len(f.mel))
		for i, m := range f.mel {
			out[i] = make([]float64, len(m))
			for k, v := range m {
				out[i][k] = 10 * math.Log10(max(v, floor))
			}
		}
		return out
	}
	adb, bdb := db(a), db(b)
	dist := func(i, j int) float64 {
		var d float64
		for k, v := range adb[i] {
			d += math.Abs(v - bdb[j][k])
		}
		return d / float64(len(adb[i]))
	}
	// Only the band is stored: row i holds columns lo(i)..hi(i).
	width := 2*band + 1
	inf := math.Inf(1)
	cost := make([]float64, n*width)
	for i := range cost {
		cost[i] = inf
	}
	at := func(i, j int) float64 {
		if i < 0 || j < lo(i) || j > hi(i) {
			return inf
		}
		return cost[i*width+j-lo(i)]
	}
	for i := range n {
		for j := lo(i); j <= hi(i); j++ {
			best := min(at(i-1, j), at(i-1, j-1), at(i, j-1))
			if i == 0 && j == 0 {
				best = 0
			}
			cost[i*width+j-lo(i)] = best + dist(i, j)
		}
	}
	path := [][2]int{{n - 1, m - 1}}
	for i, j := n-1, m-1; i > 0 || j > 0; {
		ni, nj, best := i-1, j-1, at(i-1, j-1)
		if c := at(i-1, j); c < best {
			ni, nj, best = i-1, j, c
		}
		if c := at(i, j-1); c < best {
			ni, nj, best = i, j-1, c
		}
		if math.IsInf(best, 1) {
			break // cannot happen inside the band; a guard, not a path
		}
		i, j = ni, nj
		path = append(path, [2]int{i, j})
	}
	return path
}

// pearson is the correlation of a and b; a constant vector correlates 1
// with an equal one and 0 with anything else.
func pearson(a, b []float64) float64 {
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		da, db := a[i]-ma, b[i]-mb
		sab += da * db
		saa += da * da
		sbb += db * db
	}
	if saa == 0 || sbb == 0 {
		if saa == sbb {
			return 1
		}
		return 0
	}
	return sab / math.Sqrt(saa*sbb)
}

// analyzer holds the window, FFT twiddles and mel filters of one frame
// size and rate; they are cached because a gate run compares many
// sentences at one rate.
type analyzer struct {
	window  []float64
	fft     *fourier.FFT
	filters []melFilter
}

type melFilter struct {
	first   int
	weights []float64
}

type analyzerKey struct{ size, rate int }

var analyzers sync.Map // analyzerKey → *analyzer

func analyzerFor(size, rate int) *analyzer {
	key := analyzerKey{size, rate}
	if a, ok := analyzers.Load(key); ok {
		return a.(*analyzer)
	}
	fft, err := fourier.NewFFT(size)
	if err != nil {
		panic(err) // the frame sizes are constants, powers of two
	}
	a := &analyzer{window: make([]float64, size), fft: fft}
	for i := range a.window {
		a.window[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(size)) // periodic Hann
	}
	a.filters = melFilters(size, rate)
	actual, _ := analyzers.LoadOrStore(key, a)
	return actual.(*analyzer)
}

// melFilters returns MelBands triangular filters on the HTK mel scale from
// 0 Hz to rate/2, applied to power spectra.
func melFilters(size, rate int) []melFilter {
	toMel := func(f float64) float64 { return 2595 * math.Log10(1+f/700) }
	fromMel := func(m float64) float64 { return 700 * (math.Pow(10, m/2595) - 1) }
	top := toMel(float64(rate) / 2)
	edges := make([]float64, MelBands+2)
	for i := range edges {
		edges[i] = fromMel(top * float64(i) / float64(MelBands+1))
	}
	binHz := float64(rate) / float64(size)
	bins := size/2 + 1
	filters := make([]melFilter, MelBands)
	for b := range filters {
		lo, mid, hi := edges[b], edges[b+1], edges[b+2]
		var f melFilter
		f.first = -1
		for k := range bins {
			hz := float64(k) * binHz
			var w float64
			switch {
			case hz > lo && hz <= mid:
				w = (hz - lo) / (mid - lo)
			case hz > mid && hz < hi:
				w = (hi - hz) / (hi - mid)
			}
			if w <= 0 {
				if f.first >= 0 {
					break
				}
				continue
			}
			if f.first < 0 {
				f.first = k
			}
			f.weights = append(f.weights, w)
		}
		if f.first < 0 {
			// A band narrower than one FFT bin: take the nearest bin, so
			// no band is always empty.
			f.first = min(int(math.Round(mid/binHz)), bins-1)
			f.weights = []float64{1}
		}
		filters[b] = f
	}
	return filters
}

// mel returns the band energies of a magnitude spectrum.
func (a *analyzer) mel(mag []float64) []float64 {
	out := make([]float64, len(a.filters))
	for b, f := range a.filters {
		var e float64
		for i, w := range f.weights {
			if k := f.first + i; k < len(mag) {
				e += w * mag[k] * mag[k]
			}
		}
		out[b] = e
	}
	return out
}

// AudioPair is one utterance as the original and the candidate made it,
// float samples in [-1, 1] at one rate.
type AudioPair struct {
	// Where names the utterance in the report ("sentence 2").
	Where               string
	Original, Candidate []float32
}

// CheckAudio judges audio the caller made with the original and the
// candidate, by the audio checks of the precision's thresholds (SNR,
// spectral correlation, log-mel distance, length; the worst utterance
// counts). It is for engines the gate cannot drive itself, such as a
// voice bundle whose quantized model sits in the middle of a pipeline:
// the caller runs the whole pipeline both ways and hands over the audio.
// Options.CheckSpeed and Session are ignored: speed is not measured here.
//
// With warp, for audio whose timing the candidate may move (a quantized
// decoder that predicts durations and pitch), log-mel distance is the
// time-warped one (AudioMetrics.WarpedLogMelDistance), and neither SNR nor
// spectral correlation is checked: they compare the waveform and the
// spectrum's fine structure, which move with any change in timing or
// pitch (a fricative a frame later reads other noise; a pitch a hundredth
// of a percent higher drifts the phase) while the sound stays the same.
// Band energies, aligned, and the length are what is judged then; the
// decoder's own outputs have been judged as tensors before.
func CheckAudio(pairs []AudioPair, rate int, warp bool, opts *Options) (*Verdict, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, fmt.Errorf("check audio: %w", err)
	}
	if warp {
		o.th.MinSpectralCorrelation, o.th.MinSNR, o.th.MinAlignedSNR = 0, 0, 0
	}
	if len(pairs) == 0 || len(pairs) > MaxRuns {
		return nil, fmt.Errorf("check audio: %w: %d utterances, want 1..%d (MaxRuns)", ErrInvalidOptions, len(pairs), MaxRuns)
	}
	if rate < minRate || rate > maxRate {
		return nil, fmt.Errorf("check audio: %w: rate %d Hz, want %d..%d", ErrInvalidOptions, rate, minRate, maxRate)
	}
	a := make([]record, len(pairs))
	b := make([]record, len(pairs))
	for i, p := range pairs {
		where := p.Where
		if where == "" {
			where = fmt.Sprintf("utterance %d", i)
		}
		a[i] = record{where: where, outputs: []ort.Tensor{{Float32: p.Original}}}
		b[i] = record{where: where, outputs: []ort.Tensor{{Float32: p.Candidate}}}
	}
	v := &Verdict{Pass: true, Precision: o.precision}
	if err := audioJudge(o.th, rate, warp)(v, a, b); err != nil {
		return nil, fmt.Errorf("check audio: %w", err)
	}
	return v, nil
}
