package main

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/clockprobe"
)

// TestClockProbe reads this machine's clock state. Whether it is
// synchronized depends on the machine, so only the shape is checked.
func TestClockProbe(t *testing.T) {
	st, err := probeClock()
	if runtime.GOOS != "linux" {
		if !errors.Is(err, errors.ErrUnsupported) {
			t.Fatalf("probeClock() = %+v, %v; want errors.ErrUnsupported off Linux", st, err)
		}
		return
	}
	if err != nil {
		t.Fatalf("probeClock() = %v", err)
	}
	if st.Source != "adjtimex" || st.MaxError < 0 || st.EstError < 0 {
		t.Errorf("probeClock() = %+v; want source adjtimex and errors ≥ 0", st)
	}
	t.Logf("clock: %+v", st)
}

// watchClock checks at once, then on every tick, and reports a failed
// check as the state's error.
func TestWatchClock(t *testing.T) {
	probes := []struct {
		st  clockStatus
		err error
	}{
		{clockStatus{MaxError: 16 * time.Second, Source: "adjtimex"}, nil},
		{clockStatus{}, errors.New("read the clock's synchronization state (adjtimex): operation not permitted")},
		{clockStatus{Synced: true, MaxError: 12500 * time.Microsecond, EstError: time.Millisecond, Source: "adjtimex"}, nil},
	}
	want := []daemon.ClockStatus{
		{MaxErrorMS: 16000, Source: "adjtimex"},
		{Error: "read the clock's synchronization state (adjtimex): operation not permitted"},
		{Synced: true, MaxErrorMS: 12.5, Source: "adjtimex"},
	}
	ctx, cancel := context.WithCancel(context.Background())
	var got []daemon.ClockStatus
	n := 0
	probe := func() (clockStatus, error) {
		p := probes[n]
		n++
		return p.st, p.err
	}
	report := func(st daemon.ClockStatus) {
		got = append(got, st)
		if len(got) == len(want) {
			cancel()
		}
	}
	done := make(chan struct{})
	go func() { defer close(done); watchClock(ctx, time.Millisecond, probe, report) }()
	select {
	case <-done:
	case <-time.After(wait):
		t.Fatal("watchClock did not stop with its context")
	}
	if !slices.Equal(got, want) {
		t.Errorf("reports %+v, want %+v", got, want)
	}
}

// A probe round becomes the state's offset fields, in milliseconds.
func TestClockOffsetOfReport(t *testing.T) {
	r := clockprobe.Report{
		Peers: []clockprobe.Peer{
			{Node: "attic", Offset: -10 * time.Millisecond, Delay: 900 * time.Microsecond, Samples: 8},
			{Node: "hall", Offset: 25 * time.Millisecond, Delay: 1200 * time.Microsecond, Samples: 7},
		},
		Offset: 7500 * time.Microsecond, MaxOffset: 25 * time.Millisecond, MaxDelay: 1200 * time.Microsecond,
	}
	want := daemon.ClockOffset{OffsetMS: 7.5, MaxOffsetMS: 25, DelayMS: 1.2, Peers: 2}
	if got := clockOffset(r); got != want {
		t.Errorf("clockOffset = %+v, want %+v", got, want)
	}
	if got := clockOffset(clockprobe.Report{}); got != (daemon.ClockOffset{}) {
		t.Errorf("clockOffset of a round no one answered = %+v, want zero", got)
	}
}
