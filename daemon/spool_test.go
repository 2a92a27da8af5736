package daemon

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeSpool is a Spool made of function fields.
type fakeSpool struct {
	PutFunc    func(key string, record []byte, received, expires time.Time) error
	DeleteFunc func(key string) error
	ListFunc   func() ([]SpoolRecord, error)
}

func (f *fakeSpool) Put(key string, record []byte, received, expires time.Time) error {
	return f.PutFunc(key, record, received, expires)
}
func (f *fakeSpool) Delete(key string) error      { return f.DeleteFunc(key) }
func (f *fakeSpool) List() ([]SpoolRecord, error) { return f.ListFunc() }

var _ Spool = (*fakeSpool)(nil)

// spoolRec keeps records in memory. gate, when set, makes Put wait for it
// (a slow disk); putErr fails every Put.
type spoolRec struct {
	mu      sync.Mutex
	recs    map[string]SpoolRecord
	gate    chan struct{}
	putErr  error
	puts    int
	deletes int
	fake    fakeSpool
}

func newSpoolRec() *spoolRec {
	s := &spoolRec{recs: make(map[string]SpoolRecord)}
	s.fake.PutFunc = func(key string, record []byte, received, expires time.Time) error {
		s.mu.Lock()
		gate, err := s.gate, s.putErr
		s.mu.Unlock()
		if gate != nil {
			<-gate
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.puts++
		if err != nil {
			return err
		}
		s.recs[key] = SpoolRecord{Key: key, Record: slices.Clone(record), Received: received, Expires: expires}
		return nil
	}
	s.fake.DeleteFunc = func(key string) error {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.deletes++
		delete(s.recs, key)
		return nil
	}
	s.fake.ListFunc = func() ([]SpoolRecord, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		var out []SpoolRecord
		for _, r := range s.recs {
			out = append(out, r)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Received.Before(out[j].Received) })
		return out, nil
	}
	return s
}

func (s *spoolRec) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.recs)
}

func (s *spoolRec) counts() (puts, deletes int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts, s.deletes
}

// add stores a record as a previous run would have.
func (s *spoolRec) add(r Request, payload string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	key := spoolKey(&r)
	s.recs[key] = SpoolRecord{Key: key, Record: encodeSpoolRecord(&r, []byte(payload)), Received: r.Received, Expires: r.Expires()}
}

// ackCounter makes Message.Ack functions and counts their calls.
type ackCounter struct{ n atomic.Int32 }

func (a *ackCounter) msg(topic, payload string) Message {
	return Message{Topic: "mynah/test/" + topic, Payload: []byte(payload), Ack: func() { a.n.Add(1) }}
}

func TestSpoolAcknowledgesAfterTheWrite(t *testing.T) {
	sp := newSpoolRec()
	gate := make(chan struct{})
	sp.gate = gate
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	var acks ackCounter
	h.sendMsg(acks.msg("say", `{"id":"r1","text":"Hello."}`))
	// The request plays before its spool write is done: a cached phrase
	// must not wait for the disk.
	h.waitEvent("r1", EventFinished)
	if n := acks.n.Load(); n != 0 {
		t.Fatalf("acknowledged %d times before the spool write returned", n)
	}
	close(gate)
	waitFor(t, "acknowledgement", func() bool { return acks.n.Load() == 1 })
	// Finished before the write ended: the event's write and the delete
	// after its publish waited for it.
	waitFor(t, "record deleted", func() bool { return sp.len() == 0 })
	if puts, deletes := sp.counts(); puts != 2 || deletes != 1 {
		t.Errorf("puts %d deletes %d, want 2 (request, event) and 1", puts, deletes)
	}
}

func TestControlCommandsAcknowledgedAtOnce(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	var acks ackCounter
	for _, m := range []Message{acks.msg("stop", ""), acks.msg("volume/set", "50%"), acks.msg("voice/set", "bob"),
		acks.msg("say", ""), acks.msg("say", `{"text":"x","voice":"carol"}`)} {
		h.sendMsg(m)
	}
	retained := acks.msg("say", "old news")
	retained.Retained = true
	h.sendMsg(retained)
	if n := acks.n.Load(); n != 6 {
		t.Errorf("%d of 6 acknowledged on return", n)
	}
	if puts, _ := sp.counts(); puts != 0 {
		t.Errorf("%d spool writes for commands that queue nothing", puts)
	}
}

func TestSpoolWriteFailureStillSpeaks(t *testing.T) {
	sp := newSpoolRec()
	sp.putErr = errors.New("disk full")
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	var acks ackCounter
	h.sendMsg(acks.msg("say", `{"id":"r1","text":"Hello."}`))
	h.waitEvent("r1", EventFinished)
	waitFor(t, "acknowledgement", func() bool { return acks.n.Load() == 1 })
	waitFor(t, "counted", func() bool { return h.d.Snapshot().Counters.SpoolErrors == 1 })
	if _, deletes := sp.counts(); deletes != 0 {
		t.Errorf("deleted a record that was never written")
	}
}

