package audio

import (
	"errors"
	"math"
	"testing"
)

// sine returns frames of a sine at freq Hz and amplitude amp (of full
// scale) on every channel.
func sine(rate, channels int, freq, amp float64, frames int) PCM {
	p := PCM{Rate: rate, Channels: channels, Samples: make([]int16, frames*channels)}
	for i := 0; i < frames; i++ {
		v := clampInt16(amp * math.MaxInt16 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
		for c := 0; c < channels; c++ {
			p.Samples[i*channels+c] = v
		}
	}
	return p
}

// channel extracts one channel as float64, skipping edge frames at both ends
// (where a resampler's filter runs off the clip).
func channel(p PCM, ch, edge int) []float64 {
	var out []float64
	for i := edge; i < p.Frames()-edge; i++ {
		out = append(out, float64(p.Samples[i*p.Channels+ch]))
	}
	return out
}

// zeroCrossingFreq estimates the frequency of a clean tone from the first
// and last upward zero crossings, interpolated between samples.
func zeroCrossingFreq(x []float64, rate int) float64 {
	first, last, n := -1.0, -1.0, 0
	for i := 1; i < len(x); i++ {
		if x[i-1] < 0 && x[i] >= 0 {
			at := float64(i-1) + x[i-1]/(x[i-1]-x[i])
			if first < 0 {
				first = at
			}
			last = at
			n++
		}
	}
	if n < 2 {
		return 0
	}
	return float64(n-1) / ((last - first) / float64(rate))
}

// toneAmplitude is the amplitude of the component at freq Hz (one bin of a
// Hann-windowed DFT, scaled so a sine of amplitude A reads A).
func toneAmplitude(x []float64, rate int, freq float64) float64 {
	var re, im, wsum float64
	for i, v := range x {
		w := 0.5 - 0.5*math.Cos(2*math.Pi*float64(i)/float64(len(x)-1))
		ph := 2 * math.Pi * freq * float64(i) / float64(rate)
		re += w * v * math.Cos(ph)
		im -= w * v * math.Sin(ph)
		wsum += w
	}
	return 2 * math.Hypot(re, im) / wsum
}

func rms(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s / float64(len(x)))
}

func db(ratio float64) float64 { return 20 * math.Log10(ratio) }

func TestResampleRoundTripKeepsTone(t *testing.T) {
	const amp = 0.5
	in := sine(22050, 1, 1000, amp, 22050)
	up, err := Resample(in, 48000)
	if err != nil {
		t.Fatal(err)
	}
	if up.Rate != 48000 || up.Frames() != 48000 {
		t.Fatalf("up: %d Hz %d frames, want 48000 and 48000", up.Rate, up.Frames())
	}
	back, err := Resample(up, 22050)
	if err != nil {
		t.Fatal(err)
	}
	if back.Frames() != in.Frames() {
		t.Fatalf("round trip: %d frames, want %d", back.Frames(), in.Frames())
	}
	for _, c := range []struct {
		name string
		p    PCM
		edge int
	}{{"48 kHz", up, 200}, {"back at 22.05 kHz", back, 100}} {
		x := channel(c.p, 0, c.edge)
		if f := zeroCrossingFreq(x, c.p.Rate); math.Abs(f-1000) > 0.2 {
			t.Errorf("%s: tone at %.3f Hz, want 1000", c.name, f)
		}
		a := rms(x) * math.Sqrt2 / math.MaxInt16
		if math.Abs(a-amp) > 0.002 {
			t.Errorf("%s: amplitude %.4f, want %.4f", c.name, a, amp)
		}
	}
	// Sample by sample, the round trip is within int16 rounding of the input.
	orig, got := channel(in, 0, 100), channel(back, 0, 100)
	diff := make([]float64, len(orig))
	for i := range orig {
		diff[i] = got[i] - orig[i]
	}
	if snr := db(rms(orig) / rms(diff)); snr < 70 {
		t.Errorf("round trip SNR %.1f dB, want >= 70", snr)
	}
}

func TestResampleDownsamplingFiltersAliases(t *testing.T) {
	// 12 kHz is above the 8 kHz Nyquist of 16 kHz audio: it must be removed,
	// not folded down to 4 kHz as plain interpolation would.
	in := sine(48000, 1, 12000, 0.5, 48000)
	out, err := Resample(in, 16000)
	if err != nil {
		t.Fatal(err)
	}
	x := channel(out, 0, 200)
	if a := toneAmplitude(x, 16000, 4000) / (0.5 * math.MaxInt16); db(a) > -70 {
		t.Errorf("alias at 4 kHz is %.1f dB, want <= -70", db(a))
	}
	if r := rms(x) / (0.5 * math.MaxInt16); db(r) > -60 {
		t.Errorf("residual %.1f dB, want <= -60", db(r))
	}
	// Just above Nyquist (8.1 and 8.5 kHz) is already stopband.
	for _, f := range []float64{8100, 8500} {
		out, err := Resample(sine(48000, 1, f, 0.5, 48000), 16000)
		if err != nil {
			t.Fatal(err)
		}
		if a := toneAmplitude(channel(out, 0, 200), 16000, 16000-f) / (0.5 * math.MaxInt16); db(a) > -70 {
			t.Errorf("%v Hz: alias at %v Hz is %.1f dB, want <= -70", f, 16000-f, db(a))
		}
	}
	// A 3 kHz tone (inside the passband) survives unchanged in level.
	in = sine(48000, 1, 3000, 0.5, 48000)
	if out, err = Resample(in, 16000); err != nil {
		t.Fatal(err)
	}
	if a := toneAmplitude(channel(out, 0, 200), 16000, 3000) / (0.5 * math.MaxInt16); math.Abs(db(a)) > 0.05 {
		t.Errorf("3 kHz passband gain %.3f dB, want within 0.05", db(a))
	}
}

