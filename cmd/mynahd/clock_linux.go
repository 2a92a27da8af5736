package main

import (
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"
)

// clockSource is clockStatus.Source on Linux.
const clockSource = "adjtimex"

// probeClock reads the kernel's NTP state of the system clock with
// adjtimex(2) in its read-only form (Modes 0, which needs no privilege and
// changes nothing). The kernel keeps that state for whichever NTP client
// disciplines the clock: chrony, ntpd and systemd-timesyncd clear
// STA_UNSYNC once they have synchronized the clock to a server, and the
// kernel sets it again, and answers TIME_ERROR, when none has corrected
// the clock for long enough that its error bound has grown past 16 s. A
// clock set once by hand, or by an RTC at boot, counts as not
// synchronized. A container shares its host's kernel clock and so reports
// the host's state: the host's NTP client is the one that matters.
//
// The read fails with EPERM under a seccomp filter that forbids the
// clock system calls, such as systemd's ProtectClock=yes or
// SystemCallFilter=~@clock, which deny reads as well as writes.
func probeClock() (clockStatus, error) {
	var tx unix.Timex
	state, err := unix.Adjtimex(&tx)
	if errors.Is(err, unix.EPERM) {
		return clockStatus{}, fmt.Errorf("read the clock's synchronization state (adjtimex): %w "+
			"(a system call filter forbids it: remove ProtectClock=yes from the unit and add SystemCallFilter=adjtimex "+
			"after its SystemCallFilter=~ line, as systemd/mynahd.service does)", err)
	}
	if err != nil {
		return clockStatus{}, fmt.Errorf("read the clock's synchronization state (adjtimex): %w", err)
	}
	return clockStatusOf(&tx, state), nil
}

// clockStatusOf is what adjtimex's answer says: state is its return value
// (TIME_OK, a leap second's TIME_INS to TIME_WAIT, or TIME_ERROR), tx the
// structure it filled in. Maxerror and Esterror are in microseconds
// whether or not STA_NANO is set (that flag changes only Offset's unit).
func clockStatusOf(tx *unix.Timex, state int) clockStatus {
	return clockStatus{
		Synced:   state != unix.TIME_ERROR && tx.Status&unix.STA_UNSYNC == 0,
		MaxError: time.Duration(tx.Maxerror) * time.Microsecond,
		EstError: time.Duration(tx.Esterror) * time.Microsecond,
		Source:   clockSource,
	}
}
