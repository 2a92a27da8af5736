//go:build cgo

package demo

import (
	"math"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
)

// cloneQuiet is synthesis without noise or jitter, for comparisons.
var cloneQuiet = params{noiseScale: 0, lengthScale: 1, noiseW: 0, inputLength: -1}

// cloneTypical are the Piper defaults.
var cloneTypical = params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, inputLength: -1}

func prosodyOf(n int, v float32) []float32 { return slices.Repeat([]float32{v}, ProsodyDim*n) }

// prosodyColumn sets prosody column c to v for n phonemes, the others to 0.
func prosodyColumn(n, c int, v float32) []float32 {
	p := make([]float32, ProsodyDim*n)
	for i := c; i < len(p); i += ProsodyDim {
		p[i] = v
	}
	return p
}

func TestVocoderFollowsTheReference(t *testing.T) {
	k := cloneKit(t)
	m := voiceModel(t)
	req := espeakIDs(t, sentenceC)
	sp := Speakers()
	f0 := make([]float64, len(sp))
	f1 := make([]float64, len(sp))
	for i, s := range sp {
		clip := referenceClip(t, s.ID, sentenceA)
		refF0 := acoustic.MedianF0(acoustic.Float64s(clip), EncoderSampleRate)
		emb, prompt := k.embed(t, clip)
		prosody, _ := k.steps(t, req, k.prefill(t, prompt))
		y := k.vocode(t, req, prosody, emb, cloneTypical)
		f0[i] = acoustic.MedianF0(acoustic.Float64s(y), k.rate)
		a := k.vocode(t, piper(repeat("a", 8)...), nil, emb, cloneQuiet)
		if fp := acoustic.FormantPeaks(middle(m, a, 0.15), k.rate, 1); len(fp) == 1 {
			f1[i] = fp[0]
		}
		t.Logf("%s (f0 %.0f Hz, formant scale %.2f): reference median f0 %.1f Hz; cloned median f0 %.1f Hz, /a/ F1 %.0f Hz",
			s.Name, s.F0, s.FormantScale, refF0, f0[i], f1[i])
		if math.Abs(f0[i]-refF0) > 0.15*refF0 {
			t.Errorf("%s: cloned median f0 %.1f Hz, reference %.1f Hz: want within 15%%", s.Name, f0[i], refF0)
		}
	}
	for i := 1; i < len(sp); i++ {
		if !(f0[i] > f0[i-1]) {
			t.Errorf("%s's clone (median f0 %.1f Hz) is not higher than %s's (%.1f Hz)", sp[i].Name, f0[i], sp[i-1].Name, f0[i-1])
		}
		if !(f1[i] > f1[i-1]) {
			t.Errorf("%s's clone (/a/ F1 %.0f Hz) has no higher formants than %s's (%.0f Hz)", sp[i].Name, f1[i], sp[i-1].Name, f1[i-1])
		}
	}
}

