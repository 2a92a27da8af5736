// Package acoustic measures speech the way the voice tests need to: level,
// spectrum, pitch and formants. It is deliberately small and written out
// (radix-2 FFT, autocorrelation pitch, harmonic-envelope formants) so that
// tests depend on nothing they cannot read, and it is shared by the demo
// voice's tests and the engine tests in audio/voice.
//
// All functions take mono samples as float64 in [-1, 1] (Float64s converts
// int16 and float32) and treat silence and too-short input as "nothing
// measured" (0 or nil), never as an error.
package acoustic

import (
	"math"
	"math/cmplx"
	"slices"

	"github.com/mynah-tts/mynah/audio/fourier"
)

// Sample is a PCM sample type the package converts.
type Sample interface{ ~int16 | ~float32 | ~float64 }

// Float64s converts samples to float64 in [-1, 1]: int16 is divided by
// 32768, floats are copied as they are.
func Float64s[S Sample](x []S) []float64 {
	out := make([]float64, len(x))
	var scale float64 = 1
	var probe S
	if _, ok := any(probe).(int16); ok {
		scale = 1.0 / 32768
	}
	for i, v := range x {
		out[i] = float64(v) * scale
	}
	return out
}

// RMS returns the root mean square of x, 0 for empty input.
func RMS(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	var e float64
	for _, v := range x {
		e += v * v
	}
	return math.Sqrt(e / float64(len(x)))
}

// DB returns 20·log10(v), with a floor of −200 dB for zero.
func DB(v float64) float64 {
	if v <= 1e-10 {
		return -200
	}
	return 20 * math.Log10(v)
}

// Spectrum returns the power spectrum of x averaged over Hann-windowed
// frames of size samples with 50% overlap (Welch's method): size/2+1 bins,
// bin k at k·rate/size Hz. size must be a power of two ≥ 16; input shorter
// than one frame is zero-padded. It returns nil for a bad size.
func Spectrum(x []float64, size int) []float64 {
	if size < 16 || size&(size-1) != 0 {
		return nil
	}
	win := hann(size)
	out := make([]float64, size/2+1)
	buf := make([]complex128, size)
	frames := 0
	for start := 0; start == 0 || start+size <= len(x); start += size / 2 {
		for i := range buf {
			v := 0.0
			if start+i < len(x) {
				v = x[start+i]
			}
			buf[i] = complex(v*win[i], 0)
		}
		fft(buf)
		for k := range out {
			re, im := real(buf[k]), imag(buf[k])
			out[k] += re*re + im*im
		}
		frames++
	}
	for k := range out {
		out[k] /= float64(frames)
	}
	return out
}

// SpectralCentroid returns the power-weighted mean frequency of x in Hz
// (Spectrum with 1024-sample frames), or 0 for silence. Fricatives sit
// high (/s/ above 4 kHz), vowels low.
func SpectralCentroid(x []float64, rate int) float64 {
	const size = 1024
	spec := Spectrum(x, size)
	var sum, weighted float64
	for k, p := range spec {
		sum += p
		weighted += p * float64(k) * float64(rate) / size
	}
	if sum <= 1e-20 {
		return 0
	}
	return weighted / sum
}

// Pitch search range of F0 and MedianF0.
const (
	MinF0 = 60
	MaxF0 = 500
)

