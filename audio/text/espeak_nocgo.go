//go:build !cgo

package text

import "fmt"

func espeakOpen(dataPath, voice string) error {
	return fmt.Errorf("espeak: %w", ErrUnsupported)
}

func espeakClauses(voice, text string) ([]espeakClause, error) {
	return nil, fmt.Errorf("espeak: %w", ErrUnsupported)
}
