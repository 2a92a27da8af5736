package main

import (
	"fmt"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/render"
)

// The engine's errors carry the daemon's event reasons themselves
// (daemon.Reasoner): mynahd translates none of them.
func TestEngineErrorsCarryEventReasons(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{voice.ErrUnknownSpeaker, daemon.ReasonUnknownSpeaker},
		{voice.ErrReference, daemon.ReasonBadAudio},
		{voice.ErrReenroll, daemon.ReasonReenroll},
		{daemon.ErrUnknownVoice, daemon.ReasonUnknownVoice},
		{daemon.ErrNothingToSay, daemon.ReasonEmpty},
		{engine.ErrRemoteOnly, daemon.ReasonRender},
		{fmt.Errorf("%w: %w", engine.ErrRemoteOnly, render.ErrNoRenderer), daemon.ReasonRender},
		{voice.ErrTooManyFrames, daemon.ReasonSynthesis}, // no reason of its own
	} {
		wrapped := fmt.Errorf("speak: sentence 2: %w", tc.err)
		if got := daemon.ReasonOf(wrapped, daemon.ReasonSynthesis); got != tc.reason {
			t.Errorf("%v: reason %q, want %q", tc.err, got, tc.reason)
		}
	}
}