// F0 estimates the fundamental frequency of one frame by normalized
// autocorrelation of the frame low-passed below 1.2 kHz. It returns 0 when the frame is not clearly periodic
// (the best normalized correlation in the 60–500 Hz range is under 0.6).
// Frames should hold at least two periods of the lowest pitch (40 ms).
func F0(frame []float64, rate int) float64 {
	n := len(frame)
	lo := int(math.Floor(float64(rate) / MaxF0))
	hi := int(math.Ceil(float64(rate) / MinF0))
	if lo < 2 || n < 2*hi || RMS(frame) < 1e-6 {
		return 0
	}
	size := nextPow2(2 * n)
	buf := make([]complex128, size)
	for i, v := range frame {
		buf[i] = complex(v, 0)
	}
	fft(buf)
	// The autocorrelation of the frame low-passed at pitchBand: high
	// harmonics decorrelate within one period when the pitch glides (a
	// falling tone), the lowest ones do not.
	for i := range buf {
		k := min(i, size-i)
		w := lowpass(float64(k) * float64(rate) / float64(size))
		buf[i] = complex(w*(real(buf[i])*real(buf[i])+imag(buf[i])*imag(buf[i])), 0)
	}
	ifft(buf)
	r0 := real(buf[0])
	// Unbiased normalization: fewer products are summed at longer lags.
	nacf := func(lag int) float64 {
		if lag <= 0 || lag >= n {
			return 0
		}
		return real(buf[lag]) / r0 * float64(n) / float64(n-lag)
	}
	bestLag, best := 0, 0.0
	for lag := lo; lag <= hi; lag++ {
		if v := nacf(lag); v > best && v >= nacf(lag-1) && v >= nacf(lag+1) {
			bestLag, best = lag, v
		}
	}
	if best < 0.6 {
		return 0
	}
	// Every multiple of the period correlates about as well as the period
	// itself: prefer the shortest whole fraction of the best lag that
	// still correlates nearly as well (an octave error the other way).
	lag := bestLag
	for k := bestLag / lo; k >= 2; k-- {
		c := int(math.Round(float64(bestLag) / float64(k)))
		w := max(2, c/20)
		peak, pv := 0, 0.0
		for l := max(lo, c-w); l <= c+w; l++ {
			if v := nacf(l); v > pv {
				peak, pv = l, v
			}
		}
		if pv >= 0.9*best && pv >= nacf(peak-1) && pv >= nacf(peak+1) {
			lag = peak
			break
		}
	}
	d := parabola(nacf(lag-1), nacf(lag), nacf(lag+1))
	return float64(rate) / (float64(lag) + d)
}

// pitchBand is where F0's low-pass weighting falls to zero.
const pitchBand = 1200

func lowpass(f float64) float64 {
	if f >= pitchBand {
		return 0
	}
	c := math.Cos(0.5 * math.Pi * f / pitchBand)
	return c * c
}

// Analysis frames of MedianF0 and FormantPeaks: 2048 samples (93 ms at
// 22050 Hz) every 512.
const (
	frameLen = 2048
	frameHop = 512
)

// MedianF0 returns the median of F0 over the voiced frames of x, or 0 when
// no frame is voiced. Frames quieter than 1/10 of the loudest are skipped.
func MedianF0(x []float64, rate int) float64 {
	var f0s []float64
	for _, fr := range loudFrames(x, frameLen, frameHop, 0.1) {
		if f := F0(fr, rate); f > 0 {
			f0s = append(f0s, f)
		}
	}
	return median(f0s)
}

// FormantPeaks returns up to n of the lowest formant frequencies of the
// voiced parts of x, lowest first: for each loud voiced frame, the
// harmonic amplitudes (the spectrum's peak near each multiple of F0) are
// the spectral envelope; its local maxima at least 3 dB above the valleys
// around them and within 40 dB of the loudest harmonic are formants,
// refined by parabolic interpolation. The k-th result is the median of the
// frames' k-th peaks. Resolution is limited by F0: formants of a 100 Hz
// voice come out within a few tens of Hz, those of a 250 Hz voice only
// within about a third of F0.
func FormantPeaks(x []float64, rate, n int) []float64 {
	perIndex := make([][]float64, n)
	for _, fr := range loudFrames(x, frameLen, frameHop, 0.1) {
		f0 := F0(fr, rate)
		if f0 == 0 {
			continue
		}
		peaks := envelopePeaks(fr, rate, f0)
		for k := 0; k < n && k < len(peaks); k++ {
			perIndex[k] = append(perIndex[k], peaks[k])
		}
	}
	var out []float64
	for _, v := range perIndex {
		if len(v) == 0 {
			break
		}
		out = append(out, median(v))
	}
	return out
}

