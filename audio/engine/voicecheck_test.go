package engine

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
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

// TestSpeakContinued: every sentence but the last asks for the voice's
// pause; with Request.Continued (a Wyoming stream, more to come) the last
// one does too, so that a text spoken in parts has the pauses of the
// whole.
func TestSpeakContinued(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "dflt")
	vs, _ := testEngine(t, dir, "dflt", testSessions())
	for _, continued := range []bool{false, true} {
		var pauses []time.Duration
		err := vs.Speak(context.Background(), Request{Text: "One. Two.", Continued: continued}, func(c Chunk) error {
			pauses = append(pauses, c.Silence)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(pauses) != 2 || pauses[0] <= 0 {
			t.Fatalf("continued %v: pauses %v, want two, the first > 0", continued, pauses)
		}
		if want := map[bool]time.Duration{false: 0, true: pauses[0]}[continued]; pauses[1] != want {
			t.Errorf("continued %v: pause after the last sentence %v, want %v", continued, pauses[1], want)
		}
	}
}
