//go:build !cgo || !linux

package memory

import "testing"

// TestNoTuning: without cgo (or off Linux) nothing is tuned, and sessions
// are built as the C allocator has it.
func TestNoTuning(t *testing.T) {
	if arenas, threshold, ok := Tuning(); arenas != 0 || threshold != 0 || ok {
		t.Errorf("Tuning() = %d, %d, %t; want 0, 0, false", arenas, threshold, ok)
	}
	if SessionBuilding() != nil {
		t.Error("SessionBuilding() is set without a tuned mmap threshold")
	}
}
