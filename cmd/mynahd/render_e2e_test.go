package main

// Render nodes end to end: mynahd processes in render.mode serve answer
// the phrase-cache misses of mynahd processes in render.mode remote
// through a real Mosquitto ($share/mynah-render/mynah/render/req).

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

var numberWords = []string{"one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
	"eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen", "twenty"}

// TestRenderNodesServeRemotes: two serve and three remote nodes. Every
// remote speaks every sentence without synthesizing it (each finished
// event says rendered); one serve node SIGKILLed, the other answers the
// retries and nothing is lost or doubled; both gone, the remotes
// synthesize for themselves. The render nodes' phrase caches afterwards
// tell how often the fleet synthesized each distinct sentence.
func TestRenderNodesServeRemotes(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	voices := fleetVoices(t)
	f := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}}
	serveDirs := map[string]string{}
	for _, node := range []string{"s0", "s1"} {
		serveDirs[node] = f.start(t, bin, broker.URL(), node, voices, "render:\n  mode: serve\n")
	}
	remotes := []string{"r0", "r1", "r2"}
	for _, node := range remotes {
		f.start(t, bin, broker.URL(), node, voices, "render:\n  mode: remote\n  timeout: 500ms\n")
	}
	sentence := func(n int) string { return fmt.Sprintf("Item number %s.", numberWords[n]) }
	// say has every remote speak sentences from..to-1, one request each,
	// and waits for their answers; it returns the finished events.
	say := func(phase string, from, to int) map[string][]daemon.Event {
		t.Helper()
		ids := map[string][]string{}
		for _, node := range remotes {
			for n := from; n < to; n++ {
				id := fmt.Sprintf("%s-%s-%d", phase, node, n)
				ids[node] = append(ids[node], id)
				mqtttest.Publish(t, broker.URL(), "mynah/"+node+"/say", fmt.Appendf(nil, `{"id":%q,"text":%q}`, id, sentence(n)), false)
			}
		}
		out := map[string][]daemon.Event{}
		for _, node := range remotes {
			l := f.events[node]
			l.waitAnswered(t, ids[node], wait)
			l.checkExactlyOnce(t, ids[node])
			for _, e := range l.snapshot() {
				for _, id := range ids[node] {
					if e.ID == id && terminal(e) {
						if e.State != daemon.EventFinished {
							t.Errorf("%s: %s %s (%s)", id, e.State, e.Reason, e.Error)
						}
						out[node] = append(out[node], e)
					}
				}
			}
		}
		return out
	}
	rendered := func(e daemon.Event) bool { return e.Rendered != nil && *e.Rendered == 1 }

	// expect checks every finished event of a phase.
	expect := func(evs map[string][]daemon.Event, what string, ok func(daemon.Event) bool) {
		t.Helper()
		for node, es := range evs {
			for _, e := range es {
				if !ok(e) {
					t.Errorf("%s %s: finished %+v, want it %s", node, e.ID, e, what)
				}
			}
		}
	}
	here := func(e daemon.Event) bool { return e.Rendered == nil && e.Cache == daemon.CacheMiss }

	expect(say("a", 0, 12), "rendered by a serve node", rendered)

	// One render node gone: its share of the requests is retried on the
	// other (a clean session leaves the share group at once).
	f.runs["s0"].cmd.Process.Signal(syscall.SIGKILL)
	f.runs["s0"].cmd.Wait()
	expect(say("b", 12, 18), "rendered by s1", rendered)

	// Both gone: each remote synthesizes for itself after the retry.
	f.runs["s1"].cmd.Process.Signal(syscall.SIGKILL)
	f.runs["s1"].cmd.Wait()
	expect(say("c", 18, 20), "synthesized here", here)

	// How often the fleet synthesized each of the 18 sentences the render
	// nodes made: their phrase caches, read once they are gone.
	syntheses := 0
	for node, dir := range serveDirs {
		s, err := cache.Open(filepath.Join(dir, "cache.db"), &cache.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s's cache: %v", node, err)
		}
		syntheses += s.Stats().Entries
		s.Close()
	}
	t.Logf("18 distinct sentences rendered for %d remotes: %d syntheses on the 2 render nodes (once each would be 18)", len(remotes), syntheses)
	if syntheses < 18 || syntheses > 2*18 {
		t.Errorf("%d syntheses on the render nodes for 18 sentences: want 18..36 (each node at most once per sentence)", syntheses)
	}
}
