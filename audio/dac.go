package audio

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DACClock is implemented by sinks that can tell when audio will be heard,
// so that several speakers can start one clip together (see Place).
type DACClock interface {
	// NextDAC returns when the first sample of the next Write would reach
	// the DAC (the converter: when it is heard) if it were written now, on
	// the system clock, time.Now's. It is an estimate made of three parts:
	// now, how long the audio the sink holds and has not played yet will
	// take, and the delay the device reports past that; each sink says how
	// it gets them. Like Write, call it from the player's goroutine.
	NextDAC() (time.Time, error)
}

var (
	_ DACClock = (*NullSink)(nil)
	_ DACClock = (*ReopeningSink)(nil)
)

// The clocks a Placement is measured on.
const (
	ClockDAC    = "dac"    // the sink's DACClock
	ClockSystem = "system" // time.Now, for a sink without a DAC clock
)

// Placement says how Place set a clip's start.
type Placement struct {
	// Clock is ClockDAC or ClockSystem: what Late was measured on.
	Clock string
	// Lead is how many frames of silence Place wrote before the clip.
	Lead int
	// Skip is how many frames at the head of the clip the caller must
	// leave out for the rest of it to be in step: the clip starts late.
	Skip int
	// Late is when the clip's first sample will be heard minus the instant
	// asked for, as measured once the lead was written; negative is early.
	// On ClockSystem it is time.Now's lateness and knows nothing of the
	// device's own delay.
	Late time.Duration
}

// maxSilencePiece bounds each Write of the lead, so that Abort or the end
// of ctx cuts a long lead within about this long.
const maxSilencePiece = 100 * time.Millisecond

// Place makes the clip written next to s start at the instant at: its
// first sample reaches the DAC then, as nearly as s can tell. It is how
// several speakers that agreed on at start one announcement together.
// rate and channels are the clip's (s converts the silence as it converts
// the clip). Render the clip first and write it, less its first Skip
// frames, as soon as Place returns: what s has queued covers only a
// moment, and time spent in between makes the clip late unmeasured.
//
// With a DAC clock (s implements DACClock and does not answer
// ErrNoDACClock) Place reads NextDAC. If the next sample would be heard
// before at, it writes exactly the frames of silence between, at most
// 100 ms a Write, and reads NextDAC again: Late is that reading minus at,
// a measurement, not an assumption. A sink that plays faster than real
// time (an unpaced NullSink) leaves the clip early, and Late says so.
// Without a DAC clock Place writes nothing and waits until at on the
// system clock; only ctx cuts that wait.
//
// If the clip is late by at most maxLate, Skip is the frames of the
// lateness. Later than that, Place writes nothing more and returns
// ErrTooLate. Any other error is the sink's or ctx's (an Abort during the
// lead gives ErrAborted), wrapped; in every case the Placement says what
// was measured and how much silence went out.
func Place(ctx context.Context, s Sink, at time.Time, rate, channels int, maxLate time.Duration) (Placement, error) {
	if err := (PCM{Rate: rate, Channels: channels}).Validate(); err != nil {
		return Placement{}, fmt.Errorf("place clip: %w", err)
	}
	maxLate = max(maxLate, 0)
	clock, ok := s.(DACClock)
	if !ok {
		return placeBySystemClock(ctx, at, rate, maxLate)
	}
	next, err := clock.NextDAC()
	if errors.Is(err, ErrNoDACClock) {
		return placeBySystemClock(ctx, at, rate, maxLate)
	}
	pl := Placement{Clock: ClockDAC}
	if err != nil {
		return pl, fmt.Errorf("place clip: %w", err)
	}
	if gap := at.Sub(next); gap > 0 {
		pl.Lead, err = writeSilence(ctx, s, framesIn(gap, rate), rate, channels)
		if err != nil {
			return pl, fmt.Errorf("place clip: lead: %w", err)
		}
		if next, err = clock.NextDAC(); err != nil {
			return pl, fmt.Errorf("place clip: %w", err)
		}
	}
	return pl.settle(next.Sub(at), rate, maxLate)
}

func placeBySystemClock(ctx context.Context, at time.Time, rate int, maxLate time.Duration) (Placement, error) {
	pl := Placement{Clock: ClockSystem}
	if wait := time.Until(at); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return pl, fmt.Errorf("place clip: %w", ctx.Err())
		}
	}
	return pl.settle(time.Since(at), rate, maxLate)
}

// settle records the measured lateness and what it costs the clip.
func (pl Placement) settle(late time.Duration, rate int, maxLate time.Duration) (Placement, error) {
	pl.Late = late
	if late > maxLate {
		return pl, fmt.Errorf("place clip: %w: %v late, at most %v allowed", ErrTooLate, late.Round(time.Microsecond), maxLate)
	}
	pl.Skip = framesIn(late, rate)
	return pl, nil
}

// writeSilence writes frames of silence in pieces of at most
// maxSilencePiece and returns how many frames were written.
func writeSilence(ctx context.Context, s Sink, frames, rate, channels int) (int, error) {
	piece := max(framesIn(maxSilencePiece, rate), 1)
	// Zeros stay zeros, so one buffer serves every piece, even for a sink
	// that still reads a piece after its Write returned.
	zeros := make([]int16, min(frames, piece)*channels)
	written := 0
	for written < frames {
		n := min(piece, frames-written)
		if err := s.Write(ctx, PCM{Rate: rate, Channels: channels, Samples: zeros[:n*channels]}); err != nil {
			return written, err
		}
		written += n
	}
	return written, nil
}

// framesIn returns how many frames at rate last d, rounded to the nearest;
// zero for d ≤ 0. Seconds and remainder are split so that a long d cannot
// overflow.
func framesIn(d time.Duration, rate int) int {
	if d <= 0 {
		return 0
	}
	r, sec := int64(rate), int64(time.Second)
	whole, rem := int64(d)/sec, int64(d)%sec
	return int(whole*r + (rem*r+sec/2)/sec)
}
