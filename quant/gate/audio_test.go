package gate

import (
	"math"
	"math/rand/v2"
	"testing"
)

const testRate = 22050

// harmonic is a speech-like buzz: f0 and its harmonics up to 5 kHz with
// falling amplitude, seconds long.
func harmonic(f0, seconds float64) []float32 {
	n := int(seconds * testRate)
	out := make([]float32, n)
	for i := range out {
		t := float64(i) / testRate
		var v float64
		for k := 1; float64(k)*f0 < 5000; k++ {
			v += math.Sin(2*math.Pi*float64(k)*f0*t) / float64(k)
		}
		out[i] = float32(0.2 * v)
	}
	return out
}

func withNoise(x []float32, snr float64, seed uint64) []float32 {
	var p float64
	for _, v := range x {
		p += float64(v) * float64(v)
	}
	std := math.Sqrt(p / float64(len(x)) / math.Pow(10, snr/10))
	r := rand.New(rand.NewPCG(seed, 2))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v + float32(r.NormFloat64()*std)
	}
	return out
}

func TestCompareAudioIdentical(t *testing.T) {
	x := harmonic(120, 1)
	m := CompareAudio(x, append([]float32(nil), x...), testRate)
	if !math.IsInf(m.SNR, 1) || !math.IsInf(m.AlignedSNR, 1) {
		t.Errorf("SNR %v, aligned %v; want +Inf for identical signals", m.SNR, m.AlignedSNR)
	}
	if m.SpectralCorrelation != 1 || m.LogMelDistance != 0 || m.LengthDiff != 0 || m.NonFinite != 0 {
		t.Errorf("identical signals: %+v", m)
	}
}

func TestCompareAudioKnownNoise(t *testing.T) {
	x := harmonic(120, 2)
	for _, snr := range []float64{10, 20, 30, 40} {
		m := CompareAudio(x, withNoise(x, snr, uint64(snr)), testRate)
		if math.Abs(m.SNR-snr) > 0.5 {
			t.Errorf("noise %v dB under the signal: SNR %.2f, want within 0.5 dB", snr, m.SNR)
		}
		if m.AlignedSNR < m.SNR-0.01 || m.AlignedSNR > snr+1 {
			t.Errorf("noise %v dB: aligned SNR %.2f, want about SNR %.2f (alignment cannot remove noise)", snr, m.AlignedSNR, m.SNR)
		}
	}
	// More noise, worse measures.
	a := CompareAudio(x, withNoise(x, 30, 1), testRate)
	b := CompareAudio(x, withNoise(x, 10, 1), testRate)
	if !(b.SpectralCorrelation < a.SpectralCorrelation && b.LogMelDistance > a.LogMelDistance) {
		t.Errorf("10 dB noise %+v should measure worse than 30 dB noise %+v", b, a)
	}
}

func TestCompareAudioPitchShift(t *testing.T) {
	x := harmonic(150, 1)
	shifted := harmonic(159, 1) // 6%: a semitone
	m := CompareAudio(x, shifted, testRate)
	th, _ := DefaultThresholds(PrecisionInt8)
	if m.SpectralCorrelation >= th.MinSpectralCorrelation {
		t.Errorf("a semitone shift has spectral correlation %.4f, want below the int8 limit %v", m.SpectralCorrelation, th.MinSpectralCorrelation)
	}
	// A louder copy has the same spectral shape: correlation is 1, SNR is
	// what the gain error makes: the difference is half the signal, 6.02 dB.
	half := make([]float32, len(x))
	for i, v := range x {
		half[i] = v / 2
	}
	m = CompareAudio(x, half, testRate)
	if math.Abs(m.SpectralCorrelation-1) > 1e-9 || math.Abs(m.SNR-6.0206) > 0.01 {
		t.Errorf("half-gain copy: correlation %v (want 1), SNR %v (want 6.02)", m.SpectralCorrelation, m.SNR)
	}
}

func TestCompareAudioShiftIsForgivenByAlignedSNR(t *testing.T) {
	long := harmonic(130, 1.01)
	x := long[20 : 20+testRate]
	delayed := long[:testRate] // 20 samples (0.9 ms) later
	m := CompareAudio(x, delayed, testRate)
	if m.SNR > 10 {
		t.Errorf("a 20-sample delay: SNR %.1f dB, want low (waveform SNR is phase-sensitive)", m.SNR)
	}
	// The last 20 samples have no partner (about −30 dB of the energy); all
	// else aligns exactly.
	if m.AlignedSNR < 25 {
		t.Errorf("a 20-sample delay: aligned SNR %.1f dB, want ≥ 25", m.AlignedSNR)
	}
	if m.SpectralCorrelation < 0.999 {
		t.Errorf("a 20-sample delay: spectral correlation %.4f, want ≈ 1", m.SpectralCorrelation)
	}
}