func TestSpoolReplay(t *testing.T) {
	sp := newSpoolRec()
	old := func(id string, ago time.Duration, ttl time.Duration) Request {
		return Request{ID: id, Received: t0.Add(-ago), TTL: ttl}
	}
	sp.add(old("expired", 2*time.Minute, time.Minute), `{"id":"expired","text":"Too late.","ttl":60}`)
	first := old("first", 30*time.Second, time.Minute)
	first.Owner = "anna"
	sp.add(first, `{"id":"first","text":"One.","ttl":60}`)
	anon := old("0123456789abcdef", 20*time.Second, time.Minute)
	anon.idGenerated = true
	sp.add(anon, `Two.`)
	sp.mu.Lock()
	sp.recs["damaged"] = SpoolRecord{Key: "damaged", Record: []byte{9, 9, 9}, Received: t0.Add(-10 * time.Second)}
	sp.mu.Unlock()

	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	e := h.waitEvent("first", EventFinished)
	if e.Owner != "anna" {
		t.Errorf("owner %q after replay, want anna", e.Owner)
	}
	h.waitEvent("0123456789abcdef", EventFinished)
	if e := h.waitEvent("expired", EventDropped); e.Reason != ReasonExpired {
		t.Errorf("expired record: reason %q", e.Reason)
	}
	if e := h.waitEvent("damaged", EventFailed); e.Reason != ReasonSpool {
		t.Errorf("damaged record: reason %q", e.Reason)
	}
	// The broker sends the message of "first" again (it was spooled but
	// not acknowledged when the daemon died): it must not play twice.
	h.send("say", `{"id":"first","text":"One."}`)
	h.send("say", `{"id":"after","text":"Three."}`)
	h.waitEvent("after", EventFinished)
	if got := h.eng.texts(); !slices.Equal(got, []string{"One.", "Two.", "Three."}) {
		t.Errorf("spoken %q, want replayed in order, each once", got)
	}
	if q := h.eventsOf("first"); !slices.Equal(q, []string{EventQueued, EventStarted, EventFinished}) {
		t.Errorf("events of first: %v", q)
	}
	for _, ev := range h.events() {
		if ev.State == EventQueued && ev.ID != "after" && !ev.Replayed {
			t.Errorf("queued event of %s not marked replayed", ev.ID)
		}
	}
	waitFor(t, "spool emptied", func() bool { return sp.len() == 0 })
}

func TestShutdownKeepsSpooledRequests(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	release := h.sink.block()
	defer release()
	for _, id := range []string{"a", "b", "c"} {
		h.send("say", `{"id":"`+id+`","text":"Words."}`)
	}
	h.waitWriting(1)
	waitFor(t, "three spooled", func() bool { return sp.len() == 3 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	for _, e := range h.events() {
		if e.State == EventDropped {
			t.Errorf("dropped event %+v: spooled requests are kept for the next start", e)
		}
	}
	if n := sp.len(); n != 3 {
		t.Errorf("%d records after shutdown, want 3 (the playing one too)", n)
	}
}

func TestSpoolRecordRoundTrip(t *testing.T) {
	for _, r := range []Request{
		{ID: "kitchen-1"},
		{ID: "0011223344556677", idGenerated: true, Owner: "anna"},
		{ID: strings.Repeat("x", MaxNameBytes), Owner: strings.Repeat("o", MaxNameBytes)},
		{ID: "all-1", Group: "downstairs"},
	} {
		payload := []byte(`{"text":"Dinner is ready."}`)
		got, err := decodeSpoolRecord(encodeSpoolRecord(&r, payload))
		if err != nil {
			t.Fatalf("%+v: %v", r, err)
		}
		if got.id != r.ID || got.idGenerated != r.idGenerated || got.owner != r.Owner || got.group != r.Group || string(got.payload) != string(payload) {
			t.Errorf("round trip of %+v gave %+v", r, got)
		}
	}
}

func TestDecodeSpoolRecordRejects(t *testing.T) {
	good := encodeSpoolRecord(&Request{ID: "a", Owner: "b"}, []byte("hi"))
	for _, tc := range []struct {
		name string
		rec  []byte
	}{
		{"empty", nil},
		{"version only", []byte{1}},
		{"other version", append([]byte{2}, good[1:]...)},
		{"unknown flag", append([]byte{1, 4}, good[2:]...)},
		{"group flag without a group", append([]byte{1, 2}, good[2:]...)},
		{"bad group", encodeSpoolRecord(&Request{ID: "a", Group: "up+stairs"}, []byte("hi"))},
		{"no id", []byte{1, 0, 0, 0}},
		{"id longer than the record", []byte{1, 0, 50, 'a'}},
		{"id over MaxNameBytes", append([]byte{1, 0, MaxNameBytes + 1}, make([]byte, MaxNameBytes+3)...)},
		{"id not UTF-8", []byte{1, 0, 1, 0xff, 0}},
		{"client id with a slash", []byte{1, 0, 3, 'a', '/', 'b', 0}},
		{"owner cut off", []byte{1, 0, 1, 'a', 5, 'b'}},
		{"owner bad name", []byte{1, 0, 1, 'a', 2, '.', '/'}},
		{"overlong varint", []byte{1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01}},
		{"too large", make([]byte, maxSpoolRecord+1)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := decodeSpoolRecord(tc.rec); !errors.Is(err, errBadSpoolRecord) {
				t.Errorf("got %v, want errBadSpoolRecord", err)
			}
		})
	}
}

func FuzzDecodeSpoolRecord(f *testing.F) {
	f.Add(encodeSpoolRecord(&Request{ID: "a", Owner: "b"}, []byte("hi")))
	f.Add(encodeSpoolRecord(&Request{ID: "0011223344556677", idGenerated: true}, []byte(`{"text":"x"}`)))
	f.Add(encodeSpoolRecord(&Request{ID: "g1", Group: "downstairs"}, []byte(`{"text":"x","play_at":1}`)))
	f.Add([]byte{1, 0, 0x80})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := decodeSpoolRecord(b)
		if err != nil {
			if !errors.Is(err, errBadSpoolRecord) {
				t.Fatalf("error %v does not wrap errBadSpoolRecord", err)
			}
			return
		}
		r := Request{ID: s.id, idGenerated: s.idGenerated, Owner: s.owner, Group: s.group}
		again, err := decodeSpoolRecord(encodeSpoolRecord(&r, s.payload))
		if err != nil || again.id != s.id || again.owner != s.owner || again.group != s.group || string(again.payload) != string(s.payload) {
			t.Fatalf("re-encoding %+v gave %+v, %v", s, again, err)
		}
	})
}

