// Package audio holds mynah's audio plumbing: the PCM type every engine
// produces, WAV reading and writing, resampling and channel conversion, and
// the sinks that store speech or discard it (WAV file, null). It has no cgo
// (package audio/portaudio plays through a sound card), so the daemon can
// use it directly.
package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"
	"unsafe"
)

// Limits every PCM in mynah stays within. The WAV reader and the resampler
// enforce them, so a value that passed Validate can be played by any sink.
const (
	// MinRate and MaxRate bound the sample rate in Hz. 8 kHz is telephone
	// speech; nothing a TTS voice or a sound card uses is above 192 kHz.
	MinRate = 8000
	MaxRate = 192000
	// MaxChannels bounds the channel count (7.1 is the largest common layout).
	MaxChannels = 8
)

// Errors returned by this package. Callers test them with errors.Is; the
// returned errors wrap them with detail.
var (
	// ErrInvalidPCM reports a PCM whose rate, channel count or sample count is
	// out of range or inconsistent.
	ErrInvalidPCM = errors.New("invalid pcm")
	// ErrInvalidWAV reports input that is not a well-formed WAV file this
	// package accepts. Unsupported encodings wrap it too.
	ErrInvalidWAV = errors.New("invalid wav")
	// ErrLimit reports a WAV input over a limit in WAVOptions; the message
	// names the limit. It always comes together with ErrInvalidWAV.
	ErrLimit = errors.New("limit exceeded")
	// ErrClosed is returned by a sink used after Close.
	ErrClosed = errors.New("sink closed")
	// ErrAborted is returned by a sink Write that Abort cut short.
	ErrAborted = errors.New("playback aborted")
	// ErrNoDACClock is returned by a DACClock that forwards to a sink
	// without one (a ReopeningSink around a WAV file); Place then falls
	// back to the system clock.
	ErrNoDACClock = errors.New("sink has no dac clock")
	// ErrTooLate is returned by Place when the clip would start later than
	// its maxLate allows; the error says by how much.
	ErrTooLate = errors.New("too late to start in step")
)

// PCM is signed 16-bit audio with interleaved channels: for stereo, Samples
// is L0 R0 L1 R1 ... Engines produce mono; sinks convert as they need.
type PCM struct {
	Rate     int // frames per second
	Channels int
	Samples  []int16
}

// Frames returns the number of sample frames (samples per channel).
func (p PCM) Frames() int {
	if p.Channels <= 0 {
		return 0
	}
	return len(p.Samples) / p.Channels
}

// Duration returns how long p plays; zero for a PCM with no rate.
func (p PCM) Duration() time.Duration {
	if p.Rate <= 0 {
		return 0
	}
	f := int64(p.Frames())
	// Split into whole seconds and remainder so that long clips cannot
	// overflow int64 nanoseconds.
	r := int64(p.Rate)
	return time.Duration(f/r)*time.Second + time.Duration(f%r)*time.Second/time.Duration(r)
}

// Validate reports whether p is within MinRate..MaxRate, 1..MaxChannels,
// and holds whole frames.
func (p PCM) Validate() error {
	if p.Rate < MinRate || p.Rate > MaxRate {
		return fmt.Errorf("%w: rate %d Hz outside %d..%d", ErrInvalidPCM, p.Rate, MinRate, MaxRate)
	}
	if p.Channels < 1 || p.Channels > MaxChannels {
		return fmt.Errorf("%w: %d channels outside 1..%d", ErrInvalidPCM, p.Channels, MaxChannels)
	}
	if len(p.Samples)%p.Channels != 0 {
		return fmt.Errorf("%w: %d samples is not a whole number of %d-channel frames", ErrInvalidPCM, len(p.Samples), p.Channels)
	}
	return nil
}

// Clone returns a copy of p that shares no memory with it.
func (p PCM) Clone() PCM {
	p.Samples = append([]int16(nil), p.Samples...)
	return p
}