func TestVocoderProsody(t *testing.T) {
	k := cloneKit(t)
	m := voiceModel(t)
	emb, _ := k.embed(t, referenceClip(t, 1, sentenceB))
	ids := piper(ipa(sentence)...)
	n := len(ids)
	plain := k.vocode(t, ids, prosodyOf(n, 0), emb, cloneQuiet)
	// Durations do not depend on the speaker: zero prosody gives the demo
	// voice's length exactly.
	if want := len(m.run(t, ids, cloneQuiet)); len(plain) != want {
		t.Errorf("zero prosody: %d samples, the demo voice %d", len(plain), want)
	}
	// Missing rows count as zero, extra rows are ignored.
	if !slices.Equal(plain, k.vocode(t, ids, nil, emb, cloneQuiet)) {
		t.Error("no prosody rows differs from zero prosody")
	}
	if !slices.Equal(plain, k.vocode(t, ids, prosodyOf(n+50, 0), emb, cloneQuiet)) {
		t.Error("extra prosody rows change the output")
	}
	// NaN reads as zero, out-of-range values as ±1.
	nan := prosodyOf(n, float32(math.NaN()))
	if !slices.Equal(plain, k.vocode(t, ids, nan, emb, cloneQuiet)) {
		t.Error("NaN prosody differs from zero prosody")
	}
	if !slices.Equal(k.vocode(t, ids, prosodyOf(n, 1), emb, cloneQuiet), k.vocode(t, ids, prosodyOf(n, 1e30), emb, cloneQuiet)) {
		t.Error("prosody 1e30 differs from 1")
	}

	ratio := func(a, b float64) float64 { return a / b }
	longer := k.vocode(t, ids, prosodyColumn(n, 0, 1), emb, cloneQuiet)
	shorter := k.vocode(t, ids, prosodyColumn(n, 0, -1), emb, cloneQuiet)
	plainF0 := acoustic.MedianF0(acoustic.Float64s(plain), k.rate)
	higher := acoustic.MedianF0(acoustic.Float64s(k.vocode(t, ids, prosodyColumn(n, 1, 1), emb, cloneQuiet)), k.rate)
	lower := acoustic.MedianF0(acoustic.Float64s(k.vocode(t, ids, prosodyColumn(n, 1, -1), emb, cloneQuiet)), k.rate)
	louder := acoustic.RMS(acoustic.Float64s(k.vocode(t, ids, prosodyColumn(n, 2, 1), emb, cloneQuiet)))
	softer := acoustic.RMS(acoustic.Float64s(k.vocode(t, ids, prosodyColumn(n, 2, -1), emb, cloneQuiet)))
	for _, c := range []struct {
		what   string
		got    float64
		lo, hi float64
	}{
		{"duration +1: length ratio", ratio(float64(len(longer)), float64(len(plain))), 1 + prosodyDur - 0.02, 1 + prosodyDur + 0.02},
		{"duration -1: length ratio", ratio(float64(len(shorter)), float64(len(plain))), 1 - prosodyDur - 0.02, 1 - prosodyDur + 0.02},
		{"pitch +1: median f0 ratio", ratio(higher, plainF0), 1 + prosodyPitch - 0.03, 1 + prosodyPitch + 0.03},
		{"pitch -1: median f0 ratio", ratio(lower, plainF0), 1 - prosodyPitch - 0.03, 1 - prosodyPitch + 0.03},
		{"energy +1 vs -1: RMS ratio", ratio(louder, softer), (1 + prosodyEnergy) / (1 - prosodyEnergy) * 0.95, (1 + prosodyEnergy) / (1 - prosodyEnergy) * 1.05},
	} {
		t.Logf("%s %.3f", c.what, c.got)
		if !(c.got >= c.lo && c.got <= c.hi) {
			t.Errorf("%s %.3f, want %.3f..%.3f", c.what, c.got, c.lo, c.hi)
		}
	}
}

// TestVocoderForeignEmbeddings: whatever the embedding, the voice stays in
// range; one without a pitch reads as defaultF0.
func TestVocoderForeignEmbeddings(t *testing.T) {
	k := cloneKit(t)
	ids := piper(ipa(sentence)...)
	zero := make([]float32, EmbeddingDim)
	z := k.vocode(t, ids, nil, zero, cloneQuiet)
	if f0 := acoustic.MedianF0(acoustic.Float64s(z), k.rate); math.Abs(f0-defaultF0) > 0.12*defaultF0 {
		t.Errorf("zero embedding: median f0 %.1f Hz, want %d ± 12%%", f0, defaultF0)
	}
	nan := slices.Repeat([]float32{float32(math.NaN())}, EmbeddingDim)
	if !slices.Equal(z, k.vocode(t, ids, nil, nan, cloneQuiet)) {
		t.Error("a NaN embedding differs from the zero embedding")
	}
	rng := splitmix{42}
	for range 20 {
		emb := make([]float32, EmbeddingDim)
		for i := range emb {
			emb[i] = float32(rng.normal() * 100)
		}
		y := k.vocode(t, ids, nil, emb, cloneQuiet)
		if f0 := acoustic.MedianF0(acoustic.Float64s(y), k.rate); f0 < 0.9*vocoderMinF0 || f0 > 1.1*vocoderMaxF0*(1+prosodyPitch) {
			t.Errorf("random embedding: median f0 %.1f Hz", f0)
		}
	}
}

