package daemon

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"testing"
	"time"
)

// renderJinja renders Home Assistant value templates the way its MQTT
// integration does: Jinja2's sandbox (Home Assistant's template engine is
// built on it), value and value_json bound to the payload, and to_json as
// Home Assistant defines it (JSON without ASCII escaping). python3-jinja2
// comes from scripts/setup.sh.
func renderJinja(t *testing.T, cases [][2]string) []string {
	t.Helper()
	const script = `
import json, sys
from jinja2.sandbox import ImmutableSandboxedEnvironment
env = ImmutableSandboxedEnvironment()
env.filters["to_json"] = lambda v: json.dumps(v, ensure_ascii=False)
out = []
for template, payload in json.load(sys.stdin):
    try:
        value_json = json.loads(payload)
    except ValueError:
        value_json = None
    out.append(env.from_string(template).render(value=payload, value_json=value_json))
json.dump(out, sys.stdout)
`
	in, err := json.Marshal(cases)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("python3", "-c", script)
	cmd.Stdin = bytes.NewReader(in)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python3 with jinja2 (scripts/setup.sh installs python3-jinja2): %v\n%s", err, stderr.Bytes())
	}
	var rendered []string
	if err := json.Unmarshal(out, &rendered); err != nil {
		t.Fatalf("renderer output %q: %v", out, err)
	}
	return rendered
}