// PeakTarget is the fraction of int16 full scale PeakNormalize scales the
// loudest sample to. Piper scales to full scale; 0.95 leaves headroom so the
// resampler's ringing and a sound card's DAC filter do not clip.
const PeakTarget = 0.95

// SilencePeak is the peak below which PeakNormalize does not amplify: such
// a buffer is silence plus numeric noise, and normalizing it would turn the
// noise into a full-scale hiss.
const SilencePeak = 1e-4

// PeakNormalize converts float audio (nominally -1..1) to int16 scaled so
// that the loudest sample reaches PeakTarget of full scale, as Piper does
// with its model output. A buffer whose peak is under SilencePeak is
// converted at unity gain (1.0 -> 32767) instead. NaN and infinite samples
// are treated as 0.
func PeakNormalize(samples []float32) []int16 {
	// This runs on every sentence's model output (a few seconds of audio
	// a sentence): it stays in float32 bits where that is exact and rounds
	// without math.Round's general case, with the same results as
	// math.Abs, math.Round and clampInt16 in float64 (the test keeps that
	// version as its reference) in two thirds of the time
	// (BenchmarkPeakNormalize).
	var peak float32
	for _, s := range samples {
		a := math.Float32frombits(math.Float32bits(s) &^ signBit32)
		if a > peak && a <= math.MaxFloat32 { // NaN fails a > peak; +Inf fails the second
			peak = a
		}
	}
	gain := float64(math.MaxInt16)
	if float64(peak) >= SilencePeak {
		gain = PeakTarget * math.MaxInt16 / float64(peak)
	}
	out := make([]int16, len(samples))
	for i, s := range samples {
		if math.Float32bits(s)&expBits32 == expBits32 {
			continue // NaN or ±Inf: 0
		}
		out[i] = roundClampInt16(float64(s) * gain)
	}
	return out
}

// The sign and exponent bits of a float32: an exponent of all ones is
// NaN or an infinity.
const (
	signBit32 = 1 << 31
	expBits32 = 0xff << 23
)

// roundClampInt16 is clampInt16 for a finite v, without math.Round's
// general case: inside the int16 range v − trunc(v) is exact, so rounding
// half away from zero is two compares, and without branches that the
// fractions of audio samples would mispredict.
func roundClampInt16(v float64) int16 {
	if v >= math.MaxInt16 {
		return math.MaxInt16
	}
	if v <= math.MinInt16 {
		return math.MinInt16
	}
	i := int32(v) // toward zero
	f := v - float64(i)
	return int16(i + oneIf(f >= 0.5) - oneIf(f <= -0.5))
}

