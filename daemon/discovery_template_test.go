package daemon

import (
	"bytes"
	"encoding/json"
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

// TestDiscoveryTemplatesRender renders the event entity's and the last
// error sensor's templates on the JSON the daemon really publishes.
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
	fin := event(Event{ID: "k1", State: EventFinished, LatencyMS: millis(80 * time.Millisecond), Cache: CacheHit})
	failed := event(Event{ID: "k2", State: EventFailed, Reason: ReasonInvalidJSON, Error: `"Küche" {not json`})
	resent := event(Event{ID: "k3", State: EventDropped, Reason: ReasonExpired, Redelivered: true})
	queued := event(Event{ID: "k4", State: EventQueued})
	warning := event(Event{State: EventWarning, Reason: "cache_corrupt"})
	le := &LastError{State: EventFailed, Reason: ReasonAudio, Error: "device gone", ID: "k5", Time: time.Unix(0, 0).UTC()}

	got := renderJinja(t, [][2]string{
		{eventTemplate, fin}, {eventTemplate, failed}, {eventTemplate, resent}, {eventTemplate, queued}, {eventTemplate, warning},
		{lastErrorTemplate, state(nil)}, {lastErrorTemplate, state(le)},
		{lastErrorAttrsTemplate, state(nil)}, {lastErrorAttrsTemplate, state(le)},
		{audioProblemTemplate, audioState(nil)}, {audioProblemTemplate, audioState(&AudioStatus{Available: true})},
		{audioProblemTemplate, audioState(&AudioStatus{Error: "no such device"})},
	})

	// Home Assistant's event entity: a JSON object with event_type among
	// event_types triggers; "{}" is ignored.
	wantEvents := []map[string]any{
		{"event_type": "finished", "id": "k1", "reason": "", "error": "", "redelivered": false},
		{"event_type": "failed", "id": "k2", "reason": "invalid_json", "error": `"Küche" {not json`, "redelivered": false},
		{"event_type": "dropped", "id": "k3", "reason": "expired", "error": "", "redelivered": true},
		{}, {},
	}
	for i, want := range wantEvents {
		var obj map[string]any
		if err := json.Unmarshal([]byte(got[i]), &obj); err != nil {
			t.Errorf("event %d renders %q: not a JSON object (%v)", i, got[i], err)
			continue
		}
		if len(obj) != len(want) {
			t.Errorf("event %d renders %v, want %v", i, obj, want)
		}
		for k, v := range want {
			if obj[k] != v {
				t.Errorf("event %d: %s = %v, want %v", i, k, obj[k], v)
			}
		}
		if et, ok := obj["event_type"].(string); ok && !slices.Contains(haEventTypes, et) {
			t.Errorf("event %d renders event_type %q, which the entity's event_types lack", i, et)
		}
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
