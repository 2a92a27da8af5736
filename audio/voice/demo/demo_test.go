package demo

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// maxModelBytes is the size budget of the demo voice.
const maxModelBytes = 2 << 20

func TestBuildDeterministic(t *testing.T) {
	m1, c1, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	m2, c2, err := Build(&Options{SampleRate: SampleRate, MaxSeconds: DefaultMaxSeconds})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m1, m2) || !bytes.Equal(c1, c2) {
		t.Error("two builds with the same options differ")
	}
	m3, c3, err := Build(&Options{SampleRate: 16000})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(m1, m3) || bytes.Equal(c1, c3) {
		t.Error("builds at 22050 and 16000 Hz are identical")
	}
}

func TestModelSize(t *testing.T) {
	for _, rate := range []int{8000, SampleRate, 48000} {
		m, _, err := Build(&Options{SampleRate: rate})
		if err != nil {
			t.Fatal(err)
		}
		if len(m) >= maxModelBytes {
			t.Errorf("%d Hz: model is %d bytes, budget %d", rate, len(m), maxModelBytes)
		}
		// The model must pass mynah's own checks, the ones every model
		// meets before ONNX Runtime sees it.
		dm, err := onnx.Decode(m, nil)
		if err != nil {
			t.Fatalf("%d Hz: %v", rate, err)
		}
		if got := dm.Metadata()["mynah.demo.sample_rate"]; got != strconv.Itoa(rate) {
			t.Errorf("metadata sample_rate %q, want %d", got, rate)
		}
		t.Logf("%d Hz: %d bytes", rate, len(m))
	}
}

func TestOptionsRejected(t *testing.T) {
	for _, o := range []Options{
		{SampleRate: 7999}, {SampleRate: 48001}, {SampleRate: -1},
		{MaxSeconds: -1}, {MaxSeconds: MaxMaxSeconds + 1},
	} {
		if _, _, err := Build(&o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions", o, err)
		}
		if _, err := Config(&o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("Config(%+v): err = %v, want ErrInvalidOptions", o, err)
		}
	}
}

func TestConfig(t *testing.T) {
	_, data, err := Build(nil)
	if err != nil {
		t.Fatal(err)
	}
	c, err := voice.ParsePiperConfig(data)
	if err != nil {
		t.Fatal(err)
	}
	if c.Audio.SampleRate != SampleRate || c.PhonemeType != voice.PhonemeEspeak || c.Espeak.Voice != "en-us" || c.Dataset != Name {
		t.Errorf("config header: rate %d type %q voice %q dataset %q", c.Audio.SampleRate, c.PhonemeType, c.Espeak.Voice, c.Dataset)
	}
	want := voice.Inference{NoiseScale: 0.667, LengthScale: 1, NoiseW: 0.8}
	if c.Inference != want {
		t.Errorf("inference %+v, want %+v", c.Inference, want)
	}
	for sym, id := range map[string]int64{"_": 0, "^": 1, "$": 2} {
		if ids := c.PhonemeIDMap[sym]; len(ids) != 1 || ids[0] != id {
			t.Errorf("%q → %v, want [%d]", sym, ids, id)
		}
	}
	// Ids are dense and unique: num_symbols is exactly the map's size.
	seen := make(map[int64]string)
	for sym, ids := range c.PhonemeIDMap {
		if len(ids) != 1 {
			t.Errorf("%q → %v, want one id", sym, ids)
		}
		if prev, dup := seen[ids[0]]; dup {
			t.Errorf("id %d used by %q and %q", ids[0], prev, sym)
		}
		seen[ids[0]] = sym
		if !utf8.ValidString(sym) || sym == "" {
			t.Errorf("bad key %q", sym)
		}
	}
	if len(seen) != c.NumSymbols {
		t.Errorf("%d ids, num_symbols %d", len(seen), c.NumSymbols)
	}
	if c.NumSpeakers < 3 || len(c.SpeakerIDMap) != c.NumSpeakers {
		t.Errorf("num_speakers %d, speaker_id_map %v", c.NumSpeakers, c.SpeakerIDMap)
	}
	for _, s := range Speakers() {
		if c.SpeakerIDMap[s.Name] != s.ID {
			t.Errorf("speaker %q: config id %d, Speakers id %d", s.Name, c.SpeakerIDMap[s.Name], s.ID)
		}
	}
}

