package voice

import (
	"context"
	"errors"
	"sync"
	"testing"
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
