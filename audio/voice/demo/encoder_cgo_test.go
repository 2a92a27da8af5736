//go:build cgo

package demo

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

// Cosine bounds the issue sets for the encoder on the demo speakers.
const (
	sameVoiceCosine  = 0.95 // two sentences of one speaker: above
	otherVoiceCosine = 0.9  // two speakers: below
)

func TestEncoderTellsSpeakersApart(t *testing.T) {
	k := cloneKit(t)
	sentences := []string{sentenceA, sentenceB, sentenceC}
	sp := Speakers()
	emb := make([][][]float32, len(sp))
	prompts := make([][][]int64, len(sp))
	for i, s := range sp {
		for _, sent := range sentences {
			e, p := k.embed(t, referenceClip(t, s.ID, sent))
			emb[i] = append(emb[i], e)
			prompts[i] = append(prompts[i], p)
		}
	}
	for i, s := range sp {
		for a := range sentences {
			for b := range a {
				c := vecpack.Cosine(emb[i][a], emb[i][b])
				t.Logf("%s, sentences %d and %d: cosine %.3f", s.Name, b, a, c)
				if c <= sameVoiceCosine {
					t.Errorf("%s, sentences %d and %d: cosine %.3f, want > %.2f", s.Name, b, a, c, sameVoiceCosine)
				}
			}
		}
	}
	for i := range sp {
		for j := range i {
			worst := -1.0
			for a := range sentences {
				for b := range sentences {
					worst = max(worst, vecpack.Cosine(emb[i][a], emb[j][b]))
				}
			}
			t.Logf("%s and %s: highest cosine over all sentence pairs %.3f", sp[j].Name, sp[i].Name, worst)
			if worst >= otherVoiceCosine {
				t.Errorf("%s and %s: cosine up to %.3f, want < %.2f", sp[j].Name, sp[i].Name, worst, otherVoiceCosine)
			}
		}
	}
	// The prompt tokens describe the clip: one sentence said by two
	// speakers gives two different prompts, and a prompt uses several
	// codes.
	for a := range sentences {
		if slices.Equal(prompts[0][a], prompts[len(sp)-1][a]) {
			t.Errorf("sentence %d: %s and %s have the same prompt", a, sp[0].Name, sp[len(sp)-1].Name)
		}
		codes := map[int64]bool{}
		for _, id := range prompts[0][a] {
			codes[id] = true
		}
		if len(codes) < 4 {
			t.Errorf("sentence %d: prompt uses %d codes: %v", a, len(codes), prompts[0][a])
		}
	}
}

func TestEncoderInvariances(t *testing.T) {
	k := cloneKit(t)
	clip := referenceClip(t, 1, sentenceA)
	ref, refPrompt := k.embed(t, clip)
	again, againPrompt := k.embed(t, slices.Clone(clip))
	if !slices.Equal(ref, again) || !slices.Equal(refPrompt, againPrompt) {
		t.Error("two runs on one clip differ")
	}
	scaled := make([]float32, len(clip))
	for i, v := range clip {
		scaled[i] = v / 8
	}
	silence := make([]float32, EncoderSampleRate)
	padded := slices.Concat(silence, clip, silence)
	rng := rand.New(rand.NewPCG(3, 4))
	noisy := slices.Clone(clip)
	for i := range noisy {
		noisy[i] += float32(0.002 * rng.NormFloat64())
	}
	for _, tt := range []struct {
		name string
		clip []float32
		min  float64
	}{
		{"18 dB quieter", scaled, 0.999},
		{"a second of silence each side", padded, 0.99},
		{"noise at -54 dBFS", noisy, 0.97},
	} {
		e, _ := k.embed(t, tt.clip)
		c := vecpack.Cosine(ref, e)
		t.Logf("%s: cosine %.4f", tt.name, c)
		if c < tt.min {
			t.Errorf("%s: cosine %.4f with the clip, want ≥ %v", tt.name, c, tt.min)
		}
	}
}

