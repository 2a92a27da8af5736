//go:build cgo

package text

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// These tests run the real libespeak-ng (Debian: libespeak-ng1 and
// espeak-ng-data). They assert facts of English and German phonology that
// any espeak-ng release keeps, not a byte-exact transcript.

func newEspeak(t testing.TB, voice string) *Espeak {
	t.Helper()
	e, err := NewEspeak(&EspeakOptions{Voice: voice})
	if err != nil {
		t.Fatalf("NewEspeak(%q): %v", voice, err)
	}
	return e
}

func phonemizeString(t testing.TB, e *Espeak, s string) string {
	t.Helper()
	ph, err := e.Phonemize(s)
	if err != nil {
		t.Fatalf("Phonemize(%q): %v", s, err)
	}
	for i, p := range ph {
		if utf8.RuneCountInString(p) != 1 {
			t.Fatalf("phoneme %d %q is not one codepoint", i, p)
		}
	}
	return strings.Join(ph, "")
}

func TestEspeakHelloWorld(t *testing.T) {
	e := newEspeak(t, "en-us")
	if e.Voice() != "en-us" {
		t.Errorf("Voice() = %q", e.Voice())
	}
	got := phonemizeString(t, e, "Hello world.")
	for _, want := range []string{"h", "ə", "l", "oʊ", "w", "ɜː", "d", " ", "ˈ"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if !strings.HasSuffix(got, "d.") {
		t.Errorf("%q does not end with the word and its period", got)
	}
}

func TestEspeakClausePunctuation(t *testing.T) {
	e := newEspeak(t, "en-us")
	got := phonemizeString(t, e, "Yes, no! Why? Fine: ok; go")
	// Piper's layout: mark after each clause, a space after every clause but the last.
	for _, want := range []string{", ", "! ", "? ", ": ", "; "} {
		if !strings.Contains(got, want) {
			t.Errorf("%q lacks %q", got, want)
		}
	}
	if strings.Contains(got, "  ") || strings.HasSuffix(got, " ") {
		t.Errorf("%q has stray spaces", got)
	}
	// No terminator without a mark, and none for an ellipsis.
	if got := phonemizeString(t, e, "Well... fine"); strings.ContainsAny(got, ".,;!?") {
		t.Errorf("ellipsis and bare end gave punctuation: %q", got)
	}
}

func TestEspeakLanguageFlagsRemoved(t *testing.T) {
	e := newEspeak(t, "fr")
	// espeak reads "English" with English rules and marks it "(en)...(fr)".
	got := phonemizeString(t, e, "Bonjour, English text here")
	if strings.ContainsAny(got, "()") {
		t.Errorf("language flags left in %q", got)
	}
	if !strings.Contains(got, "ɪŋɡlɪʃ") {
		t.Errorf("English word missing from %q", got)
	}
	if !strings.Contains(got, "ɔ\u0303") {
		t.Errorf("French nasal vowel missing from %q", got)
	}
}

func TestEspeakNFD(t *testing.T) {
	got := phonemizeString(t, newEspeak(t, "de"), "ich")
	if strings.Contains(got, "ç") || !strings.Contains(got, "c\u0327") {
		t.Errorf("%q: want ç decomposed to c + U+0327", got)
	}
}

func TestEspeakInputCleaning(t *testing.T) {
	e := newEspeak(t, "en-us")
	clean := phonemizeString(t, e, "Hello world")
	if got := phonemizeString(t, e, "Hel\x00lo\x07\n  world"); got != clean {
		t.Errorf("control characters changed the output: %q vs %q", got, clean)
	}
	for _, tt := range []struct {
		in   string
		want error
	}{
		{"", ErrEmptyText},
		{"\x00 \t", ErrEmptyText},
		{"bad \xff", ErrInvalidText},
		{strings.Repeat("a", DefaultMaxChars+1), ErrTextTooLong},
	} {
		if _, err := e.Phonemize(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("Phonemize(%.20q) error %v, want %v", tt.in, err, tt.want)
		}
	}
}

// espeak keeps the rune it read ahead in a global; a call must flush it so
// that the next call starts clean.
func TestEspeakNoStateBetweenCalls(t *testing.T) {
	e := newEspeak(t, "en-us")
	before := phonemizeString(t, e, "Bye")
	phonemizeString(t, e, "Hi. A")
	phonemizeString(t, e, "Stop!")
	if after := phonemizeString(t, e, "Bye"); after != before {
		t.Errorf("output changed after other calls: %q, then %q", before, after)
	}
}

func TestEspeakErrors(t *testing.T) {
	for _, voice := range []string{"../../etc/passwd", "en us", "no-such-voice-xyz"} {
		if _, err := NewEspeak(&EspeakOptions{Voice: voice}); !errors.Is(err, ErrEspeak) {
			t.Errorf("voice %q: error %v, want ErrEspeak", voice, err)
		}
	}
	// A bad voice must not break the instances that exist.
	e := newEspeak(t, "en-us")
	if _, err := NewEspeak(&EspeakOptions{Voice: "no-such-voice-xyz"}); err == nil {
		t.Fatal("missing voice accepted")
	}
	if got := phonemizeString(t, e, "Hello"); !strings.Contains(got, "h") {
		t.Errorf("after a failed voice: %q", got)
	}
	// The library is process wide: another data path is refused, whether
	// or not it was initialized before this test.
	if _, err := NewEspeak(&EspeakOptions{DataPath: t.TempDir()}); !errors.Is(err, ErrEspeak) {
		t.Errorf("foreign data path: %v, want ErrEspeak", err)
	}
}

func TestNewPhonemizerEspeak(t *testing.T) {
	p, err := NewPhonemizer("", "")
	if err != nil {
		t.Fatal(err)
	}
	e, ok := p.(*Espeak)
	if !ok || e.Voice() != DefaultEspeakVoice {
		t.Fatalf("default phonemizer %T %+v", p, p)
	}
	if _, err := NewPhonemizer(PhonemeTypeEspeak, "no-such-voice-xyz"); !errors.Is(err, ErrEspeak) {
		t.Errorf("missing voice: %v", err)
	}
}

// Many goroutines with two voices: every result must equal the serial one,
// which fails if calls interleave inside libespeak-ng or the voice switch
// races. Run with -race.
func TestEspeakConcurrent(t *testing.T) {
	voices := []*Espeak{newEspeak(t, "en-us"), newEspeak(t, "de")}
	sentences := []string{"Hello world.", "How are you, my friend?", "Guten Morgen!", "The quick brown fox jumps over the lazy dog."}
	want := map[string]string{}
	for _, e := range voices {
		for _, s := range sentences {
			want[e.Voice()+"|"+s] = phonemizeString(t, e, s)
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for g := 0; g < 16; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				e := voices[(g+i)%len(voices)]
				s := sentences[(g*3+i)%len(sentences)]
				ph, err := e.Phonemize(s)
				if err != nil {
					errs <- err
					return
				}
				if got := strings.Join(ph, ""); got != want[e.Voice()+"|"+s] {
					errs <- fmt.Errorf("%s %q: got %q, want %q", e.Voice(), s, got, want[e.Voice()+"|"+s])
					return
				}
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func FuzzEspeak(f *testing.F) {
	for _, s := range []string{"Hello world.", "Mr. Smith, 3.14 e.g. www.x.com!", "Wait... what?", "你好。", "(en) [[a]] <b>", "\x00\xff", "ééé ççç", "a—b–c…d"} {
		f.Add(s)
	}
	e := newEspeak(f, "en-us")
	f.Fuzz(func(t *testing.T, in string) {
		ph, err := e.Phonemize(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidText) && !errors.Is(err, ErrEmptyText) && !errors.Is(err, ErrTextTooLong) {
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		for i, p := range ph {
			if utf8.RuneCountInString(p) != 1 || p == "(" || p == ")" {
				t.Fatalf("phoneme %d is %q", i, p)
			}
		}
	})
}

func BenchmarkEspeakPhonemize(b *testing.B) {
	e := newEspeak(b, "en-us")
	sentence := "The quick brown fox jumps over the lazy dog, and then it runs away."
	b.ReportAllocs()
	var n int
	for b.Loop() {
		ph, err := e.Phonemize(sentence)
		if err != nil {
			b.Fatal(err)
		}
		n = len(ph)
	}
	b.ReportMetric(float64(n), "phonemes/op")
}
