package daemon

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// groupHarness is a daemon in the groups all and hall on the system
// clock: play_at instants are real ones (audio.Place waits for them).
func groupHarness(t *testing.T, modify func(*Options)) *harness {
	return newHarness(t, func(o *Options) {
		o.Now = time.Now
		o.Groups = []string{"all", "hall"}
		if modify != nil {
			modify(o)
		}
	}).start()
}

func (h *harness) groupSend(group, command, payload string) {
	h.sendMsg(Message{Topic: GroupTopic(group, command), Payload: []byte(payload)})
}

// proposals returns the play_at proposals the daemon published for group.
func (h *harness) proposals(group string) []syncMessage {
	var out []syncMessage
	for _, m := range h.tr.on(GroupTopic(group, groupSync)) {
		var s syncMessage
		if err := json.Unmarshal(m.payload, &s); err != nil {
			h.t.Fatalf("proposal %s: %v", m.payload, err)
		}
		out = append(out, s)
	}
	return out
}

func syncPayload(id string, at time.Time, node string) string {
	return fmt.Sprintf(`{"id":%q,"play_at":%.3f,"node":%q}`, id, toUnixMillis(at), node)
}

func sameInstant(ms *float64, at time.Time) bool {
	return ms != nil && math.Abs(*ms-toUnixMillis(at)) < 0.002
}

func TestGroupSubscribes(t *testing.T) {
	h := groupHarness(t, nil)
	h.tr.mu.Lock()
	filters := h.tr.filters
	h.tr.mu.Unlock()
	for _, g := range []string{"all", "hall"} {
		for _, c := range []string{"say", "stop", "volume/set", "sync"} {
			if !slices.Contains(filters, "mynah/group/"+g+"/"+c) {
				t.Errorf("not subscribed to mynah/group/%s/%s: %v", g, c, filters)
			}
		}
	}
}

// A group say without play_at: the member proposes now+lead on the sync
// topic, and plays at the first proposal the broker delivers, here
// another member's that came before its own.
func TestGroupPlaysAtTheFirstProposalDelivered(t *testing.T) {
	h := groupHarness(t, nil)
	before := time.Now()
	h.groupSend("all", "say", `{"id":"g1","text":"Dinner is ready."}`)
	waitFor(t, "a proposal", func() bool { return len(h.proposals("all")) == 1 })
	own := h.proposals("all")[0]
	if own.ID != "g1" || own.Node != "test" {
		t.Fatalf("proposal %+v", own)
	}
	if at := unixMillis(own.PlayAt); at.Before(before.Add(DefaultGroupLead)) || at.After(time.Now().Add(DefaultGroupLead)) {
		t.Errorf("proposed %v, want now + %v", at, DefaultGroupLead)
	}
	other := time.Now().Add(300 * time.Millisecond)
	h.groupSend("all", "sync", syncPayload("g1", other, "hall-speaker"))
	h.groupSend("all", "sync", syncPayload("g1", unixMillis(own.PlayAt), "test"))
	e := h.waitEvent("g1", EventStarted)
	if !sameInstant(e.PlayAt, other) || e.Group != "all" {
		t.Errorf("started %+v: want play_at %.3f (the first delivered), group all", e, toUnixMillis(other))
	}
	if e.LateMS == nil || e.Clock != ClockSystem {
		t.Errorf("started %+v: want late_ms on the system clock (the test sink has no DAC clock)", e)
	}
	f := h.waitEvent("g1", EventFinished)
	if f.Group != "all" || !sameInstant(f.PlayAt, other) {
		t.Errorf("finished %+v", f)
	}
	if n := len(h.proposals("all")); n != 1 {
		t.Errorf("%d proposals, want 1", n)
	}
}

// A member that learns of the agreement before the request proposes
// nothing and plays at it.
func TestGroupSyncBeforeTheRequest(t *testing.T) {
	h := groupHarness(t, nil)
	at := time.Now().Add(200 * time.Millisecond)
	h.groupSend("hall", "sync", syncPayload("g2", at, "kitchen"))
	h.groupSend("hall", "say", `{"id":"g2","text":"The door is open."}`)
	e := h.waitEvent("g2", EventStarted)
	if !sameInstant(e.PlayAt, at) || e.Group != "hall" {
		t.Errorf("started %+v, want play_at %.3f", e, toUnixMillis(at))
	}
	if p := h.proposals("hall"); len(p) != 0 {
		t.Errorf("proposed %+v though the instant was agreed", p)
	}
}

