//go:build !cgo

package audio

import (
	"errors"
	"testing"
)

func TestPortAudioUnsupportedWithoutCgo(t *testing.T) {
	if _, err := OpenPortAudio(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("OpenPortAudio: %v, want ErrUnsupported", err)
	}
	if _, err := ListDevices(); !errors.Is(err, ErrUnsupported) {
		t.Errorf("ListDevices: %v, want ErrUnsupported", err)
	}
	if DefaultOutputAvailable() {
		t.Error("DefaultOutputAvailable = true without cgo")
	}
}
