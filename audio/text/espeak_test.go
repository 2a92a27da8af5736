package text

import (
	"strings"
	"testing"
)

// These tests cover the Go side of the espeak front end with hand-made
// clauses, so they run in builds without cgo too.

func TestClauseTerminator(t *testing.T) {
	tests := []struct {
		source string
		last   bool
		want   string
	}{
		{"Hello world. H", false, "."},
		{"Hello world.", true, "."},
		{"Hello world", true, ""},
		{"ow are you, M", false, ","},
		{"mith? G", false, "?"},
		{"reat! Y", false, "!"},
		{"es: n", false, ":"},
		{"o; m", false, ";"},
		{"wait —  w", false, ";"},
		{`He said "hi."`, false, "."}, // espeak took the quote, not a lookahead rune
		{`"Stop!" `, true, "!"},
		{"Hmm... o", false, ""}, // three dots are an ellipsis: nothing, as in Piper
		{"Hm.. o", false, "."},
		{"maybe… o", false, ""},
		{"你好。世", false, ""}, // fullwidth marks add nothing, as in Piper
		{"Line one\n\nL", false, ""},
		{"", true, ""},
		{"a!", false, "!"}, // the last rune is the mark itself, not a lookahead
	}
	for _, tt := range tests {
		if got := clauseTerminator(tt.source, tt.last); got != tt.want {
			t.Errorf("clauseTerminator(%q, %v) = %q, want %q", tt.source, tt.last, got, tt.want)
		}
	}
}

func TestAssembleClauses(t *testing.T) {
	clauses := []espeakClause{
		{phonemes: "bɔ̃ʒˈuʁ", source: "Bonjour, ç"},
		{phonemes: "sa vˈa", source: "a va? E"},
		{phonemes: "(en)ˈɪŋɡlɪʃ(fr) tˈɛkst", source: "nglish text", last: true},
		// espeak flushing its read-ahead rune yields a clause with no source.
	}
	got := strings.Join(assembleClauses(clauses), "|")
	want := "b|ɔ|\u0303|ʒ|ˈ|u|ʁ|,| |s|a| |v|ˈ|a|?| |ˈ|ɪ|ŋ|ɡ|l|ɪ|ʃ| |t|ˈ|ɛ|k|s|t"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	// NFD: a precomposed ç becomes c + combining cedilla, as Piper expects.
	got = strings.Join(assembleClauses([]espeakClause{{phonemes: "ɪç", source: "ich", last: true}}), "|")
	if want := "ɪ|c|\u0327"; got != want {
		t.Errorf("NFD: got %s, want %s", got, want)
	}

	// No trailing space after the last clause, no double spaces.
	got = strings.Join(assembleClauses([]espeakClause{
		{phonemes: "hˈaɪ ", source: "Hi. A"},
		{phonemes: "ˈeɪ", source: "", last: true},
	}), "|")
	if want := "h|ˈ|a|ɪ| |.| |ˈ|e|ɪ"; got != want {
		t.Errorf("spaces: got %s, want %s", got, want)
	}
}

func TestStripLanguageFlags(t *testing.T) {
	tests := map[string]string{
		"abc":              "abc",
		"(en)ab(fr) cd":    "ab cd",
		"x(en)y(zh)":       "xy",
		"unclosed (en abc": "unclosed ",
	}
	for in, want := range tests {
		if got := stripLanguageFlags(in); got != want {
			t.Errorf("stripLanguageFlags(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestValidVoiceName(t *testing.T) {
	for _, ok := range []string{"en-us", "de", "en-gb-x-rp", "en+f3", "cmn"} {
		if !validVoiceName(ok) {
			t.Errorf("%q rejected", ok)
		}
	}
	for _, bad := range []string{"", "../etc/passwd", "/abs", "en us", "en\x00", strings.Repeat("a", 41), "fr.voice"} {
		if validVoiceName(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
