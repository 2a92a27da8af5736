package daemon

import (
	"strings"
	"testing"
)

// An unsynchronized clock is one warning for the whole outage and the
// state's clock object; a synchronized one again only the state.
func TestClockChangedWarnsOncePerOutage(t *testing.T) {
	h := newHarness(t, nil).start()
	waitFor(t, "first state", func() bool { return len(h.tr.on("mynah/test/state")) > 0 })
	if s := h.lastState(); s.Clock != nil {
		t.Fatalf("state before any check has clock %+v, want none", s.Clock)
	}

	unsynced := ClockStatus{MaxErrorMS: 16000, Source: "adjtimex"}
	h.d.ClockChanged(unsynced)
	waitFor(t, "warning", func() bool { return len(h.warnings(ReasonClockUnsynced)) == 1 })
	e := h.warnings(ReasonClockUnsynced)[0]
	if e.ID != "" || !strings.Contains(e.Error, "not synchronized") || !strings.Contains(e.Error, "same LAN time server") ||
		!strings.Contains(e.Error, "timedatectl") {
		t.Errorf("warning %+v: want no id and an error that says what to do", e)
	}
	waitFor(t, "state says unsynced", func() bool {
		s := h.lastState()
		return s.Clock != nil && *s.Clock == unsynced && s.LastError != nil && s.LastError.Reason == ReasonClockUnsynced
	})

	// Still unsynchronized, with a grown error bound: the state follows,
	// the warning is not repeated.
	later := ClockStatus{MaxErrorMS: 16500, Source: "adjtimex"}
	h.d.ClockChanged(later)
	waitFor(t, "state follows", func() bool { s := h.lastState(); return s.Clock != nil && *s.Clock == later })

	synced := ClockStatus{Synced: true, MaxErrorMS: 12.5, Source: "adjtimex"}
	h.d.ClockChanged(synced)
	waitFor(t, "state says synced", func() bool { s := h.lastState(); return s.Clock != nil && *s.Clock == synced })
	if n := len(h.warnings(ReasonClockUnsynced)); n != 1 {
		t.Errorf("%d clock_unsynced warnings, want 1 for one outage", n)
	}

	// A second outage is warned of again.
	h.d.ClockChanged(unsynced)
	waitFor(t, "second warning", func() bool { return len(h.warnings(ReasonClockUnsynced)) == 2 })
}

// A synchronized clock at the first check is the state alone.
func TestClockChangedSyncedIsQuiet(t *testing.T) {
	h := newHarness(t, nil).start()
	synced := ClockStatus{Synced: true, MaxErrorMS: 3, Source: "adjtimex"}
	h.d.ClockChanged(synced)
	waitFor(t, "state says synced", func() bool { s := h.lastState(); return s.Clock != nil && *s.Clock == synced })
	h.d.ClockChanged(synced)
	if w := h.warnings(ReasonClockUnsynced); len(w) != 0 {
		t.Errorf("warnings %+v for a synchronized clock", w)
	}
	if s := h.lastState(); s.LastError != nil {
		t.Errorf("last_error %+v for a synchronized clock", s.LastError)
	}
}

// A check that fails is the state's error and one warning, however often
// it fails; it never counts as synchronized.
func TestClockChangedProbeError(t *testing.T) {
	h := newHarness(t, nil).start()
	const eperm = "read the clock's synchronization state (adjtimex): operation not permitted"
	for range 3 {
		h.d.ClockChanged(ClockStatus{Synced: true, Source: "adjtimex", Error: eperm})
	}
	waitFor(t, "state says error", func() bool {
		s := h.lastState()
		return s.Clock != nil && !s.Clock.Synced && s.Clock.Error == eperm
	})
	w := h.warnings(ReasonClockUnsynced)
	if len(w) != 1 || !strings.Contains(w[0].Error, eperm) || !strings.Contains(w[0].Error, "timedatectl") {
		t.Errorf("warnings %+v, want one clock_unsynced carrying the error and what to do", w)
	}
	// An unsynchronized clock after a failed check is the same outage.
	h.d.ClockChanged(ClockStatus{Source: "adjtimex", MaxErrorMS: 16000})
	waitFor(t, "state says unsynced", func() bool { s := h.lastState(); return s.Clock != nil && s.Clock.Error == "" })
	if n := len(h.warnings(ReasonClockUnsynced)); n != 1 {
		t.Errorf("%d clock_unsynced warnings, want 1", n)
	}
}