func TestCompareAudioEdges(t *testing.T) {
	x := harmonic(100, 0.5)
	nan := append([]float32(nil), x...)
	nan[100] = float32(math.NaN())
	silence := make([]float32, len(x))
	tests := []struct {
		name      string
		ref, test []float32
		check     func(m AudioMetrics) bool
	}{
		{"shorter candidate", x, x[:len(x)-100], func(m AudioMetrics) bool {
			return m.LengthDiff == -100 && math.Abs(m.LengthDiffFraction()-100/float64(len(x))) < 1e-12 && !math.IsInf(m.SNR, 0)
		}},
		{"NaN sample", x, nan, func(m AudioMetrics) bool {
			return m.NonFinite == 1 && math.IsNaN(m.SNR) && math.IsNaN(m.SpectralCorrelation) && math.IsNaN(m.LogMelDistance)
		}},
		{"both silent", silence, silence, func(m AudioMetrics) bool {
			return math.IsInf(m.SNR, 1) && m.SpectralCorrelation == 1 && m.LogMelDistance == 0
		}},
		{"silence against sound", silence, x, func(m AudioMetrics) bool {
			return math.IsInf(m.SNR, -1) && m.SpectralCorrelation == 0 && m.LogMelDistance > 10
		}},
		{"sound against silence", x, silence, func(m AudioMetrics) bool {
			return m.SNR == 0 && m.SpectralCorrelation == 0 && m.LogMelDistance > 10
		}},
		{"both empty", nil, nil, func(m AudioMetrics) bool {
			return math.IsInf(m.SNR, 1) && m.SpectralCorrelation == 1 && m.LengthDiffFraction() == 0
		}},
		{"empty candidate", x, nil, func(m AudioMetrics) bool {
			return m.LengthDiffFraction() == 1 && m.SNR == 0
		}},
		{"only the candidate has samples", nil, x[:10], func(m AudioMetrics) bool { return m.LengthDiffFraction() == 1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if m := CompareAudio(tt.ref, tt.test, testRate); !tt.check(m) {
				t.Errorf("%+v", m)
			}
		})
	}
}

func TestInt16ToFloat32(t *testing.T) {
	got := Int16ToFloat32([]int16{0, 16384, -32768, 32767})
	want := []float32{0, 0.5, -1, 32767.0 / 32768}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d: %v, want %v", i, got[i], want[i])
		}
	}
}

func TestMelFiltersCoverEveryBand(t *testing.T) {
	for _, rate := range []int{8000, 16000, 22050, 24000, 48000} {
		f := melFilters(frameLength(rate), rate)
		if len(f) != MelBands {
			t.Fatalf("%d Hz: %d bands", rate, len(f))
		}
		prev := -1
		for b, band := range f {
			if len(band.weights) == 0 || band.first < prev {
				t.Errorf("%d Hz: band %d empty or out of order (first bin %d after %d)", rate, b, band.first, prev)
			}
			prev = band.first
		}
	}
}

func FuzzCompareAudio(f *testing.F) {
	f.Add([]byte{}, []byte{}, 22050)
	f.Add([]byte{0, 0, 128, 63, 0, 0, 0, 0}, []byte{0, 0, 128, 191}, 16000)
	f.Add([]byte{0, 0, 192, 127, 1, 2, 3, 4}, []byte{0, 0, 128, 127, 9, 9, 9, 9}, 8000) // NaN, Inf
	f.Fuzz(func(t *testing.T, a, b []byte, rate int) {
		ref, test := bytesToFloats(a), bytesToFloats(b)
		m := CompareAudio(ref, test, rate%48001)
		if m.LengthDiff != len(test)-len(ref) {
			t.Fatalf("LengthDiff %d for %d and %d samples", m.LengthDiff, len(ref), len(test))
		}
		if m.NonFinite == 0 && allFinite(ref) {
			if math.IsNaN(m.SNR) || math.IsNaN(m.SpectralCorrelation) || math.IsNaN(m.LogMelDistance) || math.IsNaN(m.AlignedSNR) {
				t.Fatalf("NaN measure for finite inputs: %+v", m)
			}
			if m.SpectralCorrelation < -1-1e-9 || m.SpectralCorrelation > 1+1e-9 || m.LogMelDistance < 0 {
				t.Fatalf("measure out of range: %+v", m)
			}
			if math.IsNaN(m.WarpedSpectralCorrelation) || m.WarpedSpectralCorrelation < -1-1e-9 || m.WarpedSpectralCorrelation > 1+1e-9 ||
				math.IsNaN(m.WarpedLogMelDistance) || m.WarpedLogMelDistance < 0 {
				t.Fatalf("warped measure out of range: %+v", m)
			}
		}
	})
}

func bytesToFloats(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(uint32(b[4*i]) | uint32(b[4*i+1])<<8 | uint32(b[4*i+2])<<16 | uint32(b[4*i+3])<<24)
	}
	return out
}

