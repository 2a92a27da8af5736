//go:build cgo

package portaudio

import (
	"bytes"
	"context"
	"encoding/binary"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/audiotest"
)

// These tests play through real PortAudio into ALSA's file plugin (see
// main_test.go): the bytes in alsaCapture are what the "sound
// card" received.

// captured reads what the last closed stream played.
func captured(t *testing.T) []int16 {
	t.Helper()
	raw, err := os.ReadFile(alsaCapture)
	if err != nil {
		t.Fatalf("read ALSA capture: %v", err)
	}
	if len(raw)%2 != 0 {
		t.Fatalf("ALSA capture holds %d bytes, not whole int16 samples", len(raw))
	}
	s := make([]int16, len(raw)/2)
	for i := range s {
		s[i] = int16(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return s
}

func TestPortAudioListsCaptureDevice(t *testing.T) {
	devs, err := ListDevices()
	if err != nil {
		t.Fatalf("ListDevices: %v", err)
	}
	if len(devs) == 0 {
		t.Fatal("PortAudio lists no output device although HOME/.asoundrc defines an ALSA default: " +
			"is PortAudio built with ALSA (portaudio19-dev, libasound2)?")
	}
	var def *DeviceInfo
	for i, d := range devs {
		if d.Default {
			def = &devs[i]
		}
	}
	if def == nil || def.HostAPI != "ALSA" || def.MaxOutputChannels < 2 || def.DefaultRate < audio.MinRate {
		t.Fatalf("no usable default ALSA output among %+v", devs)
	}
	if !DefaultOutputAvailable() {
		t.Fatal("DefaultOutputAvailable = false with a default device listed")
	}
}

func TestPortAudioSinkSuite(t *testing.T) {
	audiotest.RunSinkSuite(t, func(t *testing.T) audiotest.SinkUnderTest {
		s, err := Open(&Options{Rate: 22050, Channels: 1})
		if err != nil {
			t.Fatalf("open PortAudio on the ALSA capture device: %v", err)
		}
		return audiotest.SinkUnderTest{Sink: s, Rate: 22050, Channels: 1, Delivered: func(t *testing.T) (int64, []int16) {
			got := captured(t)
			return int64(len(got)), got
		}}
	})
}

func TestPortAudioPlaysExactBytes(t *testing.T) {
	for _, p := range []audio.PCM{
		audiotest.Sine(22050, 1, 440, 0.8, 20*1024+333),
		audiotest.Sine(48000, 2, 1000, 0.5, 4800),
	} {
		// No rate or channels given: the stream takes the first PCM's, so
		// the device must receive exactly our samples.
		s, err := Open(nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		half := p.Frames() / 2 * p.Channels
		for _, part := range [][]int16{p.Samples[:half], p.Samples[half:]} {
			if err := s.Write(ctx, audio.PCM{Rate: p.Rate, Channels: p.Channels, Samples: part}); err != nil {
				t.Fatal(err)
			}
		}
		if r, c := s.Format(); r != p.Rate || c != p.Channels {
			t.Errorf("stream format %d Hz %d ch, want %d Hz %d ch", r, c, p.Rate, p.Channels)
		}
		if err := s.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(alsaCapture)
		if err != nil {
			t.Fatal(err)
		}
		var want []byte
		for _, v := range p.Samples {
			want = binary.LittleEndian.AppendUint16(want, uint16(v))
		}
		if !bytes.Equal(raw, want) {
			t.Errorf("%d Hz %d ch: device received %d bytes, want exactly the %d bytes played", p.Rate, p.Channels, len(raw), len(want))
		}
	}
}

func TestPortAudioDeviceSelection(t *testing.T) {
	s, err := Open(&Options{Device: "default", Rate: 16000, Channels: 1})
	if err != nil {
		t.Fatalf("device by exact name: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = Open(&Options{Device: "no-such-card"})
	if err == nil || !strings.Contains(err.Error(), `no output device matches "no-such-card"`) {
		t.Errorf("missing device: %v", err)
	}
	// Every failed open and closed sink gave its PortAudio reference back.
	paLib.Lock()
	refs := paLib.refs
	paLib.Unlock()
	if refs != 0 {
		t.Errorf("%d PortAudio references left", refs)
	}
}

func TestPortAudioPlaceLead(t *testing.T) {
	// ALSA's null device takes every frame at once, so nothing here is
	// heard in real time and the clip is placed early (Late < 0): what the
	// test checks is that the device received exactly the lead's silence
	// and then the clip.
	const rate = 22050
	s, err := Open(&Options{Rate: rate, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	at := time.Now().Add(200 * time.Millisecond)
	pl, err := audio.Place(ctx, s, at, rate, 1, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("placement %+v", pl)
	clip := audio.PCM{Rate: rate, Channels: 1, Samples: slices.Repeat([]int16{1000}, rate/10)}
	if err := s.Write(ctx, audio.PCM{Rate: rate, Channels: 1, Samples: clip.Samples[pl.Skip:]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	got := captured(t)
	lead := slices.IndexFunc(got, func(v int16) bool { return v != 0 })
	if lead != pl.Lead || len(got) != pl.Lead+len(clip.Samples)-pl.Skip {
		t.Fatalf("device got %d samples, the clip from %d; want a lead of %d then %d", len(got), lead, pl.Lead, len(clip.Samples)-pl.Skip)
	}
	// The lead is what was left of the 200 ms when Place first looked; the
	// wide margin below only keeps a loaded machine from mattering.
	if pl.Clock != audio.ClockDAC || pl.Lead > rate*200/1000+1 || pl.Lead < rate*100/1000 {
		t.Errorf("placement %+v: want the DAC clock and a lead of about %d frames", pl, rate*200/1000)
	}
}
