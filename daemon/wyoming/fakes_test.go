package wyoming

import (
	"context"
	"sync"

	"github.com/mynah-tts/mynah/audio/speech"
	"github.com/mynah-tts/mynah/audio/text"
)

// fakeEngine is an Engine made of function fields. CutSentences is
// audio/text's, as mynahd's adapter has it, unless CutFunc is set.
type fakeEngine struct {
	VoicesFunc func() []VoiceInfo
	SpeakFunc  func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error
	CutFunc    func(text string) (done, rest string)
}

var _ Engine = (*fakeEngine)(nil)

func (f *fakeEngine) Voices() []VoiceInfo { return f.VoicesFunc() }

func (f *fakeEngine) CutSentences(s string) (done, rest string) {
	if f.CutFunc != nil {
		return f.CutFunc(s)
	}
	return text.Complete(s, nil)
}

func (f *fakeEngine) Speak(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
	return f.SpeakFunc(ctx, r, emit)
}

// recorder keeps the requests a fake engine was given.
type recorder struct {
	mu   sync.Mutex
	reqs []speech.Request
}

func (r *recorder) add(q speech.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, q)
	r.mu.Unlock()
}

func (r *recorder) texts() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, q := range r.reqs {
		out = append(out, q.Text)
	}
	return out
}

func (r *recorder) requests() []speech.Request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]speech.Request(nil), r.reqs...)
}
