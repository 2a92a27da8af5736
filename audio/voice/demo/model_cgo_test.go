//go:build cgo

// The tests in this file run the demo voice in the real ONNX Runtime (the
// project's copy in .ort/, found by quant/ort) and measure what it says.

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

	"github.com/mynah-tts/mynah/audio/text"
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

// expectedSamples is the length the model must produce for phonemes at
// noise_w 0: the sum of their durations, rounded up to whole frames.
func expectedSamples(m *model, lengthScale float64, phonemes ...string) int {
	var ms float64
	for _, p := range append([]string{"^", "_", "$"}, phonemes...) {
		ph, _ := Targets(p)
		ms += ph.Duration.Seconds() * 1000
	}
	frameRate := float64(m.rate) / float64(m.hop)
	frames := math.Ceil(ms * lengthScale * frameRate / 1000)
	return int(frames) * m.hop
}

func TestDurations(t *testing.T) {
	m := voiceModel(t)
	word := []string{"s", "ɪ", "ŋ", "ɪ", "ŋ"}
	for _, ls := range []float64{0.5, 1, 2} {
		for _, ph := range [][]string{word[:1], word, slices.Concat(word, word, word)} {
			y := m.run(t, piper(ph...), quiet.with(func(p *params) { p.lengthScale = float32(ls) }))
			want := expectedSamples(m, ls, ph...)
			if d := len(y) - want; d < -m.hop || d > m.hop {
				t.Errorf("%v at length_scale %v: %d samples, want %d ± one frame", ph, ls, len(y), want)
			}
		}
	}
	// noise_w jitters durations, deterministically and by at most 12%.
	long := slices.Concat(word, word, word, word)
	still := m.run(t, piper(long...), quiet)
	jittered := m.run(t, piper(long...), quiet.with(func(p *params) { p.noiseW = 1 }))
	if len(still) == len(jittered) {
		t.Error("noise_w 1 does not change durations")
	}
	if r := float64(len(jittered)) / float64(len(still)); r < 0.88 || r > 1.12 {
		t.Errorf("noise_w 1 changes the length by a factor of %.2f", r)
	}
	// Stress lengthens the vowel after the mark.
	plain := m.run(t, piper(ipa("bɑb")...), quiet)
	stressed := m.run(t, piper(ipa("bˈɑb")...), quiet)
	if len(stressed) <= len(plain) {
		t.Errorf("stressed /ɑ/: %d samples, unstressed %d", len(stressed), len(plain))
	}
}

func TestVowelFormants(t *testing.T) {
	m := voiceModel(t)
	measured := map[string][]float64{}
	for _, v := range []string{"a", "i", "u"} {
		want, _ := Targets(v)
		for _, ns := range []float32{0, 0.667} {
			y := m.run(t, piper(repeat(v, 8)...), quiet.with(func(p *params) { p.noiseScale = ns }))
			got := acoustic.FormantPeaks(middle(m, y, 0.15), m.rate, 2)
			if len(got) != 2 {
				t.Errorf("/%s/ noise_scale %v: formants %v, want two", v, ns, got)
				continue
			}
			for k, w := range []float64{want.F1, want.F2} {
				if math.Abs(got[k]-w) > 0.2*w {
					t.Errorf("/%s/ noise_scale %v: F%d at %.0f Hz, target %.0f ± 20%%", v, ns, k+1, got[k], w)
				}
			}
			measured[v] = got
		}
	}
	if a, i := measured["a"], measured["i"]; len(a) == 2 && len(i) == 2 {
		if a[0] < 1.5*i[0] || i[1] < 1.5*a[1] {
			t.Errorf("/a/ %v and /i/ %v: want /a/ with the higher F1, /i/ with the higher F2", a, i)
		}
	}
}

func TestSpeakersSound(t *testing.T) {
	m := voiceModel(t)
	ids := piper(ipa(sentence)...)
	sp := Speakers()
	f0 := make([]float64, len(sp))
	f1 := make([]float64, len(sp))
	for i, s := range sp {
		y := m.run(t, ids, params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, sid: s.ID, inputLength: -1})
		f0[i] = acoustic.MedianF0(acoustic.Float64s(y), m.rate)
		if math.Abs(f0[i]-s.F0) > 0.12*s.F0 {
			t.Errorf("%s: median f0 %.1f Hz, want %.0f ± 12%%", s.Name, f0[i], s.F0)
		}
		a := m.run(t, piper(repeat("a", 8)...), quiet.with(func(p *params) { p.sid = s.ID }))
		if fp := acoustic.FormantPeaks(middle(m, a, 0.15), m.rate, 1); len(fp) == 1 {
			f1[i] = fp[0]
		}
		ta, _ := Targets("a")
		if want := ta.F1 * s.FormantScale; math.Abs(f1[i]-want) > 0.2*want {
			t.Errorf("%s: /a/ F1 %.0f Hz, want %.0f ± 20%%", s.Name, f1[i], want)
		}
	}
	for i := range sp {
		for j := range i {
			if r := max(f0[i], f0[j]) / min(f0[i], f0[j]); r < 1.2 {
				t.Errorf("%s and %s: median f0 %.1f and %.1f Hz differ by less than 20%%", sp[i].Name, sp[j].Name, f0[i], f0[j])
			}
			// A longer vocal tract (lower FormantScale) has lower formants.
			if (sp[i].FormantScale > sp[j].FormantScale) != (f1[i] > f1[j]) {
				t.Errorf("%s and %s: /a/ F1 %.0f and %.0f do not follow FormantScale", sp[i].Name, sp[j].Name, f1[i], f1[j])
			}
		}
	}
}

