//go:build !cgo || !linux

package ort

func setMMapThreshold(int) bool { return false }

func trimMalloc() bool { return false }