// espeakInventory is every codepoint Debian 12's libespeak-ng 1.51 emitted
// for en-us over a few hundred words of varied English (foreign names,
// numbers, syllabic consonants, glottal stops), plus the clause marks
// Piper's front end appends.
const espeakInventory = " abdefhijklmnopstuvwxzæðŋɐɑɔəɚɛɜɡɪɬɹɾʃʊʌʒʔˈˌː\u0303\u0329θᵻ,.!?;:"

func TestMapCoversEspeak(t *testing.T) {
	m := PhonemeIDMap()
	for _, r := range norm.NFD.String(espeakInventory) {
		if _, ok := m[string(r)]; !ok {
			t.Errorf("espeak-ng symbol %q (U+%04X) missing from phoneme_id_map", r, r)
		}
	}
}

func TestMapCoversPinyin(t *testing.T) {
	m := PhonemeIDMap()
	for _, tok := range text.PinyinTokens() {
		if _, ok := m[tok]; !ok {
			t.Errorf("pinyin token %q missing from phoneme_id_map", tok)
		}
	}
}

func TestTargets(t *testing.T) {
	a, ok := Targets("a")
	if !ok || !a.Voiced || a.Noisy || a.F1 < 600 || a.F2 < 1000 || a.Duration <= 0 {
		t.Errorf("Targets(a) = %+v, %v", a, ok)
	}
	s, ok := Targets("s")
	if !ok || s.Voiced || !s.Noisy {
		t.Errorf("Targets(s) = %+v, %v", s, ok)
	}
	for _, sym := range []string{"_", "ˈ", "3", " "} {
		if p, ok := Targets(sym); !ok || p.Duration != 0 {
			t.Errorf("Targets(%q) = %+v, %v; want a zero-length mark", sym, p, ok)
		}
	}
	if _, ok := Targets("nope"); ok {
		t.Error("Targets(nope) found")
	}
	// Pinyin readings of letters IPA uses differently.
	e, _ := Targets("e")
	pe, ok := PinyinTargets("e", true)
	if !ok || pe.F2 > 0.8*e.F2 || pe.Duration <= e.Duration {
		t.Errorf("pinyin e %+v vs IPA e %+v: want a back vowel and a whole syllable", pe, e)
	}
	if j, _ := PinyinTargets("j", false); !j.Noisy || j.Voiced {
		t.Errorf("pinyin j = %+v, want an unvoiced affricate", j)
	}
	if ang, ok := PinyinTargets("ang", true); !ok || ang.F1 < 600 {
		t.Errorf("pinyin ang = %+v, %v", ang, ok)
	}
}

func TestSpeakers(t *testing.T) {
	sp := Speakers()
	if len(sp) < 3 {
		t.Fatalf("%d speakers", len(sp))
	}
	for i := range sp {
		if sp[i].ID != int64(i) {
			t.Errorf("speaker %d has id %d", i, sp[i].ID)
		}
		for j := range i {
			lo, hi := min(sp[i].F0, sp[j].F0), max(sp[i].F0, sp[j].F0)
			if hi < 1.2*lo {
				t.Errorf("%s and %s: f0 %v and %v are within 20%%", sp[i].Name, sp[j].Name, sp[i].F0, sp[j].F0)
			}
		}
	}
	sp[0].Name = "changed"
	if Speakers()[0].Name == "changed" {
		t.Error("Speakers returns shared storage")
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	for range 2 { // the second Write replaces the first
		path, err := Write(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		if path != filepath.Join(dir, "mynah-demo.onnx") {
			t.Errorf("path %q", path)
		}
		if _, err := onnx.ReadFile(path, nil); err != nil {
			t.Error(err)
		}
		if _, err := voice.ReadPiperConfig(path + ".json"); err != nil {
			t.Error(err)
		}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"mynah-demo.onnx", "mynah-demo.onnx.json"}) {
		t.Errorf("directory holds %v, want only the two voice files", names)
	}
	if _, err := Write(filepath.Join(dir, "missing", "dir"), nil); err == nil {
		t.Error("Write into a missing directory succeeded")
	}
	if _, err := Write(dir, &Options{SampleRate: 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad options: %v", err)
	}
}

func BenchmarkBuild(b *testing.B) {
	b.ReportAllocs()
	var size int
	for b.Loop() {
		m, _, err := Build(nil)
		if err != nil {
			b.Fatal(err)
		}
		size = len(m)
	}
	b.ReportMetric(float64(size), "model-bytes")
}
