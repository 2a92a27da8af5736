package daemon

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

func TestOutboxShedsNewsNeverTerminal(t *testing.T) {
	o := newOutbox(2)
	o.maxTotal = 4
	news := func(n int) *pending { return &pending{e: Event{State: EventQueued, ID: fmt.Sprint(n)}} }
	answer := func(n int) *pending {
		return &pending{e: Event{State: EventFinished, ID: fmt.Sprint(n)}, terminal: true}
	}
	var shed, lost int
	add := func(p *pending) {
		s, l := o.push(p)
		shed, lost = shed+s, lost+l
	}
	add(news(1))
	add(news(2))
	add(news(3)) // over maxNews: dropped
	if shed != 1 {
		t.Fatalf("shed %d news events, want 1", shed)
	}
	add(answer(1))
	add(answer(2)) // full now: 2 news, 2 answers
	add(answer(3)) // the oldest answer goes from memory, no news event is touched
	if all, terminal := o.counts(); all != 4 || terminal != 2 || lost != 1 || shed != 1 {
		t.Fatalf("outbox %d events (%d terminal), shed %d, lost %d; want 4 (2), 1, 1", all, terminal, shed, lost)
	}
	var got []string
	for p := o.peek(); p != nil; p = o.peek() {
		got = append(got, p.e.State+p.e.ID)
		o.pop(p)
	}
	if want := "queued1 queued2 finished2 finished3"; strings.Join(got, " ") != want {
		t.Errorf("order %q, want %q", got, want)
	}
	add(news(4))
	if all, _ := o.counts(); all != 1 {
		t.Errorf("after draining, %d events", all)
	}
}

func TestRetryDelay(t *testing.T) {
	for n, want := range map[int]time.Duration{1: retryMin, 2: 2 * retryMin, 3: 4 * retryMin, 20: retryMax, 1000: retryMax} {
		if got := retryDelay(n); got != want {
			t.Errorf("retryDelay(%d) = %v, want %v", n, got, want)
		}
	}
}

// brokerDown makes every event publish fail with err until up is called.
func brokerDown(h *harness, err error) (up func()) {
	h.tr.mu.Lock()
	h.tr.fail = func(topic string, _ []byte) error {
		if strings.HasSuffix(topic, "/event") {
			return err
		}
		return nil
	}
	h.tr.mu.Unlock()
	return func() {
		h.tr.mu.Lock()
		h.tr.fail = nil
		h.tr.mu.Unlock()
	}
}

// spooledEvent returns the event a spool record holds for id, if any.
func (s *spoolRec) spooledEvent(id string) (Event, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if e, err := decodeEventRecord(r.Record); err == nil && e.ID == id {
			return e, true
		}
	}
	return Event{}, false
}

func TestTerminalEventWaitsForTheBroker(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake })
	up := brokerDown(h, fmt.Errorf("publish: connection down: %w", ErrNotSent))
	h.start()
	h.send("say", `{"id":"r1","text":"Hello."}`)
	waitFor(t, "r1 finished", func() bool { return h.d.Snapshot().Counters.Finished == 1 })
	// The answer is on disk, in place of the request, until the broker
	// has it; the queued event was news and is gone.
	waitFor(t, "the event spooled", func() bool { _, ok := sp.spooledEvent("r1"); return ok })
	if n := sp.len(); n != 1 {
		t.Fatalf("%d spool records, want 1 (the answer only)", n)
	}
	waitFor(t, "the queued event dropped", func() bool { return h.d.Snapshot().Counters.EventsDropped >= 1 })
	// The answer is spooled before its first publish is tried: wait for
	// that try to fail (queued, started and finished: three), or the
	// broker is back before the answer ever missed it.
	waitFor(t, "the answer's publish failed", func() bool { return h.d.Snapshot().Counters.PublishErrors >= 3 })
	if ev := h.eventsOf("r1"); len(ev) != 0 {
		t.Fatalf("published %v while the broker was down", ev)
	}
	up()
	h.d.Connected() // what the transport calls after a reconnect
	e := h.waitEvent("r1", EventFinished)
	if e.Redelivered {
		t.Error("marked redelivered, but no earlier copy left")
	}
	waitFor(t, "the record deleted once published", func() bool { return sp.len() == 0 })
	if got := h.eventsOf("r1"); len(got) != 1 {
		t.Errorf("events of r1: %v, want one finished", got)
	}
	if c := h.d.Snapshot().Counters; c.EventsResent != 1 || c.EventsLost != 0 {
		t.Errorf("counters %+v: want events_resent 1, events_lost 0", c)
	}
}

func TestTerminalEventAfterUncertainPublishIsMarked(t *testing.T) {
	h := newHarness(t, nil)
	var failed int
	h.tr.fail = func(topic string, payload []byte) error {
		if strings.HasSuffix(topic, "/event") && strings.Contains(string(payload), `"finished"`) && failed == 0 {
			failed++
			return errors.New("mqtt publish timed out") // it may have arrived
		}
		return nil
	}
	h.start()
	h.send("say", `{"id":"r1","text":"Hello."}`)
	e := h.waitEvent("r1", EventFinished) // retried after the backoff
	if !e.Redelivered {
		t.Errorf("the copy after a timed-out publish is not marked redelivered: %+v (failed %d)", e, failed)
	}
	h.send("say", `{"id":"r2","text":"Again."}`)
	if e := h.waitEvent("r2", EventFinished); e.Redelivered {
		t.Error("r2 marked redelivered")
	}
	if got := h.eventsOf("r1"); strings.Join(got, " ") != "queued started finished" {
		t.Errorf("events of r1: %v", got)
	}
}

