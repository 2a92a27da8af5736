package main

// Tests of the voice session cache as mynahd wires it: real ONNX Runtime
// and copies of the demo voice under several names.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// runWithLog runs mynahd in-process with log going to rec until the test
// ends, and returns the broker URL.
func runWithLog(t *testing.T, cfg config.Config, rec *enginetest.Recorder) string {
	t.Helper()
	url, _ := runDaemon(t, cfg, slog.New(rec))
	return url
}

// TestPreloadBeforeReady: the default voice and voices.sessions.preload
// are loaded (one log line each, with the load time) before mynahd says it
// is ready; a request for a preloaded voice loads nothing; a voice not in
// the list is loaded on first use.
func TestPreloadBeforeReady(t *testing.T) {
	cfg := testConfig(t, "", "null")
	cfg.Cache.File = "" // every request synthesizes, so it needs its voice
	enginetest.WriteVoices(t, cfg.Voices.Dir, "alto", "bass", "tenor")
	cfg.Voices.Sessions.Preload = []string{"alto", "bass"}
	rec := enginetest.NewRecorder()
	url := runWithLog(t, cfg, rec)
	waitOnline(t, url, cfg.Node)
	ready := rec.WaitFor(t, "mynahd ready", "")
	for _, v := range []string{demo.Name, "alto", "bass"} {
		i := rec.Index("voice loaded", v)
		if i < 0 || i > ready {
			t.Fatalf("voice %s loaded at record %d, ready at %d: want it before ready", v, i, ready)
		}
		if ms := rec.All()[i].Attrs["load_ms"]; ms == "" {
			t.Errorf("the load line of %s has no load_ms", v)
		}
	}
	ev := watchEvents(t, url, cfg.Node)
	for i, v := range []string{"bass", "tenor"} {
		id := fmt.Sprint("r", i)
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"`+id+`","text":"Hello.","voice":"`+v+`"}`), false)
		ev.next(stateID("finished", id))
	}
	if got := rec.VoicesWith("voice loaded"); !slices.Equal(got, []string{demo.Name, "alto", "bass", "tenor"}) {
		t.Fatalf("loads %v: want the preloaded voices once, then tenor on first use", got)
	}
}

// TestUnknownSessionVoiceFailsStart: a name in voices.sessions.preload or
// pinned that is not installed stops mynahd at start with an error naming
// the key, before any voice is loaded.
func TestUnknownSessionVoiceFailsStart(t *testing.T) {
	for _, tt := range []struct {
		key    string
		change func(*config.Sessions)
	}{
		{"voices.sessions.preload[1]", func(sc *config.Sessions) { sc.Preload = []string{"alto", "klingon"} }},
		{"voices.sessions.pinned[0]", func(sc *config.Sessions) { sc.Pinned = []string{"vulcan"} }},
	} {
		t.Run(tt.key, func(t *testing.T) {
			cfg := testConfig(t, "", "null")
			enginetest.WriteVoices(t, cfg.Voices.Dir, "alto")
			tt.change(&cfg.Voices.Sessions)
			if err := cfg.Validate(); err != nil {
				t.Fatalf("Validate cannot know the voices: %v", err)
			}
			rec := enginetest.NewRecorder()
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			err := run(ctx, cfg, slog.New(rec))
			if err == nil || !strings.HasPrefix(err.Error(), tt.key+": ") || !errors.Is(err, engine.ErrUnknownVoice) ||
				!strings.Contains(err.Error(), "installed: alto, mynah-demo") {
				t.Fatalf("run = %v, want an unknown-voice error naming %s and the installed voices", err, tt.key)
			}
			if got := rec.VoicesWith("voice loaded"); len(got) != 0 {
				t.Fatalf("loaded %v before failing", got)
			}
		})
	}
}
