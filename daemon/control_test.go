package daemon

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

func TestRetainedCommandsIgnored(t *testing.T) {
	h := newHarness(t, nil).start()
	for _, sub := range []string{"say", "u/ann/say", "stop", "volume/set", "voice/set", "cache/purge"} {
		h.sendMsg(Message{Topic: "mynah/test/" + sub, Payload: []byte("0"), Retained: true})
	}
	h.send("say", `{"id":"ok","text":"fresh"}`)
	h.waitEvent("ok", EventFinished)
	if got := h.eng.texts(); !slices.Equal(got, []string{"fresh"}) {
		t.Fatalf("spoken %v", got)
	}
	s := h.d.Snapshot()
	if s.Counters.RetainedIgnored != 6 || s.Volume != 1 || s.Counters.Failed != 0 {
		t.Fatalf("state %+v: want 6 retained ignored, volume untouched, nothing failed", s)
	}
}

func TestStop(t *testing.T) {
	h := newHarness(t, nil)
	release := h.sink.block()
	h.start()
	h.send("say", `{"id":"first","text":"first"}`)
	h.waitWriting(1)
	h.send("say", `{"id":"a","text":"a"}`)
	h.send("say", `{"id":"b","text":"b","priority":"alert"}`)
	h.send("stop", "PRESS")
	for _, id := range []string{"first", "a", "b"} {
		if e := h.waitEvent(id, EventDropped); e.Reason != ReasonStopped {
			t.Errorf("%s: reason %q", id, e.Reason)
		}
	}
	if _, aborts, _ := h.sink.stats(); aborts < 1 {
		t.Error("Sink.Abort not called")
	}
	release()
	h.send("say", `{"id":"after","text":"after"}`)
	h.waitEvent("after", EventFinished)
	if got := h.eng.texts(); !slices.Equal(got, []string{"first", "after"}) {
		t.Fatalf("spoken %v", got)
	}
}

func TestVolumeSet(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("volume/set", "0.2")
	waitFor(t, "state with volume 0.2", func() bool { return h.d.Snapshot().Volume == 0.2 })
	h.send("say", `{"id":"v","text":"x"}`)
	h.waitEvent("v", EventFinished)
	if s := h.sink.samples(); s[0] != 200 {
		t.Errorf("sample %d, want 200 at volume 0.2", s[0])
	}
	h.send("volume/set", "loud")
	waitFor(t, "failed event", func() bool { evs := h.events(); return evs[len(evs)-1].State == EventFailed })
	evs := h.events()
	if e := evs[len(evs)-1]; e.State != EventFailed || e.Reason != ReasonBadVolume || e.Command != "volume/set" || e.Error == "" {
		t.Errorf("event %+v", e)
	}
	// -1 is a number, just not a volume: the answer says so.
	h.send("volume/set", "-1")
	waitFor(t, "second failed event", func() bool { return len(h.events()) > len(evs) })
	want := "invalid request: -1 is out of range: send 0..1 or 0..100%"
	if e := h.events()[len(evs)]; e.State != EventFailed || e.Reason != ReasonBadVolume || e.Error != want {
		t.Errorf("volume/set -1: %+v, want error %q", e, want)
	}
	if v := h.d.Snapshot().Volume; v != 0.2 {
		t.Errorf("a bad volume changed it to %v", v)
	}
	waitFor(t, "state publish", func() bool { return h.lastState().Volume == 0.2 })
}

func TestVoiceSet(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("voice/set", "bob\n")
	waitFor(t, "voice bob", func() bool { return h.d.Snapshot().Voice == "bob" })
	h.send("say", `{"id":"x","text":"x"}`)
	h.waitEvent("x", EventFinished)
	if v := h.eng.last().Voice; v != "bob" {
		t.Errorf("engine voice %q", v)
	}
	h.send("voice/set", "carol")
	h.send("voice/set", "../alice")
	var reasons []string
	waitFor(t, "two failed events", func() bool {
		reasons = nil
		for _, e := range h.events() {
			if e.State == EventFailed {
				if e.Command != "voice/set" {
					t.Errorf("failed event %+v has no command", e)
				}
				reasons = append(reasons, e.Reason)
			}
		}
		return len(reasons) == 2
	})
	if !slices.Equal(reasons, []string{ReasonUnknownVoice, ReasonBadName}) {
		t.Errorf("reasons %v", reasons)
	}
	if v := h.d.Snapshot().Voice; v != "bob" {
		t.Errorf("voice %q after bad voice/set", v)
	}
}

