package main

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
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
