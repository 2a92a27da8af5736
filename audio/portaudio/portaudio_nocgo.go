//go:build !cgo

package portaudio

import "fmt"

// Open fails with ErrUnsupported: PortAudio needs cgo. Rebuild
// with CGO_ENABLED=1 (and portaudio19-dev installed), or use an audio.WAVFileSink.
func Open(opts *Options) (*Sink, error) {
	return nil, fmt.Errorf("open portaudio: %w", ErrUnsupported)
}

// ListDevices fails with ErrUnsupported in builds without cgo.
func ListDevices() ([]DeviceInfo, error) {
	return nil, fmt.Errorf("list devices: %w", ErrUnsupported)
}

// DefaultOutputAvailable is false in builds without cgo.
func DefaultOutputAvailable() bool { return false }