// TestDiscoveryTemplatesRender renders the event entities' and the
// sensors' templates on the JSON the daemon publishes: the Request
// entity fires for say requests only, the Command entity for the
// control commands only.
func TestDiscoveryTemplatesRender(t *testing.T) {
	event := func(e Event) string {
		e.Time = time.Date(2026, 12, 1, 7, 0, 0, 0, time.UTC)
		b, _ := json.Marshal(e)
		return string(b)
	}
	state := func(le *LastError) string {
		b, _ := json.Marshal(State{State: "idle", LastError: le})
		return string(b)
	}
	audioState := func(a *AudioStatus) string {
		b, _ := json.Marshal(State{State: "idle", Audio: a})
		return string(b)
	}
	two := 2
	fin := event(Event{ID: "k1", State: EventFinished, LatencyMS: millis(80 * time.Millisecond), Cache: CacheHit})
	failed := event(Event{ID: "k2", State: EventFailed, Reason: ReasonInvalidJSON, Error: `"Küche" {not json`})
	resent := event(Event{ID: "k3", State: EventDropped, Reason: ReasonExpired, Redelivered: true})
	queued := event(Event{ID: "k4", State: EventQueued})
	warning := event(Event{State: EventWarning, Reason: "cache_corrupt"})
	purgeFailed := event(Event{State: EventFailed, Command: "cache/purge", Reason: ReasonNotSupported, Error: "the phrase cache is off"})
	enrollFailed := event(Event{ID: "e1", State: EventFailed, Command: cmdEnroll, Owner: "ann", Reason: ReasonBadAudio, Error: "not a WAV"})
	enrolled := event(Event{ID: "e2", State: EventDone, Command: cmdEnroll, Owner: "ann", Speaker: "dad"})
	purged := event(Event{State: EventDone, Command: "cache/purge", Scope: "phrases", Removed: &two})
	installed := event(Event{ID: "i1", State: EventDone, Command: cmdInstall, Voice: "en_US-lessac-medium"})
	le := &LastError{State: EventFailed, Reason: ReasonAudio, Error: "device gone", ID: "k5", Time: time.Unix(0, 0).UTC()}

	got := renderJinja(t, [][2]string{
		{requestEventTemplate, fin}, {requestEventTemplate, failed}, {requestEventTemplate, resent}, {requestEventTemplate, queued},
		{requestEventTemplate, warning},
		{lastErrorTemplate, state(nil)}, {lastErrorTemplate, state(le)},
		{lastErrorAttrsTemplate, state(nil)}, {lastErrorAttrsTemplate, state(le)},
		{audioProblemTemplate, audioState(nil)}, {audioProblemTemplate, audioState(&AudioStatus{Available: true})},
		{audioProblemTemplate, audioState(&AudioStatus{Error: "no such device"})},
		// The commands' events: not the Request entity's, the Command's.
		{requestEventTemplate, purgeFailed}, {requestEventTemplate, enrollFailed}, {requestEventTemplate, enrolled},
		{commandEventTemplate, purgeFailed}, {commandEventTemplate, enrollFailed}, {commandEventTemplate, enrolled},
		{commandEventTemplate, purged}, {commandEventTemplate, fin}, {commandEventTemplate, failed}, {commandEventTemplate, warning},
		{commandEventTemplate, installed},
	})
	renders := func(what string, got string, want map[string]any, types []string) {
		t.Helper()
		var obj map[string]any
		if err := json.Unmarshal([]byte(got), &obj); err != nil {
			t.Errorf("%s renders %q: not a JSON object (%v)", what, got, err)
			return
		}
		if len(obj) != len(want) {
			t.Errorf("%s renders %v, want %v", what, obj, want)
			return
		}
		for k, v := range want {
			if obj[k] != v {
				t.Errorf("%s: %s = %v, want %v", what, k, obj[k], v)
			}
		}
		if et, ok := obj["event_type"].(string); ok && !slices.Contains(types, et) {
			t.Errorf("%s renders event_type %q, which the entity's event_types %v lack", what, et, types)
		}
	}

	// Home Assistant's event entity: a JSON object with event_type among
	// event_types triggers; "{}" is ignored.
	wantEvents := []map[string]any{
		{"event_type": "finished", "id": "k1", "reason": "", "error": "", "redelivered": false},
		{"event_type": "failed", "id": "k2", "reason": "invalid_json", "error": `"Küche" {not json`, "redelivered": false},
		{"event_type": "dropped", "id": "k3", "reason": "expired", "error": "", "redelivered": true},
		{}, {},
	}
	for i, want := range wantEvents {
		renders(fmt.Sprintf("request event %d", i), got[i], want, haRequestEventTypes)
	}
	// Home Assistant's Request entity fired failed with id "" for a
	// failed cache/purge: a command is not a say request.
	for i, what := range []string{"failed cache/purge", "failed speaker/enroll", "done speaker/enroll"} {
		renders("request entity, "+what, got[12+i], map[string]any{}, haRequestEventTypes)
	}
	commandEvents := []map[string]any{
		{"event_type": "failed", "command": "cache/purge", "id": "", "owner": "", "speaker": "", "voice": "", "reason": "not_supported",
			"error": "the phrase cache is off", "scope": "", "removed": nil, "redelivered": false},
		{"event_type": "failed", "command": "speaker/enroll", "id": "e1", "owner": "ann", "speaker": "", "voice": "", "reason": "bad_audio",
			"error": "not a WAV", "scope": "", "removed": nil, "redelivered": false},
		{"event_type": "done", "command": "speaker/enroll", "id": "e2", "owner": "ann", "speaker": "dad", "voice": "", "reason": "",
			"error": "", "scope": "", "removed": nil, "redelivered": false},
		{"event_type": "done", "command": "cache/purge", "id": "", "owner": "", "speaker": "", "voice": "", "reason": "",
			"error": "", "scope": "phrases", "removed": 2.0, "redelivered": false},
		{}, {}, {},
		{"event_type": "done", "command": "voice/install", "id": "i1", "owner": "", "speaker": "", "voice": "en_US-lessac-medium", "reason": "",
			"error": "", "scope": "", "removed": nil, "redelivered": false},
	}
	for i, want := range commandEvents {
		renders(fmt.Sprintf("command event %d", i), got[15+i], want, haCommandEventTypes)
	}
	if got[5] != "none" || got[6] != ReasonAudio {
		t.Errorf("last error sensor renders %q and %q, want none and %s", got[5], got[6], ReasonAudio)
	}
	if got[9] != "OFF" || got[10] != "OFF" || got[11] != "ON" {
		t.Errorf("audio problem sensor renders %q %q %q, want OFF OFF ON", got[9], got[10], got[11])
	}
	var attrs map[string]any
	if got[7] != "{}" || json.Unmarshal([]byte(got[8]), &attrs) != nil || attrs["error"] != "device gone" || attrs["id"] != "k5" {
		t.Errorf("last error attributes render %q and %q", got[7], got[8])
	}
}

