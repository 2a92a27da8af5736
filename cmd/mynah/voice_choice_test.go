package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
)

// mynah voice install LANGUAGE says what it chose and why: the
// language's preferred voice, or the rule where the catalog lacks it.
func TestVoiceInstallSaysWhyItChose(t *testing.T) {
	for _, tt := range []struct {
		name   string
		voices []catalogtest.Voice
		req    string
		key    string
		said   []string // the first line starts with said[0], the size, then said[1]
	}{
		{"preferred", []catalogtest.Voice{{Key: "en_US-amy-medium"}, {Key: "en_US-lessac-medium"}}, "en_US", "en_US-lessac-medium",
			[]string{"en_US: choosing en_US-lessac-medium (medium, 1 speaker, ", " kB), the preferred voice for en_US, of 2 voices; name another"}},
		{"rule", []catalogtest.Voice{{Key: "en_US-amy-medium"}, {Key: "en_US-ryan-medium"}}, "en_US", "en_US-amy-medium",
			[]string{"en_US: choosing en_US-amy-medium (medium, 1 speaker, ", " kB) of 2 voices, by quality nearest medium, one speaker first, then key; name another"}},
		{"name", []catalogtest.Voice{{Key: "en_US-amy-low"}, {Key: "en_US-amy-medium"}}, "amy", "en_US-amy-medium",
			[]string{"amy: choosing en_US-amy-medium (medium, 1 speaker, ", " kB) of 2 voices, by quality nearest medium, one speaker first"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			voiceEnv(t) // its config and environment
			s := catalogtest.New(t, tt.voices...)
			dir := t.TempDir()
			flags := []string{"--voices", dir, "--catalog-url", s.CatalogURL, "--download-url", s.BaseURL, "--no-prepare"}
			out, errOut, err := install(t, flags, tt.req)
			if err != nil {
				t.Fatalf("%v\n%s", err, errOut)
			}
			line, _, _ := strings.Cut(errOut, "\n")
			if !strings.HasPrefix(line, tt.said[0]) || !strings.Contains(line, tt.said[1]) {
				t.Errorf("first line %q, want %q SIZE %q", line, tt.said[0], tt.said[1])
			}
			if !strings.HasPrefix(out, "installed "+tt.key+" in "+filepath.Join(dir, tt.key)) {
				t.Errorf("stdout %q", out)
			}
			checkVoice(t, dir, tt.key)
		})
	}
}