func TestTerminalEventsKeepTheirOrder(t *testing.T) {
	h := newHarness(t, nil)
	up := brokerDown(h, ErrNotSent)
	h.start()
	for i := range 5 {
		h.send("say", fmt.Sprintf(`{"id":"o%d","text":"x"}`, i))
	}
	waitFor(t, "all spoken", func() bool { return h.d.Snapshot().Counters.Finished == 5 })
	up()
	h.d.Connected()
	// Events that are not answers (queued, started) may be published in
	// between, so wait for the five answers themselves.
	terminals := func() []string {
		var ids []string
		for _, e := range h.events() {
			if isTerminal(&e) {
				ids = append(ids, e.ID)
			}
		}
		return ids
	}
	waitFor(t, "all answers", func() bool { return len(terminals()) >= 5 })
	if got := terminals(); strings.Join(got, " ") != "o0 o1 o2 o3 o4" {
		t.Errorf("answers in order %v", got)
	}
}

func TestUnsentAnswersSurviveARestart(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake; o.ShutdownTimeout = 200 * time.Millisecond })
	brokerDown(h, ErrNotSent)
	h.start()
	h.send("say", `{"id":"r1","text":"Hello."}`)
	h.send("say", `{"id":"bad","text":"x","voice":"nobody"}`) // refused: memory only
	waitFor(t, "the answer spooled", func() bool { _, ok := sp.spooledEvent("r1"); return ok })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if n := sp.len(); n != 1 {
		t.Fatalf("%d records after shutdown, want 1", n)
	}

	// The next start sends it first, marked, and does not speak it again.
	h2 := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	e := h2.waitEvent("r1", EventFinished)
	if !e.Redelivered || e.Sentences == nil || *e.Sentences != 1 {
		t.Errorf("resent %+v: want redelivered with the first run's figures", e)
	}
	waitFor(t, "the record deleted", func() bool { return sp.len() == 0 })
	if n := len(h2.eng.texts()); n != 0 {
		t.Errorf("spoke %d texts again", n)
	}
	if c := h2.d.Snapshot().Counters; c.Finished != 0 || c.EventsResent != 1 {
		t.Errorf("counters after the restart %+v: the answer is not a new request", c)
	}
}

func TestSpoolHoldsEveryAnswerOfAFlood(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake; o.OutboxSize = 16 })
	up := brokerDown(h, ErrNotSent)
	release := h.sink.block()
	h.start()
	const n = 500
	for i := range n {
		h.send("say", fmt.Sprintf(`{"id":"f%d","text":"flood %d"}`, i, i))
	}
	release()
	waitFor(t, "every request answered", func() bool {
		c := h.d.Snapshot().Counters
		return c.Finished+c.Dropped == n
	})
	up()
	h.d.Connected()
	waitFor(t, "every answer published and its record deleted", func() bool {
		all, _ := h.d.out.counts()
		return all == 0 && sp.len() == 0
	})
	seen := map[string]int{}
	for _, e := range h.events() {
		if isTerminal(&e) {
			seen[e.ID]++
		}
	}
	for i := range n {
		if id := fmt.Sprintf("f%d", i); seen[id] != 1 {
			t.Errorf("%s: %d terminal events", id, seen[id])
		}
	}
}

func TestDecodeEventRecord(t *testing.T) {
	good := encodeEventRecord(Event{ID: "a", State: EventFinished})
	if e, err := decodeEventRecord(good); err != nil || e.ID != "a" || e.State != EventFinished {
		t.Fatalf("round trip: %+v, %v", e, err)
	}
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"request record", encodeSpoolRecord(&Request{ID: "a"}, []byte("hi"))},
		{"not JSON", []byte{spoolRecordEvent, '{', 'x'}},
		{"JSON array", append([]byte{spoolRecordEvent}, `[1]`...)},
		{"not terminal", encodeEventRecord(Event{ID: "a", State: EventQueued})},
		{"no id", encodeEventRecord(Event{State: EventFinished})},
		{"wrong type", append([]byte{spoolRecordEvent}, `{"id":7,"state":"finished"}`...)},
		{"too large", append([]byte{spoolRecordEvent}, make([]byte, maxSpoolRecord)...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeEventRecord(tc.rec); !errors.Is(err, errBadSpoolRecord) {
				t.Errorf("got %v, want errBadSpoolRecord", err)
			}
		})
	}
}

func FuzzDecodeEventRecord(f *testing.F) {
	f.Add(encodeEventRecord(Event{ID: "a", State: EventFinished, Reason: "x"}))
	f.Add(encodeEventRecord(Event{ID: "b", State: EventDropped, Reason: ReasonQueueFull, Redelivered: true}))
	f.Add([]byte{spoolRecordEvent})
	f.Add([]byte{spoolRecordEvent, '{', '}'})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEventRecord(b)
		if err != nil {
			if !errors.Is(err, errBadSpoolRecord) {
				t.Fatalf("error %v does not wrap errBadSpoolRecord", err)
			}
			return
		}
		if !isTerminal(&e) {
			t.Fatalf("accepted a non-terminal event %+v", e)
		}
		again, err := decodeEventRecord(encodeEventRecord(e))
		if err != nil || again.ID != e.ID || again.State != e.State {
			t.Fatalf("re-encoding %+v gave %+v, %v", e, again, err)
		}
	})
}
