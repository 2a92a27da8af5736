package main

// Render nodes end to end: mynahd processes in render.mode serve answer
// the phrase-cache misses of mynahd processes in render.mode remote
// through a real Mosquitto ($share/mynah-render/mynah/render/req).

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/demo"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/daemon/render"
)

// TestRenderNodesServeRemotes: two serve and five remote nodes, 200
// distinct sentences rendered (and 10 more once both are gone). Every remote speaks every sentence without
// synthesizing it (each finished event counts them rendered), and the
// fleet synthesizes each sentence once: the remotes send it to its owner
// among the live render nodes. One serve node SIGKILLed mid-run: the
// other answers the retries and nothing is lost or doubled. Both gone:
// the remotes synthesize for themselves. The render nodes' phrase caches
// afterwards tell how often the fleet synthesized each sentence.
func TestRenderNodesServeRemotes(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	voices := fleetVoices(t)
	// The render nodes have a voice the remotes lack.
	serveVoices := fleetVoices(t)
	if err := os.Mkdir(filepath.Join(serveVoices, onlyThere), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Write(filepath.Join(serveVoices, onlyThere), nil); err != nil {
		t.Fatal(err)
	}
	f := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}, device: "wav"}
	serves := mqtttest.Subscribe(t, broker.URL(), render.NodePrefix+"+/"+render.NodeVoices)
	serveDirs := map[string]string{}
	for _, node := range []string{"s0", "s1"} {
		serveDirs[node] = f.start(t, bin, broker.URL(), node, serveVoices, "render:\n  mode: serve\n")
	}
	for range serveDirs {
		if m := <-serves; !strings.Contains(string(m.Payload), demo.Name) || !strings.Contains(string(m.Payload), onlyThere) {
			t.Fatalf("%s: catalog %s lacks the demo voice or %s", m.Topic, m.Payload, onlyThere)
		}
	}
	var remotes []string
	for i := range 5 {
		node := fmt.Sprintf("r%d", i)
		remotes = append(remotes, node)
		// 500 ms here; a render node under emulation takes longer to answer.
		timeout := max(500*time.Millisecond, wait/60).Round(time.Millisecond)
		f.start(t, bin, broker.URL(), node, voices, "render:\n  mode: remote\n  timeout: "+timeout.String()+"\n")
	}
	// Each remote offers the render nodes' voice it has no files of.
	for _, node := range remotes {
		waitStateVoice(t, broker.URL(), node, onlyThere)
	}
	// Request n of a phase is ten distinct sentences (numbers the front
	// end reads as words).
	const perSay = 10
	text := func(n int) string {
		var b strings.Builder
		for i := range perSay {
			fmt.Fprintf(&b, "Announcement %d is here. ", n*perSay+i+1)
		}
		return strings.TrimSpace(b.String())
	}
	// send has every remote say requests from..to-1, in that order, and
	// returns their ids by node; answered waits for their finished events.
	send := func(phase string, from, to int) map[string][]string {
		ids := map[string][]string{}
		for n := from; n < to; n++ {
			for _, node := range remotes {
				id := fmt.Sprintf("%s-%s-%d", phase, node, n)
				ids[node] = append(ids[node], id)
				mqtttest.Publish(t, broker.URL(), "mynah/"+node+"/say", fmt.Appendf(nil, `{"id":%q,"text":%q}`, id, text(n)), false)
			}
		}
		return ids
	}
	answered := func(ids map[string][]string) map[string][]daemon.Event {
		t.Helper()
		out := map[string][]daemon.Event{}
		for _, node := range remotes {
			l := f.events[node]
			l.waitAnswered(t, ids[node], 2*wait)
			l.checkExactlyOnce(t, ids[node])
			for _, e := range l.snapshot() {
				if slices.Contains(ids[node], e.ID) && terminal(e) {
					if e.State != daemon.EventFinished {
						t.Errorf("%s: %s %s (%s)", e.ID, e.State, e.Reason, e.Error)
					}
					out[node] = append(out[node], e)
				}
			}
		}
		return out
	}
	rendered := func(e daemon.Event) bool { return e.Rendered != nil && *e.Rendered == perSay }
	here := func(e daemon.Event) bool { return e.Rendered == nil && e.Cache == daemon.CacheMiss }
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

	// 140 sentences with both render nodes up.
	expect(answered(send("a", 0, 14)), "rendered by a serve node", rendered)
	// And in the voice only they have.
	sayVoice := func(phase, text string) map[string][]string {
		ids := map[string][]string{}
		for _, node := range remotes {
			id := phase + "-" + node
			ids[node] = []string{id}
			mqtttest.Publish(t, broker.URL(), "mynah/"+node+"/say", fmt.Appendf(nil, `{"id":%q,"voice":%q,"text":%q}`, id, onlyThere, text), false)
		}
		return ids
	}
	twoRendered := func(e daemon.Event) bool { return e.Rendered != nil && *e.Rendered == 2 }
	expect(answered(sayVoice("v", "The post has come. It is on the table.")), "rendered in the voice only the render nodes have", twoRendered)

	// 60 more; s0 SIGKILLed once the remotes are speaking them: its will
	// takes it out of the remotes' rankings, the requests it had are
	// retried on s1, nothing is lost or doubled.
	ids := send("b", 14, 20)
	f.waitStartedAll(t, remotes, ids, 1)
	f.runs["s0"].cmd.Process.Signal(syscall.SIGKILL)
	f.runs["s0"].cmd.Wait()
	expect(answered(ids), "rendered by s1", rendered)

	// Both gone: each remote synthesizes for itself after the retry.
	f.runs["s1"].cmd.Process.Signal(syscall.SIGKILL)
	f.runs["s1"].cmd.Wait()
	expect(answered(send("c", 20, 21)), "synthesized here", here)
	// The render nodes' voice cannot be synthesized here: it fails with
	// reason render (still offered: their catalogs stay retained).
	gone := sayVoice("w", "Nobody can say this here.")
	for _, node := range remotes {
		l := f.events[node]
		l.waitAnswered(t, gone[node], 2*wait)
		l.checkExactlyOnce(t, gone[node])
		for _, e := range l.snapshot() {
			if e.ID == gone[node][0] && terminal(e) && (e.State != daemon.EventFailed || e.Reason != "render") {
				t.Errorf("%s: %s %s (%s), want failed render", e.ID, e.State, e.Reason, e.Error)
			}
		}
	}

	// How often the fleet synthesized the 200 sentences the render nodes
	// made: their phrase caches, read once they are gone. Only a sentence
	// s0 was rendering when it was killed can have been made twice.
	syntheses := map[string]int{}
	total := 0
	for node, dir := range serveDirs {
		s, err := cache.Open(filepath.Join(dir, "cache.db"), &cache.Options{ReadOnly: true})
		if err != nil {
			t.Fatalf("%s's cache: %v", node, err)
		}
		syntheses[node] = s.Stats().Entries
		total += syntheses[node]
		s.Close()
	}
	const distinct = 200 + 2 // and the two sentences of the render nodes' own voice
	t.Logf("%d distinct sentences for %d remotes (%d plays): %d syntheses on the render nodes %v (once each would be %d)",
		distinct, len(remotes), distinct*len(remotes), total, syntheses, distinct)
	if total < distinct || total > distinct+len(remotes) {
		t.Errorf("%d syntheses on the render nodes for %d sentences: want %d, and at most %d more for the sentences s0 had in hand when it was killed",
			total, distinct, distinct, len(remotes))
	}
}

// onlyThere is a voice only the render nodes of TestRenderNodesServeRemotes
// have.
const onlyThere = "hall-voice"

// waitStateVoice waits until node's retained state offers voice.
func waitStateVoice(t testing.TB, broker, node, voice string) {
	t.Helper()
	states := mqtttest.Subscribe(t, broker, "mynah/"+node+"/state")
	for deadline := time.After(wait); ; {
		select {
		case m := <-states:
			var st daemon.State
			if json.Unmarshal(m.Payload, &st) == nil && slices.Contains(st.Voices, voice) {
				return
			}
		case <-deadline:
			t.Fatalf("%s never offered the voice %s", node, voice)
		}
	}
}

// waitStartedAll waits until each node has a started event for its first
// n ids.
func (f *fleet) waitStartedAll(t testing.TB, nodes []string, ids map[string][]string, n int) {
	t.Helper()
	for _, node := range nodes {
		for _, id := range ids[node][:n] {
			for deadline := time.Now().Add(wait); ; time.Sleep(time.Millisecond) {
				if slices.ContainsFunc(f.events[node].snapshot(), func(e daemon.Event) bool { return e.ID == id && e.State == daemon.EventStarted }) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%s: no started event for %s within %v", node, id, wait)
				}
			}
		}
	}
}