// warnings returns the warning events published with reason.
func (h *harness) warnings(reason string) []Event {
	var out []Event
	for _, e := range h.events() {
		if e.State == EventWarning && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

func TestUnavailableCacheAndSpoolAreReported(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.CacheError = errors.New("open cache: open /var/lib/mynah/cache.db: read-only file system")
		o.SpoolError = errors.New("open spool: open /var/lib/mynah/spool.db: read-only file system")
	}).start()
	waitFor(t, "two warnings", func() bool {
		return len(h.warnings(ReasonCacheUnavailable)) == 1 && len(h.warnings(ReasonSpoolUnavailable)) == 1
	})
	if e := h.warnings(ReasonSpoolUnavailable)[0]; !strings.Contains(e.Error, "read-only file system") || !strings.Contains(e.Error, "crash") {
		t.Errorf("spool warning %q: want the cause and what it means", e.Error)
	}
	var acks ackCounter
	h.sendMsg(acks.msg("say", `{"id":"r1","text":"Hello."}`))
	if acks.n.Load() != 1 {
		t.Error("without a spool a say must be acknowledged at once")
	}
	h.waitEvent("r1", EventFinished)
	s := h.lastState()
	if s.Cache == nil || s.Cache.Available || !strings.Contains(s.Cache.Error, "cache.db") {
		t.Errorf("state cache %+v: want available false with the error", s.Cache)
	}
	if s.Spool == nil || s.Spool.Available || !strings.Contains(s.Spool.Error, "spool.db") {
		t.Errorf("state spool %+v: want available false with the error", s.Spool)
	}
}

func TestSpoolWriteFailuresWarnOncePerOutage(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	h.send("say", `{"id":"ok1","text":"x"}`)
	h.waitEvent("ok1", EventFinished)
	if s := h.lastState(); s.Spool == nil || !s.Spool.Available {
		t.Fatalf("state spool %+v, want available", s.Spool)
	}
	sp.mu.Lock()
	sp.putErr = errors.New("spool put: write failed: read-only file system")
	sp.mu.Unlock()
	for _, id := range []string{"f1", "f2", "f3"} {
		h.send("say", `{"id":"`+id+`","text":"x"}`)
		h.waitEvent(id, EventFinished) // spoken all the same
	}
	waitFor(t, "the warning", func() bool { return len(h.warnings(ReasonSpoolUnavailable)) == 1 })
	waitFor(t, "the state", func() bool { s := h.lastState(); return s.Spool != nil && !s.Spool.Available })
	sp.mu.Lock()
	sp.putErr = nil
	sp.mu.Unlock()
	h.send("say", `{"id":"ok2","text":"x"}`)
	h.waitEvent("ok2", EventFinished)
	waitFor(t, "available again", func() bool { s := h.lastState(); return s.Spool != nil && s.Spool.Available })
	if n := len(h.warnings(ReasonSpoolUnavailable)); n != 1 {
		t.Errorf("%d warnings for one outage, want 1", n)
	}
}

