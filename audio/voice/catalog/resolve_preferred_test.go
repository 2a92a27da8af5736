package catalog_test

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
)

func catalogOf(t *testing.T, voices ...catalogtest.Voice) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	catalogtest.WriteCollection(t, dir, voices...)
	data, err := os.ReadFile(filepath.Join(dir, "voices.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A language code resolves to its preferred voice first, among the
// voices of the nearest quality; without an entry, or without the voice
// at that quality, to the rule alone (quality, one speaker, key order).
func TestResolvePreferred(t *testing.T) {
	// en_US and de_DE as the collection has them (a part), where the
	// rule alone picks amy and karlsson; it_IT has no preferred voice.
	withLessac := catalogOf(t,
		catalogtest.Voice{Key: "en_US-amy-low"},
		catalogtest.Voice{Key: "en_US-amy-medium", Aliases: []string{"en-us-amy-medium"}},
		catalogtest.Voice{Key: "en_US-arctic-medium", Speakers: 18},
		catalogtest.Voice{Key: "en_US-danny-low"},
		catalogtest.Voice{Key: "en_US-lessac-low"},
		catalogtest.Voice{Key: "en_US-lessac-medium"},
		catalogtest.Voice{Key: "en_US-lessac-high"},
		catalogtest.Voice{Key: "en_US-libritts-high", Speakers: 904},
		catalogtest.Voice{Key: "en_GB-alan-medium"},
		catalogtest.Voice{Key: "de_DE-eva_k-x_low"},
		catalogtest.Voice{Key: "de_DE-karlsson-low"},
		catalogtest.Voice{Key: "de_DE-thorsten-low"},
		catalogtest.Voice{Key: "de_DE-thorsten-medium"},
		catalogtest.Voice{Key: "it_IT-riccardo-x_low"},
		catalogtest.Voice{Key: "it_IT-paola-medium"},
	)
	// A mirror without lessac, and one with lessac at medium only.
	noLessac := catalogOf(t,
		catalogtest.Voice{Key: "en_US-amy-medium"},
		catalogtest.Voice{Key: "en_US-ryan-high"},
	)
	lessacMediumOnly := catalogOf(t,
		catalogtest.Voice{Key: "en_US-amy-medium"},
		catalogtest.Voice{Key: "en_US-lessac-medium"},
		catalogtest.Voice{Key: "en_US-ryan-high"},
	)
	tests := []struct {
		name      string
		c         *catalog.Catalog
		req       string
		quality   string
		key, by   string
		preferred bool
	}{
		{"en_US is lessac", withLessac, "en_US", "", "en_US-lessac-medium", catalog.ByLanguage, true},
		{"en-us is lessac", withLessac, "en-us", "", "en_US-lessac-medium", catalog.ByLanguage, true},
		{"high is lessac-high", withLessac, "en_US", "high", "en_US-lessac-high", catalog.ByLanguage, true},
		{"low is lessac-low", withLessac, "en_US", "low", "en_US-lessac-low", catalog.ByLanguage, true},
		{"x_low is the nearest lessac", withLessac, "en_US", "x_low", "en_US-lessac-low", catalog.ByLanguage, true},
		{"de_DE low is thorsten-low", withLessac, "de_DE", "low", "de_DE-thorsten-low", catalog.ByLanguage, true},
		{"de_DE x_low keeps its quality", withLessac, "de_DE", "x_low", "de_DE-eva_k-x_low", catalog.ByLanguage, false},
		{"no entry: the rule", withLessac, "it_IT", "", "it_IT-paola-medium", catalog.ByLanguage, false},
		{"family: the rule", withLessac, "de", "low", "de_DE-karlsson-low", catalog.ByLanguage, false},
		{"family en: the rule", withLessac, "en", "", "en_GB-alan-medium", catalog.ByLanguage, false},
		{"key", withLessac, "en_US-amy-medium", "", "en_US-amy-medium", catalog.ByKey, false},
		{"alias", withLessac, "en-us-amy-medium", "", "en_US-amy-medium", catalog.ByAlias, false},
		{"name", withLessac, "amy", "", "en_US-amy-medium", catalog.ByName, false},
		{"name and quality", withLessac, "amy", "low", "en_US-amy-low", catalog.ByName, false},
		{"no lessac: the rule", noLessac, "en_US", "", "en_US-amy-medium", catalog.ByLanguage, false},
		{"no lessac at high: quality first", lessacMediumOnly, "en_US", "high", "en_US-ryan-high", catalog.ByLanguage, false},
		{"lessac at medium", lessacMediumOnly, "en_US", "", "en_US-lessac-medium", catalog.ByLanguage, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := tt.c.Resolve(tt.req, tt.quality)
			if err != nil {
				t.Fatal(err)
			}
			if r.Voice.Key != tt.key || r.By != tt.by || r.Preferred != tt.preferred {
				t.Errorf("Resolve(%q, %q) = %s by %s preferred %v, want %s by %s preferred %v",
					tt.req, tt.quality, r.Voice.Key, r.By, r.Preferred, tt.key, tt.by, tt.preferred)
			}
			if r.Candidates[0] != r.Voice {
				t.Errorf("candidates %v do not start with the choice", keys(r.Candidates))
			}
		})
	}
	// The preferred voice leads each quality's candidates; the others
	// keep the rule's order.
	r, _ := withLessac.Resolve("en_US", "")
	want := []string{"en_US-lessac-medium", "en_US-amy-medium", "en_US-arctic-medium", "en_US-lessac-high", "en_US-libritts-high",
		"en_US-lessac-low", "en_US-amy-low", "en_US-danny-low"}
	if got := keys(r.Candidates); !slices.Equal(got, want) {
		t.Errorf("candidates %v, want %v", got, want)
	}
}

// Each language of the table, as the collection names its voices: the
// preferred voice wins over one the key order puts first.
func TestResolvePreferredTable(t *testing.T) {
	for code, name := range map[string]string{
		"en_US": "lessac", "en_GB": "alan", "de_DE": "thorsten",
		"fr_FR": "siwis", "es_ES": "davefx", "zh_CN": "huayan",
	} {
		t.Run(code, func(t *testing.T) {
			c := catalogOf(t, catalogtest.Voice{Key: code + "-aaa-medium"}, catalogtest.Voice{Key: code + "-" + name + "-medium"})
			r, err := c.Resolve(code, "")
			if err != nil {
				t.Fatal(err)
			}
			if r.Voice.Key != code+"-"+name+"-medium" || !r.Preferred {
				t.Errorf("Resolve(%q) = %s preferred %v", code, r.Voice.Key, r.Preferred)
			}
		})
	}
}