func TestPauses(t *testing.T) {
	m := voiceModel(t)
	ms := func(n int) int { return n * m.rate / 1000 }
	inner := func(y []float32) [][2]int {
		x := acoustic.Float64s(y)
		var out [][2]int
		for _, s := range acoustic.Silences(x, m.rate, ms(25), 50) {
			if s[0] > 0 && s[1] < len(x) { // not the edges
				out = append(out, s)
			}
		}
		return out
	}
	for _, tt := range []struct {
		mark    string
		shortMs int
		longMs  int
	}{{".", 300, 450}, {",", 130, 250}, {"?", 300, 450}} {
		y := m.run(t, piper("a", "m", "a", tt.mark, "m", "a"), quiet.with(func(p *params) { p.noiseScale = 0.667 }))
		gaps := inner(y)
		if len(gaps) != 1 {
			t.Errorf("%q: silences %v, want one", tt.mark, gaps)
			continue
		}
		if d := gaps[0][1] - gaps[0][0]; d < ms(tt.shortMs) || d > ms(tt.longMs) {
			t.Errorf("%q: pause of %d ms, want %d..%d", tt.mark, d*1000/m.rate, tt.shortMs, tt.longMs)
		}
	}
	// Without punctuation, voiced speech runs on without a gap.
	if gaps := inner(m.run(t, piper("a", "m", "a", " ", "m", "a"), quiet)); len(gaps) != 0 {
		t.Errorf("no punctuation: silences %v", gaps)
	}
	// A voiceless stop's closure is a short silence, a voiced one's is not
	// silent (the voice bar).
	for _, stop := range []string{"p", "t", "k"} {
		gaps := inner(m.run(t, piper("a", stop, "a"), quiet))
		if len(gaps) != 1 || gaps[0][1]-gaps[0][0] < ms(25) || gaps[0][1]-gaps[0][0] > ms(80) {
			t.Errorf("/a%sa/: silences %v, want one closure of 25..80 ms", stop, gaps)
		}
	}
	if gaps := inner(m.run(t, piper("a", "b", "a"), quiet)); len(gaps) != 0 {
		t.Errorf("/aba/: silences %v, want a voice bar", gaps)
	}
}

func TestFricatives(t *testing.T) {
	m := voiceModel(t)
	measure := func(sym string) (centroid, f0 float64) {
		y := m.run(t, piper(repeat(sym, 6)...), quiet)
		x := middle(m, y, 0.1)
		return acoustic.SpectralCentroid(x, m.rate), acoustic.MedianF0(x, m.rate)
	}
	sC, sF0 := measure("s")
	shC, shF0 := measure("ʃ")
	aC, aF0 := measure("a")
	if sF0 != 0 || shF0 != 0 {
		t.Errorf("voiceless fricatives have a pitch: /s/ %.0f Hz, /ʃ/ %.0f Hz", sF0, shF0)
	}
	if aF0 == 0 {
		t.Error("/a/ has no pitch")
	}
	if sC < 4500 || shC < 2000 || shC > 4500 || aC > 1500 {
		t.Errorf("spectral centroids /s/ %.0f (want > 4500), /ʃ/ %.0f (want 2000..4500), /a/ %.0f Hz (want < 1500)", sC, shC, aC)
	}
}

