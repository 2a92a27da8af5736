package daemon

import (
	"fmt"
	"math"
	"time"
)

// clockAdvice is what a clock_unsynced warning asks the user to do.
const clockAdvice = "every speaker of a group must take its time from the same LAN time server " +
	"(chrony or NTP); `timedatectl` shows whether this clock is synchronized"

// ClockChanged tells the daemon what a check of the system clock found
// (mynahd checks it every groups.clock_check on a node in a group): the
// state's clock object is st. A clock that is not synchronized, or a check
// that failed (st.Error), is one warning event clock_unsynced when the
// outage begins, at the first check or when a synchronized clock is
// found unsynchronized; further checks of the same outage only update the
// state, so a check that always fails (EPERM under a system call filter)
// does not flood the event topic. A synchronized clock after an outage is
// an info log line.
func (d *Daemon) ClockChanged(st ClockStatus) {
	if st.Error != "" {
		st.Synced = false
	}
	prev := d.clock.Swap(&st)
	wasOut := prev != nil && !prev.Synced
	switch {
	case st.Synced && wasOut:
		d.log.Info("system clock synchronized again", "max_error_ms", st.MaxErrorMS, "source", st.Source)
	case !st.Synced && !wasOut:
		d.Warn(ReasonClockUnsynced, clockProblem(st))
	}
	d.markState()
}

// clockProblem is the warning's error: what is wrong, and what to do.
func clockProblem(st ClockStatus) error {
	if st.Error != "" {
		return fmt.Errorf("cannot tell whether the system clock is synchronized, so a group's speakers may play out of step: %s; %s",
			st.Error, clockAdvice)
	}
	return fmt.Errorf("the system clock is not synchronized (max error %.0f ms, %s): "+
		"this speaker plays a group's announcements out of step with the others; %s", st.MaxErrorMS, st.Source, clockAdvice)
}

// minClockOffsetLimit is the least clockOffsetLimit: half of the 20 ms
// the design allows between a group's members at most.
const minClockOffsetLimit = 10 * time.Millisecond

// clockOffsetLimit is how far this clock may be from its groups' before
// ClockOffsetChanged warns: half of Options.MaxLate, at least
// minClockOffsetLimit. A clock behind by more than MaxLate starts every
// announcement that late, and skips it; at half of that the speaker is
// audibly out of step already, on either side.
func (d *Daemon) clockOffsetLimit() time.Duration {
	return max(d.opts.MaxLate/2, minClockOffsetLimit)
}

// ClockOffsetChanged tells the daemon what a round of the clock probe
// measured (mynahd probes every groups.clock_probe): how far the other
// members' clocks are from this one. An offset over clockOffsetLimit is
// one warning event clock_offset, when a round first finds it; the rounds
// after only update the state until one finds the clock back within the
// limit, which is an info log line. A round no member answered (Peers 0)
// goes into the state and changes neither: it measured nothing.
func (d *Daemon) ClockOffsetChanged(o ClockOffset) {
	d.clockOffset.Store(&o)
	if o.Peers > 0 {
		limit := d.clockOffsetLimit()
		astray := math.Abs(o.OffsetMS) > float64(limit)/float64(time.Millisecond)
		switch was := d.clockAstray.Swap(astray); {
		case astray && !was:
			d.Warn(ReasonClockOffset, clockOffsetProblem(o, limit))
		case !astray && was:
			d.log.Info("system clock in step with the group again", "offset_ms", o.OffsetMS, "peers", o.Peers)
		}
	}
	d.markState()
}

// clockOffsetProblem is the clock_offset warning's error.
func clockOffsetProblem(o ClockOffset, limit time.Duration) error {
	side, plays := "behind", "late"
	if o.OffsetMS < 0 {
		side, plays = "ahead of", "early"
	}
	return fmt.Errorf("the system clock is %.1f ms %s the group's (the median of %d members, each measured to within %.1f ms; "+
		"more than %v): this speaker plays a group's announcements %s; %s, and `chronyc tracking` shows the same Reference ID on each",
		math.Abs(o.OffsetMS), side, o.Peers, o.DelayMS/2, limit, plays, clockAdvice)
}

// clockStatus is the state's clock object: the last check's, with the
// last probe round's offset; nil when neither has reported.
func (d *Daemon) clockStatus() *ClockStatus {
	c, o := d.clock.Load(), d.clockOffset.Load()
	if o == nil {
		return c
	}
	var st ClockStatus
	if c != nil {
		st = *c
	}
	st.ClockOffset = o
	return &st
}
