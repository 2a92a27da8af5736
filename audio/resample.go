package audio

import (
	"fmt"
	"math"
	"sync"
)

// The resampler is a Kaiser-windowed sinc interpolator, evaluated as a
// polyphase filter bank when the rate ratio is a reasonable fraction.
//
// Why this one: voices come at 16, 22.05 and 24 kHz and sound cards want
// 44.1 or 48 kHz, so every phrase may pass through here. Linear
// interpolation puts images of the speech band audibly above 11 kHz and, when
// downsampling, folds sibilants back as aliasing. A windowed sinc with its
// cutoff at the lower of the two Nyquist frequencies is both the upsampling
// interpolator and the downsampling anti-alias low-pass in one filter.
//
// With 24 zero crossings, Kaiser beta 8.6 and the cutoff at 0.91 of the
// lower Nyquist frequency, the passband is flat (within 0.01 dB) to 0.82 of
// Nyquist (9 kHz for a 22.05 kHz voice), and the stopband starts at Nyquist
// at about -80 dB, falling below int16's noise floor: frequencies that
// cannot be represented are removed rather than folded back. The price is
// 54 taps per output frame when upsampling 22.05 to 48 kHz; the tests
// measure all of this, BenchmarkResample the speed.
const (
	sincZeroCrossings = 24   // kernel half-width, in zero crossings of the cutoff
	kaiserBeta        = 8.6  // window shape: ~-85 dB stopband
	passbandFraction  = 0.91 // cutoff as a fraction of the lower Nyquist; the rest is transition band
	// maxPhases bounds the precomputed polyphase table. Rate pairs with a
	// larger reduced denominator (such as 44100 -> 44101) compute the kernel
	// per output frame instead: slow, but exact and rare.
	maxPhases = 2048
	// maxCachedFilters bounds the filter cache; a daemon sees a handful of
	// rate pairs (voice rates x one device rate).
	maxCachedFilters = 16
)

// polyphase is a resampling filter for one (input rate, output rate) pair.
type polyphase struct {
	up, down int       // output/input rate ratio reduced: up/down
	half     int       // taps on each side of the output position
	cutoff   float64   // in cycles per input sample x2 (1 = input Nyquist)
	coefs    []float32 // up phases x 2*half taps; nil when up > maxPhases
}

var filterCache = struct {
	sync.Mutex
	m map[[2]int]*polyphase
}{m: map[[2]int]*polyphase{}}

func filterFor(in, out int) *polyphase {
	key := [2]int{in, out}
	filterCache.Lock()
	f := filterCache.m[key]
	filterCache.Unlock()
	if f != nil {
		return f
	}
	f = newPolyphase(in, out)
	filterCache.Lock()
	if len(filterCache.m) >= maxCachedFilters {
		clear(filterCache.m)
	}
	filterCache.m[key] = f
	filterCache.Unlock()
	return f
}

func newPolyphase(in, out int) *polyphase {
	g := gcd(in, out)
	f := &polyphase{up: out / g, down: in / g}
	f.cutoff = passbandFraction * math.Min(1, float64(out)/float64(in))
	f.half = int(math.Ceil(sincZeroCrossings / f.cutoff))
	if f.up > maxPhases {
		return f
	}
	taps := 2 * f.half
	f.coefs = make([]float32, f.up*taps)
	for ph := 0; ph < f.up; ph++ {
		f.fillPhase(f.coefs[ph*taps:(ph+1)*taps], float64(ph)/float64(f.up))
	}
	return f
}

// fillPhase computes the taps for an output frame lying frac (0 <= frac < 1)
// input samples after input sample q; tap i weighs input q-half+1+i. Each
// phase is normalized to unit DC gain so that a constant stays constant.
func (f *polyphase) fillPhase(dst []float32, frac float64) {
	sum := 0.0
	tmp := make([]float64, len(dst))
	for i := range dst {
		d := float64(i-f.half+1) - frac
		tmp[i] = f.kernel(d)
		sum += tmp[i]
	}
	for i := range dst {
		dst[i] = float32(tmp[i] / sum)
	}
}

