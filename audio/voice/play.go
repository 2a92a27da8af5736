package voice

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// Synthesizer is what Play needs from an engine.
type Synthesizer interface {
	Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error
}

var _ Synthesizer = (*Piper)(nil)

// PlayStats describe one Play call.
type PlayStats struct {
	Sentences int
	// FirstAudio is from the call to the first sentence's PCM reaching the
	// sink: what a listener waits before hearing anything.
	FirstAudio time.Duration
	// Total is from the call to the last sentence handed to the sink.
	Total time.Duration
	// Synth is the time spent synthesizing, summed over sentences.
	Synth time.Duration
	// Audio is the duration of the speech produced, pauses included.
	Audio time.Duration
	// Unknown counts skipped phonemes.
	Unknown int
}

// Play synthesizes req into sink. Synthesis runs exactly one sentence
// ahead of playback (audio.Stream): while sentence n is being written to
// the sink, sentence n+1 is synthesized, so a long text plays without gaps
// once it has started, and no more than two sentences of PCM are alive.
// Cancelling ctx, or a failed Write, aborts the sink at once; Play then
// returns ctx's error, or the Write's. Play does not Drain the sink.
func Play(ctx context.Context, s Synthesizer, req Request, sink audio.Sink) (PlayStats, error) {
	var st PlayStats
	start := time.Now()
	synthesize := func(ctx context.Context, emit func(Chunk) error) error {
		return s.Synthesize(ctx, req, emit)
	}
	var playErr error
	err := audio.Stream(ctx, synthesize, func(ctx context.Context, c Chunk) error {
		if err := sink.Write(ctx, c.PCM); err != nil {
			playErr = err
			return err
		}
		if st.Sentences == 0 {
			st.FirstAudio = time.Since(start)
		}
		st.Sentences++
		st.Synth += c.Synth
		st.Unknown += c.Unknown
		st.Audio += c.PCM.Duration() + c.Silence
		if c.Silence > 0 {
			if err := sink.Write(ctx, audio.Silence(c.PCM.Rate, c.PCM.Channels, c.Silence)); err != nil {
				playErr = err
				return err
			}
		}
		return nil
	})
	st.Total = time.Since(start)
	if playErr != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		_ = sink.Abort()
	}
	return st, err
}

// speakSentences is every engine's Synthesize loop: synthesize sentence
// n, hand it to emit with the pause that follows it, then go on to n+1,
// so that emit has sentence 1 before sentence 2 is synthesized. An error
// from emit stops it and is returned as is.
func speakSentences(ctx context.Context, sentences []string, silence time.Duration,
	synth func(sentence string) (audio.PCM, int, error), emit func(Chunk) error,
) error {
	for i, s := range sentences {
		if err := ctx.Err(); err != nil {
			return err
		}
		start := time.Now()
		pcm, unknown, err := synth(s)
		if err != nil {
			return fmt.Errorf("sentence %d: %w", i+1, err)
		}
		c := Chunk{Index: i, Last: i == len(sentences)-1, Sentence: s, PCM: pcm, Unknown: unknown, Synth: time.Since(start)}
		if !c.Last {
			c.Silence = silence
		}
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// loadBundle loads and verifies the bundle in dir as its precision variant
// (see bundle.WithPrecision for force).
func loadBundle(dir, precision string, force bool) (*bundle.Bundle, error) {
	b, err := bundle.Load(dir)
	if err != nil {
		return nil, err
	}
	return b.WithPrecision(precision, force)
}
