package daemon

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"
)

// fakeInstaller is an Installer made of function fields.
type fakeInstaller struct {
	InstallableFunc func(name string) bool
	InstallFunc     func(ctx context.Context, name string, progress func(InstallProgress)) (string, error)
}

var _ Installer = (*fakeInstaller)(nil)

func (f *fakeInstaller) Installable(name string) bool { return f.InstallableFunc(name) }
func (f *fakeInstaller) Install(ctx context.Context, name string, progress func(InstallProgress)) (string, error) {
	return f.InstallFunc(ctx, name, progress)
}

// installRec is a catalog of "carol" and "dave" (and an alias "c" of
// carol) over the harness engine's voices: an install waits for gate
// when set, reports two progress steps, and adds the voice to the
// engine's list. fail, when set, is what an install returns instead.
type installRec struct {
	mu     sync.Mutex
	voices []string // the engine's
	calls  []string
	gate   chan struct{}
	fail   error
	fake   fakeInstaller
}

func newInstallRec(h *harness) *installRec {
	r := &installRec{voices: []string{"alice", "bob"}}
	h.eng.fake.VoicesFunc = func() []string {
		r.mu.Lock()
		defer r.mu.Unlock()
		return slices.Clone(r.voices)
	}
	r.fake.InstallableFunc = func(name string) bool { return name == "carol" || name == "dave" }
	r.fake.InstallFunc = func(ctx context.Context, name string, progress func(InstallProgress)) (string, error) {
		r.mu.Lock()
		r.calls = append(r.calls, name)
		gate, fail := r.gate, r.fail
		r.mu.Unlock()
		if name == "c" {
			name = "carol"
		}
		if !r.fake.InstallableFunc(name) {
			return "", fmt.Errorf("%w %q (nearest: carol, dave)", ErrUnknownVoice, name)
		}
		if progress != nil {
			progress(InstallProgress{File: name + ".onnx", Bytes: 10, Total: 20})
		}
		if gate != nil {
			select {
			case <-gate:
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
		if fail != nil {
			return "", fail
		}
		if progress != nil {
			progress(InstallProgress{File: name + ".onnx", Bytes: 20, Total: 20})
		}
		r.mu.Lock()
		if !slices.Contains(r.voices, name) {
			r.voices = append(r.voices, name)
		}
		r.mu.Unlock()
		return name, nil
	}
	return r
}

func (r *installRec) installs() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// installHarness is a started harness whose daemon has an installRec.
func installHarness(t *testing.T, modify func(*Options)) (*harness, *installRec) {
	t.Helper()
	var rec *installRec
	h := newHarness(t, func(o *Options) {
		if modify != nil {
			modify(o)
		}
	})
	rec = newInstallRec(h)
	h.d.opts.Installer = &rec.fake
	return h.start(), rec
}

// A say for a voice being installed waits outside the queue: another
// request plays meanwhile, and it is spoken once the voice is there, in
// its voice; the voice is then offered like any other.
func TestSayWaitsForItsVoice(t *testing.T) {
	h, rec := installHarness(t, nil)
	gate := make(chan struct{})
	rec.mu.Lock()
	rec.gate = gate
	rec.mu.Unlock()

	h.send("say", `{"text":"Hello from carol.","voice":"carol","id":"c1"}`)
	waitFor(t, "the install", func() bool { return len(rec.installs()) == 1 })
	h.send("say", `{"text":"Meanwhile.","id":"a1"}`)
	h.waitEvent("a1", EventFinished)
	if got := h.eventsOf("c1"); len(got) != 0 {
		t.Fatalf("c1 has events %v before its voice is there", got)
	}
	close(gate)
	h.waitEvent("c1", EventFinished)
	if got := h.eventsOf("c1"); !slices.Equal(got, []string{EventQueued, EventStarted, EventFinished}) {
		t.Errorf("c1 events %v", got)
	}
	if v := h.eng.last().Voice; v != "carol" {
		t.Errorf("spoken in %q, want carol", v)
	}
	// The next one finds the voice installed: queued at once.
	h.send("say", `{"text":"Again.","voice":"carol","id":"c2"}`)
	h.waitEvent("c2", EventFinished)
	waitFor(t, "carol in the state", func() bool { return slices.Contains(h.lastState().Voices, "carol") })
	if got := rec.installs(); !slices.Equal(got, []string{"carol"}) {
		t.Errorf("installs %v, want one of carol", got)
	}
}

// A say whose voice is not there within DownloadTimeout fails
// voice_downloading; an install that fails reports its reason; without
// an installer, or for a voice it cannot install, unknown_voice as
// before, and nothing is installed.
func TestSayVoiceNotInstalled(t *testing.T) {
	t.Run("timeout", func(t *testing.T) {
		h, rec := installHarness(t, func(o *Options) { o.DownloadTimeout = 20 * time.Millisecond })
		rec.mu.Lock()
		rec.gate = make(chan struct{}) // never opens
		rec.mu.Unlock()
		h.send("say", `{"text":"Hi.","voice":"carol","id":"c1"}`)
		e := h.waitEvent("c1", EventFailed)
		if e.Reason != ReasonVoiceDownloading || !strings.Contains(e.Error, "carol") {
			t.Errorf("event %+v, want voice_downloading", e)
		}
	})
	t.Run("install fails", func(t *testing.T) {
		h, rec := installHarness(t, nil)
		rec.mu.Lock()
		rec.fail = errors.New("GET voices.json: 404 Not Found")
		rec.mu.Unlock()
		h.send("say", `{"text":"Hi.","voice":"dave","id":"d1"}`)
		if e := h.waitEvent("d1", EventFailed); e.Reason != ReasonDownload || !strings.Contains(e.Error, "404") {
			t.Errorf("event %+v, want download", e)
		}
	})
	t.Run("not in the catalog", func(t *testing.T) {
		h, rec := installHarness(t, nil)
		h.send("say", `{"text":"Hi.","voice":"erin","id":"e1"}`)
		if e := h.waitEvent("e1", EventFailed); e.Reason != ReasonUnknownVoice {
			t.Errorf("event %+v, want unknown_voice", e)
		}
		if got := rec.installs(); len(got) != 0 {
			t.Errorf("installs %v, want none", got)
		}
	})
	t.Run("no installer", func(t *testing.T) {
		h := newHarness(t, nil).start()
		h.send("say", `{"text":"Hi.","voice":"carol","id":"c1"}`)
		if e := h.waitEvent("c1", EventFailed); e.Reason != ReasonUnknownVoice {
			t.Errorf("event %+v, want unknown_voice", e)
		}
	})
}

// Two requests with one id waiting for a voice are spoken once.
func TestWaitingDuplicateSpokenOnce(t *testing.T) {
	h, rec := installHarness(t, nil)
	gate := make(chan struct{})
	rec.mu.Lock()
	rec.gate = gate
	rec.mu.Unlock()
	h.send("say", `{"text":"Once.","voice":"carol","id":"x"}`)
	h.send("say", `{"text":"Once.","voice":"carol","id":"x"}`)
	waitFor(t, "both waiting", func() bool { return len(rec.installs()) == 2 })
	close(gate)
	h.waitEvent("x", EventFinished)
	h.send("say", `{"text":"Marker.","id":"m"}`)
	h.waitEvent("m", EventFinished)
	if got := h.eventsOf("x"); !slices.Equal(got, []string{EventQueued, EventStarted, EventFinished}) {
		t.Errorf("x events %v, want one run", got)
	}
}

// voice/install answers done with the voice installed, after progress
// news under the same id; a name the catalog lacks fails unknown_voice
// with the nearest names; without an installer not_supported.
func TestVoiceInstallCommand(t *testing.T) {
	h, rec := installHarness(t, nil)
	h.send("voice/install", `{"name":"c","id":"i1"}`)
	done := h.waitEvent("i1", EventDone)
	if done.Command != cmdInstall || done.Voice != "carol" {
		t.Errorf("done %+v, want voice carol", done)
	}
	var progress []int64
	for _, e := range h.events() {
		if e.ID == "i1" && e.State == EventDownloading && e.Download != nil {
			progress = append(progress, e.Download.Bytes)
		}
	}
	if !slices.Equal(progress, []int64{10, 20}) {
		t.Errorf("progress %v, want 10 then 20", progress)
	}
	if got := h.eventsOf("i1"); got[len(got)-1] != EventDone {
		t.Errorf("i1 events %v: done must come last", got)
	}
	waitFor(t, "carol offered", func() bool { return slices.Contains(h.lastState().Voices, "carol") })

	h.send("voice/install", "erin")
	e := h.waitCommand(cmdInstall, EventFailed)
	if e.Reason != ReasonUnknownVoice || !strings.Contains(e.Error, "carol, dave") {
		t.Errorf("failed %+v, want unknown_voice with the nearest names", e)
	}
	if got := rec.installs(); !slices.Equal(got, []string{"c", "erin"}) {
		t.Errorf("installs %v", got)
	}

	h.send("voice/install", `{"id":"i2"}`)
	if e := h.waitEvent("i2", EventFailed); e.Reason != ReasonBadName {
		t.Errorf("no name: %+v, want bad_name", e)
	}

	off := newHarness(t, nil).start()
	off.send("voice/install", `{"name":"carol","id":"i3"}`)
	if e := off.waitEvent("i3", EventFailed); e.Reason != ReasonNotSupported {
		t.Errorf("without an installer: %+v, want not_supported", e)
	}
}

func TestParseInstallPayload(t *testing.T) {
	for _, tc := range []struct {
		payload, name, id, reason string
	}{
		{"en_US-lessac-medium", "en_US-lessac-medium", "", ""},
		{"  en_US \n", "en_US", "", ""},
		{"\ufeffde-thorsten-medium", "de-thorsten-medium", "", ""},
		{`{"name":"en_US-amy-low"}`, "en_US-amy-low", "", ""},
		{`{"name":" en_GB ","id":"ha-7"}`, "en_GB", "ha-7", ""},
		{`{"name":"a","id":"b","other":1}`, "a", "b", ""},
		{"", "", "", ReasonBadName},
		{"../etc", "", "", ReasonBadName},
		{"a/b", "", "", ReasonBadName},
		{strings.Repeat("v", MaxNameBytes+1), "", "", ReasonBadName},
		{strings.Repeat(" ", maxInstallBytes+1), "", "", ReasonTooLarge},
		{`{"name":1}`, "", "", ReasonInvalidJSON},
		{`{"name":"a"`, "", "", ReasonInvalidJSON},
		{`{"id":"x"}`, "", "x", ReasonBadName},
		{`{"name":"../x","id":"y"}`, "", "y", ReasonBadName},
		{`{"name":"a","id":"bad id!"}`, "", "", ReasonBadName},
	} {
		name, id, err := ParseInstallPayload([]byte(tc.payload))
		reason := ""
		if de := (*DecodeError)(nil); errors.As(err, &de) {
			reason = de.Reason
		} else if err != nil {
			t.Errorf("%.40q: %v is not a DecodeError", tc.payload, err)
		}
		if name != tc.name || id != tc.id || reason != tc.reason {
			t.Errorf("%.40q: %q %q %q (%v), want %q %q %q", tc.payload, name, id, reason, err, tc.name, tc.id, tc.reason)
		}
		if err != nil && !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("%.40q: %v does not match ErrInvalidRequest", tc.payload, err)
		}
	}
}

// FuzzParseInstallPayload: whatever arrives, the parser returns a valid
// name or a DecodeError, and any id it returns is a valid name.
func FuzzParseInstallPayload(f *testing.F) {
	for _, s := range []string{"en_US-lessac-medium", `{"name":"a","id":"b"}`, `{"id":"x"}`, "", "{", `{"name":null}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		name, id, err := ParseInstallPayload(payload)
		if id != "" && ValidateName(id) != nil {
			t.Fatalf("id %q is not a valid name", id)
		}
		if err != nil {
			if de := (*DecodeError)(nil); !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error %v carries no reason", err)
			}
			if name != "" {
				t.Fatalf("name %q with error %v", name, err)
			}
			return
		}
		if ValidateName(name) != nil || !utf8.ValidString(name) {
			t.Fatalf("name %q is not a valid name", name)
		}
	})
}

// A say that was waiting for its voice when the daemon stopped waits for
// the install again after the restart (its record replayed from the
// spool), and is then spoken in that voice, marked replayed.
func TestReplayedSayWaitsForItsVoice(t *testing.T) {
	sp := newSpoolRec()
	h, rec := installHarness(t, func(o *Options) { o.Spool = &sp.fake; o.ShutdownTimeout = 200 * time.Millisecond })
	rec.mu.Lock()
	rec.gate = make(chan struct{}) // never opened: the download outlives this run
	rec.mu.Unlock()
	h.send("say", `{"text":"Hello from carol.","voice":"carol","id":"c1"}`)
	waitFor(t, "the install", func() bool { return len(rec.installs()) == 1 })
	waitFor(t, "the request spooled", func() bool { return sp.len() == 1 })
	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if n := sp.len(); n != 1 {
		t.Fatalf("%d spool records after the stop, want the waiting request's", n)
	}

	h2, rec2 := installHarness(t, func(o *Options) { o.Spool = &sp.fake })
	h2.waitEvent("c1", EventFinished)
	if got := rec2.installs(); !slices.Equal(got, []string{"carol"}) {
		t.Errorf("installs after the restart %v, want carol once", got)
	}
	if v := h2.eng.last().Voice; v != "carol" {
		t.Errorf("spoken in %q, want carol", v)
	}
	for _, e := range h2.events() {
		if e.ID == "c1" && e.State == EventQueued && !e.Replayed {
			t.Errorf("queued event of c1 not marked replayed: %+v", e)
		}
	}
	waitFor(t, "the record deleted", func() bool { return sp.len() == 0 })
}