// HarmonicEnvelope returns the level in dB of harmonics 1.. of f0 in frame
// (the strongest spectrum bin within half an f0 of each), up to 90% of
// the Nyquist frequency.
func HarmonicEnvelope(frame []float64, rate int, f0 float64) []float64 {
	size := nextPow2(4 * len(frame))
	buf := make([]complex128, size)
	win := hann(len(frame))
	for i, v := range frame {
		buf[i] = complex(v*win[i], 0)
	}
	fft(buf)
	binHz := float64(rate) / float64(size)
	var env []float64
	for h := 1; float64(h)*f0 < 0.45*float64(rate); h++ {
		lo := int(math.Ceil((float64(h) - 0.5) * f0 / binHz))
		hi := int(math.Floor((float64(h) + 0.5) * f0 / binHz))
		best := 0.0
		for k := max(lo, 0); k <= hi && k <= size/2; k++ {
			best = math.Max(best, cmplx.Abs(buf[k]))
		}
		env = append(env, DB(best))
	}
	return env
}

func envelopePeaks(frame []float64, rate int, f0 float64) []float64 {
	env := HarmonicEnvelope(frame, rate, f0)
	if len(env) < 3 {
		return nil
	}
	top := slices.Max(env)
	var peaks []float64
	for h := range env {
		left := math.Inf(-1)
		if h > 0 {
			left = env[h-1]
		}
		right := math.Inf(-1)
		if h+1 < len(env) {
			right = env[h+1]
		}
		if env[h] <= left || env[h] < right || env[h] < top-40 {
			continue
		}
		// Prominence: the drop to the higher of the two valleys, each
		// searched until the envelope rises above this peak again.
		valley := func(step int) float64 {
			low := env[h]
			for j := h + step; j >= 0 && j < len(env); j += step {
				if env[j] > env[h] {
					break
				}
				low = math.Min(low, env[j])
			}
			return low
		}
		vl, vr := valley(-1), valley(1)
		if h == 0 {
			vl = vr // the envelope has no left side below f0
		}
		if env[h]-math.Max(vl, vr) < 3 {
			continue
		}
		d := 0.0
		if h > 0 && h+1 < len(env) {
			d = parabola(env[h-1], env[h], env[h+1])
		}
		peaks = append(peaks, (float64(h+1)+d)*f0)
	}
	return peaks
}

// Silences returns the [start, end) sample ranges of x, at least minLen
// long, in which every 10 ms window is more than belowDB under the
// loudest 10 ms window.
func Silences(x []float64, rate int, minLen int, belowDB float64) [][2]int {
	win := max(rate/100, 1)
	var levels []float64
	for s := 0; s+win <= len(x); s += win {
		levels = append(levels, RMS(x[s:s+win]))
	}
	if len(levels) == 0 {
		return nil
	}
	limit := DB(slices.Max(levels)) - belowDB
	var out [][2]int
	start := -1
	flush := func(end int) {
		if start >= 0 && end-start >= minLen {
			out = append(out, [2]int{start, end})
		}
		start = -1
	}
	for i, l := range levels {
		if DB(l) < limit {
			if start < 0 {
				start = i * win
			}
			continue
		}
		flush(i * win)
	}
	flush(len(levels) * win)
	return out
}

func loudFrames(x []float64, size, hop int, rel float64) [][]float64 {
	var frames [][]float64
	var levels []float64
	for s := 0; s+size <= len(x); s += hop {
		frames = append(frames, x[s:s+size])
		levels = append(levels, RMS(x[s:s+size]))
	}
	if len(frames) == 0 {
		return nil
	}
	limit := rel * slices.Max(levels)
	out := frames[:0]
	for i, f := range frames {
		if levels[i] > 0 && levels[i] >= limit {
			out = append(out, f)
		}
	}
	return out
}

// parabola returns the offset in (-0.5, 0.5) of the vertex of the parabola
// through (-1, a), (0, b), (1, c).
func parabola(a, b, c float64) float64 {
	den := a - 2*b + c
	if den >= 0 {
		return 0
	}
	d := 0.5 * (a - c) / den
	return math.Max(-0.5, math.Min(0.5, d))
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func hann(n int) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(n))
	}
	return w
}

func nextPow2(n int) int {
	p := 1
	for p < n {
		p <<= 1
	}
	return p
}

// fft transforms x in place; len(x) must be a power of two.
func fft(x []complex128) { newFFT(len(x)).Transform(x) }

// ifft is the inverse of fft, scaled by 1/n.
func ifft(x []complex128) { newFFT(len(x)).Inverse(x) }

func newFFT(n int) *fourier.FFT {
	f, err := fourier.NewFFT(n)
	if err != nil {
		panic(err) // callers pad to a power of two
	}
	return f
}
