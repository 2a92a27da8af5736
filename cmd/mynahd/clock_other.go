//go:build !linux

package main

import (
	"errors"
	"fmt"
	"runtime"
)

// probeClock fails with errors.ErrUnsupported: the clock check reads the
// kernel's NTP state with Linux's adjtimex(2).
func probeClock() (clockStatus, error) {
	return clockStatus{}, fmt.Errorf("clock check: not available on %s, only on Linux (adjtimex): %w",
		runtime.GOOS, errors.ErrUnsupported)
}
