package main

import (
	"errors"
	"runtime"
	"testing"
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
