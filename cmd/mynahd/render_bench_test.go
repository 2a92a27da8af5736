package main

// Benchmarks of rendering once for the fleet (issue 25): how soon a
// remote node speaks a sentence a render node makes or has, beside a
// node that synthesizes for itself; and how many syntheses a fleet spends
// on each distinct sentence of its group announcements.

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/daemon/render"
)

// BenchmarkRemoteFirstAudio: one serve node (s0), one remote node (r0)
// and one local node (l0) against Mosquitto, the demo voice, audio to a
// WAV file (it takes the first PCM at once, as the paced null device
// does, and does not make each request wait out its playback). Each
// request is one sentence no node has spoken before, and the next is
// sent once it has finished. p50-ms and p99-ms are the finished events'
// first_audio_ms (received → first PCM at the sink): render_hit, r0 asks
// s0 for a sentence s0 has in its phrase cache (s0 spoke it before the
// timer); render_miss, r0 asks s0 for one s0 must synthesize; local, l0
// synthesizes it. fallback-% is the share of r0's requests it
// synthesized itself because s0 did not answer in time (ideally 0), and
// serve-hit-% the share s0 answered from its phrase cache (100 and 0 by
// design: it says that each case went the way it is named). One op is a
// batch of 8 requests; at the default benchtime that is 16 to 24 samples,
// so p99 is close to the slowest.
func BenchmarkRemoteFirstAudio(b *testing.B) {
	bin := buildMynahd(b)
	broker := mqtttest.StartMosquitto(b)
	voices := fleetVoices(b)
	f := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}, device: "wav"}
	catalog := mqtttest.Subscribe(b, broker.URL(), render.NodePrefix+"s0/"+render.NodeVoices)
	f.start(b, bin, broker.URL(), "s0", voices, "render:\n  mode: serve\n")
	select {
	case <-catalog:
	case <-time.After(wait):
		b.Fatalf("s0 published no voice catalog within %v", wait)
	}
	f.start(b, bin, broker.URL(), "r0", voices, "render:\n  mode: remote\n")
	f.start(b, bin, broker.URL(), "l0", voices, "")

	made, sent := 0, 0
	sentence := func() string { made++; return fmt.Sprintf("Parcel %d is at the door.", made) }
	say := func(node, text string) (id string) {
		sent++
		id = fmt.Sprintf("fa-%s-%d", node, sent)
		mqtttest.Publish(b, broker.URL(), "mynah/"+node+"/say", fmt.Appendf(nil, `{"id":%q,"text":%q}`, id, text), false)
		return id
	}
	// Outside the timers: every node's first synthesis, and r0 knowing s0
	// (its retained catalog read): r0's first requests may be made here.
	for _, node := range []string{"s0", "l0"} {
		benchFinished(b, f.events[node], say(node, sentence()))
	}
	for try := 0; ; try++ {
		if e := benchFinished(b, f.events["r0"], say("r0", sentence())); rendered(e) {
			break
		}
		if try == 10 {
			b.Fatal("r0 synthesized 10 sentences itself: s0 never answered")
		}
		time.Sleep(200 * time.Millisecond)
	}

	const batch = 8
	for _, c := range []struct {
		name, node string
		prime      bool // s0 speaks the batch first
	}{
		{"render_hit", "r0", true},
		{"render_miss", "r0", false},
		{"local", "l0", false},
	} {
		b.Run(c.name, func(b *testing.B) {
			hits := freshState(b, broker.URL(), "s0").Cache.Hits
			var firstAudio []float64
			fallbacks := 0
			for b.Loop() {
				texts := make([]string, batch)
				for i := range texts {
					texts[i] = sentence()
				}
				if c.prime {
					b.StopTimer()
					var ids []string
					for _, text := range texts {
						ids = append(ids, say("s0", text))
					}
					for _, id := range ids {
						benchFinished(b, f.events["s0"], id)
					}
					b.StartTimer()
				}
				// One at a time: each request alone on its node.
				for _, text := range texts {
					e := benchFinished(b, f.events[c.node], say(c.node, text))
					firstAudio = append(firstAudio, *e.FirstAudioMS)
					if c.node == "r0" && !rendered(e) {
						fallbacks++
					}
				}
			}
			slices.Sort(firstAudio)
			b.ReportMetric(percentile(firstAudio, 0.5), "p50-ms")
			b.ReportMetric(percentile(firstAudio, 0.99), "p99-ms")
			if c.node == "r0" {
				b.ReportMetric(100*float64(fallbacks)/float64(len(firstAudio)), "fallback-%")
				hits = freshState(b, broker.URL(), "s0").Cache.Hits - hits
				b.ReportMetric(100*float64(hits)/float64(len(firstAudio)), "serve-hit-%")
			}
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkFleetSynthesesPerSentence: four members of one group against
// Mosquitto, the demo voice, audio to WAV files. One op is 5 distinct
// sentences announced once each, cold (no member has them), then again,
// warm; cold- and warm-syntheses/sentence are how many times the fleet
// synthesized each (ideally 1 and 0). group: four local members (the
// member whose play_at proposal the group took synthesizes, the others
// ask it), counted from their finished events. render: one serve node and
// three remote nodes, all members (the remotes ask the serve node); the
// remotes' syntheses from their finished events, the serve node's as the
// entries its phrase cache gained (its own events cannot tell a sentence
// it made from one it shared with a render request in flight).
func BenchmarkFleetSynthesesPerSentence(b *testing.B) {
	bin := buildMynahd(b)
	broker := mqtttest.StartMosquitto(b)
	b.Run("group", func(b *testing.B) {
		members := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}, device: "wav"}
		voices := fleetVoices(b)
		for i := range 4 {
			members.start(b, bin, broker.URL(), fmt.Sprintf("gm%d", i), voices, "groups: [local]\n")
		}
		benchFleetSyntheses(b, broker.URL(), "local", members, nil)
	})
	b.Run("render", func(b *testing.B) {
		serve := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}, device: "wav"}
		remotes := &fleet{events: map[string]*eventLog{}, runs: map[string]*killRun{}, device: "wav"}
		voices := fleetVoices(b)
		catalog := mqtttest.Subscribe(b, broker.URL(), render.NodePrefix+"rs0/"+render.NodeVoices)
		serve.start(b, bin, broker.URL(), "rs0", voices, "groups: [rendered]\nrender:\n  mode: serve\n")
		select {
		case <-catalog:
		case <-time.After(wait):
			b.Fatalf("rs0 published no voice catalog within %v", wait)
		}
		for i := range 3 {
			remotes.start(b, bin, broker.URL(), fmt.Sprintf("rr%d", i), voices, "groups: [rendered]\nrender:\n  mode: remote\n")
		}
		benchFleetSyntheses(b, broker.URL(), "rendered", remotes, serve)
	})
}