// oneIf is 1 for true and 0 for false; the compiler makes it a SETcc.
func oneIf(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// FromFloat32 wraps mono float model output as PCM, peak-normalized.
func FromFloat32(samples []float32, rate int) PCM {
	return PCM{Rate: rate, Channels: 1, Samples: PeakNormalize(samples)}
}

// Silence returns d of silence, rounded to the nearest frame. A negative d
// gives an empty PCM.
func Silence(rate, channels int, d time.Duration) PCM {
	frames := 0
	if d > 0 && rate > 0 && channels > 0 {
		frames = int((int64(d)*int64(rate) + int64(time.Second)/2) / int64(time.Second))
	}
	return PCM{Rate: rate, Channels: channels, Samples: make([]int16, frames*max(channels, 0))}
}

// ApplyVolume scales p linearly by v, clamped to 0..1 (NaN counts as 1, so
// a broken volume setting never mutes speech). At 1 the result is an exact
// copy. The result never shares memory with p. Mapping a user's volume knob
// to a perceptual curve is the caller's business.
func ApplyVolume(p PCM, v float64) PCM {
	out := p
	out.Samples = make([]int16, len(p.Samples))
	if math.IsNaN(v) || v >= 1 {
		copy(out.Samples, p.Samples)
		return out
	}
	if v <= 0 {
		return out
	}
	for i, s := range p.Samples {
		out.Samples[i] = clampInt16(float64(s) * v)
	}
	return out
}

// ToChannels converts p to ch channels. Down to mono averages all channels;
// up from mono copies the one channel everywhere. Between other layouts the
// first channels are kept and extra output channels repeat the input ones
// (output channel j takes input channel j mod p.Channels): speech has no
// surround image to preserve. The result never shares memory with p.
func ToChannels(p PCM, ch int) (PCM, error) {
	if err := p.Validate(); err != nil {
		return PCM{}, fmt.Errorf("convert channels: %w", err)
	}
	if ch < 1 || ch > MaxChannels {
		return PCM{}, fmt.Errorf("convert channels: %w: %d channels outside 1..%d", ErrInvalidPCM, ch, MaxChannels)
	}
	if ch == p.Channels {
		return p.Clone(), nil
	}
	frames := p.Frames()
	out := PCM{Rate: p.Rate, Channels: ch, Samples: make([]int16, frames*ch)}
	in := p.Samples
	switch {
	case ch == 1:
		n := p.Channels
		for f := 0; f < frames; f++ {
			sum := 0
			for _, s := range in[f*n : f*n+n] {
				sum += int(s)
			}
			out.Samples[f] = int16(roundDiv(sum, n))
		}
	default:
		n := p.Channels
		for f := 0; f < frames; f++ {
			src := in[f*n : f*n+n]
			dst := out.Samples[f*ch : f*ch+ch]
			for j := range dst {
				dst[j] = src[j%n]
			}
		}
	}
	return out, nil
}

// Convert returns p at the given rate and channel count, doing only the
// conversions needed. The result never shares memory with p.
func Convert(p PCM, rate, channels int) (PCM, error) {
	if p.Channels != channels {
		var err error
		// Mix down before resampling (less work), expand after.
		if channels < p.Channels {
			if p, err = ToChannels(p, channels); err != nil {
				return PCM{}, err
			}
			return Resample(p, rate)
		}
		if p, err = Resample(p, rate); err != nil {
			return PCM{}, err
		}
		return ToChannels(p, channels)
	}
	return Resample(p, rate)
}

// roundDiv divides rounding half away from zero, so that averaging -1 and
// -2 and averaging 1 and 2 are symmetric.
func roundDiv(a, b int) int {
	if a >= 0 {
		return (a + b/2) / b
	}
	return -((-a + b/2) / b)
}

func clampInt16(v float64) int16 {
	v = math.Round(v)
	if v > math.MaxInt16 {
		return math.MaxInt16
	}
	if v < math.MinInt16 {
		return math.MinInt16
	}
	return int16(v)
}

// AppendS16LE appends s to dst as 16-bit little-endian samples: the bytes
// of a WAV file's data, an ALSA S16_LE buffer or a Wyoming audio-chunk.
// On a little-endian CPU (amd64, arm64) that is the samples' own memory,
// copied in one piece; a Wyoming cache hit frames its whole answer this
// way, so a per-sample loop showed in its profile (33 µs a 2 s phrase).
func AppendS16LE(dst []byte, s []int16) []byte {
	if littleEndian && len(s) > 0 {
		return append(dst, S16LEView(s)...)
	}
	return appendS16LEBytewise(dst, s)
}

// S16LEView returns s as 16-bit little-endian bytes without copying them
// where it can: on a little-endian CPU the bytes are s's own memory, and
// change when s does; elsewhere they are a copy. For handing samples that
// no one changes any more (engine chunks, the phrase cache's decoded
// audio) to a writer.
func S16LEView(s []int16) []byte {
	if littleEndian && len(s) > 0 {
		return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s))
	}
	return appendS16LEBytewise(nil, s)
}

// appendS16LEBytewise is AppendS16LE for a big-endian CPU.
func appendS16LEBytewise(dst []byte, s []int16) []byte {
	dst = slices.Grow(dst, 2*len(s))
	b := dst[len(dst) : len(dst)+2*len(s)]
	for i, v := range s {
		binary.LittleEndian.PutUint16(b[2*i:], uint16(v))
	}
	return dst[:len(dst)+2*len(s)]
}