// TestVoiceSetChecksTheVoice: voice/set makes a voice the default only
// once the engine has loaded it; a voice whose files are gone is refused
// (unknown_voice), one that fails to load too (synthesis), and the default
// stays what it was.
func TestVoiceSetChecksTheVoice(t *testing.T) {
	h := newHarness(t, nil).start()
	failed := func() []Event {
		var out []Event
		for _, e := range h.events() {
			if e.State == EventFailed {
				out = append(out, e)
			}
		}
		return out
	}
	for i, tc := range []struct {
		err    error
		reason string
	}{
		{fmt.Errorf("%w \"bob\": its files are gone", ErrUnknownVoice), ReasonUnknownVoice},
		{errors.New("load bob: truncated model"), ReasonSynthesis},
	} {
		h.eng.mu.Lock()
		h.eng.broken = map[string]error{"bob": tc.err}
		h.eng.mu.Unlock()
		h.send("voice/set", "bob")
		waitFor(t, "failed event", func() bool { return len(failed()) == i+1 })
		if e := failed()[i]; e.Reason != tc.reason || e.Command != "voice/set" || !strings.Contains(e.Error, "bob") {
			t.Errorf("event %+v, want reason %s", e, tc.reason)
		}
		if v := h.d.Snapshot().Voice; v != "alice" {
			t.Errorf("voice %q after a refused voice/set", v)
		}
	}
	h.send("say", `{"id":"after","text":"x"}`)
	h.waitEvent("after", EventFinished)
	if v := h.eng.last().Voice; v != "alice" {
		t.Errorf("a say without a voice went to %q", v)
	}
	waitFor(t, "state with the old voice", func() bool { return h.lastState().Voice == "alice" })
}

// TestVoiceSetLastWins: while one voice is being checked, a later
// voice/set replaces any waiting one; the last command decides.
func TestVoiceSetLastWins(t *testing.T) {
	h := newHarness(t, nil).start()
	hold := make(chan struct{})
	h.eng.mu.Lock()
	h.eng.checkHold = hold
	h.eng.mu.Unlock()
	checks := func() []string {
		h.eng.mu.Lock()
		defer h.eng.mu.Unlock()
		return slices.Clone(h.eng.checks)
	}
	h.send("voice/set", "bob")
	waitFor(t, "the check of bob", func() bool { return len(checks()) == 1 })
	h.send("voice/set", "bob")   // replaced by the next
	h.send("voice/set", "alice") // the last word
	close(hold)
	waitFor(t, "the check of alice", func() bool { return len(checks()) == 2 })
	waitFor(t, "checks done", func() bool {
		h.d.mu.Lock()
		defer h.d.mu.Unlock()
		return !h.d.voiceChecking
	})
	if got := checks(); !slices.Equal(got, []string{"bob", "alice"}) {
		t.Errorf("checked %v, want bob then alice", got)
	}
	if v := h.d.Snapshot().Voice; v != "alice" {
		t.Errorf("voice %q, want alice: the last voice/set", v)
	}
}

func TestCachePurgeNotSupported(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("cache/purge", `{"scope":"all"}`)
	waitFor(t, "failed event", func() bool { return len(h.events()) == 1 })
	if e := h.events()[0]; e.State != EventFailed || e.Reason != ReasonNotSupported || e.Command != "cache/purge" {
		t.Errorf("event %+v", e)
	}
}

