//go:build !cgo

package ort

import (
	"errors"
	"strings"
	"testing"
)

func TestOpenWithoutCgo(t *testing.T) {
	rt, err := Open(nil)
	if rt != nil || !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "cgo") {
		t.Fatalf("Open = %v, %v; want ErrUnsupported mentioning cgo", rt, err)
	}
}
