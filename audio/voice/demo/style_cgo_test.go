//go:build cgo

// The style kit's model in the real ONNX Runtime, measured.

package demo

import (
	"encoding/binary"
	"math"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
	"github.com/mynah-tts/mynah/quant/ort"
)

var styleKit struct {
	once  sync.Once
	s     *ort.Session
	packs map[string][]byte
	err   error
}

func styleSession(t testing.TB) *ort.Session {
	t.Helper()
	styleKit.once.Do(func() {
		runtime.once.Do(func() { runtime.rt, runtime.err = ort.Open(nil) })
		if styleKit.err = runtime.err; styleKit.err != nil {
			return
		}
		var files map[string][]byte
		files, styleKit.err = BuildStyle(nil)
		if styleKit.err != nil {
			return
		}
		styleKit.packs = make(map[string][]byte)
		for _, v := range styleVoices {
			styleKit.packs[v.Name] = files[styleVoicePath(v.Name)]
		}
		styleKit.s, styleKit.err = runtime.rt.NewSession(files[StyleModelFile], &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	})
	if styleKit.err != nil {
		t.Fatal(styleKit.err)
	}
	return styleKit.s
}

// styleRow reads row r of a voice from the kit's pack.
func styleRow(t testing.TB, voice string, r int) []float32 {
	t.Helper()
	styleSession(t)
	data := styleKit.packs[voice]
	if data == nil {
		t.Fatalf("no voice %q", voice)
	}
	row := make([]float32, StyleDim)
	for i := range row {
		row[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*(r*StyleDim+i):]))
	}
	return row
}

// styleTokens is a Kokoro token sequence: the demo ids of phonemes,
// without Piper's pads, with a 0 at both ends.
func styleTokens(phonemes []string) []int64 {
	m := PhonemeIDMap()
	out := []int64{0}
	for _, p := range phonemes {
		out = append(out, m[p][0])
	}
	return append(out, 0)
}

// runStyle runs the model and checks the contract: audio [1, T], every
// sample finite and within [-1, 1].
func runStyle(t testing.TB, tokens []int64, style []float32, speed float32) []float32 {
	t.Helper()
	out, err := styleSession(t).Run([]ort.Tensor{
		{Name: "tokens", Shape: []int64{1, int64(len(tokens))}, Int64: tokens},
		{Name: "style", Shape: []int64{1, StyleDim}, Float32: style},
		{Name: "speed", Shape: []int64{1}, Float32: []float32{speed}},
	})
	if err != nil {
		t.Fatalf("run %d tokens: %v", len(tokens), err)
	}
	if len(out) != 1 || out[0].Name != "audio" || out[0].Type != ort.Float32 {
		t.Fatalf("outputs %+v, want one float32 \"audio\"", out)
	}
	y := out[0].Float32
	if sh := out[0].Shape; len(sh) != 2 || sh[0] != 1 || sh[1] != int64(len(y)) {
		t.Fatalf("audio shape %v for %d samples, want [1 T]", sh, len(y))
	}
	for i, v := range y {
		if math.IsNaN(float64(v)) || v < -1 || v > 1 {
			t.Fatalf("sample %d is %v", i, v)
		}
	}
	return y
}

func TestStyleVoicesSound(t *testing.T) {
	tokens := styleTokens(ipa(sentence))
	row := len(tokens) - 2
	f0 := make(map[string]float64)
	for _, v := range StyleVoices() {
		y := runStyle(t, tokens, styleRow(t, v.Name, row), 1)
		if d := float64(len(y)) / StyleSampleRate; d < 2 || d > 6 {
			t.Errorf("%s: %.2f s for one sentence", v.Name, d)
		}
		f0[v.Name] = acoustic.MedianF0(acoustic.Float64s(y), StyleSampleRate)
		t.Logf("%s: median f0 %.1f Hz (target %.0f), %.2f s", v.Name, f0[v.Name], v.F0, float64(len(y))/StyleSampleRate)
		if math.Abs(f0[v.Name]-v.F0) > 0.12*v.F0 {
			t.Errorf("%s: median f0 %.1f Hz, want %.0f ± 12%%", v.Name, f0[v.Name], v.F0)
		}
	}
	vs := StyleVoices()
	for i := range vs {
		for j := range i {
			a, b := f0[vs[i].Name], f0[vs[j].Name]
			if max(a, b)/min(a, b) < 1.2 {
				t.Errorf("%s and %s: median f0 %.1f and %.1f Hz differ by less than 20%%", vs[i].Name, vs[j].Name, a, b)
			}
		}
	}
}