// benchFleetSyntheses announces to group, whose members are those of
// counted (their own syntheses counted from their finished events) and
// of serve (a serve node, whose syntheses are its phrase cache's new
// entries), and reports the syntheses per sentence cold and warm.
func benchFleetSyntheses(b *testing.B, broker, group string, counted, serve *fleet) {
	const perOp = 5
	made := 0
	syntheses := map[string]int{} // by phase
	entries := func() int {
		if serve == nil {
			return 0
		}
		return freshState(b, broker, serve.nodes[0]).Cache.Entries
	}
	for b.Loop() {
		var texts []string
		for range perOp {
			made++
			texts = append(texts, fmt.Sprintf("Platform %d is now closed.", made))
		}
		for _, phase := range []string{"cold", "warm"} {
			before := entries()
			for i, text := range texts {
				id := fmt.Sprintf("%s-%s-%d", group, phase, made-perOp+i+1)
				mqtttest.Publish(b, broker, daemon.GroupTopic(group, "say"), fmt.Appendf(nil, `{"id":%q,"text":%q}`, id, text), false)
				syntheses[phase] += counted.syntheses(b, id)
				if serve != nil {
					serve.syntheses(b, id) // waits for its answer too
				}
			}
			syntheses[phase] += entries() - before
		}
	}
	sentences := float64(b.N * perOp)
	b.ReportMetric(float64(syntheses["cold"])/sentences, "cold-syntheses/sentence")
	b.ReportMetric(float64(syntheses["warm"])/sentences, "warm-syntheses/sentence")
	b.ReportMetric(0, "ns/op")
}

// benchFinished waits for id's terminal event on l and returns it; the
// benchmark fails unless it is a finished event with first_audio_ms.
func benchFinished(b *testing.B, l *eventLog, id string) daemon.Event {
	b.Helper()
	l.waitTerminal(b, id)
	for _, e := range l.snapshot() {
		if e.ID == id && terminal(e) {
			if e.State != daemon.EventFinished || e.FirstAudioMS == nil {
				b.Fatalf("%s: %s %s (%s), want finished with first_audio_ms", id, e.State, e.Reason, e.Error)
			}
			return e
		}
	}
	panic("unreachable: waitTerminal returned without a terminal event")
}

func rendered(e daemon.Event) bool { return e.Rendered != nil && *e.Rendered > 0 }

// percentile is the p-th percentile (0 < p ≤ 1) of sorted, nearest rank.
func percentile(sorted []float64, p float64) float64 {
	return sorted[max(0, int(math.Ceil(p*float64(len(sorted))))-1)]
}

// freshState has node publish its state now (a stop, which on an idle
// node drops and cuts nothing) and returns it: the retained state may be
// older than the phrase-cache entries a render node made since.
func freshState(b *testing.B, broker, node string) daemon.State {
	b.Helper()
	states := mqtttest.Subscribe(b, broker, "mynah/"+node+"/state")
	asked := time.Now()
	mqtttest.Publish(b, broker, "mynah/"+node+"/stop", nil, false)
	for deadline := time.After(wait); ; {
		select {
		case m := <-states:
			var s daemon.State
			if err := json.Unmarshal(m.Payload, &s); err != nil {
				b.Fatalf("%s's state %q: %v", node, m.Payload, err)
			}
			if s.Time.Before(asked) {
				continue
			}
			if s.Cache == nil {
				b.Fatalf("%s's state has no cache object", node)
			}
			return s
		case <-deadline:
			b.Fatalf("%s published no state within %v of a stop", node, wait)
		}
	}
}