func TestPinyin(t *testing.T) {
	m := voiceModel(t)
	// f0 near the start, in the middle and near the end of the final of
	// "mi" in each tone. (/i/'s low F1 keeps the strong harmonics low, where
	// autocorrelation follows a fast glide.)
	contour := func(tone string) [3]float64 {
		x := acoustic.Float64s(m.run(t, piper("m", "i", tone), quiet))
		i, _ := PinyinTargets("i", true)
		end := len(x) - int(0.07*float64(m.rate)) // before "$"
		start := end - int(i.Duration.Seconds()*float64(m.rate))
		frame := int(0.04 * float64(m.rate))
		var f0 [3]float64
		for k, at := range []int{start + frame/4, (start+end)/2 - frame/2, end - frame - frame/4} {
			f0[k] = acoustic.F0(x[at:at+frame], m.rate)
			if f0[k] == 0 {
				t.Errorf("tone %s: no pitch at sample %d", tone, at)
				f0[k] = math.NaN()
			}
		}
		return f0
	}
	c1, c2, c3, c4 := contour("1"), contour("2"), contour("3"), contour("4")
	if r := c1[2] / c1[0]; !(r > 0.85 && r < 1.05) {
		t.Errorf("tone 1 f0 %.0f Hz, want level (end/start 0.85..1.05, with declination)", c1)
	}
	if r := c2[2] / c2[0]; !(r > 1.15) {
		t.Errorf("tone 2 f0 %.0f Hz, want rising (end/start > 1.15)", c2)
	}
	if !(c3[1] < 0.92*c3[0] && c3[1] < c3[2]) {
		t.Errorf("tone 3 f0 %.0f Hz, want a dip in the middle", c3)
	}
	if r := c4[2] / c4[0]; !(r < 0.72) {
		t.Errorf("tone 4 f0 %.0f Hz, want falling (end/start < 0.72)", c4)
	}
	if !(c1[1] > 1.1*c3[1]) {
		t.Errorf("tone 1 (%.0f Hz) is not above tone 3's low (%.0f Hz)", c1[1], c3[1])
	}
	// With a tone digit in the sequence, "e" is pinyin's back vowel; without
	// one it is IPA's front /e/.
	formants := func(ids []int64) []float64 {
		return acoustic.FormantPeaks(middle(m, m.run(t, ids, quiet), 0.1), m.rate, 2)
	}
	pin := formants(piper("e", "1", " ", "e", "1", " ", "e", "1"))
	ipaE := formants(piper(repeat("e", 6)...))
	pe, _ := PinyinTargets("e", true)
	ie, _ := Targets("e")
	if len(pin) != 2 || len(ipaE) != 2 || math.Abs(pin[1]-pe.F2) > 0.2*pe.F2 || math.Abs(ipaE[1]-ie.F2) > 0.2*ie.F2 {
		t.Errorf("F1, F2 of pinyin e %v (want F2 %.0f), IPA e %v (want F2 %.0f)", pin, pe.F2, ipaE, ie.F2)
	}
}

// TestFrontEnds runs text through the project's real front ends: every
// phoneme they produce must be in the map, and the model must say it.
func TestFrontEnds(t *testing.T) {
	m := voiceModel(t)
	ids, err := text.NewPhonemeIDMap(PhonemeIDMap(), len(inventory))
	if err != nil {
		t.Fatal(err)
	}
	es, err := text.NewEspeak(&text.EspeakOptions{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		"The quick brown fox jumps over the lazy dog.",
		"She sells sea shells; however, the weather was rough!",
		"Is it true that George measured the pleasure of the vision?",
		"Button, kitten, bottle, water: the uh-oh moment.",
		"Loch Ness, a croissant, Llanelli and 1,234,567 dollars — at 3.14 percent.",
		"Enjoy the noise; pure cure, tour, poor, four, war. Whoa! Hmm, psst.",
	} {
		ph, err := es.Phonemize(s)
		if err != nil {
			t.Fatal(err)
		}
		seq, unknown := ids.IDs(ph)
		if unknown != nil {
			t.Errorf("%q: phonemes missing from the map: %v", s, unknown)
		}
		y := m.run(t, seq, params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, inputLength: -1})
		if sec := seconds(m, y); sec < 0.05*float64(len(ph)) {
			t.Errorf("%q: %.2f s for %d phonemes", s, sec, len(ph))
		}
	}
	py := text.NewPinyin(nil)
	ph, err := py.Phonemize("你好，世界。我们是中国人吗？绿色的鱼")
	if err != nil {
		t.Fatal(err)
	}
	seq, unknown := ids.IDs(ph)
	if unknown != nil {
		t.Errorf("pinyin tokens missing from the map: %v", unknown)
	}
	y := m.run(t, seq, params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, sid: 1, inputLength: -1})
	// 14 syllables of about a quarter second, and two pauses.
	if sec := seconds(m, y); sec < 2.5 || sec > 6 {
		t.Errorf("14 Mandarin syllables: %.2f s", sec)
	}
	if f0 := acoustic.MedianF0(acoustic.Float64s(y), m.rate); f0 < 140 || f0 > 220 {
		t.Errorf("Mandarin with robin (165 Hz): median f0 %.0f Hz", f0)
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
