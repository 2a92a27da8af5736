//go:build !cgo || !linux

package main

// mallocTuning reports that no C allocator setting was made: without cgo
// (or off Linux) mynahd has no C heap of its own to tune.
func mallocTuning() (arenaMax, mmapThreshold int, ok bool) { return 0, 0, false }
