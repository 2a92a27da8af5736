package engine

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// TestSpeakCountsUnknownPhonemes: phonemes the voice has no id for are
// skipped, and each chunk says how many, for a front end to tell the user
// (mynah say's note).
func TestSpeakCountsUnknownPhonemes(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "holey")
	cfgPath := filepath.Join(dir, "holey", demo.Name+".onnx.json")
	data, err := os.ReadFile(cfgPath)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	ids := cfg["phoneme_id_map"].(map[string]any)
	delete(ids, "h") // "Hello." starts with it
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfgPath, data, 0o644); err != nil {
		t.Fatal(err)
	}
	e, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	unknown := map[string]int{}
	for _, text := range []string{"Hello.", "Good day."} {
		err := e.Speak(context.Background(), Request{Text: text}, func(c Chunk) error {
			unknown[text] += c.Unknown
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if unknown["Hello."] < 1 || unknown["Good day."] != 0 {
		t.Errorf("unknown phonemes %v: want at least 1 for Hello. (no h) and none for Good day.", unknown)
	}
}