// The records a damaged spool file lost are reported under the ids of
// their requests (the key without its receive time), and the warning is
// the cause as measured. Before, the failed event carried the spool key
// ("m3x8…-kitchen-1"), which no client knows.
func TestSpoolLostIsReported(t *testing.T) {
	h := newHarness(t, nil)
	at := time.Unix(1750000000, 123)
	h.d.SpoolLost([]SpoolRecord{
		{Key: spoolKey(&Request{ID: "kitchen-1", Received: at}), Received: at},
		{Key: "broken-1", Received: at}, // not a key of spoolKey's form: as it is
	}, errors.New("spool file damaged: 5 carried over, 2 lost (ids reported failed), 1 unreadable"))
	h.start()
	for _, id := range []string{"kitchen-1", "broken-1"} {
		if e := h.waitEvent(id, EventFailed); e.Reason != ReasonSpool {
			t.Errorf("lost request: %+v", e)
		}
	}
	waitFor(t, "the warning", func() bool { return len(h.warnings(ReasonSpoolCorrupt)) == 1 })
	if e := h.warnings(ReasonSpoolCorrupt)[0]; !strings.Contains(e.Error, "5 carried over, 2 lost (ids reported failed), 1 unreadable") {
		t.Errorf("warning %q", e.Error)
	}
}

func TestSpooledID(t *testing.T) {
	at := time.Unix(1750000000, 5)
	for _, c := range []struct{ key, want string }{
		{spoolKey(&Request{ID: "a-b", Received: at}), "a-b"},
		{spoolKey(&Request{ID: "x", Received: at.Add(1)}), spoolKey(&Request{ID: "x", Received: at.Add(1)})}, // another time
		{"broken-1", "broken-1"},
		{"nodash", "nodash"},
		{strconv.FormatInt(at.UnixNano(), 36) + "-", strconv.FormatInt(at.UnixNano(), 36) + "-"},
	} {
		if got := spooledID(c.key, at); got != c.want {
			t.Errorf("spooledID(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// A flood that fills the spool (ErrSpoolFull) is an outage that ends by
// itself: once the queue has drained, the state reports the spool
// available again, without waiting for the next say (issue 22: the
// retained state kept "spool is full" while idle). A disk error does not
// end so: it stays until a write succeeds.
func TestSpoolFullClearsWhenTheQueueDrains(t *testing.T) {
	sp := newSpoolRec()
	h := newHarness(t, func(o *Options) { o.Spool = &sp.fake }).start()
	sp.mu.Lock()
	sp.putErr = fmt.Errorf("%w: 1024 records", ErrSpoolFull)
	sp.mu.Unlock()
	for _, id := range []string{"f1", "f2", "f3"} {
		h.send("say", `{"id":"`+id+`","text":"x"}`)
	}
	waitFor(t, "the warning", func() bool { return len(h.warnings(ReasonSpoolUnavailable)) == 1 })
	for _, id := range []string{"f1", "f2", "f3"} {
		h.waitEvent(id, EventFinished)
	}
	sp.mu.Lock()
	puts := sp.puts
	sp.mu.Unlock()
	waitFor(t, "the state's spool available after the drain", func() bool {
		s := h.lastState()
		return s.Spool != nil && s.Spool.Available && s.Queue == 0
	})
	if sp.mu.Lock(); sp.puts != puts {
		t.Errorf("the spool was written after the drain (%d puts, %d before): the state must clear by itself", sp.puts, puts)
	}
	sp.mu.Unlock()

	if n := len(h.warnings(ReasonSpoolUnavailable)); n != 1 {
		t.Errorf("%d warnings for one flood, want 1", n)
	}

	sp.mu.Lock()
	sp.putErr = nil
	sp.mu.Unlock()
	h.send("say", `{"id":"ok","text":"x"}`) // the outage ends
	h.waitEvent("ok", EventFinished)
	sp.mu.Lock()
	sp.putErr = errors.New("spool put: write failed: read-only file system")
	sp.mu.Unlock()
	h.send("say", `{"id":"d1","text":"x"}`)
	h.waitEvent("d1", EventFinished)
	waitFor(t, "the second outage's warning", func() bool { return len(h.warnings(ReasonSpoolUnavailable)) == 2 })
	h.d.spoolDrained() // as settle does, after the drain
	if st := h.d.spoolStatus(); st == nil || st.Available || !strings.Contains(st.Error, "read-only") {
		t.Errorf("spool status %+v after a disk error and a drain, want the error kept", st)
	}
}