func TestStyleSpeed(t *testing.T) {
	tokens := styleTokens(ipa(sentence))
	style := styleRow(t, "jade", len(tokens)-2)
	base := float64(len(runStyle(t, tokens, style, 1)))
	for _, c := range []struct {
		speed float32
		ratio float64
	}{{2, 0.5}, {0.5, 2}, {1.25, 0.8}} {
		got := float64(len(runStyle(t, tokens, style, c.speed))) / base
		if math.Abs(got-c.ratio) > 0.05*c.ratio {
			t.Errorf("speed %v: duration × %.3f, want × %.2f ± 5%%", c.speed, got, c.ratio)
		}
	}
}

// TestStyleRowsDiffer: neighbouring rows are the same speaker, slightly
// changed, so the audio differs but the pitch stays close.
func TestStyleRowsDiffer(t *testing.T) {
	tokens := styleTokens(ipa(sentence))
	n := len(tokens) - 2
	a := runStyle(t, tokens, styleRow(t, "amber", n), 1)
	b := runStyle(t, tokens, styleRow(t, "amber", n-1), 1)
	if len(a) != len(b) {
		t.Fatalf("rows change the duration: %d and %d samples", len(a), len(b))
	}
	var diff float64
	for i := range a {
		diff = max(diff, math.Abs(float64(a[i]-b[i])))
	}
	t.Logf("rows %d and %d: max sample difference %.3f", n, n-1, diff)
	if diff < 1e-3 {
		t.Errorf("rows %d and %d give the same audio (max difference %g)", n, n-1, diff)
	}
	fa := acoustic.MedianF0(acoustic.Float64s(a), StyleSampleRate)
	fb := acoustic.MedianF0(acoustic.Float64s(b), StyleSampleRate)
	if max(fa, fb)/min(fa, fb) > 1+2.5*styleRowF0 {
		t.Errorf("rows %d and %d: median f0 %.1f and %.1f Hz, more apart than one speaker's rows", n, n-1, fa, fb)
	}
}

// TestStyleHostileInputs: whatever the style vector, speed or tokens, the
// model returns bounded audio in bounded time.
func TestStyleHostileInputs(t *testing.T) {
	tokens := styleTokens(ipa("hɛloʊ"))
	fill := func(v float32) []float32 {
		s := make([]float32, StyleDim)
		for i := range s {
			s[i] = v
		}
		return s
	}
	good := styleRow(t, "jade", 5)
	for _, c := range []struct {
		name   string
		tokens []int64
		style  []float32
		speed  float32
	}{
		{"NaN style", tokens, fill(float32(math.NaN())), 1},
		{"huge style", tokens, fill(1e30), 1},
		{"negative huge style", tokens, fill(-1e30), 1},
		{"infinite style", tokens, fill(float32(math.Inf(1))), 1},
		{"zero style", tokens, fill(0), 1},
		{"NaN speed", tokens, good, float32(math.NaN())},
		{"zero speed", tokens, good, 0},
		{"negative speed", tokens, good, -3},
		{"huge speed", tokens, good, 1e30},
		{"only pads", []int64{0, 0}, good, 1},
		{"ids out of range", []int64{0, -5, 1 << 40, 99999, 0}, good, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := runStyle(t, c.tokens, c.style, c.speed)
			if s := float64(len(y)) / StyleSampleRate; s > 5 {
				t.Errorf("%.1f s of audio for a word", s)
			}
		})
	}
}

// BenchmarkStyleSynthesize: one sentence of the style model; rtf is
// synthesis time over audio duration.
func BenchmarkStyleSynthesize(b *testing.B) {
	tokens := styleTokens(ipa(sentence))
	style := styleRow(b, "jade", len(tokens)-2)
	b.ReportAllocs()
	var samples int
	for b.Loop() {
		samples = len(runStyle(b, tokens, style, 1))
	}
	audio := float64(samples) / StyleSampleRate
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/audio, "rtf")
}
