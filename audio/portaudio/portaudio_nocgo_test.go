//go:build !cgo

package portaudio

import (
	"errors"
	"testing"
)

func TestPortAudioUnsupportedWithoutCgo(t *testing.T) {
	if _, err := Open(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("Open: %v, want ErrUnsupported", err)
	}
	if _, err := ListDevices(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ListDevices: %v, want ErrUnsupported", err)
	}
	if DefaultOutputAvailable() {
		t.Error("DefaultOutputAvailable = true without cgo")
	}
}
