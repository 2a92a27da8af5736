package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// Voices copied into voices.dir, replaced and removed while mynahd runs
// appear in and leave Home Assistant's voice select without a restart,
// and speak (or are refused) at once.
func TestVoicesChangeWhileRunning(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	discovery := mqtttest.Subscribe(t, url, daemon.DiscoveryTopic(cfg.MQTT.DiscoveryPrefix, cfg.Node))
	options := func(want func([]string) bool) { t.Helper(); waitVoiceOptions(t, discovery, want) }
	reloaded := func() daemon.Event {
		t.Helper()
		return ev.next(func(e daemon.Event) bool { return e.Command == "voices/reload" && e.State == daemon.EventDone })
	}
	say := func(id, voiceName, state string) daemon.Event {
		t.Helper()
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"`+id+`","voice":"`+voiceName+`","text":"Dinner is ready."}`), false)
		return ev.next(func(e daemon.Event) bool { return e.ID == id && e.State == state })
	}
	options(func(o []string) bool { return slices.Equal(o, []string{"mynah-demo"}) })

	enginetest.WriteVoices(t, cfg.Voices.Dir, "tenor")
	if e := reloaded(); e.Voices == nil || !slices.Equal(e.Voices.Added, []string{"tenor"}) {
		t.Fatalf("reload after copying tenor in: %+v", e.Voices)
	}
	options(func(o []string) bool { return slices.Contains(o, "tenor") })
	say("t1", "tenor", daemon.EventFinished)

	model := filepath.Join(cfg.Voices.Dir, "tenor", "mynah-demo.onnx")
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(model+".new", data, 0o644); err != nil {
		t.Fatal(err)
	}
	os.Rename(model+".new", model) // how an installer replaces a file
	if e := reloaded(); e.Voices == nil || !slices.Equal(e.Voices.Changed, []string{"tenor"}) {
		t.Fatalf("reload after replacing tenor's model: %+v", e.Voices)
	}
	say("t2", "tenor", daemon.EventFinished)

	if err := os.RemoveAll(filepath.Join(cfg.Voices.Dir, "tenor")); err != nil {
		t.Fatal(err)
	}
	if e := reloaded(); e.Voices == nil || !slices.Equal(e.Voices.Removed, []string{"tenor"}) {
		t.Fatalf("reload after removing tenor: %+v", e.Voices)
	}
	options(func(o []string) bool { return slices.Equal(o, []string{"mynah-demo"}) })
	if e := say("t3", "tenor", daemon.EventFailed); e.Reason != daemon.ReasonUnknownVoice {
		t.Errorf("say in the removed voice: %+v", e)
	}

	// On demand, answered even when nothing changed.
	mqtttest.Publish(t, url, "mynah/kitchen/voices/reload", nil, false)
	if e := reloaded(); e.Voices == nil || e.Voices.Any() {
		t.Errorf("voices/reload with nothing changed: %+v", e.Voices)
	}
}

// waitVoiceOptions returns the voice select's options of the next
// discovery document on ch that want accepts.
func waitVoiceOptions(t *testing.T, ch <-chan daemon.Message, want func([]string) bool) []string {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-ch:
			var doc struct {
				Cmps map[string]struct{ Options []string } `json:"cmps"`
			}
			if json.Unmarshal(m.Payload, &doc) == nil && want(doc.Cmps["voice"].Options) {
				return doc.Cmps["voice"].Options
			}
		case <-deadline:
			t.Fatal("the voice select's options did not change")
			return nil
		}
	}
}

// waitState returns the next state on ch that want accepts.
func waitState(t *testing.T, ch <-chan daemon.Message, what string, want func(daemon.State) bool) daemon.State {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-ch:
			var s daemon.State
			if json.Unmarshal(m.Payload, &s) == nil && want(s) {
				return s
			}
		case <-deadline:
			t.Fatalf("no state with %s", what)
			return daemon.State{}
		}
	}
}

// The voice chosen with voice/set renamed on disk (its directory is its
// name): the retained state falls back to the default voice, one of the
// options of the retained voice select, where before it said "" and Home
// Assistant logged an invalid option.
func TestVoiceSetThenRenamed(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	enginetest.WriteVoices(t, cfg.Voices.Dir, "mynah-style")
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	discoveryTopic := daemon.DiscoveryTopic(cfg.MQTT.DiscoveryPrefix, cfg.Node)
	states := mqtttest.Subscribe(t, url, "mynah/kitchen/state")
	waitVoiceOptions(t, mqtttest.Subscribe(t, url, discoveryTopic), func(o []string) bool {
		return slices.Equal(o, []string{"mynah-demo", "mynah-style"})
	})

	mqtttest.Publish(t, url, "mynah/kitchen/voice/set", []byte("mynah-style"), false)
	waitState(t, states, "voice mynah-style", func(s daemon.State) bool { return s.Voice == "mynah-style" })

	if err := os.Rename(filepath.Join(cfg.Voices.Dir, "mynah-style"), filepath.Join(cfg.Voices.Dir, "mynah-style-2")); err != nil {
		t.Fatal(err)
	}
	e := ev.next(func(e daemon.Event) bool { return e.Command == "voices/reload" && e.State == daemon.EventDone })
	if e.Voices == nil || !slices.Equal(e.Voices.Removed, []string{"mynah-style"}) || !slices.Equal(e.Voices.Added, []string{"mynah-style-2"}) {
		t.Fatalf("reload after the rename: %+v", e.Voices)
	}
	renamed := []string{"mynah-demo", "mynah-style-2"}
	waitState(t, states, "the renamed voices", func(s daemon.State) bool { return slices.Equal(s.Voices, renamed) })

	// What Home Assistant reads when it (re)starts: the retained ones.
	options := waitVoiceOptions(t, mqtttest.Subscribe(t, url, discoveryTopic), func(o []string) bool { return slices.Equal(o, renamed) })
	s := lastState(t, url, cfg.Node)
	if s.Voice != "mynah-demo" || !slices.Contains(options, s.Voice) {
		t.Errorf("retained state's voice %q, want the default voice mynah-demo, one of the select's options %v", s.Voice, options)
	}
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"r1","text":"Dinner is ready."}`), false)
	ev.next(stateID(daemon.EventFinished, "r1"))
}