// TestPipeline runs the whole chain the way the engine will, for a
// sentence: the speech keeps the demo voice's length within the duration
// bounds and is audible.
func TestPipeline(t *testing.T) {
	k := cloneKit(t)
	m := voiceModel(t)
	emb, prompt := k.embed(t, referenceClip(t, 0, sentenceA))
	req := espeakIDs(t, sentenceB)
	prosody, _ := k.steps(t, req, k.prefill(t, prompt))
	y := k.vocode(t, req, prosody, emb, cloneTypical)
	base := len(m.run(t, req, cloneTypical))
	r := float64(len(y)) / float64(base)
	rms := acoustic.RMS(acoustic.Float64s(y))
	t.Logf("%.2f s of audio (%.2f× the demo voice's), RMS %.3f", float64(len(y))/float64(k.rate), r, rms)
	if r < 1-prosodyDur || r > 1+prosodyDur {
		t.Errorf("length %.2f× the demo voice's, want within ±%.0f%%", r, 100*prosodyDur)
	}
	if rms < 0.01 {
		t.Errorf("RMS %.4f: inaudible", rms)
	}
}

// FuzzVocoder feeds the vocoder arbitrary ids, prosody of any length and
// embeddings: it must never fail and must keep its contract (checked by
// vocode) and its length cap.
func FuzzVocoder(f *testing.F) {
	k := cloneKit(f)
	f.Add([]byte{1, 0, 40, 0, 2}, []byte{}, uint64(1), float32(1))
	f.Add([]byte{255, 254, 7}, []byte{0, 0, 0xc0, 0x7f, 1, 2, 3, 4}, uint64(0), float32(math.NaN()))
	f.Fuzz(func(t *testing.T, rawIDs, rawProsody []byte, seed uint64, scale float32) {
		if len(rawIDs) > 1024 || len(rawProsody) > 16384 {
			return
		}
		ids := make([]int64, len(rawIDs))
		for i, v := range rawIDs {
			ids[i] = int64(v) - 16
		}
		prosody := make([]float32, len(rawProsody)/4/ProsodyDim*ProsodyDim)
		for i := range prosody {
			prosody[i] = math.Float32frombits(uint32(rawProsody[4*i]) | uint32(rawProsody[4*i+1])<<8 | uint32(rawProsody[4*i+2])<<16 | uint32(rawProsody[4*i+3])<<24)
		}
		rng := splitmix{seed}
		emb := make([]float32, EmbeddingDim)
		for i := range emb {
			emb[i] = float32(rng.normal()) * scale
		}
		y := k.vocode(t, ids, prosody, emb, cloneTypical)
		if s := float64(len(y)) / float64(k.rate); s > float64(k.o.MaxSeconds) {
			t.Fatalf("%.1f s of audio over the %d s cap", s, k.o.MaxSeconds)
		}
	})
}

// BenchmarkVocode measures the vocoder on a sentence and reports the
// real-time factor.
func BenchmarkVocode(b *testing.B) {
	k := cloneKit(b)
	emb, _ := k.embed(b, referenceClip(b, 0, sentenceA))
	ids := espeakIDs(b, sentenceB)
	prosody := prosodyOf(len(ids), 0.2)
	var audio float64
	b.ReportAllocs()
	for b.Loop() {
		audio += float64(len(k.vocode(b, ids, prosody, emb, cloneTypical))) / float64(k.rate)
	}
	b.ReportMetric(b.Elapsed().Seconds()/audio, "rtf")
}
