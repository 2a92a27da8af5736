//go:build cgo

// The tests in this file measure what the demo voice says in the real ONNX
// Runtime, with the session helpers of model_cgo_test.go.

package demo

import (
	"math"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
)

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