func TestBadPayloadsKeepServing(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		// What mynahd passes: markup alone says nothing.
		o.Decode = &DecodeOptions{Speakable: func(s string) bool {
			return strings.Trim(strings.NewReplacer("<speak>", "", "</speak>", "", "<break time='100000s'/>", "").Replace(s), " ") != ""
		}}
	}).start()
	bad := []struct {
		topic, payload, reason string
	}{
		{"say", "", ReasonEmpty},
		{"say", strings.Repeat("a", 1<<20), ReasonTooLarge},
		{"say", "caf\xe9", ReasonInvalidUTF8},
		{"say", "a\x00b", ReasonNULByte},
		{"say", `{"text":"a","x":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`, ReasonTooDeep},
		{"say", `{"text":1}`, ReasonBadField},
		{"say", "\ufeff{\"text\":\"a\",\"rate\":99}", ReasonBadRate},
		{"say", "<speak><break time='100000s'/></speak>", ReasonEmpty},
		{"say", `{"text":"a","rate":1e309}`, ReasonBadRate},
		{"say", `{"text":"a","voice":"carol"}`, ReasonUnknownVoice},
		{"say", `{"text":"a","voice":"../../etc/passwd"}`, ReasonBadName},
		{"say", `{"text":"a","speaker":"` + strings.Repeat("x", 4096) + `"}`, ReasonBadName},
		{"u/../say", "hi", ReasonBadName},
		{"u/a b /say", "hi", ReasonBadName},
	}
	for _, b := range bad {
		h.send(b.topic, b.payload)
	}
	h.send("say", `{"id":"good","text":"still here"}`)
	h.waitEvent("good", EventFinished)
	var reasons []string
	for _, e := range h.events() {
		if e.State == EventFailed {
			reasons = append(reasons, e.Reason)
			if e.ID == "" || e.Error == "" || len(e.Error) > 300 {
				t.Errorf("failed event %+v: want an id and a short error", e)
			}
		}
	}
	for i, b := range bad {
		if i >= len(reasons) || reasons[i] != b.reason {
			t.Errorf("payload %d (%.30q on %s): reason %v, want %s", i, b.payload, b.topic, reasons, b.reason)
			break
		}
	}
	if got := h.eng.texts(); !slices.Equal(got, []string{"still here"}) {
		t.Errorf("spoken %v", got)
	}
}

func TestOwnerTopic(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("u/ann/say", `{"id":"o","text":"hi"}`)
	h.send("u/a/b/say", "not an owner topic")
	fin := h.waitEvent("o", EventFinished)
	if fin.Owner != "ann" {
		t.Errorf("owner %q", fin.Owner)
	}
	if n := h.d.Snapshot().Counters.Received; n != 1 {
		t.Errorf("received %d: a topic with a slash in the owner must be ignored", n)
	}
}

// TestVoiceSetOfAVoiceRemovedWhileItLoads: a reload that takes the voice
// away while voice/set loads it wins; the select no longer offers it, so
// the state must not take it.
func TestVoiceSetOfAVoiceRemovedWhileItLoads(t *testing.T) {
	h := newHarness(t, nil)
	var mu sync.Mutex
	voices := []string{"alice", "bob"}
	h.eng.fake.VoicesFunc = func() []string { mu.Lock(); defer mu.Unlock(); return slices.Clone(voices) }
	hold := make(chan struct{})
	h.eng.checkHold = hold
	h.start()
	h.send("voice/set", "bob")
	waitFor(t, "the check of bob", func() bool { h.eng.mu.Lock(); defer h.eng.mu.Unlock(); return len(h.eng.checks) == 1 })
	mu.Lock()
	voices = []string{"alice"}
	mu.Unlock()
	h.d.ReloadVoices()
	waitFor(t, "the reload", func() bool { return !slices.Contains(h.d.Snapshot().Voices, "bob") })
	close(hold)
	if e := h.waitCommand("voice/set", EventFailed); e.Reason != ReasonUnknownVoice || !strings.Contains(e.Error, "bob") {
		t.Errorf("voice/set of the removed voice: %+v", e)
	}
	if v := h.d.Snapshot().Voice; v != "alice" {
		t.Errorf("voice %q, want alice: bob went while it loaded", v)
	}
}
