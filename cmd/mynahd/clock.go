package main

import (
	"context"
	"time"

	"github.com/mynah-tts/mynah/daemon"
)

// clockStatus is what probeClock found out about the system clock. A
// group's members start one announcement at one instant of their own
// clocks (play_at), so they play in sync only as far as those clocks
// agree: every speaker of a group must take its time from the same time
// server, and one whose clock is not synchronized is out of step by as
// much as its clock has drifted.
type clockStatus struct {
	// Synced is whether the kernel counts the clock as synchronized to a
	// time server.
	Synced bool
	// MaxError is the kernel's bound on the clock's error, which grows
	// while no time server corrects it; EstError its estimate of the error.
	MaxError, EstError time.Duration
	// Source names where the status came from ("adjtimex").
	Source string
}

// watchClock checks the clock with probe at once and then every every,
// until ctx ends, and hands each finding to report (the daemon's
// ClockChanged, which warns once per outage). mynahd runs it only on a
// node in a group: a lone speaker has no one to be in step with.
func watchClock(ctx context.Context, every time.Duration, probe func() (clockStatus, error), report func(daemon.ClockStatus)) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		report(clockReport(probe()))
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// clockReport is the state's clock object for what probeClock returned.
func clockReport(st clockStatus, err error) daemon.ClockStatus {
	if err != nil {
		return daemon.ClockStatus{Source: st.Source, Error: err.Error()}
	}
	return daemon.ClockStatus{Synced: st.Synced, MaxErrorMS: float64(st.MaxError) / float64(time.Millisecond), Source: st.Source}
}
