package cache

import (
	"errors"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func baseSpec() PhraseSpec {
	return PhraseSpec{
		ModelDigest: "9f2c",
		Voice:       "en_US-amy-medium",
		Speaker:     "3",
		Params:      map[string]float64{"length_scale": 1, "noise_scale": 0.667, "noise_w": 0.8},
		Settings:    map[string]string{"lang": "en-us"},
		SampleRate:  22050,
		Text:        "The washing machine has finished.",
	}
}

func TestPhraseKeyChangesWithWhatChangesAudio(t *testing.T) {
	base := baseSpec().Key()
	cases := map[string]func(*PhraseSpec){
		"model digest":   func(p *PhraseSpec) { p.ModelDigest = "9f2d" },
		"voice":          func(p *PhraseSpec) { p.Voice = "en_US-amy-low" },
		"speaker":        func(p *PhraseSpec) { p.Speaker = "4" },
		"no speaker":     func(p *PhraseSpec) { p.Speaker = "" },
		"param value":    func(p *PhraseSpec) { p.Params["noise_scale"] = 0.668 },
		"param added":    func(p *PhraseSpec) { p.Params["volume"] = 1 },
		"param renamed":  func(p *PhraseSpec) { p.Params["length"] = p.Params["length_scale"]; delete(p.Params, "length_scale") },
		"setting":        func(p *PhraseSpec) { p.Settings["lang"] = "en-gb" },
		"sample rate":    func(p *PhraseSpec) { p.SampleRate = 16000 },
		"text":           func(p *PhraseSpec) { p.Text = "The washing machine has finished!" },
		"case":           func(p *PhraseSpec) { p.Text = "the washing machine has finished." },
		"fields shifted": func(p *PhraseSpec) { p.Voice, p.Speaker = "en_US-amy-medium3", "" },
		"param as setting": func(p *PhraseSpec) {
			delete(p.Params, "noise_w")
			p.Settings["noise_w"] = "0.8"
		},
	}
	seen := map[PhraseKey]string{base: "base"}
	for name, change := range cases {
		p := baseSpec()
		change(&p)
		k := p.Key()
		if prev, dup := seen[k]; dup {
			t.Errorf("%s gives the same key as %s", name, prev)
		}
		seen[k] = name
	}
	if key("Hello.") == key("hello.") {
		t.Error(`"Hello." and "hello." share a key`)
	}
}

func TestPhraseKeySameForSameAudio(t *testing.T) {
	base := baseSpec().Key()
	cases := map[string]func(*PhraseSpec){
		"NFD text":         func(p *PhraseSpec) { p.Text = norm.NFD.String("Café au lait, s'il vous plaît.") },
		"whitespace":       func(p *PhraseSpec) { p.Text = "  The washing\tmachine \n has   finished. " },
		"float32 rounding": func(p *PhraseSpec) { p.Params["noise_scale"] = float64(float32(0.667)) },
		"map rebuilt": func(p *PhraseSpec) {
			p.Params = map[string]float64{"noise_w": 0.8, "noise_scale": 0.667, "length_scale": 1}
		},
	}
	for name, change := range cases {
		p := baseSpec()
		change(&p)
		want := base
		if name == "NFD text" {
			q := baseSpec()
			q.Text = norm.NFC.String("Café au lait, s'il vous plaît.")
			want = q.Key()
		}
		if p.Key() != want {
			t.Errorf("%s changes the key", name)
		}
	}
	neg, pos := baseSpec(), baseSpec()
	neg.Params["noise_w"], pos.Params["noise_w"] = negZero(), 0
	if neg.Key() != pos.Key() {
		t.Error("-0 and 0 give different keys")
	}
}

func negZero() float64 {
	z := 0.0
	return -z
}

func TestNormalizeSentence(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"   ", ""},
		{"Hello.", "Hello."},
		{"  Hello,\t\tworld!\n", "Hello, world!"},
		{"a\u00a0b\u3000c\u2028d", "a b c d"}, // no-break, ideographic, line separator
		{"e\u0301", "\u00e9"},                 // NFD → NFC
		{"Ｈｅｌｌｏ", "Ｈｅｌｌｏ"},                    // NFC keeps compatibility forms
		{"你好。 世界！", "你好。 世界！"},
		{"bad \xff byte", "bad \ufffd byte"},
	}
	for _, c := range cases {
		if got := NormalizeSentence(c.in); got != c.want {
			t.Errorf("NormalizeSentence(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func FuzzNormalizeSentence(f *testing.F) {
	for _, s := range []string{"", " a  b ", "e\u0301\t\u0301", "\xff\xfe", "你好。 世界！", "a\u00a0\u0301", "\u1100\u1161\u11a8"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		out := NormalizeSentence(in)
		if !utf8.ValidString(out) {
			t.Fatalf("%q: invalid UTF-8 %q", in, out)
		}
		if NormalizeSentence(out) != out {
			t.Fatalf("%q: not idempotent: %q then %q", in, out, NormalizeSentence(out))
		}
		if !norm.NFC.IsNormalString(out) {
			t.Fatalf("%q: %q is not NFC", in, out)
		}
		if strings.Contains(out, "  ") || strings.TrimSpace(out) != out {
			t.Fatalf("%q: white space not folded: %q", in, out)
		}
		if strings.IndexFunc(out, func(r rune) bool { return unicode.IsSpace(r) && r != ' ' }) >= 0 {
			t.Fatalf("%q: white space other than a space left: %q", in, out)
		}
	})
}

// FuzzPhraseKey checks that a key depends on exactly the normalized
// sentence: texts with the same normal form share a key, others do not.
func FuzzPhraseKey(f *testing.F) {
	f.Add("Hello.", "hello.", 22050)
	f.Add("e\u0301", "\u00e9", 16000)
	f.Add(" a b", "a  b ", 0)
	f.Fuzz(func(t *testing.T, a, b string, rate int) {
		pa, pb := baseSpec(), baseSpec()
		pa.Text, pb.Text, pa.SampleRate, pb.SampleRate = a, b, rate, rate
		same := NormalizeSentence(a) == NormalizeSentence(b)
		if (pa.Key() == pb.Key()) != same {
			t.Fatalf("%q and %q: same normal form %v, same key %v", a, b, same, pa.Key() == pb.Key())
		}
	})
}

func TestParsePurgeScope(t *testing.T) {
	cases := []struct {
		in   string
		want PurgeScope
		ok   bool
	}{
		{"phrases", PurgeScope{Kind: PurgePhrases}, true},
		{"all", PurgeScope{Kind: PurgeAll}, true},
		{"expired", PurgeScope{Kind: PurgeExpired}, true},
		{"speakers", PurgeScope{Kind: PurgeSpeakers}, true},
		{"voice=en_US-amy-medium", PurgeScope{Kind: PurgeVoice, Voice: "en_US-amy-medium"}, true},
		{"voice=a=b", PurgeScope{Kind: PurgeVoice, Voice: "a=b"}, true},
		{"older=36h", PurgeScope{Kind: PurgeOlder, Age: 36 * time.Hour}, true},
		{"older=7d", PurgeScope{Kind: PurgeOlder, Age: 7 * 24 * time.Hour}, true},
		{"older=90m", PurgeScope{Kind: PurgeOlder, Age: 90 * time.Minute}, true},
		{"", PurgeScope{}, false},
		{"speakers=a", PurgeScope{}, false},
		{"Speakers", PurgeScope{}, false},
		{"Phrases", PurgeScope{}, false},
		{"all=1", PurgeScope{}, false},
		{"voice", PurgeScope{}, false},
		{"voice=", PurgeScope{}, false},
		{"voice=" + strings.Repeat("x", 256), PurgeScope{}, false},
		{"older=", PurgeScope{}, false},
		{"older=-1h", PurgeScope{}, false},
		{"older=0s", PurgeScope{}, false},
		{"older=0d", PurgeScope{}, false},
		{"older=1.5d", PurgeScope{}, false},
		{"older=99999999999d", PurgeScope{}, false},
		{"older=soon", PurgeScope{}, false},
		{strings.Repeat("a", 301), PurgeScope{}, false},
	}
	for _, c := range cases {
		got, err := ParsePurgeScope(c.in)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParsePurgeScope(%q) = %+v, %v; want %+v ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalid) {
			t.Errorf("ParsePurgeScope(%q): %v does not wrap ErrInvalid", c.in, err)
		}
	}
}

func FuzzParsePurgeScope(f *testing.F) {
	for _, s := range []string{"phrases", "speakers", "all", "expired", "voice=amy", "older=7d", "older=1h30m", "older=-5d", "voice=", "x=y=z"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		sc, err := ParsePurgeScope(in)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%q: %v does not wrap ErrInvalid", in, err)
			}
			return
		}
		if err := sc.validate(); err != nil {
			t.Fatalf("%q parsed to an invalid scope %+v: %v", in, sc, err)
		}
		back, err := ParsePurgeScope(sc.String())
		if err != nil || back != sc {
			t.Fatalf("%q → %+v → %q → %+v, %v", in, sc, sc.String(), back, err)
		}
	})
}
