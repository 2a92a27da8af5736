package daemon

import "fmt"

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
