package daemon

import (
	"strings"
	"testing"
	"time"
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

// The clock probe's offset joins the check's status in the state's clock
// object; an offset over the limit is one clock_offset warning until a
// round finds the clock back, and a round no member answered changes
// nothing but the state.
func TestClockOffsetWarnsOncePerExcursion(t *testing.T) {
	h := newHarness(t, nil).start() // MaxLate 50 ms: the limit is 25 ms
	synced := ClockStatus{Synced: true, MaxErrorMS: 3, Source: "adjtimex"}
	h.d.ClockChanged(synced)
	inStep := ClockOffset{OffsetMS: 3.2, MaxOffsetMS: -4.5, DelayMS: 1.5, Peers: 2}
	h.d.ClockOffsetChanged(inStep)
	waitFor(t, "state has the offset", func() bool {
		s := h.lastState()
		return s.Clock != nil && s.Clock.ClockOffset != nil && *s.Clock.ClockOffset == inStep &&
			s.Clock.Synced && s.Clock.Source == "adjtimex"
	})

	behind := ClockOffset{OffsetMS: 30, MaxOffsetMS: 31, DelayMS: 2, Peers: 3}
	h.d.ClockOffsetChanged(behind)
	waitFor(t, "warning", func() bool { return len(h.warnings(ReasonClockOffset)) == 1 })
	if e := h.warnings(ReasonClockOffset)[0]; !strings.Contains(e.Error, "30.0 ms behind") || !strings.Contains(e.Error, "3 members") ||
		!strings.Contains(e.Error, "announcements late") || !strings.Contains(e.Error, "chronyc tracking") {
		t.Errorf("warning %q: want how far, which way, and what to do", e.Error)
	}
	h.d.ClockOffsetChanged(ClockOffset{OffsetMS: 40, MaxOffsetMS: 41, DelayMS: 2, Peers: 3})
	alone := ClockOffset{}
	h.d.ClockOffsetChanged(alone)
	waitFor(t, "state says no peers", func() bool {
		s := h.lastState()
		return s.Clock != nil && s.Clock.ClockOffset != nil && *s.Clock.ClockOffset == alone
	})
	if n := len(h.warnings(ReasonClockOffset)); n != 1 {
		t.Errorf("%d clock_offset warnings, want 1 for one excursion", n)
	}

	h.d.ClockOffsetChanged(inStep)
	h.d.ClockOffsetChanged(ClockOffset{OffsetMS: -26, MaxOffsetMS: -26, DelayMS: 1, Peers: 1})
	waitFor(t, "second warning", func() bool { return len(h.warnings(ReasonClockOffset)) == 2 })
	if e := h.warnings(ReasonClockOffset)[1]; !strings.Contains(e.Error, "26.0 ms ahead of") || !strings.Contains(e.Error, "early") {
		t.Errorf("warning %q: want ahead and early", e.Error)
	}
	if n := len(h.warnings(ReasonClockUnsynced)); n != 0 {
		t.Errorf("%d clock_unsynced warnings for a synchronized clock", n)
	}
}

// Without a check of its own (clock_check 0) the probe alone makes the
// clock object; before either there is none.
func TestClockOffsetWithoutCheck(t *testing.T) {
	h := newHarness(t, nil).start()
	if st := h.d.clockStatus(); st != nil {
		t.Fatalf("clock %+v before any report", st)
	}
	o := ClockOffset{OffsetMS: 1, DelayMS: 1, Peers: 1}
	h.d.ClockOffsetChanged(o)
	if st := h.d.clockStatus(); st == nil || st.ClockOffset == nil || *st.ClockOffset != o || st.Source != "" {
		t.Errorf("clock %+v, want the offset alone", st)
	}
}

func TestClockOffsetLimit(t *testing.T) {
	for _, tt := range []struct {
		maxLate, want time.Duration
	}{{0, 10 * time.Millisecond}, {DefaultMaxLate, 25 * time.Millisecond}, {time.Second, 500 * time.Millisecond}} {
		d := &Daemon{opts: Options{MaxLate: tt.maxLate}}
		if got := d.clockOffsetLimit(); got != tt.want {
			t.Errorf("max_late %v: limit %v, want %v", tt.maxLate, got, tt.want)
		}
	}
}
