package audiotest

import (
	"context"
	"errors"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// Sine returns frames frames of a freq Hz tone at amplitude amp (0..1 of
// full scale), the same in every channel: test audio whose every sample is
// known, so a test can compare what a sink delivered sample by sample.
func Sine(rate, channels int, freq, amp float64, frames int) audio.PCM {
	p := audio.PCM{Rate: rate, Channels: channels, Samples: make([]int16, frames*channels)}
	for i := range frames {
		v := math.Round(amp * math.MaxInt16 * math.Sin(2*math.Pi*freq*float64(i)/float64(rate)))
		v = max(math.MinInt16, min(math.MaxInt16, v))
		for c := range channels {
			p.Samples[i*channels+c] = int16(v)
		}
	}
	return p
}

// SinkUnderTest is one sink opened for RunSinkSuite.
type SinkUnderTest struct {
	Sink           audio.Sink
	Rate, Channels int // the sink's own format, which delivered audio is in
	// Delivered returns the frames the sink passed on and, for sinks that
	// keep them, the samples themselves (nil for sinks that keep nothing).
	// Called after Close.
	Delivered func(t *testing.T) (frames int64, samples []int16)
}

// RunSinkSuite checks the audio.Sink contract against sinks made by open,
// each subtest opening a fresh one. Every Sink implementation, in package
// audio and beyond it, runs this one suite.
func RunSinkSuite(t *testing.T, open func(t *testing.T) SinkUnderTest) {
	ctx := context.Background()
	check := func(t *testing.T, s SinkUnderTest, want []int16) {
		t.Helper()
		frames, got := s.Delivered(t)
		if wantFrames := int64(len(want) / s.Channels); frames != wantFrames {
			t.Errorf("delivered %d frames, want %d", frames, wantFrames)
		}
		if got != nil && !slices.Equal(got, want) {
			t.Errorf("delivered samples differ from those written (%d vs %d samples)", len(got), len(want))
		}
	}

	t.Run("WritesDrainsCloses", func(t *testing.T) {
		s := open(t)
		a := Sine(s.Rate, s.Channels, 440, 0.5, s.Rate/2)
		b := Sine(s.Rate, s.Channels, 660, 0.25, 1001) // not a whole buffer
		for _, p := range []audio.PCM{a, b} {
			if err := s.Sink.Write(ctx, p); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Drain(ctx); err != nil {
			t.Fatalf("second drain: %v", err)
		}
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, slices.Concat(a.Samples, b.Samples))
	})

	t.Run("ClosedSinkRefuses", func(t *testing.T) {
		s := open(t)
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		p := Sine(s.Rate, s.Channels, 440, 0.5, 100)
		if err := s.Sink.Write(ctx, p); !errors.Is(err, audio.ErrClosed) {
			t.Errorf("write after close: %v, want ErrClosed", err)
		}
		if err := s.Sink.Drain(ctx); !errors.Is(err, audio.ErrClosed) {
			t.Errorf("drain after close: %v, want ErrClosed", err)
		}
		if err := s.Sink.Abort(); !errors.Is(err, audio.ErrClosed) {
			t.Errorf("abort after close: %v, want ErrClosed", err)
		}
		if err := s.Sink.Close(); err != nil {
			t.Errorf("second close: %v", err)
		}
		check(t, s, nil)
	})

	t.Run("ContextEnded", func(t *testing.T) {
		s := open(t)
		canceled, cancel := context.WithCancel(ctx)
		cancel()
		expired, cancel2 := context.WithDeadline(ctx, time.Now().Add(-time.Second))
		defer cancel2()
		p := Sine(s.Rate, s.Channels, 440, 0.5, 500)
		if err := s.Sink.Write(canceled, p); !errors.Is(err, context.Canceled) {
			t.Errorf("write with canceled ctx: %v", err)
		}
		if err := s.Sink.Write(expired, p); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("write past deadline: %v", err)
		}
		if err := s.Sink.Drain(canceled); !errors.Is(err, context.Canceled) {
			t.Errorf("drain with canceled ctx: %v", err)
		}
		// The sink is still fine, and nothing of the refused writes got out.
		q := Sine(s.Rate, s.Channels, 880, 0.5, 300)
		if err := s.Sink.Write(ctx, q); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, q.Samples)
	})

	t.Run("Abort", func(t *testing.T) {
		s := open(t)
		if err := s.Sink.Abort(); err != nil {
			t.Fatalf("abort when idle: %v", err)
		}
		a := Sine(s.Rate, s.Channels, 440, 0.5, s.Rate/4)
		if err := s.Sink.Write(ctx, a); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Abort(); err != nil {
			t.Fatal(err)
		}
		// Usable after Abort; what was accepted before may or may not have
		// played, but what comes after must play whole.
		b := Sine(s.Rate, s.Channels, 660, 0.5, 700)
		if err := s.Sink.Write(ctx, b); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		frames, got := s.Delivered(t)
		aFrames, bFrames := int64(a.Frames()), int64(b.Frames())
		if frames < bFrames || frames > aFrames+bFrames {
			t.Fatalf("delivered %d frames, want %d..%d", frames, bFrames, aFrames+bFrames)
		}
		if got != nil {
			n := len(got) - len(b.Samples)
			if !slices.Equal(got[n:], b.Samples) || !slices.Equal(got[:n], a.Samples[:n]) {
				t.Error("delivered audio is not a prefix of the aborted write followed by the next write")
			}
		}
	})

	t.Run("AbortDuringWrite", func(t *testing.T) {
		s := open(t)
		long := Sine(s.Rate, s.Channels, 440, 0.5, s.Rate*20)
		errc := make(chan error, 1)
		go func() { errc <- s.Sink.Write(ctx, long) }()
		// Abort until the write returns: an Abort that lands before the
		// write starts does not stop it (a later one does).
		var werr error
	loop:
		for {
			if err := s.Sink.Abort(); err != nil {
				t.Fatal(err)
			}
			select {
			case werr = <-errc:
				break loop
			case <-time.After(time.Millisecond):
			}
		}
		if werr != nil && !errors.Is(werr, audio.ErrAborted) {
			t.Errorf("interrupted write: %v, want nil or ErrAborted", werr)
		}
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		frames, got := s.Delivered(t)
		if frames > int64(long.Frames()) {
			t.Errorf("delivered %d frames of a %d-frame write", frames, long.Frames())
		}
		if got != nil && !slices.Equal(got, long.Samples[:len(got)]) {
			t.Error("delivered audio is not a prefix of what was written")
		}
	})

	t.Run("ConvertsFormat", func(t *testing.T) {
		s := open(t)
		// 16 kHz stereo in whatever the sink plays: conversion must match
		// Convert exactly.
		p := Sine(16000, 2, 500, 0.5, 1600)
		want, err := audio.Convert(p, s.Rate, s.Channels)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Write(ctx, p); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Drain(ctx); err != nil {
			t.Fatal(err)
		}
		if err := s.Sink.Close(); err != nil {
			t.Fatal(err)
		}
		check(t, s, want.Samples)
	})

	t.Run("RejectsInvalidPCM", func(t *testing.T) {
		s := open(t)
		defer s.Sink.Close()
		bad := audio.PCM{Rate: 22050, Channels: 2, Samples: []int16{1, 2, 3}}
		if err := s.Sink.Write(ctx, bad); !errors.Is(err, audio.ErrInvalidPCM) {
			t.Errorf("invalid PCM: %v", err)
		}
	})
}
