//go:build !cgo || !linux

package memory

// cTuned reports that no C allocator setting was made: without cgo (or
// off Linux) the binary has no C heap of its own to tune.
func cTuned() int { return 0 }
