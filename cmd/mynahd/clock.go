package main

import "time"

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
