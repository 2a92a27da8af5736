package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// lookaheadRec is an engine and a sink that record how far synthesis runs
// ahead of playback. The engine marks sentence i's samples with i+1, so
// the sink knows which sentence a block belongs to; silence is 0. At every
// Write the sink waits (synctest.Wait) until the engine can go no further,
// then notes the highest sentence requested so far: ahead[n] is how many
// sentences past n were requested while n was being handed to the sink.
type lookaheadRec struct {
	mu        sync.Mutex
	requested int // highest sentence index the engine has started; -1 none
	ahead     []int
}

func newLookaheadRec(sentences int) *lookaheadRec {
	r := &lookaheadRec{requested: -1, ahead: make([]int, sentences)}
	for i := range r.ahead {
		r.ahead[i] = -1
	}
	return r
}

func (r *lookaheadRec) speak(ctx context.Context, s Speech, emit func(Chunk) error) error {
	sentences := strings.Split(s.Text, ".")
	for i := range sentences {
		r.mu.Lock()
		r.requested = i
		r.mu.Unlock()
		pcm := audio.PCM{Rate: 16000, Channels: 1, Samples: slices.Repeat([]int16{int16(i + 1)}, 2400)}
		if err := emit(Chunk{Index: i, Last: i == len(sentences)-1, PCM: pcm}); err != nil {
			return err
		}
	}
	return nil
}

func (r *lookaheadRec) write(ctx context.Context, p audio.PCM) error {
	if len(p.Samples) == 0 || p.Samples[0] == 0 {
		return nil // a pause belongs to the sentence before it
	}
	n := int(p.Samples[0]) - 1
	synctest.Wait() // the engine runs until it waits in emit, or ends
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ahead[n] = max(r.ahead[n], r.requested-n)
	return nil
}

// TestWorkerLookaheadIsOne proves the worker's lookahead with a recording
// engine: while sentence n plays, n+1 has been requested and n+2 has not.
func TestWorkerLookaheadIsOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 5
		rec := newLookaheadRec(n)
		h := newHarness(t, func(o *Options) { o.WriteBlock = 50 * time.Millisecond }) // three blocks a sentence
		h.eng.fake.SpeakFunc = rec.speak
		h.sink.fake.WriteFunc = rec.write
		h.start()
		h.send("say", `{"id":"la","text":"`+strings.Repeat("s.", n-1)+`s"}`)
		h.waitEvent("la", EventFinished)

		rec.mu.Lock()
		defer rec.mu.Unlock()
		want := slices.Repeat([]int{1}, n)
		want[n-1] = 0 // nothing is left to synthesize after the last
		if !slices.Equal(rec.ahead, want) {
			t.Fatalf("sentences requested past the one playing: %v, want %v", rec.ahead, want)
		}
		t.Log("lookahead per sentence:", fmt.Sprint(rec.ahead))
	})
}
