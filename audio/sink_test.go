package audio

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestNullSinkCountsAndPaces(t *testing.T) {
	s, err := NewNullSink(nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without Rate/Channels the PCM passes as is, in any format.
	for _, p := range []PCM{sine(8000, 1, 100, 0.5, 80), sine(44100, 2, 100, 0.5, 441)} {
		if err := s.Write(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	if s.Frames() != 521 || s.Writes() != 2 {
		t.Errorf("Frames %d Writes %d, want 521 and 2", s.Frames(), s.Writes())
	}
	if _, err := NewNullSink(&NullSinkOptions{Rate: 22050}); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("rate without channels: %v", err)
	}

	// A paced sink blocks Drain until the audio has "played"; the wait is
	// cut by ctx, so an hour of audio proves blocking without a clock.
	paced, _ := NewNullSink(&NullSinkOptions{Pace: true})
	defer paced.Close()
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- paced.Write(ctx, Silence(8000, 1, time.Hour)) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("paced write of an hour returned %v before cancel", err)
	}
	// Abort forgets the hour, so Drain returns at once.
	if err := paced.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := paced.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestWAVFileSinkErrors(t *testing.T) {
	if _, err := NewWAVFileSink(filepath.Join(t.TempDir(), "no", "such", "dir.wav"), 22050, 1); err == nil {
		t.Error("created a sink in a missing directory")
	}
	if _, err := NewWAVFileSink(filepath.Join(t.TempDir(), "x.wav"), 22050, 0); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("0 channels: %v", err)
	}
	// Drain leaves a complete file on disk before Close.
	path := filepath.Join(t.TempDir(), "d.wav")
	s, err := NewWAVFileSink(path, 22050, 1)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	p := sine(22050, 1, 440, 0.5, 500)
	if err := s.Write(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if err := s.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(path)
	got, err := DecodeWAV(data, nil)
	if err != nil || !slices.Equal(got.Samples, p.Samples) {
		t.Errorf("file after Drain: %v", err)
	}
}
