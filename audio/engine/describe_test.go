package engine

import (
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

func TestLanguages(t *testing.T) {
	for _, tc := range []struct {
		code, espeak string
		want         []string
	}{
		{"en_US", "en-us", []string{"en_US"}},
		{"", "en-us", []string{"en_US"}},
		{"", "en-gb-x-rp", []string{"en_GB"}},
		{"", "cmn", []string{"zh"}},
		{"de_DE", "", []string{"de_DE"}},
		{"", "", nil},
	} {
		if got := languages(tc.code, tc.espeak); !slices.Equal(got, tc.want) {
			t.Errorf("languages(%q, %q) = %v, want %v", tc.code, tc.espeak, got, tc.want)
		}
	}
}

// TestDescribe: every installed kind is described from its files, with
// no voice loaded.
func TestDescribe(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, demo.Name)
	enginetest.WriteKits(t, dir, false)
	e, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: demo.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	got := e.Describe()
	if len(got) != 2 {
		t.Fatalf("Describe = %+v, want the demo and the cloning voice", got)
	}
	byName := map[string]VoiceInfo{}
	for _, v := range got {
		byName[v.Name] = v
	}
	d := byName[demo.Name]
	if d.Kind != kindPiper || len(d.Languages) != 1 || d.SampleRate != demo.SampleRate || len(d.Speakers) != len(demo.Speakers()) {
		t.Errorf("demo voice %+v", d)
	}
	if c := byName[demo.CloneName]; c.Kind != kindPipeline || len(c.Languages) != 1 {
		t.Errorf("cloning voice %+v", c)
	}
	if st := e.sessions.Stats(); st.Loads != 0 {
		t.Errorf("Describe loaded %d voices", st.Loads)
	}
}
