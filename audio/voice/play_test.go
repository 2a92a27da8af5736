package voice

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// fakeSynth emits n one-second sentences, reporting each start on started.
type fakeSynth struct {
	n       int
	started chan int
}

func (f *fakeSynth) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	for i := 0; i < f.n; i++ {
		f.started <- i
		c := Chunk{Index: i, Last: i == f.n-1, PCM: audio.Silence(8000, 1, time.Second)}
		if !c.Last {
			c.Silence = 100 * time.Millisecond
		}
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// gateSink blocks every Write until the test lets it through.
type gateSink struct {
	mu      sync.Mutex
	frames  int
	writes  chan int // frames of each write, as it starts
	release chan struct{}
	aborted bool
}

var _ audio.Sink = (*gateSink)(nil)

func (g *gateSink) Write(ctx context.Context, p audio.PCM) error {
	g.writes <- p.Frames()
	select {
	case <-g.release:
	case <-ctx.Done():
		return ctx.Err()
	}
	g.mu.Lock()
	g.frames += p.Frames()
	g.mu.Unlock()
	return nil
}
func (g *gateSink) Drain(context.Context) error { return nil }
func (g *gateSink) Abort() error {
	g.mu.Lock()
	g.aborted = true
	g.mu.Unlock()
	return nil
}
func (g *gateSink) Close() error { return nil }

func TestPlaySynthesizesAheadOfPlayback(t *testing.T) {
	synth := &fakeSynth{n: 3, started: make(chan int, 10)}
	sink := &gateSink{writes: make(chan int, 10), release: make(chan struct{})}
	done := make(chan PlayStats)
	go func() {
		st, err := Play(context.Background(), synth, Request{}, sink)
		if err != nil {
			t.Error(err)
		}
		done <- st
	}()
	if i := <-synth.started; i != 0 {
		t.Fatalf("first synthesis %d", i)
	}
	if f := <-sink.writes; f != 8000 {
		t.Fatalf("first write %d frames", f)
	}
	// Sentence 1 is stuck in the sink; sentence 2 must be synthesized anyway.
	select {
	case i := <-synth.started:
		if i != 1 {
			t.Fatalf("second synthesis %d", i)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("sentence 2 was not synthesized while sentence 1 played")
	}
	close(sink.release)
	st := <-done
	// 3 sentences plus 2 pauses.
	if st.Sentences != 3 || sink.frames != 3*8000+2*800 {
		t.Fatalf("stats %+v, frames %d", st, sink.frames)
	}
	if st.Audio != 3*time.Second+200*time.Millisecond {
		t.Fatalf("audio %v", st.Audio)
	}
	if st.FirstAudio <= 0 || st.FirstAudio > st.Total {
		t.Fatalf("first audio %v of %v", st.FirstAudio, st.Total)
	}
}

func TestPlayCancelAbortsSink(t *testing.T) {
	synth := &fakeSynth{n: 5, started: make(chan int, 10)}
	sink := &gateSink{writes: make(chan int, 10), release: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() {
		_, err := Play(ctx, synth, Request{}, sink)
		errc <- err
	}()
	<-sink.writes
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v", err)
	}
	if !sink.aborted {
		t.Fatal("sink not aborted on cancel: stop must be immediate")
	}
}

// lookaheadSynth is a synthesizer and a sink that record how far synthesis
// runs ahead of playback. Sentence i's samples are i+1, so the sink knows
// which sentence it is given; pauses are 0. At every Write the sink waits
// (synctest.Wait) until the synthesizer can go no further, then notes the
// highest sentence requested: ahead[n] is how many sentences past n were
// requested while n was being handed to the sink.
type lookaheadSynth struct {
	mu        sync.Mutex
	requested int // highest sentence index started; -1 none
	ahead     []int
}

func newLookaheadSynth(sentences int) *lookaheadSynth {
	s := &lookaheadSynth{requested: -1, ahead: make([]int, sentences)}
	for i := range s.ahead {
		s.ahead[i] = -1
	}
	return s
}

func (s *lookaheadSynth) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	for i := range s.ahead {
		s.mu.Lock()
		s.requested = i
		s.mu.Unlock()
		c := Chunk{Index: i, Last: i == len(s.ahead)-1, PCM: audio.PCM{Rate: 8000, Channels: 1, Samples: slices.Repeat([]int16{int16(i + 1)}, 800)}}
		if !c.Last {
			c.Silence = 50 * time.Millisecond
		}
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

func (s *lookaheadSynth) Write(ctx context.Context, p audio.PCM) error {
	if len(p.Samples) == 0 || p.Samples[0] == 0 {
		return nil // a pause belongs to the sentence before it
	}
	n := int(p.Samples[0]) - 1
	synctest.Wait() // the synthesizer runs until it waits in emit, or ends
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ahead[n] = max(s.ahead[n], s.requested-n)
	return nil
}
func (s *lookaheadSynth) Drain(context.Context) error { return nil }
func (s *lookaheadSynth) Abort() error                { return nil }
func (s *lookaheadSynth) Close() error                { return nil }

// TestPlayLookaheadIsOne proves the lookahead of Play (mynah say) with a
// recording synthesizer: while sentence n plays, n+1 has been requested
// and n+2 has not.
func TestPlayLookaheadIsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		rec := newLookaheadSynth(n)
		st, err := Play(t.Context(), rec, Request{}, rec)
		if err != nil || st.Sentences != n {
			t.Fatalf("Play: %d sentences, %v", st.Sentences, err)
		}
		want := slices.Repeat([]int{1}, n)
		want[n-1] = 0 // nothing is left to synthesize after the last
		if !slices.Equal(rec.ahead, want) {
			t.Fatalf("sentences requested past the one playing: %v, want %v", rec.ahead, want)
		}
	})
}

// failSink fails its second Write.
type failSink struct {
	writes  int
	aborted bool
}

var errDevice = errors.New("device gone")

func (f *failSink) Write(ctx context.Context, p audio.PCM) error {
	if f.writes++; f.writes == 2 {
		return errDevice
	}
	return nil
}
func (f *failSink) Drain(context.Context) error { return nil }
func (f *failSink) Abort() error                { f.aborted = true; return nil }
func (f *failSink) Close() error                { return nil }

func TestPlayWriteErrorAbortsSink(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		synth := &fakeSynth{n: 5, started: make(chan int, 10)}
		sink := &failSink{}
		st, err := Play(t.Context(), synth, Request{}, sink)
		if !errors.Is(err, errDevice) || !sink.aborted {
			t.Fatalf("error %v, aborted %v: want %v and an aborted sink", err, sink.aborted, errDevice)
		}
		// The first sentence was written, its pause failed; the synthesizer
		// got one sentence further and was stopped there.
		if st.Sentences != 1 || len(synth.started) != 2 {
			t.Fatalf("%d sentences played, %d synthesized", st.Sentences, len(synth.started))
		}
	})
}
