//go:build cgo

package portaudio

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"

	pa "github.com/gordonklaus/portaudio"

	"github.com/mynah-tts/mynah/audio"
)

// PortAudio is process-global: Pa_Initialize probes every host API and
// Pa_Terminate closes every stream. One reference per open sink (and per
// listing) keeps it initialized exactly while someone uses it. The binding
// also caches device lists in unguarded globals, so every call other than
// the per-stream ones happens under this lock.
var paLib struct {
	sync.Mutex
	refs int
}

func paAcquire() error {
	paLib.Lock()
	defer paLib.Unlock()
	if paLib.refs == 0 {
		if err := quietStderr(pa.Initialize); err != nil {
			return fmt.Errorf("initialize portaudio: %w", err)
		}
	}
	paLib.refs++
	return nil
}

func paRelease() error {
	paLib.Lock()
	defer paLib.Unlock()
	if paLib.refs == 0 {
		return nil
	}
	paLib.refs--
	if paLib.refs == 0 {
		if err := quietStderr(pa.Terminate); err != nil {
			return fmt.Errorf("terminate portaudio: %w", err)
		}
	}
	return nil
}

// quietStderr runs f with file descriptor 2 pointed at /dev/null. While
// PortAudio probes its host APIs, ALSA and JACK print dozens of lines about
// sound cards and servers this device does not have ("cannot find card
// '0'", "jack server is not running"), which would bury the daemon's own
// log in the journal. Set MYNAH_AUDIO_DEBUG=1 to see them. Anything else
// written to stderr in the same few milliseconds is lost too, which is why
// only initialization and termination run this way.
func quietStderr(f func() error) error {
	if os.Getenv("MYNAH_AUDIO_DEBUG") != "" {
		return f()
	}
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		return f()
	}
	defer null.Close()
	saved, err := syscall.Dup(2)
	if err != nil {
		return f()
	}
	defer syscall.Close(saved)
	if err := syscall.Dup3(int(null.Fd()), 2, 0); err != nil {
		return f()
	}
	defer syscall.Dup3(saved, 2, 0)
	return f()
}

// Open opens an output device. Without a sound card (or with
// Device naming nothing) it fails; DefaultOutputAvailable tells a CLI
// whether to fall back to a WAV file first.
func Open(opts *Options) (*Sink, error) {
	if err := paAcquire(); err != nil {
		return nil, fmt.Errorf("open portaudio: %w", err)
	}
	name := ""
	if opts != nil {
		name = opts.Device
	}
	paLib.Lock()
	dev, err := findOutput(name)
	paLib.Unlock()
	if err != nil {
		paRelease()
		return nil, fmt.Errorf("open portaudio: %w", err)
	}
	return newSink(&paDevice{dev: dev}, opts)
}

// findOutput resolves a device name; paLib must be held.
func findOutput(name string) (*pa.DeviceInfo, error) {
	if name == "" {
		dev, err := pa.DefaultOutputDevice()
		if err != nil {
			return nil, fmt.Errorf("default output device: %w", err)
		}
		return dev, nil
	}
	devs, err := pa.Devices()
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	var matches []*pa.DeviceInfo
	var names []string
	for _, d := range devs {
		if d.MaxOutputChannels < 1 {
			continue
		}
		if d.Name == name {
			return d, nil
		}
		if strings.Contains(strings.ToLower(d.Name), strings.ToLower(name)) {
			matches = append(matches, d)
			names = append(names, fmt.Sprintf("%q", d.Name))
		}
	}
	switch len(matches) {
	case 0:
		return nil, fmt.Errorf("no output device matches %q (see `mynah devices`)", name)
	case 1:
		return matches[0], nil
	default:
		return nil, fmt.Errorf("output device %q is ambiguous: %s", name, strings.Join(names, ", "))
	}
}

// ListDevices returns the output devices PortAudio sees.
func ListDevices() ([]DeviceInfo, error) {
	if err := paAcquire(); err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	defer paRelease()
	paLib.Lock()
	defer paLib.Unlock()
	devs, err := pa.Devices()
	if err != nil {
		return nil, fmt.Errorf("list devices: %w", err)
	}
	var out []DeviceInfo
	for _, d := range devs {
		if d.MaxOutputChannels < 1 {
			continue
		}
		info := DeviceInfo{Name: d.Name, MaxOutputChannels: d.MaxOutputChannels, DefaultRate: int(d.DefaultSampleRate)}
		if d.HostApi != nil {
			info.HostAPI = d.HostApi.Name
			info.Default = d.HostApi.DefaultOutputDevice == d
		}
		out = append(out, info)
	}
	return out, nil
}

// DefaultOutputAvailable reports whether PortAudio has a default output
// device, so a CLI can write a WAV file instead when there is none.
func DefaultOutputAvailable() bool {
	if paAcquire() != nil {
		return false
	}
	defer paRelease()
	paLib.Lock()
	defer paLib.Unlock()
	d, err := pa.DefaultOutputDevice()
	return err == nil && d.MaxOutputChannels > 0
}

type paDevice struct {
	dev *pa.DeviceInfo
}

func (d *paDevice) release() error { return paRelease() }

func (d *paDevice) open(rate, channels, framesPerBuffer int) (outputStream, streamFormat, error) {
	paLib.Lock()
	defer paLib.Unlock()
	channels = min(channels, d.dev.MaxOutputChannels)
	st := &paStream{}
	params := pa.StreamParameters{
		Output: pa.StreamDeviceParameters{
			Device:   d.dev,
			Channels: channels,
			// Speech is not interactive audio: a high-latency buffer rides
			// out scheduling hiccups on a busy two-core board.
			Latency: d.dev.DefaultHighOutputLatency,
		},
		SampleRate:      float64(rate),
		FramesPerBuffer: framesPerBuffer,
	}
	if err := pa.IsFormatSupported(params, &st.buf); err != nil {
		def := int(d.dev.DefaultSampleRate)
		if def < audio.MinRate || def > audio.MaxRate || def == rate {
			return nil, streamFormat{}, fmt.Errorf("%d Hz %d-channel int16 on %q: %w", rate, channels, d.dev.Name, err)
		}
		params.SampleRate = float64(def)
	}
	s, err := pa.OpenStream(params, &st.buf)
	if err != nil {
		return nil, streamFormat{}, fmt.Errorf("%.0f Hz %d-channel int16 on %q: %w", params.SampleRate, channels, d.dev.Name, err)
	}
	st.s = s
	f := streamFormat{rate: int(params.SampleRate), channels: channels, latency: params.Output.Latency}
	if info := s.Info(); info != nil {
		f.latency = info.OutputLatency
	}
	return st, f, nil
}

// paStream wraps a blocking stream. The binding writes whatever slice buf
// holds when Write is called, so buf is pointed at each chunk in turn.
type paStream struct {
	s   *pa.Stream
	buf []int16
}

func (p *paStream) start() error { return p.s.Start() }

func (p *paStream) write(samples []int16) error {
	p.buf = samples
	err := p.s.Write()
	p.buf = nil
	// An underflow only means the device played silence while we were
	// synthesizing the next sentence: the gap is expected, not an error.
	if errors.Is(err, pa.OutputUnderflowed) {
		err = nil
	}
	return err
}

func (p *paStream) stop() error  { return p.s.Stop() }
func (p *paStream) abort() error { return p.s.Abort() }

func (p *paStream) writeAvailable() (int, error) { return p.s.AvailableToWrite() }

func (p *paStream) close() error {
	paLib.Lock()
	defer paLib.Unlock()
	return p.s.Close()
}
