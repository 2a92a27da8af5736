package acoustic

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

const rate = 22050

func sine(freq, amp float64, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = amp * math.Sin(2*math.Pi*freq*float64(i)/rate)
	}
	return x
}

// vowel returns a harmonic signal at f0 whose harmonic amplitudes follow
// resonances at the given formants (bandwidth 80 Hz each): a test vowel
// with a known envelope, built independently of the demo voice.
func vowel(f0 float64, formants []float64, n int) []float64 {
	x := make([]float64, n)
	for h := 1; float64(h)*f0 < 0.45*rate; h++ {
		f := float64(h) * f0
		amp := 1.0
		for _, fc := range formants {
			amp *= fc * fc / math.Hypot(fc*fc-f*f, f*80)
		}
		for i := range x {
			x[i] += amp * math.Sin(2*math.Pi*f*float64(i)/rate)
		}
	}
	peak := 0.0
	for _, v := range x {
		peak = math.Max(peak, math.Abs(v))
	}
	for i := range x {
		x[i] *= 0.5 / peak
	}
	return x
}

func noise(n int, amp float64, seed uint64) []float64 {
	r := rand.New(rand.NewPCG(seed, seed))
	x := make([]float64, n)
	for i := range x {
		x[i] = amp * (2*r.Float64() - 1)
	}
	return x
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func TestFloat64s(t *testing.T) {
	got := Float64s([]int16{-32768, 0, 16384})
	want := []float64{-1, 0, 0.5}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("int16: got %v, want %v", got, want)
		}
	}
	if f := Float64s([]float32{0.25, -1}); f[0] != 0.25 || f[1] != -1 {
		t.Errorf("float32: got %v", f)
	}
}

