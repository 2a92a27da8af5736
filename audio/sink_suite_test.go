package audio_test

// The shared sink suite lives in package audiotest, which imports audio, so
// the sinks of this package run it from the external test package.

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/audiotest"
)

func TestNullSinkSuite(t *testing.T) {
	for _, opts := range []audio.NullSinkOptions{
		{Rate: 22050, Channels: 1},
		{Rate: 48000, Channels: 2, Pace: true},
	} {
		name := "fast"
		if opts.Pace {
			name = "paced"
		}
		t.Run(name, func(t *testing.T) {
			audiotest.RunSinkSuite(t, func(t *testing.T) audiotest.SinkUnderTest {
				s, err := audio.NewNullSink(&opts)
				if err != nil {
					t.Fatal(err)
				}
				return audiotest.SinkUnderTest{Sink: s, Rate: opts.Rate, Channels: opts.Channels,
					Delivered: func(*testing.T) (int64, []int16) { return s.Frames(), nil }}
			})
		})
	}
}

func TestWAVFileSinkSuite(t *testing.T) {
	audiotest.RunSinkSuite(t, func(t *testing.T) audiotest.SinkUnderTest {
		path := filepath.Join(t.TempDir(), "out.wav")
		s, err := audio.NewWAVFileSink(path, 24000, 1)
		if err != nil {
			t.Fatal(err)
		}
		return audiotest.SinkUnderTest{Sink: s, Rate: 24000, Channels: 1, Delivered: func(t *testing.T) (int64, []int16) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := audio.DecodeWAV(data, nil)
			if err != nil {
				t.Fatalf("sink left an invalid file: %v", err)
			}
			if p.Rate != 24000 || p.Channels != 1 {
				t.Fatalf("file is %d Hz %d ch", p.Rate, p.Channels)
			}
			return int64(p.Frames()), p.Samples
		}}
	})
}
