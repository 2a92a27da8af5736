package engine

import (
	"context"
	"errors"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// TestCheckVoice: voice/set's check loads the voice (it stays warm),
// refuses one that does not load, and one whose files are gone even while
// its session is still warm.
func TestCheckVoice(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "dflt", "good", "broken", "gone")
	if err := os.WriteFile(filepath.Join(dir, "broken", demo.Name+".onnx"), []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	vs, rec := testEngine(t, dir, "dflt", testSessions())
	ctx := context.Background()

	if err := vs.CheckVoice(ctx, "good"); err != nil {
		t.Fatalf("a good voice: %v", err)
	}
	if rec.Index("voice loaded", "good") < 0 {
		t.Error("the check did not load the voice")
	}
	if err := vs.CheckVoice(ctx, "broken"); err == nil || errors.Is(err, ErrUnknownVoice) {
		t.Errorf("a voice that does not load: %v, want a load error", err)
	}
	speak(t, vs, "gone") // warm
	if err := os.RemoveAll(filepath.Join(dir, "gone")); err != nil {
		t.Fatal(err)
	}
	if err := vs.CheckVoice(ctx, "gone"); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("a warm voice whose files are gone: %v, want ErrUnknownVoice", err)
	}
	if err := vs.CheckVoice(ctx, "nosuch"); !errors.Is(err, ErrUnknownVoice) {
		t.Errorf("no such voice: %v, want ErrUnknownVoice", err)
	}
}

// TestSpeakNothingToSay: markup alone is the engine's ErrNothingToSay
// (reason empty), not a synthesis failure.
func TestSpeakNothingToSay(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "dflt")
	vs, _ := testEngine(t, dir, "dflt", testSessions())
	err := vs.Speak(context.Background(), Request{Text: "<speak><break time='100000s'/></speak>"}, func(Chunk) error {
		t.Error("audio for markup alone")
		return nil
	})
	if !errors.Is(err, ErrNothingToSay) {
		t.Errorf("Speak = %v, want ErrNothingToSay", err)
	}
}