func TestRMS(t *testing.T) {
	tests := []struct {
		name string
		x    []float64
		want float64
	}{
		{"empty", nil, 0},
		{"silence", make([]float64, 100), 0},
		{"dc", []float64{0.5, 0.5, 0.5, 0.5}, 0.5},
		{"sine", sine(441, 1, rate), 1 / math.Sqrt2},
	}
	for _, tt := range tests {
		if got := RMS(tt.x); math.Abs(got-tt.want) > 1e-6 {
			t.Errorf("%s: RMS = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFFTMatchesDFT(t *testing.T) {
	x := noise(64, 1, 3)
	buf := make([]complex128, len(x))
	for i, v := range x {
		buf[i] = complex(v, 0)
	}
	fft(buf)
	for k := range x {
		var want complex128
		for n, v := range x {
			want += complex(v, 0) * cmplx.Exp(complex(0, -2*math.Pi*float64(k*n)/float64(len(x))))
		}
		if cmplx.Abs(buf[k]-want) > 1e-9 {
			t.Fatalf("bin %d: fft %v, dft %v", k, buf[k], want)
		}
	}
	ifft(buf)
	for i, v := range x {
		if math.Abs(real(buf[i])-v) > 1e-12 {
			t.Fatalf("ifft(fft(x))[%d] = %v, want %v", i, real(buf[i]), v)
		}
	}
}

func TestSpectrumPeak(t *testing.T) {
	for _, f := range []float64{300, 1000, 5000} {
		spec := Spectrum(sine(f, 0.5, rate), 2048)
		best := 0
		for k := range spec {
			if spec[k] > spec[best] {
				best = k
			}
		}
		got := float64(best) * rate / 2048
		if math.Abs(got-f) > rate/2048.0 {
			t.Errorf("sine at %v Hz: spectrum peak at %v Hz", f, got)
		}
	}
	if Spectrum(make([]float64, 10), 1000) != nil {
		t.Error("size 1000 (not a power of two) accepted")
	}
	if s := Spectrum(make([]float64, 10), 64); len(s) != 33 {
		t.Errorf("short input: %d bins, want 33", len(s))
	}
}

func TestSpectralCentroid(t *testing.T) {
	if got := SpectralCentroid(sine(2000, 0.5, rate), rate); math.Abs(got-2000) > 50 {
		t.Errorf("2 kHz sine: centroid %v", got)
	}
	lo := SpectralCentroid(vowel(100, []float64{700, 1100, 2400}, rate), rate)
	hi := SpectralCentroid(noise(rate, 0.3, 9), rate)
	if lo > 1500 || hi < 4500 {
		t.Errorf("vowel centroid %v (want < 1500), white noise %v (want > 4500)", lo, hi)
	}
	if got := SpectralCentroid(make([]float64, 100), rate); got != 0 {
		t.Errorf("silence: centroid %v", got)
	}
}

func TestF0(t *testing.T) {
	for _, f0 := range []float64{80, 100, 165, 240, 400} {
		x := vowel(f0, []float64{700, 1200, 2500}, frameLen)
		got := F0(x, rate)
		if math.Abs(got-f0)/f0 > 0.01 {
			t.Errorf("vowel at %v Hz: F0 = %v", f0, got)
		}
	}
	if got := F0(noise(frameLen, 0.3, 1), rate); got != 0 {
		t.Errorf("white noise: F0 = %v, want 0 (unvoiced)", got)
	}
	if got := F0(make([]float64, frameLen), rate); got != 0 {
		t.Errorf("silence: F0 = %v, want 0", got)
	}
	if got := F0(sine(200, 1, 100), rate); got != 0 {
		t.Errorf("100 samples: F0 = %v, want 0 (too short)", got)
	}
}

func TestMedianF0(t *testing.T) {
	// A second at 120 Hz, a quarter second at 200 Hz and some noise: the
	// median is the pitch of the longest voiced part.
	x := append(vowel(120, []float64{600, 1500}, rate), vowel(200, []float64{600, 1500}, rate/4)...)
	x = append(x, noise(rate/4, 0.2, 2)...)
	if got := MedianF0(x, rate); math.Abs(got-120) > 2 {
		t.Errorf("MedianF0 = %v, want 120", got)
	}
	if got := MedianF0(noise(rate, 0.3, 4), rate); got != 0 {
		t.Errorf("noise: MedianF0 = %v, want 0", got)
	}
}

func TestFormantPeaks(t *testing.T) {
	tests := []struct {
		f0       float64
		formants []float64
		tol      float64 // relative
	}{
		{100, []float64{730, 1100, 2450}, 0.05},
		{100, []float64{280, 2250, 2950}, 0.05},
		{165, []float64{640, 1200, 2400}, 0.08},
		{120, []float64{500, 1500, 2500}, 0.05},
	}
	for _, tt := range tests {
		x := vowel(tt.f0, tt.formants, rate/2)
		got := FormantPeaks(x, rate, 3)
		if len(got) != 3 {
			t.Errorf("f0 %v formants %v: got %v", tt.f0, tt.formants, got)
			continue
		}
		for k, want := range tt.formants {
			if math.Abs(got[k]-want)/want > tt.tol {
				t.Errorf("f0 %v formants %v: peak %d at %.0f Hz, want %.0f ± %.0f%%", tt.f0, tt.formants, k, got[k], want, 100*tt.tol)
			}
		}
	}
	if got := FormantPeaks(noise(rate, 0.3, 5), rate, 2); len(got) != 0 {
		t.Errorf("noise: formants %v, want none", got)
	}
}

func TestSilences(t *testing.T) {
	x := append(sine(200, 0.5, rate/2), make([]float64, rate/2)...)
	x = append(x, sine(200, 0.5, rate/2)...)
	x = append(x, noise(rate/20, 1e-5, 7)...) // a quiet tail, too short
	got := Silences(x, rate, rate/5, 40)
	if len(got) != 1 {
		t.Fatalf("Silences = %v, want one gap", got)
	}
	// Windows are 10 ms, so the edges are found to within one window.
	win := rate / 100
	if abs(got[0][0]-rate/2) > win || abs(got[0][1]-rate) > win {
		t.Errorf("gap at %v, want [%d %d] ± %d", got[0], rate/2, rate, win)
	}
	if got := Silences(sine(300, 0.5, rate), rate, 100, 40); len(got) != 0 {
		t.Errorf("steady tone: Silences = %v, want none", got)
	}
	if got := Silences(nil, rate, 100, 40); got != nil {
		t.Errorf("empty: Silences = %v", got)
	}
}

// FuzzAnalyze feeds arbitrary samples to every measurement: none may
// panic, and results must be finite and in range.
func FuzzAnalyze(f *testing.F) {
	f.Add([]byte{}, uint16(22050))
	f.Add([]byte{0x7f, 0xff, 0x80, 0x00, 0x00, 0x00}, uint16(8000))
	seed := make([]byte, 8192)
	for i := range seed {
		seed[i] = byte(40 * math.Sin(float64(i)/7))
	}
	f.Add(seed, uint16(16000))
	f.Fuzz(func(t *testing.T, data []byte, r uint16) {
		if len(data) > 1<<15 {
			return // a second of audio covers every code path; more only slows the fuzzer
		}
		rate := int(r)%48000 + 1
		x := make([]float64, len(data)/2)
		for i := range x {
			x[i] = float64(int16(uint16(data[2*i])|uint16(data[2*i+1])<<8)) / 32768
		}
		if v := RMS(x); math.IsNaN(v) || v < 0 || v > 1 {
			t.Fatalf("RMS = %v", v)
		}
		if f0 := MedianF0(x, rate); math.IsNaN(f0) || f0 < 0 || (f0 > 0 && (f0 < MinF0*0.9 || f0 > MaxF0*1.1)) {
			t.Fatalf("MedianF0 = %v", f0)
		}
		for _, p := range FormantPeaks(x, rate, 3) {
			if math.IsNaN(p) || p <= 0 || p > float64(rate)/2 {
				t.Fatalf("formant %v at rate %d", p, rate)
			}
		}
		for _, s := range Silences(x, rate, 10, 30) {
			if s[0] < 0 || s[1] > len(x) || s[0] >= s[1] {
				t.Fatalf("silence %v of %d samples", s, len(x))
			}
		}
		Spectrum(x, 256)
	})
}
