//go:build !linux

package cache

// ReleaseMapped does nothing off Linux.
func (s *Store) ReleaseMapped() (int64, error) { return 0, nil }