// kernel is the windowed sinc at distance d input samples.
func (f *polyphase) kernel(d float64) float64 {
	radius := sincZeroCrossings / f.cutoff
	x := d / radius
	if x <= -1 || x >= 1 {
		return 0
	}
	w := besselI0(kaiserBeta*math.Sqrt(1-x*x)) / besselI0(kaiserBeta)
	return f.cutoff * sinc(f.cutoff*d) * w
}

func sinc(x float64) float64 {
	if x == 0 {
		return 1
	}
	return math.Sin(math.Pi*x) / (math.Pi * x)
}

// besselI0 is the modified Bessel function of the first kind, order 0, by
// its power series; for the arguments used here (<= 8.6) 30 terms converge
// far below float64 precision.
func besselI0(x float64) float64 {
	sum, term := 1.0, 1.0
	q := x * x / 4
	for k := 1; k < 30; k++ {
		term *= q / float64(k*k)
		sum += term
		if term < sum*1e-17 {
			break
		}
	}
	return sum
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// Resample converts p to rate Hz (MinRate..MaxRate) with the windowed-sinc
// filter described above. The output has ceil(frames*rate/p.Rate) frames, so
// no input is dropped at the end; the filter's tail is cut there. At the same
// rate the result is an exact copy. The result never shares memory with p.
func Resample(p PCM, rate int) (PCM, error) {
	if err := p.Validate(); err != nil {
		return PCM{}, fmt.Errorf("resample: %w", err)
	}
	if rate < MinRate || rate > MaxRate {
		return PCM{}, fmt.Errorf("resample: %w: target rate %d Hz outside %d..%d", ErrInvalidPCM, rate, MinRate, MaxRate)
	}
	if rate == p.Rate {
		return p.Clone(), nil
	}
	f := filterFor(p.Rate, rate)
	frames := p.Frames()
	outFrames := int((int64(frames)*int64(f.up) + int64(f.down) - 1) / int64(f.down))
	out := PCM{Rate: rate, Channels: p.Channels, Samples: make([]int16, outFrames*p.Channels)}
	if frames == 0 {
		return out, nil
	}
	// One zero-padded channel at a time: the padding replaces bounds checks
	// in the inner loop and stands for the silence around the clip.
	padded := make([]float32, frames+2*f.half)
	var scratch []float32
	if f.coefs == nil {
		scratch = make([]float32, 2*f.half)
	}
	taps := 2 * f.half
	for ch := 0; ch < p.Channels; ch++ {
		for i := 0; i < frames; i++ {
			padded[f.half+i] = float32(p.Samples[i*p.Channels+ch])
		}
		q, phase := 0, 0 // output n sits at input q + phase/up
		for n := 0; n < outFrames; n++ {
			var c []float32
			if f.coefs != nil {
				c = f.coefs[phase*taps : phase*taps+taps]
			} else {
				f.fillPhase(scratch, float64(phase)/float64(f.up))
				c = scratch
			}
			// Tap i weighs input q-half+1+i, which is padded[q+1+i].
			out.Samples[n*p.Channels+ch] = clampInt16(float64(dot(c, padded[q+1:q+1+taps])))
			phase += f.down
			q += phase / f.up
			phase %= f.up
		}
	}
	return out, nil
}

// dot is the filter's inner loop; four partial sums break the dependency
// chain on the adder, which is most of the speed on small cores.
func dot(c, x []float32) float32 {
	x = x[:len(c)]
	var a0, a1, a2, a3 float32
	i := 0
	for ; i+4 <= len(c); i += 4 {
		a0 += c[i] * x[i]
		a1 += c[i+1] * x[i+1]
		a2 += c[i+2] * x[i+2]
		a3 += c[i+3] * x[i+3]
	}
	for ; i < len(c); i++ {
		a0 += c[i] * x[i]
	}
	return (a0 + a1) + (a2 + a3)
}
