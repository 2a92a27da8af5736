package daemon

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
)

const discoveryTopic = "homeassistant/device/test/config"

func TestDiscoveryPayload(t *testing.T) {
	h := newHarness(t, nil).start()
	waitFor(t, "discovery", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	m := h.tr.on(discoveryTopic)[0]
	if !m.retained {
		t.Error("discovery not retained")
	}
	var doc map[string]any
	if err := json.Unmarshal(m.payload, &doc); err != nil {
		t.Fatalf("discovery is not JSON: %v", err)
	}
	str := func(m map[string]any, k string) string { s, _ := m[k].(string); return s }
	obj := func(m map[string]any, k string) map[string]any { o, _ := m[k].(map[string]any); return o }

	dev := obj(doc, "dev")
	if ids, _ := dev["ids"].([]any); len(ids) != 1 || ids[0] != "mynah_test" {
		t.Errorf("dev.ids %v", dev["ids"])
	}
	for k, want := range map[string]string{"name": "mynah test", "mf": "mynah", "mdl": "mynahd", "sw": "1.2.3"} {
		if got := str(dev, k); got != want {
			t.Errorf("dev.%s = %q, want %q", k, got, want)
		}
	}
	if o := obj(doc, "o"); str(o, "name") != "mynah" || str(o, "sw") != "1.2.3" {
		t.Errorf("origin %v", o)
	}
	if str(doc, "availability_topic") != "mynah/test/status" || str(doc, "payload_available") != "online" ||
		str(doc, "payload_not_available") != "offline" || doc["qos"] != 1.0 {
		t.Errorf("availability/qos: %v", doc)
	}

	cmps := obj(doc, "cmps")
	want := map[string]struct{ platform, command, template string }{
		"request":       {"event", "", requestEventTemplate},
		"command":       {"event", "", commandEventTemplate},
		"last_error":    {"sensor", "", lastErrorTemplate},
		"voices_reload": {"button", "mynah/test/voices/reload", ""},
		"say":           {"notify", "mynah/test/say", ""},
		"voice":         {"select", "mynah/test/voice/set", "{{ value_json.voice }}"},
		"volume":        {"number", "mynah/test/volume/set", "{{ (value_json.volume * 100) | round(0) }}"},
		"stop":          {"button", "mynah/test/stop", ""},
		"state":         {"sensor", "", "{{ value_json.state }}"},
		"queue":         {"sensor", "", "{{ value_json.queue }}"},
	}
	if len(cmps) != len(want)+len(optionalComponents)-1 { // voice is in both
		t.Errorf("%d components, want %d", len(cmps), len(want)+len(optionalComponents)-1)
	}
	subscribed := h.tr.filters
	for key, w := range want {
		c := obj(cmps, key)
		if c == nil {
			t.Errorf("component %s missing", key)
			continue
		}
		if str(c, "p") != w.platform || str(c, "unique_id") != "mynah_test_"+key ||
			str(c, "default_entity_id") != w.platform+".mynah_test_"+key || str(c, "name") == "" {
			t.Errorf("component %s: %v", key, c)
		}
		if _, ok := c["object_id"]; ok {
			t.Errorf("component %s uses object_id, gone from Home Assistant", key)
		}
		if str(c, "command_topic") != w.command {
			t.Errorf("component %s: command_topic %q, want %q", key, str(c, "command_topic"), w.command)
		}
		if w.command != "" && !slices.Contains(subscribed, w.command) {
			t.Errorf("component %s commands %s, which the daemon does not subscribe to", key, w.command)
		}
		topic := "mynah/test/state"
		if w.platform == "event" {
			topic = "mynah/test/event"
		}
		if w.template != "" && (str(c, "state_topic") != topic || str(c, "value_template") != w.template) {
			t.Errorf("component %s: state %q %q", key, str(c, "state_topic"), str(c, "value_template"))
		}
	}
	for key, want := range map[string][]any{"request": {"finished", "failed", "dropped"}, "command": {"done", "failed"}} {
		if types, _ := obj(cmps, key)["event_types"].([]any); !slices.Equal(types, want) {
			t.Errorf("%s event_types %v, want %v", key, types, want)
		}
	}
	if opts, _ := obj(cmps, "voice")["options"].([]any); len(opts) != 2 || opts[0] != "alice" || opts[1] != "bob" {
		t.Errorf("voice options %v", opts)
	}
	vol := obj(cmps, "volume")
	if vol["min"] != 0.0 || vol["max"] != 100.0 || str(vol, "command_template") != "{{ value }}%" {
		t.Errorf("volume number %v", vol)
	}
	// What the number publishes must parse as the percentage it means.
	if v, err := ParseVolume([]byte("1.0%")); err != nil || v != 0.01 {
		t.Errorf("the number's 1%% reads as %v, %v", v, err)
	}
}

// Without voices there is nothing to choose, and without a cache no cache
// figures: those components are sent as {"p": platform}, which is how
// Home Assistant removes an entity it made from an earlier payload.
func TestDiscoveryRemovesComponentsThatAreGone(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.DefaultVoice = "" })
	b, err := h.d.discoveryPayload(nil)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Cmps map[string]map[string]any `json:"cmps"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for key, platform := range map[string]string{"voice": "select", "cache_hit_ratio": "sensor",
		"cache_size": "sensor", "cache_entries": "sensor", "cache_purge": "button", "audio": "binary_sensor"} {
		if c := doc.Cmps[key]; len(c) != 1 || c["p"] != platform {
			t.Errorf("component %s = %v, want only {\"p\": %q}", key, c, platform)
		}
	}
	c := newCacheRec()
	h = newHarness(t, func(o *Options) {
		o.Cache = &c.fake
		o.Audio = func() AudioStatus { return AudioStatus{Available: true} }
	})
	if b, err = h.d.discoveryPayload([]string{"alice"}); err != nil {
		t.Fatal(err)
	}
	doc.Cmps = nil
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for key := range optionalComponents {
		if len(doc.Cmps[key]) < 3 {
			t.Errorf("component %s is a stub with a cache and voices: %v", key, doc.Cmps[key])
		}
	}
}

func TestDiscoveryRepublished(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	voices := []string{"alice", "bob"}
	h.eng.fake.VoicesFunc = func() []string { mu.Lock(); defer mu.Unlock(); return voices }
	h.start()
	waitFor(t, "discovery at start", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	n := 1

	mu.Lock()
	voices = []string{"alice", "bob", "carol"}
	mu.Unlock()
	h.d.Connected()
	waitFor(t, "discovery after Connected", func() bool { return len(h.tr.on(discoveryTopic)) == n+1 })
	msgs := h.tr.on(discoveryTopic)
	var doc haDiscovery
	if err := json.Unmarshal(msgs[len(msgs)-1].payload, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components["voice"].Options; !slices.Equal(got, voices) {
		t.Errorf("voice options %v after new voices appeared", got)
	}
	// The new voice is usable at once.
	h.send("say", `{"id":"c","text":"x","voice":"carol"}`)
	h.waitEvent("c", EventFinished)

	h.sendMsg(Message{Topic: "homeassistant/status", Payload: []byte("online")})
	waitFor(t, "discovery after HA online", func() bool { return len(h.tr.on(discoveryTopic)) == n+2 })
	h.sendMsg(Message{Topic: "homeassistant/status", Payload: []byte("online"), Retained: true})
	waitFor(t, "discovery after retained HA online", func() bool { return len(h.tr.on(discoveryTopic)) == n+3 })
	states := len(h.tr.on("mynah/test/state"))
	if states < 3 {
		t.Errorf("%d state publishes: discovery must be followed by state", states)
	}

	h.sendMsg(Message{Topic: "homeassistant/status", Payload: []byte("offline")})
	h.send("say", `{"id":"after","text":"x"}`)
	h.waitEvent("after", EventFinished)
	if got := len(h.tr.on(discoveryTopic)); got != n+3 {
		t.Errorf("discovery published on HA offline (%d)", got)
	}
}

func TestUnregister(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.d.Unregister(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{discoveryTopic, "mynah/test/state"} {
		msgs := h.tr.on(topic)
		if len(msgs) != 1 || len(msgs[0].payload) != 0 || !msgs[0].retained {
			t.Errorf("%s: %+v, want one empty retained message", topic, msgs)
		}
	}
}

func TestSubscriptions(t *testing.T) {
	h := newHarness(t, nil).start()
	want := []string{"mynah/test/say", "mynah/test/u/+/say", "mynah/test/stop", "mynah/test/volume/set",
		"mynah/test/voice/set", "mynah/test/cache/purge", "mynah/test/speaker/enroll", "mynah/test/speaker/forget",
		"mynah/test/u/+/speaker/enroll", "mynah/test/u/+/speaker/forget", "mynah/test/voices/reload", "mynah/test/voice/install",
		"homeassistant/status"}
	if !slices.Equal(h.tr.filters, want) {
		t.Errorf("filters %v, want %v", h.tr.filters, want)
	}
}

// voices/reload (and ReloadVoices, which mynahd's directory watch calls)
// rereads the voices: a new one is offered in the select and the state,
// usable at once; one chosen with voice/set that is gone falls back to the
// default voice.
func TestVoicesReload(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	voices := []string{"alice", "bob"}
	h.eng.fake.VoicesFunc = func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(voices) }
	h.eng.fake.ReloadFunc = func() (VoiceChanges, error) {
		mu.Lock()
		defer mu.Unlock()
		voices = []string{"alice", "carol"}
		return VoiceChanges{Added: []string{"carol"}, Removed: []string{"bob"}}, nil
	}
	h.start()
	waitFor(t, "discovery at start", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	h.send("voice/set", "bob")
	waitFor(t, "voice/set bob", func() bool { return h.d.Snapshot().Voice == "bob" })

	h.send("voices/reload", "")
	e := h.waitCommand(cmdReload, EventDone)
	if e.Voices == nil || !slices.Equal(e.Voices.Added, []string{"carol"}) || !slices.Equal(e.Voices.Removed, []string{"bob"}) {
		t.Errorf("done event %+v", e)
	}
	waitFor(t, "new discovery", func() bool { return len(h.tr.on(discoveryTopic)) == 2 })
	msgs := h.tr.on(discoveryTopic)
	var doc haDiscovery
	if err := json.Unmarshal(msgs[len(msgs)-1].payload, &doc); err != nil {
		t.Fatal(err)
	}
	if got := doc.Components["voice"].Options; !slices.Equal(got, []string{"alice", "carol"}) {
		t.Errorf("voice options %v after the reload", got)
	}
	if s := h.d.Snapshot(); !slices.Equal(s.Voices, []string{"alice", "carol"}) || s.Voice != "alice" {
		t.Errorf("state voices %v, voice %q: want the new list and the default voice alice", s.Voices, s.Voice)
	}
	h.send("say", `{"id":"c","text":"x","voice":"carol"}`)
	h.waitEvent("c", EventFinished)
	h.send("say", `{"id":"b","text":"x","voice":"bob"}`)
	if e := h.waitEvent("b", EventFailed); e.Reason != ReasonUnknownVoice {
		t.Errorf("say in a removed voice: %+v", e)
	}
}

// lastVoiceSelect returns the voice select of the last discovery payload:
// nil when it is a removal stub (or absent).
func (h *harness) lastVoiceSelect() *haComponent {
	h.t.Helper()
	msgs := h.tr.on(discoveryTopic)
	if len(msgs) == 0 {
		h.t.Fatal("no discovery published")
	}
	var doc haDiscovery
	if err := json.Unmarshal(msgs[len(msgs)-1].payload, &doc); err != nil {
		h.t.Fatal(err)
	}
	if c, ok := doc.Components["voice"]; ok && c.CommandTopic != "" {
		return &c
	}
	return nil
}

// TestVoiceAlwaysAnOption: Home Assistant's select refuses a state that
// is not one of its options (it logs "Invalid option" and keeps showing
// the old one), so the state's voice is always one the last discovery
// offers. The voice chosen with voice/set gone, the daemon falls back to
// the configured default voice; that one gone too, to the first voice
// left; none left, the select is removed and the state's voice is "";
// voices back, the default voice again.
func TestVoiceAlwaysAnOption(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	voices := []string{"alice", "bob", "carol"}
	setVoices := func(v ...string) { mu.Lock(); defer mu.Unlock(); voices = v }
	h.eng.fake.VoicesFunc = func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(voices) }
	h.start()
	waitFor(t, "discovery at start", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	h.send("voice/set", "bob")
	waitFor(t, "voice/set bob", func() bool { return h.lastState().Voice == "bob" })

	reload := func(want string, v ...string) {
		t.Helper()
		before := len(h.tr.on(discoveryTopic))
		setVoices(v...)
		h.d.ReloadVoices() // what mynahd's watch of voices.dir calls
		waitFor(t, "discovery after the reload", func() bool { return len(h.tr.on(discoveryTopic)) > before })
		waitFor(t, "state voice "+want, func() bool { return h.lastState().Voice == want })
		sel := h.lastVoiceSelect()
		switch {
		case want == "" && sel != nil:
			t.Errorf("no voice left, but the select offers %v", sel.Options)
		case want != "" && (sel == nil || !slices.Contains(sel.Options, want)):
			t.Errorf("state voice %q is not one of the select's options (%v)", want, sel)
		}
		if s := h.d.Snapshot(); s.Voice != want || !slices.Equal(s.Voices, v) {
			t.Errorf("snapshot voice %q voices %v, want %q %v", s.Voice, s.Voices, want, v)
		}
	}
	// bob's directory renamed: the default voice.
	reload("alice", "alice", "bobby", "carol")
	h.send("say", `{"id":"a","text":"x"}`)
	if h.waitEvent("a", EventFinished); h.eng.last().Voice != "alice" {
		t.Errorf("spoken in %q, want alice", h.eng.last().Voice)
	}
	// The default voice's directory renamed too: the first voice left.
	reload("bobby", "bobby", "carol")
	h.send("say", `{"id":"b","text":"x"}`)
	if h.waitEvent("b", EventFinished); h.eng.last().Voice != "bobby" {
		t.Errorf("spoken in %q, want bobby", h.eng.last().Voice)
	}
	// Nothing left: no select, no voice.
	reload("", []string{}...)
	// Voices back: the default voice, as at the start.
	reload("alice", "alice", "carol")
}

// TestVoiceGoneBeforeReload: a discovery publish (Home Assistant back
// online) can be the first to see the voice list change; the state that
// follows it holds a voice of the new list all the same.
func TestVoiceGoneBeforeReload(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	voices := []string{"alice", "bob"}
	h.eng.fake.VoicesFunc = func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(voices) }
	h.start()
	waitFor(t, "discovery at start", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	h.send("voice/set", "bob")
	waitFor(t, "voice/set bob", func() bool { return h.lastState().Voice == "bob" })
	mu.Lock()
	voices = []string{"alice"}
	mu.Unlock()
	h.sendMsg(Message{Topic: "homeassistant/status", Payload: []byte("online")})
	waitFor(t, "discovery after HA online", func() bool { return len(h.tr.on(discoveryTopic)) == 2 })
	waitFor(t, "state voice alice", func() bool { return h.lastState().Voice == "alice" })
	if sel := h.lastVoiceSelect(); sel == nil || !slices.Equal(sel.Options, []string{"alice"}) {
		t.Errorf("select %+v, want options [alice]", sel)
	}
	// A later reload finds the same list: the state keeps alice.
	h.d.ReloadVoices()
	h.send("say", `{"id":"a","text":"x"}`)
	if h.waitEvent("a", EventFinished); h.eng.last().Voice != "alice" {
		t.Errorf("spoken in %q, want alice", h.eng.last().Voice)
	}
}