func TestResampleUpsamplingHasNoImages(t *testing.T) {
	// Upsampling a 9 kHz tone (the top of the passband) from 22.05 kHz
	// must keep its level and not create its image at 22050-9000 = 13050 Hz.
	in := sine(22050, 1, 9000, 0.5, 22050)
	out, err := Resample(in, 48000)
	if err != nil {
		t.Fatal(err)
	}
	x := channel(out, 0, 400)
	tone := toneAmplitude(x, 48000, 9000)
	image := toneAmplitude(x, 48000, 13050)
	if db(image/tone) > -85 {
		t.Errorf("image at 13050 Hz is %.1f dB below the tone, want >= 85", -db(image/tone))
	}
	if g := db(tone / (0.5 * math.MaxInt16)); math.Abs(g) > 0.05 {
		t.Errorf("9 kHz gain %.3f dB, want within 0.05", g)
	}
}

func TestResampleConstantAndChannels(t *testing.T) {
	// A constant stays constant away from the edges, and channels do not
	// leak into each other.
	in := PCM{Rate: 16000, Channels: 2, Samples: make([]int16, 2*1600)}
	for i := 0; i < 1600; i++ {
		in.Samples[2*i] = 12345
	}
	out, err := Resample(in, 44100)
	if err != nil {
		t.Fatal(err)
	}
	for i := 200; i < out.Frames()-200; i++ {
		if l, r := out.Samples[2*i], out.Samples[2*i+1]; l != 12345 || r != 0 {
			t.Fatalf("frame %d: %d %d, want 12345 0", i, l, r)
		}
	}
}

func TestResampleUnusualRatio(t *testing.T) {
	// 44100 -> 44101 reduces to 44101 phases, over the precomputed table
	// limit: the per-frame kernel path must give the same quality.
	in := sine(44100, 1, 1000, 0.5, 4410)
	out, err := Resample(in, 44101)
	if err != nil {
		t.Fatal(err)
	}
	if f := filterFor(44100, 44101); f.coefs != nil {
		t.Fatal("expected the per-frame path")
	}
	if out.Frames() != 4411 {
		t.Errorf("%d frames, want 4411", out.Frames())
	}
	x := channel(out, 0, 100)
	if f := zeroCrossingFreq(x, 44101); math.Abs(f-1000) > 0.2 {
		t.Errorf("tone at %.3f Hz", f)
	}
	want := sine(44101, 1, 1000, 0.5, 4411)
	y := channel(want, 0, 100)
	diff := make([]float64, len(x))
	for i := range x {
		diff[i] = x[i] - y[i]
	}
	if snr := db(rms(y) / rms(diff)); snr < 70 {
		t.Errorf("SNR against an ideal 44101 Hz sine: %.1f dB", snr)
	}
}

func TestResampleEdgeCases(t *testing.T) {
	in := sine(22050, 1, 440, 0.5, 100)
	same, err := Resample(in, 22050)
	if err != nil {
		t.Fatal(err)
	}
	same.Samples[0] = 1
	if in.Samples[0] == 1 {
		t.Error("same-rate result shares memory")
	}
	empty, err := Resample(PCM{Rate: 22050, Channels: 1}, 48000)
	if err != nil || empty.Frames() != 0 || empty.Rate != 48000 {
		t.Errorf("empty: %+v %v", empty, err)
	}
	one, err := Resample(PCM{Rate: 8000, Channels: 1, Samples: []int16{1000}}, 48000)
	if err != nil || one.Frames() != 6 {
		t.Errorf("one frame -> %d frames (%v), want 6", one.Frames(), err)
	}
	for _, rate := range []int{0, MinRate - 1, MaxRate + 1} {
		if _, err := Resample(in, rate); !errors.Is(err, ErrInvalidPCM) {
			t.Errorf("target %d: err = %v", rate, err)
		}
	}
	if _, err := Resample(PCM{Rate: 1, Channels: 1}, 48000); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("invalid input: err = %v", err)
	}
	// Full-scale square waves ring past full scale; the output clamps
	// instead of wrapping around.
	sq := PCM{Rate: 8000, Channels: 1, Samples: make([]int16, 800)}
	for i := range sq.Samples {
		sq.Samples[i] = math.MaxInt16
		if i/20%2 == 1 {
			sq.Samples[i] = math.MinInt16
		}
	}
	out, err := Resample(sq, 48000)
	if err != nil {
		t.Fatal(err)
	}
	// Right after a rising edge the signal overshoots; wrapping would put a
	// large negative value there.
	for i := 1; i < out.Frames(); i++ {
		a, b := int(out.Samples[i-1]), int(out.Samples[i])
		if a-b > 40000 || b-a > 40000 {
			t.Fatalf("jump of %d at frame %d: wrapped around", b-a, i)
		}
	}
}

func BenchmarkResample(b *testing.B) {
	for _, c := range []struct {
		name     string
		from, to int
	}{
		{"22050to48000", 22050, 48000},
		{"48000to22050", 48000, 22050},
		{"24000to44100", 24000, 44100},
		{"16000to48000", 16000, 48000},
	} {
		b.Run(c.name, func(b *testing.B) {
			in := sine(c.from, 1, 440, 0.5, c.from*3) // a 3 s sentence
			b.ReportAllocs()
			b.SetBytes(int64(2 * len(in.Samples)))
			b.ResetTimer()
			for b.Loop() {
				if _, err := Resample(in, c.to); err != nil {
					b.Fatal(err)
				}
			}
			sec := b.Elapsed().Seconds() / float64(b.N)
			b.ReportMetric(3/sec, "audio-s/s")
		})
	}
}
