//go:build cgo

// The tests in this file run the demo voice in the real ONNX Runtime (the
// project's copy in .ort/, found by quant/ort) and check that any input
// keeps its output contract; model_speech_cgo_test.go measures what it says.

package demo

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"

	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
	"github.com/mynah-tts/mynah/quant/ort"
)

// runtime is shared by every test; TestMain closes it.
var runtime struct {
	once sync.Once
	rt   *ort.Runtime
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if runtime.rt != nil {
		if err := runtime.rt.Close(); err != nil && code == 0 {
			fmt.Fprintln(os.Stderr, "close onnx runtime:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// model is a built demo voice in an ONNX Runtime session.
type model struct {
	s    *ort.Session
	rate int
	hop  int
}

var (
	defaultModelOnce sync.Once
	defaultModel     *model
	defaultModelErr  error
)

// voiceModel returns a session of the default demo voice, shared by tests.
func voiceModel(t testing.TB) *model {
	t.Helper()
	defaultModelOnce.Do(func() { defaultModel, defaultModelErr = openModel(nil) })
	if defaultModelErr != nil {
		t.Fatal(defaultModelErr)
	}
	return defaultModel
}

func openModel(opts *Options) (*model, error) {
	runtime.once.Do(func() { runtime.rt, runtime.err = ort.Open(nil) })
	if runtime.err != nil {
		return nil, runtime.err
	}
	data, _, err := Build(opts)
	if err != nil {
		return nil, err
	}
	o, _ := opts.resolve()
	s, err := runtime.rt.NewSession(data, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		return nil, err
	}
	return &model{s: s, rate: o.SampleRate, hop: o.SampleRate / FramesPerSecond}, nil
}

// params are the model's non-id inputs.
type params struct {
	noiseScale, lengthScale, noiseW float32
	sid                             int64
	inputLength                     int64 // -1: len(ids)
}

// quiet is deterministic synthesis at normal speed by the first speaker.
var quiet = params{noiseScale: 0, lengthScale: 1, noiseW: 0, inputLength: -1}

func (p params) with(f func(*params)) params { f(&p); return p }

// run synthesizes ids and checks the output contract: shape [1, 1, 1, T],
// every sample finite and within [-1, 1].
func (m *model) run(t testing.TB, ids []int64, p params) []float32 {
	t.Helper()
	n := p.inputLength
	if n == -1 {
		n = int64(len(ids))
	}
	out, err := m.s.Run([]ort.Tensor{
		{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
		{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{n}},
		{Name: "scales", Shape: []int64{3}, Float32: []float32{p.noiseScale, p.lengthScale, p.noiseW}},
		{Name: "sid", Shape: []int64{1}, Int64: []int64{p.sid}},
	})
	if err != nil {
		t.Fatalf("run %d ids: %v", len(ids), err)
	}
	if len(out) != 1 || out[0].Name != "output" || out[0].Type != ort.Float32 {
		t.Fatalf("outputs %+v, want one float32 \"output\"", out)
	}
	y := out[0].Float32
	if sh := out[0].Shape; len(sh) != 4 || sh[0] != 1 || sh[1] != 1 || sh[2] != 1 || sh[3] != int64(len(y)) {
		t.Fatalf("output shape %v for %d samples, want [1 1 1 T]", sh, len(y))
	}
	for i, v := range y {
		if math.IsNaN(float64(v)) || v < -1 || v > 1 {
			t.Fatalf("sample %d is %v", i, v)
		}
	}
	return y
}

// piper returns the id sequence Piper's front end makes of phonemes:
// ^ _ then each phoneme followed by _, then $.
func piper(phonemes ...string) []int64 {
	m := PhonemeIDMap()
	ids := []int64{startID, padID}
	for _, p := range phonemes {
		id, ok := m[p]
		if !ok {
			panic(fmt.Sprintf("test uses unknown phoneme %q", p))
		}
		ids = append(ids, id[0], padID)
	}
	return append(ids, endID)
}

// ipa splits IPA text into NFD codepoints, as the espeak front end does.
func ipa(s string) []string {
	var out []string
	for _, r := range norm.NFD.String(s) {
		out = append(out, string(r))
	}
	return out
}

func repeat(sym string, n int) []string { return slices.Repeat([]string{sym}, n) }

func seconds(m *model, y []float32) float64 { return float64(len(y)) / float64(m.rate) }

// middle drops the first and last cut seconds, leaving the steady part of
// a sustained sound.
func middle(m *model, y []float32, cut float64) []float64 {
	n := int(cut * float64(m.rate))
	if 2*n >= len(y) {
		return nil
	}
	return acoustic.Float64s(y[n : len(y)-n])
}

// sentence is "The quick brown fox jumps over the lazy dog. Is it true?"
// as espeak-ng en-us phonemizes it, with the clause marks Piper appends.
const sentence = "ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ. ɪz ɪt tɹˈuː?"

func TestEveryIDRuns(t *testing.T) {
	m := voiceModel(t)
	all := make([]int64, 0, 2*len(inventory))
	for id := range int64(len(inventory)) {
		y := m.run(t, []int64{startID, padID, id, padID, endID}, params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, inputLength: -1})
		if len(y) == 0 {
			t.Errorf("id %d (%q): no samples", id, inventory[id].sym)
		}
		all = append(all, id, padID)
	}
	y := m.run(t, all, quiet)
	if acoustic.RMS(acoustic.Float64s(y)) < 0.01 {
		t.Error("the whole inventory in one run is silent")
	}
}

func TestShortInputs(t *testing.T) {
	m := voiceModel(t)
	for _, ids := range [][]int64{{}, {padID}, {startID, padID, endID}, piper()} {
		y := m.run(t, ids, quiet.with(func(p *params) { p.noiseScale = 1 }))
		if s := seconds(m, y); s > 0.1 {
			t.Errorf("ids %v: %.3f s of audio, want under 0.1 s", ids, s)
		}
		if r := acoustic.RMS(acoustic.Float64s(y)); r > 1e-4 {
			t.Errorf("ids %v: RMS %v, want silence", ids, r)
		}
	}
}

func TestLongInputIsCapped(t *testing.T) {
	const capSeconds = 3
	m, err := openModel(&Options{MaxSeconds: capSeconds})
	if err != nil {
		t.Fatal(err)
	}
	defer m.s.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	ids := make([]int64, 2000)
	for i := range ids {
		ids[i] = rng.Int64N(int64(len(inventory)))
	}
	y := m.run(t, ids, quiet)
	want := int(math.Floor(capSeconds*float64(m.rate)/float64(m.hop))) * m.hop
	if len(y) != want {
		t.Errorf("2000 random ids with a %d s cap: %d samples, want %d", capSeconds, len(y), want)
	}
	// Ids past 800 per second of the cap are not even read: a 3 s model
	// given 2400 ids of silence and then speech stays silent.
	silentThenSpeech := append(make([]int64, 2400), piper(repeat("a", 20)...)...)
	if r := acoustic.RMS(acoustic.Float64s(m.run(t, silentThenSpeech, quiet))); r != 0 {
		t.Errorf("ids past the cap were read: RMS %v", r)
	}
	// The default model takes the same input whole (under its 60 s cap).
	y = voiceModel(t).run(t, ids, quiet)
	if s := seconds(m, y); s <= capSeconds || s > DefaultMaxSeconds {
		t.Errorf("2000 random ids: %.1f s of audio", s)
	}
}

func TestHostileInputs(t *testing.T) {
	m := voiceModel(t)
	base := piper(ipa("həlˈoʊ")...)
	ref := m.run(t, base, quiet)
	n := int64(len(inventory))
	tests := []struct {
		name   string
		ids    []int64
		p      params
		sameAs []float32 // nil: only the contract is checked
	}{
		{"negative ids", append([]int64{-1, math.MinInt64}, base...), quiet, ref},
		{"ids past num_symbols", append(slices.Clone(base), n, n+1000, math.MaxInt64), quiet, ref},
		{"input_lengths 0", base, quiet.with(func(p *params) { p.inputLength = 0 }), nil},
		{"input_lengths -5", base, quiet.with(func(p *params) { p.inputLength = -5 }), nil},
		{"input_lengths huge", base, quiet.with(func(p *params) { p.inputLength = math.MaxInt64 }), ref},
		{"sid -1", base, quiet.with(func(p *params) { p.sid = -1 }), ref},
		{"sid huge", base, quiet.with(func(p *params) { p.sid = math.MaxInt64 }), nil},
		{"length_scale NaN", base, quiet.with(func(p *params) { p.lengthScale = float32(math.NaN()) }), ref},
		{"length_scale -1", base, quiet.with(func(p *params) { p.lengthScale = -1 }), nil},
		{"length_scale 0", base, quiet.with(func(p *params) { p.lengthScale = 0 }), nil},
		{"length_scale +Inf", base, quiet.with(func(p *params) { p.lengthScale = float32(math.Inf(1)) }), nil},
		{"noise_scale NaN", base, quiet.with(func(p *params) { p.noiseScale = float32(math.NaN()) }), ref},
		{"noise_scale 1e30", base, quiet.with(func(p *params) { p.noiseScale = 1e30 }), nil},
		{"noise_w -Inf", base, quiet.with(func(p *params) { p.noiseW = float32(math.Inf(-1)) }), ref},
		{"noise_w 1e30", base, quiet.with(func(p *params) { p.noiseW = 1e30 }), nil},
	}
	for _, tt := range tests {
		y := m.run(t, tt.ids, tt.p)
		if s := seconds(m, y); s > 10*seconds(m, ref)+0.02 {
			t.Errorf("%s: %.2f s of audio for a word", tt.name, s)
		}
		if tt.sameAs != nil && !slices.Equal(y, tt.sameAs) {
			t.Errorf("%s: output differs from the sanitized input's", tt.name)
		}
	}
	// Inputs cut by input_lengths are ignored: the output is the prefix's.
	cut := m.run(t, base, quiet.with(func(p *params) { p.inputLength = 6 }))
	if want := m.run(t, base[:6], quiet); !slices.Equal(cut, want) {
		t.Error("input_lengths 6 differs from the first 6 ids alone")
	}
	// The top speaker for any larger sid.
	top := int64(len(speakers) - 1)
	if !slices.Equal(m.run(t, base, quiet.with(func(p *params) { p.sid = 99 })), m.run(t, base, quiet.with(func(p *params) { p.sid = top }))) {
		t.Error("sid 99 is not clamped to the last speaker")
	}
}

func TestRunDeterministic(t *testing.T) {
	m := voiceModel(t)
	ids := piper(ipa(sentence)...)
	p := params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, sid: 1, inputLength: -1}
	a := m.run(t, ids, p)
	b := m.run(t, ids, p)
	if !slices.Equal(a, b) {
		t.Error("two runs of one session differ")
	}
	other, err := openModel(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer other.s.Close()
	if !slices.Equal(a, other.run(t, ids, p)) {
		t.Error("two sessions of two builds differ")
	}
}

// FuzzRun feeds the model arbitrary ids and inputs: ONNX Runtime must never
// fail on them (a Gather out of range would), and the output must keep
// the contract (checked by run) and the 5 s cap of this model.
func FuzzRun(f *testing.F) {
	m, err := openModel(&Options{MaxSeconds: 5})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { m.s.Close() })
	f.Add([]byte{1, 0, 40, 0, 2}, int64(5), float32(0.667), float32(1), float32(0.8), int64(0))
	f.Add([]byte{}, int64(0), float32(0), float32(0), float32(0), int64(-1))
	f.Add([]byte{255, 254, 253, 7, 9}, int64(-3), float32(math.NaN()), float32(math.Inf(1)), float32(-5), int64(1<<40))
	f.Fuzz(func(t *testing.T, raw []byte, length int64, ns, ls, nw float32, sid int64) {
		if len(raw) > 4096 {
			return
		}
		ids := make([]int64, len(raw))
		for i, v := range raw {
			// Mostly valid ids, some past num_symbols, some negative.
			ids[i] = int64(v) - 16
		}
		y := m.run(t, ids, params{noiseScale: ns, lengthScale: ls, noiseW: nw, sid: sid, inputLength: length})
		if s := seconds(m, y); s > 5 {
			t.Fatalf("%.2f s of audio from a 5 s model", s)
		}
	})
}

// BenchmarkSynthesize measures a typical sentence on one thread and
// reports the real-time factor (synthesis time / audio time).
func BenchmarkSynthesize(b *testing.B) {
	m := voiceModel(b)
	ids := piper(ipa(strings.Repeat(sentence+" ", 2))...)
	p := params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, inputLength: -1}
	var audio float64
	b.ReportAllocs()
	for b.Loop() {
		audio += seconds(m, m.run(b, ids, p))
	}
	b.ReportMetric(b.Elapsed().Seconds()/audio, "rtf")
}