// A request's own play_at is kept, on a node's topic too, and nothing is
// proposed for it.
func TestPlayAtOfTheRequest(t *testing.T) {
	h := groupHarness(t, nil)
	at := time.Now().Add(150 * time.Millisecond)
	h.groupSend("all", "say", fmt.Sprintf(`{"id":"g3","text":"Hello.","play_at":%.3f}`, toUnixMillis(at)))
	h.send("say", fmt.Sprintf(`{"id":"n1","text":"Hello.","play_at":%.3f}`, toUnixMillis(at.Add(time.Second))))
	for id, want := range map[string]time.Time{"g3": at, "n1": at.Add(time.Second)} {
		if e := h.waitEvent(id, EventStarted); !sameInstant(e.PlayAt, want) {
			t.Errorf("%s started %+v, want play_at %.3f", id, e, toUnixMillis(want))
		}
		if got := time.Now(); got.Before(want) {
			t.Errorf("%s started at %v, before its play_at %v", id, got, want)
		}
	}
	if p := h.proposals("all"); len(p) != 0 {
		t.Errorf("proposed %+v for a request with play_at", p)
	}
}

// Late: a play_at already past max_late is refused at once; one that
// passes while another request plays is dropped; one up to max_late late
// starts into its audio, leaving out what would have played.
func TestPlayAtLate(t *testing.T) {
	h := groupHarness(t, func(o *Options) { o.MaxLate = 300 * time.Millisecond })
	h.eng.frames = 16000 // a second a sentence: longer than any lateness here
	h.groupSend("all", "say", fmt.Sprintf(`{"id":"past","text":"Hello.","play_at":%.3f}`, toUnixMillis(time.Now().Add(-3*time.Second))))
	if e := h.waitEvent("past", EventFailed); e.Reason != ReasonLate || e.Group != "all" || !strings.Contains(e.Error, "ago") {
		t.Errorf("failed %+v, want reason late naming how long ago", e)
	}

	release := h.sink.block()
	h.send("say", `{"id":"long","text":"Blocking."}`)
	h.waitWriting(1)
	h.groupSend("all", "say", fmt.Sprintf(`{"id":"missed","text":"Hello.","play_at":%.3f}`, toUnixMillis(time.Now().Add(50*time.Millisecond))))
	time.Sleep(500 * time.Millisecond) // past play_at + max_late
	release()
	e := h.waitEvent("missed", EventDropped)
	if e.Reason != ReasonLate || e.Group != "all" || e.LateMS == nil || *e.LateMS < 300 || e.PlayAt == nil {
		t.Errorf("dropped %+v, want reason late with late_ms over 300", e)
	}

	h.waitEvent("long", EventFinished)
	before := len(h.sink.samples())
	entered, _, _ := h.sink.stats()
	release = h.sink.block()
	h.send("say", `{"id":"short","text":"Blocking."}`)
	h.waitWriting(entered + 1)
	h.groupSend("all", "say", fmt.Sprintf(`{"id":"joined","text":"Hello.","play_at":%.3f}`, toUnixMillis(time.Now().Add(20*time.Millisecond))))
	time.Sleep(150 * time.Millisecond)
	release()
	s := h.waitEvent("joined", EventStarted)
	h.waitEvent("joined", EventFinished)
	if s.LateMS == nil || s.SkippedMS == nil || *s.LateMS <= 0 || math.Abs(*s.LateMS-*s.SkippedMS) > 0.1 {
		t.Fatalf("started %+v: want late_ms > 0 and skipped_ms equal to it", s)
	}
	// "Blocking." (16000 frames) then "Hello." less what was skipped, at
	// 16 kHz: the speech frames tell how much was left out.
	spoken := 0
	for _, v := range h.sink.samples()[before:] {
		if v != 0 {
			spoken++
		}
	}
	skipped := int(math.Round(*s.SkippedMS * 16))
	if want := 16000 + 16000 - skipped; abs(spoken-want) > 1 {
		t.Errorf("%d speech samples after the late start, want %d (16000 + 16000 − %d skipped)", spoken, want, skipped)
	}
}

func abs(n int) int { return max(n, -n) }

