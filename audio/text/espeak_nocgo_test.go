//go:build !cgo

package text

import (
	"errors"
	"testing"
)

func TestEspeakUnsupportedWithoutCgo(t *testing.T) {
	if _, err := NewEspeak(nil); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewEspeak error %v, want ErrUnsupported", err)
	}
	if _, err := NewPhonemizer(PhonemeTypeEspeak, "en-us"); !errors.Is(err, ErrUnsupported) {
		t.Errorf("NewPhonemizer error %v, want ErrUnsupported", err)
	}
	// The other front ends do not need cgo.
	if _, err := NewPhonemizer(PhonemeTypePinyin, ""); err != nil {
		t.Error(err)
	}
}