// TestEventEntitiesSplitSaysAndCommands renders the event entities of the
// discovery the daemon publishes on every event it publishes for say
// requests and for control commands that fail or succeed: each fires only
// for its own kind, with an event_type among its event_types, and the
// Request entity never with an empty id.
func TestEventEntitiesSplitSaysAndCommands(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("say", `{"id":"ok","text":"x"}`)
	h.waitEvent("ok", EventFinished)
	h.send("say", `{"id":"bad","text":"x","rate":9}`)
	h.waitEvent("bad", EventFailed)
	h.send("say", `{"id":"nv","text":"x","voice":"zed"}`)
	h.waitEvent("nv", EventFailed)
	commands := []struct{ topic, payload string }{
		{"cache/purge", "phrases"},              // no cache: not_supported
		{"speaker/enroll", `{"id":"e1"}`},       // no cloning voice
		{"u/ann/speaker/forget", "dad"},         // no cloning voice
		{"voice/set", "zed"},                    // unknown voice
		{"volume/set", "-1"},                    // out of range
		{"u/a+b/speaker/enroll", `{"id":"e2"}`}, // bad owner
		{"voices/reload", ""},                   // done
	}
	for _, c := range commands {
		h.send(c.topic, c.payload)
	}
	waitFor(t, "the commands' events", func() bool {
		n := 0
		for _, e := range h.events() {
			if e.Command != "" {
				n++
			}
		}
		return n == len(commands)
	})
	msgs := h.tr.on(discoveryTopic)
	var doc haDiscovery
	if err := json.Unmarshal(msgs[len(msgs)-1].payload, &doc); err != nil {
		t.Fatal(err)
	}
	var entities []haComponent
	for _, key := range []string{"request", "command"} {
		if c, ok := doc.Components[key]; ok && c.Platform == "event" {
			entities = append(entities, c)
		} else {
			t.Errorf("no %s event entity", key)
		}
	}
	var cases [][2]string
	var published []Event
	for _, m := range h.tr.on("mynah/test/event") {
		var e Event
		json.Unmarshal(m.payload, &e)
		published = append(published, e)
		for _, entity := range entities {
			cases = append(cases, [2]string{entity.ValueTemplate, string(m.payload)})
		}
	}
	got := renderJinja(t, cases)
	fired := map[string][]string{}
	for i, e := range published {
		for j, entity := range entities {
			var obj map[string]any
			if err := json.Unmarshal([]byte(got[len(entities)*i+j]), &obj); err != nil {
				t.Fatalf("%s renders %q on %+v", entity.Name, got[len(entities)*i+j], e)
			}
			if len(obj) == 0 {
				continue
			}
			et, _ := obj["event_type"].(string)
			if !slices.Contains(entity.EventTypes, et) {
				t.Errorf("%s renders event_type %q on %+v: not among %v", entity.Name, et, e, entity.EventTypes)
			}
			if entity.Name == "Request" && (obj["id"] == "" || e.Command != "") {
				t.Errorf("the Request entity fires on %+v", e)
			}
			if entity.Name == "Command" && obj["command"] != e.Command {
				t.Errorf("the Command entity fires %v on %+v", obj, e)
			}
			fired[entity.Name] = append(fired[entity.Name], et+" "+e.ID+e.Command)
		}
	}
	wantRequest := []string{"finished ok", "failed bad", "failed nv"}
	wantCommand := []string{"failed cache/purge", "failed e1speaker/enroll", "failed speaker/forget", "failed voice/set",
		"failed volume/set", "failed e2speaker/enroll", "done voices/reload"}
	if !slices.Equal(fired["Request"], wantRequest) || !slices.Equal(fired["Command"], wantCommand) {
		t.Errorf("Request fired %q, want %q\nCommand fired %q, want %q", fired["Request"], wantRequest, fired["Command"], wantCommand)
	}
}