// Group stop and volume act as the node's do.
func TestGroupStopAndVolume(t *testing.T) {
	h := groupHarness(t, nil)
	h.groupSend("hall", "volume/set", "0.25")
	waitFor(t, "volume 0.25", func() bool { return h.lastState().Volume == 0.25 })
	release := h.sink.block()
	defer release()
	h.send("say", `{"id":"s1","text":"One."}`)
	h.waitWriting(1)
	h.groupSend("hall", "stop", "")
	if e := h.waitEvent("s1", EventDropped); e.Reason != ReasonStopped {
		t.Errorf("dropped %+v, want stopped", e)
	}
	// A group this node is not in is not its business.
	h.groupSend("upstairs", "say", `{"id":"u1","text":"Not for us."}`)
	time.Sleep(50 * time.Millisecond)
	if ev := h.eventsOf("u1"); len(ev) != 0 {
		t.Errorf("events %v for a group the node is not in", ev)
	}
}

func TestDecodeSyncRejects(t *testing.T) {
	now := time.Now()
	for _, tc := range []struct{ name, payload string }{
		{"not JSON", "soon"},
		{"no id", fmt.Sprintf(`{"play_at":%d}`, now.UnixMilli())},
		{"bad id", fmt.Sprintf(`{"id":"a/b","play_at":%d}`, now.UnixMilli())},
		{"play_at a string", `{"id":"a","play_at":"now"}`},
		{"play_at zero", `{"id":"a","play_at":0}`},
		{"play_at an hour ahead", fmt.Sprintf(`{"id":"a","play_at":%d}`, now.Add(time.Hour).UnixMilli())},
		{"play_at in microseconds", fmt.Sprintf(`{"id":"a","play_at":%d}`, now.UnixMicro())},
		{"too large", `{"id":"a","x":"` + strings.Repeat("x", 2000) + `"}`},
	} {
		if _, _, err := decodeSync([]byte(tc.payload), now); err == nil {
			t.Errorf("%s: %s accepted", tc.name, tc.payload)
		}
	}
	if m, at, err := decodeSync([]byte(syncPayload("a", now.Add(time.Second), "n")), now); err != nil || m.ID != "a" || !sameInstant(ptr(toUnixMillis(at)), now.Add(time.Second)) {
		t.Errorf("a good proposal: %+v %v %v", m, at, err)
	}
}

