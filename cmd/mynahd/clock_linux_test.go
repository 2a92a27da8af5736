package main

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestClockStatusOf(t *testing.T) {
	tests := []struct {
		name  string
		tx    unix.Timex
		state int
		want  clockStatus
	}{
		{"synchronized", unix.Timex{Maxerror: 16_500, Esterror: 120}, unix.TIME_OK,
			clockStatus{Synced: true, MaxError: 16500 * time.Microsecond, EstError: 120 * time.Microsecond}},
		{"leap second ahead", unix.Timex{Status: unix.STA_PLL | unix.STA_INS}, unix.TIME_INS, clockStatus{Synced: true}},
		{"nanosecond mode keeps microsecond errors", unix.Timex{Status: unix.STA_NANO, Maxerror: 1, Esterror: 2}, unix.TIME_OK,
			clockStatus{Synced: true, MaxError: time.Microsecond, EstError: 2 * time.Microsecond}},
		{"time error", unix.Timex{Maxerror: 16_000_000}, unix.TIME_ERROR, clockStatus{MaxError: 16 * time.Second}},
		{"unsync flag", unix.Timex{Status: unix.STA_PLL | unix.STA_UNSYNC}, unix.TIME_OK, clockStatus{}},
		{"both", unix.Timex{Status: unix.STA_UNSYNC}, unix.TIME_ERROR, clockStatus{}},
	}
	for _, tt := range tests {
		tt.want.Source = "adjtimex"
		if got := clockStatusOf(&tt.tx, tt.state); got != tt.want {
			t.Errorf("%s: clockStatusOf = %+v, want %+v", tt.name, got, tt.want)
		}
	}
}
