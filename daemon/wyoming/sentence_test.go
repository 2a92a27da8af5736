package wyoming

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCutSentences(t *testing.T) {
	tests := []struct {
		name, in, done, rest string
	}{
		{"empty", "", "", ""},
		{"no end yet", "The kitchen", "", "The kitchen"},
		{"period at end waits", "Lights are on.", "", "Lights are on."},
		{"period then space", "Lights are on. Anything", "Lights are on.", " Anything"},
		{"two sentences", "One. Two! Thr", "One. Two!", " Thr"},
		{"question run", "Really?! Yes", "Really?!", " Yes"},
		{"closing quote", `He said "go." Then`, `He said "go."`, " Then"},
		{"decimal is not an end", "It is 3.14 now", "", "It is 3.14 now"},
		{"decimal split over chunks", "It is 3.", "", "It is 3."},
		{"newline ends", "Item one\nItem", "Item one\n", "Item"},
		{"cjk period", "你好。世界", "你好。", "世界"},
		{"cjk at end waits", "你好。", "", "你好。"},
		{"cjk with closer", "他说「好。」然后", "他说「好。」", "然后"},
		{"ellipsis", "Well... maybe", "Well...", " maybe"},
		{"invalid utf8 passes through", "a\xff. b", "a\xff.", " b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			done, rest := cutSentences(tt.in)
			if done != tt.done || rest != tt.rest {
				t.Errorf("cutSentences(%q) = %q, %q; want %q, %q", tt.in, done, rest, tt.done, tt.rest)
			}
		})
	}
}

func FuzzCutSentences(f *testing.F) {
	for _, s := range []string{"", "One. Two", "你好。世界", "a\nb", "3.14", `"x." y`, "\xff.\xfe "} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		done, rest := cutSentences(s)
		if done+rest != s {
			t.Fatalf("cutSentences(%q) lost text: %q + %q", s, done, rest)
		}
		if utf8.ValidString(s) && !utf8.ValidString(done) {
			t.Fatalf("cutSentences(%q) cut inside a rune: %q", s, done)
		}
		// What is left over holds no further sentence end.
		if d2, _ := cutSentences(rest); d2 != "" {
			t.Fatalf("cutSentences(%q) left a complete sentence in %q", s, rest)
		}
		if strings.HasSuffix(rest, "\n") && rest != "" {
			t.Fatalf("rest %q ends in a line break, which should have been cut", rest)
		}
	})
}