func BenchmarkCompareAudio(b *testing.B) {
	x := harmonic(120, 3)
	y := withNoise(x, 30, 1)
	b.ReportAllocs()
	b.SetBytes(int64(4 * len(x)))
	for b.Loop() {
		CompareAudio(x, y, testRate)
	}
	audio := float64(len(x)) / testRate
	b.ReportMetric(audio*float64(b.N)/b.Elapsed().Seconds(), "audio-s/s")
}

func TestCheckAudio(t *testing.T) {
	x, y := harmonic(120, 1), harmonic(210, 0.8)
	pairs := []AudioPair{
		{Where: "clean", Original: x, Candidate: withNoise(x, 50, 1)},
		{Original: y, Candidate: withNoise(y, 10, 2)},
	}
	v, err := CheckAudio(pairs[:1], testRate, false, &Options{Precision: PrecisionInt8})
	if err != nil || !v.Pass {
		t.Fatalf("50 dB of noise under int8 limits: %v\n%v", err, v)
	}
	v, err = CheckAudio(pairs, testRate, false, &Options{Precision: PrecisionInt8})
	if err != nil {
		t.Fatal(err)
	}
	failed := map[string]string{}
	for _, c := range v.Failed() {
		failed[c.Name] = c.Where
	}
	if v.Pass || failed[CheckLogMelDistance] != "utterance 1" {
		t.Errorf("10 dB of noise must fail log-mel distance at utterance 1 (the unnamed one):\n%v", v)
	}
	// fp16 limits check SNR; int8's do not.
	if v, _ := CheckAudio(pairs[:1], testRate, false, &Options{Precision: PrecisionFP16}); v == nil || v.Pass != true || len(v.Checks) != 4 {
		t.Errorf("fp16 limits on 50 dB: %v", v)
	}
	for _, c := range []struct {
		pairs []AudioPair
		rate  int
		opts  *Options
	}{
		{nil, testRate, nil},
		{make([]AudioPair, MaxRuns+1), testRate, nil},
		{pairs, 100, nil},
		{pairs, testRate, &Options{Precision: "int3"}},
	} {
		if _, err := CheckAudio(c.pairs, c.rate, false, c.opts); err == nil {
			t.Errorf("CheckAudio(%d pairs, %d Hz, %+v) = nil error", len(c.pairs), c.rate, c.opts)
		}
	}
}

// alternating is speech-like timing: segments of the given lengths in
// seconds, alternately at 120 and 180 Hz.
func alternating(segs ...float64) []float32 {
	var out []float32
	for i, seg := range segs {
		f0 := 120.0
		if i%2 == 1 {
			f0 = 180
		}
		out = append(out, harmonic(f0, seg)...)
	}
	return out
}

// TestWarpedMeasures: a candidate whose first ten segments are each 5%
// longer and the next ten 5% shorter (a decoder's durations a hair off,
// the same length in all) is a different signal frame by frame but the
// same sound; the warped measures see the latter. Noise is not forgiven
// by warping.
func TestWarpedMeasures(t *testing.T) {
	var segs, moved []float64
	for i := range 20 {
		segs = append(segs, 0.1)
		moved = append(moved, 0.1+0.005*float64(1-2*(i/10)))
	}
	ref, slower := alternating(segs...), alternating(moved...)
	m := CompareAudio(ref, slower, testRate)
	t.Logf("segments moved: correlation %.4f → warped %.4f, log-mel %.2f → warped %.2f dB",
		m.SpectralCorrelation, m.WarpedSpectralCorrelation, m.LogMelDistance, m.WarpedLogMelDistance)
	if m.SpectralCorrelation > 0.9 || m.WarpedSpectralCorrelation < 0.98 || m.WarpedLogMelDistance > 1.5 {
		t.Errorf("shifted segments: %+v; want frame-by-frame measures failing and warped ones passing", m)
	}
	if same := CompareAudio(ref, ref, testRate); same.WarpedSpectralCorrelation != 1 || same.WarpedLogMelDistance != 0 {
		t.Errorf("identical: warped %v, %v", same.WarpedSpectralCorrelation, same.WarpedLogMelDistance)
	}
	noisy := CompareAudio(ref, withNoise(ref, 10, 3), testRate)
	if noisy.WarpedLogMelDistance < 3 {
		t.Errorf("10 dB of noise: warped log-mel %v dB; warping must not forgive noise", noisy.WarpedLogMelDistance)
	}
	v, err := CheckAudio([]AudioPair{{Original: ref, Candidate: slower}}, testRate, true, nil)
	if err != nil || !v.Pass || len(v.Checks) != 2 || v.Checks[0].Name != CheckLogMelDistance || v.Checks[0].Subject != "warped audio" {
		t.Errorf("warped CheckAudio: %v\n%v", err, v)
	}
	if v, _ := CheckAudio([]AudioPair{{Original: ref, Candidate: slower}}, testRate, false, nil); v == nil || v.Pass {
		t.Errorf("unwarped CheckAudio passed shifted audio:\n%v", v)
	}
}
