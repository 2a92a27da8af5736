package engine

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type fakeProbe struct{ avail *atomic.Int64 }

func (p fakeProbe) Available() (int64, bool) { return p.avail.Load(), true }

func TestSessionsMemoryPressure(t *testing.T) {
	l := newFakeLoader()
	l.size = func(string) int64 { return 30 }
	avail := &atomic.Int64{}
	avail.Store(1000)
	s := newTestSessions(t, l, lruOptions[*fakeSession]{
		MaxCount: -1,
		Memory:   fakeProbe{avail},
		LowWater: 100,
		ProbeGap: -1,
	})
	for _, k := range []string{"a", "b", "c", "d"} {
		touch(t, s, k)
	}
	_, releaseD := get(t, s, "d")
	touch(t, s, "a") // order, least recent first: b, c, d (in use), a

	// 50 bytes short: the two least recently used idle sessions cover it.
	avail.Store(50)
	touch(t, s, "a")
	wantCached(t, s, "a", "d")
	if got := l.closedKeys(); len(got) != 2 || got[0] != "b" || got[1] != "c" {
		t.Errorf("closed %v, want [b c]", got)
	}
	// Still short, but d is in use: only a can go, on the next load.
	touch(t, s, "e")
	wantCached(t, s, "d", "e")
	releaseD()
	if st := s.Stats(); st.PressureEvictions != 3 || st.Evictions != 3 {
		t.Errorf("stats %+v, want 3 pressure evictions", st)
	}
	// Enough memory again: nothing more is closed.
	avail.Store(1000)
	touch(t, s, "f")
	wantCached(t, s, "d", "e", "f")
}

func TestSessionsMemoryPressureUnknownSizes(t *testing.T) {
	l := newFakeLoader() // sizes 0: one session goes per check
	avail := &atomic.Int64{}
	avail.Store(1000)
	s := newTestSessions(t, l, lruOptions[*fakeSession]{
		MaxCount: -1, Memory: fakeProbe{avail}, LowWater: 100, ProbeGap: -1,
	})
	for _, k := range []string{"a", "b", "c"} {
		touch(t, s, k)
	}
	avail.Store(10)
	touch(t, s, "c")
	wantCached(t, s, "b", "c")
}

type countingProbe struct{ calls atomic.Int32 }

func (p *countingProbe) Available() (int64, bool) { p.calls.Add(1); return 1 << 30, true }

func TestSessionsProbeGap(t *testing.T) {
	for _, tt := range []struct {
		gap  time.Duration
		want int32
	}{
		{gap: time.Hour, want: 2}, // the two loads only
		{gap: -1, want: 4},        // and both warm Gets
	} {
		t.Run(fmt.Sprint(tt.gap), func(t *testing.T) {
			p := &countingProbe{}
			s := newTestSessions(t, newFakeLoader(), lruOptions[*fakeSession]{
				Memory: p, LowWater: 100, ProbeGap: tt.gap,
			})
			touch(t, s, "a")
			touch(t, s, "a")
			touch(t, s, "b")
			touch(t, s, "b")
			if n := p.calls.Load(); n != tt.want {
				t.Errorf("probed %d times, want %d", n, tt.want)
			}
		})
	}
}

func TestSessionsMemoryTicker(t *testing.T) {
	l := newFakeLoader()
	avail := &atomic.Int64{}
	avail.Store(1000)
	s := newTestSessions(t, l, lruOptions[*fakeSession]{
		Memory: fakeProbe{avail}, LowWater: 100, MemoryInterval: time.Millisecond,
	})
	touch(t, s, "a")
	touch(t, s, "b")
	avail.Store(0)
	// No Get from here on: only the ticker can close them.
	waitFor(t, "the ticker to close idle sessions", func() bool { return s.Len() == 0 })
}
