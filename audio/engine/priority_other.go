//go:build !linux

package engine

// lowPriority runs f: where threads have no priority of their own, a
// background build runs at the process's.
func lowPriority(f func() error) error { return f() }
