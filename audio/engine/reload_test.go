package engine

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
)

// Voices copied into, replaced in and removed from the directory while
// the engine runs: each reload reports them, and a replaced or removed
// voice leaves the warm sessions.
func TestReloadVoices(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "alto", "bass")
	vs, rec := testEngine(t, dir, "alto", SessionOptions{MaxCount: 4})
	speak(t, vs, "alto")
	speak(t, vs, "bass")

	if ch, err := vs.ReloadVoices(); err != nil || ch.Any() {
		t.Fatalf("nothing changed, reload says %+v, %v", ch, err)
	}

	enginetest.WriteVoices(t, dir, "tenor")
	ch, err := vs.ReloadVoices()
	if err != nil || !slices.Equal(ch.Added, []string{"tenor"}) || len(ch.Changed)+len(ch.Removed) != 0 {
		t.Fatalf("after adding tenor: %+v, %v", ch, err)
	}
	if !slices.Contains(vs.Voices(), "tenor") {
		t.Errorf("tenor not offered: %v", vs.Voices())
	}
	speak(t, vs, "tenor")

	// Replace bass's model (a new file, a new time): it is let go, and
	// the next request loads the new files.
	model := filepath.Join(dir, "bass", "mynah-demo.onnx")
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(model)
	if err := os.WriteFile(model, data, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Minute)
	os.Chtimes(model, later, later)
	loads := len(rec.VoicesWith("voice loaded"))
	if ch, err = vs.ReloadVoices(); err != nil || !slices.Equal(ch.Changed, []string{"bass"}) {
		t.Fatalf("after replacing bass: %+v, %v", ch, err)
	}
	if got := rec.VoicesWith("voice unloaded"); !slices.Contains(got, "bass") {
		t.Errorf("bass still loaded after its files changed (unloaded: %v)", got)
	}
	speak(t, vs, "bass")
	if got := rec.VoicesWith("voice loaded"); len(got) != loads+1 || got[len(got)-1] != "bass" {
		t.Errorf("bass not loaded again from its new files: %v", got)
	}

	// Remove tenor: reported, closed, no longer offered.
	if err := os.RemoveAll(filepath.Join(dir, "tenor")); err != nil {
		t.Fatal(err)
	}
	if ch, err = vs.ReloadVoices(); err != nil || !slices.Equal(ch.Removed, []string{"tenor"}) {
		t.Fatalf("after removing tenor: %+v, %v", ch, err)
	}
	if slices.Contains(vs.Voices(), "tenor") || !slices.Contains(rec.VoicesWith("voice unloaded"), "tenor") {
		t.Errorf("tenor: offered %v, unloaded %v", vs.Voices(), rec.VoicesWith("voice unloaded"))
	}

	// A voice whose config does not read is not offered until fixed.
	enginetest.WriteVoices(t, dir, "broken")
	cfg := filepath.Join(dir, "broken", "mynah-demo.onnx.json")
	good, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, []byte("{not json"), 0o644)
	if ch, err = vs.ReloadVoices(); err != nil || ch.Rejected["broken"] == "" || len(ch.Added) != 0 {
		t.Fatalf("broken voice: %+v, %v", ch, err)
	}
	if slices.Contains(vs.Voices(), "broken") {
		t.Errorf("a voice with an unreadable config is offered: %v", vs.Voices())
	}
	os.WriteFile(cfg, good, 0o644)
	os.Chtimes(cfg, later, later)
	if ch, err = vs.ReloadVoices(); err != nil || !slices.Equal(ch.Added, []string{"broken"}) || !slices.Contains(vs.Voices(), "broken") {
		t.Fatalf("fixed voice: %+v, %v; offered %v", ch, err, vs.Voices())
	}

	// The default voice stays loaded when its directory goes.
	os.RemoveAll(filepath.Join(dir, "alto"))
	if ch, err = vs.ReloadVoices(); err != nil || !slices.Equal(ch.Removed, []string{"alto"}) {
		t.Fatalf("after removing the default voice: %+v, %v", ch, err)
	}
	speak(t, vs, "")
}
