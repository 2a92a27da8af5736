package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

func TestFileMemoRereadsOnlyChangedFiles(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "voice.json")
	if err := os.WriteFile(cfg, []byte(`{"a":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	var m fileMemo[string]
	reads := 0
	get := func() string {
		t.Helper()
		v, err := m.get(dir, func() (string, []string, error) {
			reads++
			data, err := os.ReadFile(cfg)
			return string(data), []string{dir, cfg}, err
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		return v
	}
	for range 3 {
		if v := get(); v != `{"a":1}` {
			t.Fatalf("got %q", v)
		}
	}
	if reads != 1 {
		t.Errorf("%d reads of an unchanged file, want 1", reads)
	}
	// Changed content (size), then a changed time alone.
	if err := os.WriteFile(cfg, []byte(`{"a":22}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if v := get(); v != `{"a":22}` || reads != 2 {
		t.Errorf("after a rewrite: %q, %d reads", v, reads)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(cfg, later, later); err != nil {
		t.Fatal(err)
	}
	if get(); reads != 3 {
		t.Errorf("a new modification time not read again: %d reads", reads)
	}
	// A file added to the directory changes it.
	if err := os.WriteFile(filepath.Join(dir, "other"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if get(); reads != 4 {
		t.Errorf("a file added to the directory not read again: %d reads", reads)
	}
	m.forget(map[string]bool{})
	if get(); reads != 5 {
		t.Errorf("forgotten, yet not read again: %d reads", reads)
	}
}

// Describe sees a voice's config change without a reload.
func TestDescribeFollowsConfigChanges(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, demo.Name)
	e, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: demo.Name})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	first := e.Describe()
	if len(first) != 1 || first[0].SampleRate == 0 {
		t.Fatalf("Describe: %+v", first)
	}
	model, err := voice.FindPiper(filepath.Join(dir, demo.Name))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(model + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["audio"].(map[string]any)["sample_rate"] = 44100
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model+".json", data, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := e.Describe(); got[0].SampleRate != 44100 {
		t.Errorf("after the config changed: sample rate %d, want 44100", got[0].SampleRate)
	}
}
