package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// TestStyleVectorVoiceOverMQTT: a Kokoro-contract bundle (the generated
// style kit) speaks through the daemon next to the Piper demo voice, with
// its pack's voices as speakers and the phrase cache in front.
func TestStyleVectorVoiceOverMQTT(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	dir := filepath.Join(cfg.Voices.Dir, demo.StyleName)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := demo.WriteStyle(dir, nil); err != nil {
		t.Fatal(err)
	}
	startDaemon(t, cfg)
	waitOnline(t, broker.URL(), cfg.Node)
	ev := watchEvents(t, broker.URL(), cfg.Node)
	say := func(id, payload string) daemon.Event {
		mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(payload), false)
		return ev.next(func(e daemon.Event) bool {
			return e.ID == id && (e.State == daemon.EventFinished || e.State == daemon.EventFailed)
		})
	}
	voice := demo.StyleVoices()[1].Name
	for i, want := range []string{daemon.CacheMiss, daemon.CacheHit} {
		id := []string{"s1", "s2"}[i]
		e := say(id, `{"id":"`+id+`","text":"The tea is ready.","voice":"`+demo.StyleName+`","speaker":"`+voice+`"}`)
		if e.State != daemon.EventFinished || e.Cache != want {
			t.Fatalf("%s: %+v, want finished with cache %s", id, e, want)
		}
	}
	// Another voice of the pack is other audio: a miss.
	other := demo.StyleVoices()[0].Name
	if e := say("s3", `{"id":"s3","text":"The tea is ready.","voice":"`+demo.StyleName+`","speaker":"`+other+`"}`); e.Cache != daemon.CacheMiss {
		t.Errorf("another pack voice: %+v, want a miss", e)
	}
	if e := say("s4", `{"id":"s4","text":"Hello.","voice":"`+demo.StyleName+`","speaker":"nobody"}`); e.State != daemon.EventFailed || e.Reason != daemon.ReasonUnknownSpeaker {
		t.Errorf("unknown pack voice: %+v, want failed unknown_speaker", e)
	}
	if e := say("s5", `{"id":"s5","text":"Hello."}`); e.State != daemon.EventFinished {
		t.Errorf("the Piper default voice next to it: %+v", e)
	}
}