func FuzzDecodeSync(f *testing.F) {
	now := time.Now()
	f.Add([]byte(syncPayload("a", now.Add(time.Second), "n")))
	f.Add([]byte(`{"id":"a","play_at":1e308}`))
	f.Add([]byte(`{"id":"","play_at":-1}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, at, err := decodeSync(b, now)
		if err != nil {
			return
		}
		if ValidateName(m.ID) != nil || at.Sub(now) > MaxPlayAhead || !at.After(time.Unix(0, 0)) {
			t.Fatalf("accepted %+v at %v", m, at)
		}
	})
}

// The agreements are bounded: the oldest go first.
func TestAgreementsBounded(t *testing.T) {
	var a agreements
	now := time.Now()
	first := a.get(agreementKey("all", "0"), now)
	for i := 1; i <= maxAgreements; i++ {
		a.get(agreementKey("all", fmt.Sprint(i)), now)
	}
	if n := len(a.byKey); n > maxAgreements {
		t.Errorf("%d agreements kept, want at most %d", n, maxAgreements)
	}
	if again := a.get(agreementKey("all", "0"), now); again == first {
		t.Error("the oldest agreement was kept past the bound")
	}
	old := a.get(agreementKey("all", "old"), now)
	a.get(agreementKey("all", "new"), now.Add(agreementTTL+time.Second))
	if again := a.get(agreementKey("all", "old"), now.Add(agreementTTL+time.Second)); again == old {
		t.Error("an agreement older than agreementTTL was kept")
	}
}

// A group say without an id gets a random id on each member, so the
// members agree by the payload's digest; the same text sent again once
// the first has played is agreed on anew.
func TestGroupPlainTextAgreesByPayload(t *testing.T) {
	h := groupHarness(t, nil)
	h.groupSend("all", "say", "Dinner is ready.")
	waitFor(t, "a proposal", func() bool { return len(h.proposals("all")) == 1 })
	key := textKey([]byte("Dinner is ready."))
	if p := h.proposals("all")[0]; p.ID != key {
		t.Fatalf("proposal %+v, want id %s", p, key)
	}
	other := time.Now().Add(200 * time.Millisecond)
	h.groupSend("all", "sync", syncPayload(key, other, "hall-speaker"))
	var first Event
	waitFor(t, "started", func() bool {
		for _, e := range h.events() {
			if e.State == EventStarted && e.Group == "all" {
				first = e
				return true
			}
		}
		return false
	})
	if !sameInstant(first.PlayAt, other) {
		t.Errorf("started %+v, want play_at %.3f", first, toUnixMillis(other))
	}
	// The same text again, long after: a new agreement (simulated by
	// aging the first).
	h.d.agreed.mu.Lock()
	h.d.agreed.byKey[agreementKey("all", key)].at = time.Now().Add(-agreementStale - time.Second)
	h.d.agreed.mu.Unlock()
	h.groupSend("all", "say", "Dinner is ready.")
	waitFor(t, "a second proposal", func() bool { return len(h.proposals("all")) == 2 })
}

// A member back from an outage gets the announcement its session queued
// long after the others agreed on it: it is dropped late, not played
// alone.
func TestGroupAnnouncementDeliveredLate(t *testing.T) {
	h := groupHarness(t, nil)
	past := time.Now().Add(-10 * time.Second)
	h.groupSend("all", "sync", syncPayload("text-"+textKey([]byte("Dinner is ready."))[5:], past, "kitchen"))
	h.groupSend("all", "say", "Dinner is ready.")
	var e Event
	waitFor(t, "a terminal event", func() bool {
		for _, x := range h.events() {
			if x.Group == "all" && (x.State == EventDropped || x.State == EventFailed || x.State == EventFinished) {
				e = x
				return true
			}
		}
		return false
	})
	if e.State != EventDropped || e.Reason != ReasonLate {
		t.Errorf("%+v, want dropped late", e)
	}
	if p := h.proposals("all"); len(p) != 0 {
		t.Errorf("proposed %+v for an announcement agreed on long ago", p)
	}
}

// The member whose proposal the group took synthesizes the announcement;
// the others ask it for each sentence (Speech.RenderBy). A member that
// leads, or a request with its own play_at, names nobody.
func TestGroupAsksTheLeaderToRender(t *testing.T) {
	h := groupHarness(t, nil)
	renderBy := func(id string) string {
		h.waitEvent(id, EventFinished)
		h.eng.mu.Lock()
		defer h.eng.mu.Unlock()
		for _, c := range h.eng.calls {
			if c.Text == "Text of "+id+"." {
				return c.RenderBy
			}
		}
		t.Fatalf("%s never spoken: %+v", id, h.eng.calls)
		return ""
	}
	// Another member's proposal came first.
	at1 := time.Now().Add(150 * time.Millisecond)
	h.groupSend("all", "sync", syncPayload("r1", at1, "kitchen"))
	h.groupSend("all", "say", `{"id":"r1","text":"Text of r1."}`)
	if by := renderBy("r1"); by != "kitchen" {
		t.Errorf("r1 asked %q to render, want kitchen (its proposal was taken)", by)
	}
	h.eng.mu.Lock()
	if c := h.eng.calls[len(h.eng.calls)-1]; c.RenderUntil.IsZero() || !c.RenderUntil.Before(at1) {
		t.Errorf("r1 waits for the leader until %v, want a time before its play_at", c.RenderUntil)
	}
	h.eng.mu.Unlock()
	// This member's own proposal is the first back: it renders.
	h.groupSend("all", "say", `{"id":"r2","text":"Text of r2."}`)
	waitFor(t, "a proposal", func() bool { return len(h.proposals("all")) == 1 })
	h.groupSend("all", "sync", syncPayload("r2", unixMillis(h.proposals("all")[0].PlayAt), "test"))
	if by := renderBy("r2"); by != "" {
		t.Errorf("r2 asked %q to render, want nobody (this member leads)", by)
	}
	// play_at given: nobody proposed, nobody leads.
	h.groupSend("all", "say", fmt.Sprintf(`{"id":"r3","text":"Text of r3.","play_at":%.3f}`, toUnixMillis(time.Now().Add(100*time.Millisecond))))
	if by := renderBy("r3"); by != "" {
		t.Errorf("r3 asked %q to render, want nobody", by)
	}
	// A proposal with a node name that is no name is taken for its
	// instant, but nobody is asked.
	h.groupSend("all", "sync", syncPayload("r4", time.Now().Add(150*time.Millisecond), "a/b#"))
	h.groupSend("all", "say", `{"id":"r4","text":"Text of r4."}`)
	if by := renderBy("r4"); by != "" {
		t.Errorf("r4 asked %q to render, want nobody", by)
	}
}