func TestEncoderReadsAtMostMaxSeconds(t *testing.T) {
	k := cloneKit(t)
	clip := referenceClip(t, 0, sentenceB)
	full := make([]float32, EncoderMaxSeconds*EncoderSampleRate)
	for i := range full {
		full[i] = clip[i%len(clip)]
	}
	e, p := k.embed(t, full)
	// A different voice after the limit changes nothing.
	tail := referenceClip(t, 2, sentenceB)
	e2, p2 := k.embed(t, slices.Concat(full, tail))
	if !slices.Equal(e, e2) || !slices.Equal(p, p2) {
		t.Errorf("audio past %d s changed the embedding", EncoderMaxSeconds)
	}
}

// TestEncoderWithoutVoice: a clip without a voiced frame gives the zero
// embedding, which the engine can refuse, and still valid prompt ids.
func TestEncoderWithoutVoice(t *testing.T) {
	k := cloneKit(t)
	rng := rand.New(rand.NewPCG(5, 6))
	noise := make([]float32, 2*EncoderSampleRate)
	for i := range noise {
		noise[i] = float32(0.3 * rng.NormFloat64())
	}
	nan := make([]float32, EncoderSampleRate)
	inf := make([]float32, EncoderSampleRate)
	for i := range nan {
		nan[i] = float32(math.NaN())
		inf[i] = float32(math.Inf(1))
	}
	dc := slices.Repeat([]float32{0.5}, EncoderSampleRate)
	for _, tt := range []struct {
		name string
		clip []float32
	}{
		{"empty", []float32{}},
		{"one sample", []float32{0.5}},
		{"silence", make([]float32, 3*EncoderSampleRate)},
		{"NaN", nan},
		{"infinity", inf},
		{"DC", dc},
		{"white noise", noise},
	} {
		e, _ := k.embed(t, tt.clip)
		if slices.ContainsFunc(e, func(v float32) bool { return v != 0 }) {
			t.Errorf("%s: embedding is not zero", tt.name)
		}
	}
	// Alternating infinities are a full-scale tone at the Nyquist
	// frequency, periodic at every even lag: the encoder may take it for a
	// voice, but its output must keep the contract (checked by embed).
	alt := make([]float32, EncoderSampleRate)
	for i := range alt {
		alt[i] = float32(math.Inf(1 - 2*(i%2)))
	}
	k.embed(t, alt)
	// A voiced clip with NaN samples in it is read with the NaN as
	// silence: it still gives a voice.
	clip := referenceClip(t, 0, sentenceC)
	for i := 0; i < len(clip); i += 997 {
		clip[i] = float32(math.NaN())
	}
	e, _ := k.embed(t, clip)
	if !slices.ContainsFunc(e, func(v float32) bool { return v != 0 }) {
		t.Error("a voiced clip with some NaN samples gives the zero embedding")
	}
}

// FuzzEncoder feeds the encoder arbitrary 16-bit audio with NaN and
// infinities sprinkled in: it must never fail and must keep its contract
// (checked by embed).
func FuzzEncoder(f *testing.F) {
	k := cloneKit(f)
	f.Add([]byte{}, uint16(0))
	f.Add([]byte{0, 0x40, 0, 0xc0, 0xff, 0x7f}, uint16(1))
	f.Add([]byte(strings.Repeat("\x00\x10\x00\x20\x00\x30\x00\xe0", 800)), uint16(7))
	f.Fuzz(func(t *testing.T, raw []byte, every uint16) {
		if len(raw) > 4*EncoderSampleRate {
			return
		}
		clip := make([]float32, len(raw)/2)
		for i := range clip {
			clip[i] = float32(int16(uint16(raw[2*i])|uint16(raw[2*i+1])<<8)) / 32768
			if every > 0 && i%int(every) == 0 {
				clip[i] = []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 1e30}[i%4]
			}
		}
		k.embed(t, clip)
	})
}

// BenchmarkEncode measures enrollment of a 10 s clip and reports the
// real-time factor.
func BenchmarkEncode(b *testing.B) {
	k := cloneKit(b)
	c := referenceClip(b, 1, sentenceA)
	clip := make([]float32, 10*EncoderSampleRate)
	for i := range clip {
		clip[i] = c[i%len(c)]
	}
	b.ReportAllocs()
	for b.Loop() {
		k.embed(b, clip)
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/10, "rtf")
}
