package engine

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/cache"
)

// Remote renders sentences elsewhere: mynahd's render.mode remote asks
// the render nodes on the broker for every phrase-cache miss before it
// synthesizes the sentence itself.
type Remote interface {
	// Render returns the phrase record of r's sentence (audio.EncodePhrase's
	// format, as the phrase cache stores it), or an error when no render
	// node gave one.
	Render(ctx context.Context, r RemoteRequest) ([]byte, error)
}

// RemoteRequest is one sentence asked of a render node: the voice and its
// settings as the requester resolved them, the sentence as it reads it
// (normalized and split already), and the phrase key the requester
// computed from its own copy of the voice, which the answer must match.
type RemoteRequest struct {
	Voice, Speaker string
	Rate           float64
	// Text is one sentence, read already: the render node neither
	// normalizes nor splits it again.
	Text string
	// Normalized says Text was read by this build's rules
	// (text.NormalizeVersion, part of the key); false: spoken as written.
	Normalized bool
	Key        cache.PhraseKey
	// Node, when set, is the one node to ask (Request.RenderBy); empty:
	// the render nodes.
	Node string
}

// ErrRemoteKey is RenderPhrase's error when the render node's own key of
// a request differs from the one it carries: the two nodes' copies of
// the voice (or their settings) differ, and the audio would not be what
// the requester would make.
var ErrRemoteKey = errors.New("render node's phrase key differs from the request's")

// fromRemote asks vs.remote for the sentence under key; on an answer
// whose record decodes, it stores the record in the phrase cache and
// returns its audio. Any failure is a miss: the caller synthesizes.
func (vs *Engine) fromRemote(ctx context.Context, r RemoteRequest) (audio.PCM, bool) {
	record, err := vs.remote.Render(ctx, r)
	if err != nil {
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Node != "":
			vs.log.Info("the announcement's leader did not answer in time: synthesizing here", "voice", r.Voice, "leader", r.Node)
		case ctx.Err() == nil:
			vs.log.Info("no render node answered: synthesizing here", "voice", r.Voice, "node", r.Node, "err", err)
		}
		return audio.PCM{}, false
	}
	pcm, err := audio.DecodePhrase(record)
	if err != nil {
		vs.log.Warn("a render node's answer is damaged: synthesizing here", "voice", r.Voice, "err", err)
		return audio.PCM{}, false
	}
	if vs.store != nil {
		if err := vs.store.PutPhrase(r.Key, r.Voice, record); err != nil {
			vs.log.Warn("rendered phrase not cached", "err", err)
		}
	}
	return pcm, true
}

// RenderPhrase makes one sentence's phrase record for another node
// (mynahd's render.mode serve): from the phrase cache, else synthesized
// and stored. The sentence is taken as read (r.Normalized says how); the
// key is this node's, which must equal r.Key when that is set
// (ErrRemoteKey).
func (vs *Engine) RenderPhrase(ctx context.Context, r RemoteRequest) (cache.PhraseKey, []byte, error) {
	defer vs.synthesizing()()
	name := r.Voice
	if name == "" {
		name = vs.def
	}
	v, release, err := vs.sessions.Get(ctx, name)
	if err != nil {
		return cache.PhraseKey{}, nil, err
	}
	defer release()
	p, err := v.model.prepare(ctx, Request{Voice: name, Speaker: r.Speaker, Rate: r.Rate})
	if err != nil {
		return cache.PhraseKey{}, nil, err
	}
	if _, cacheable := p.spec(); !cacheable {
		return cache.PhraseKey{}, nil, fmt.Errorf("render %q: its audio depends on more than the sentence", name)
	}
	norm := normalizeOff
	if r.Normalized {
		norm = normalizeVersion
	}
	key := phraseKey(p, r.Text, norm)
	if r.Key != (cache.PhraseKey{}) && key != r.Key {
		return key, nil, fmt.Errorf("render %q: %w", name, ErrRemoteKey)
	}
	if vs.store != nil {
		if data, ok, err := vs.store.GetPhrase(key); err == nil && ok {
			if _, err := audio.DecodePhrase(data); err == nil {
				return key, data, nil
			}
		}
	}
	pcm, _, f, err := vs.synthesizeOnce(ctx, p, key, r.Text, true) // another node waits for it
	if f != nil {
		if err == nil && vs.store != nil {
			vs.keep(key, name, pcm)
		}
		vs.flights.leave(key, f)
	}
	if err != nil {
		return key, nil, err
	}
	data, err := audio.EncodePhrase(pcm)
	if err != nil {
		return key, nil, err
	}
	return key, data, nil
}

// flights are the syntheses in progress by phrase key, so that a sentence
// this node is making for its own request and the same sentence asked of
// it by another node (a group announcement's members ask their leader)
// are synthesized once.
type flights struct {
	mu sync.Mutex
	m  map[cache.PhraseKey]*flight
}

// flight is one synthesis; pcm, unknown and err are set before done is
// closed. It stays listed until its audio is stored (or known not to be),
// so that a node asking between the synthesis and the store shares it too.
type flight struct {
	done    chan struct{}
	pcm     audio.PCM
	unknown int
	err     error
}

// synthesizeOnce synthesizes sentence under key, or shares the synthesis
// of key in progress (or made and not yet stored). When this call
// synthesized, it returns its flight: the caller ends it with
// vs.flights.leave once the audio is stored (or is not to be).
func (vs *Engine) synthesizeOnce(ctx context.Context, p plan, key cache.PhraseKey, sentence string, first bool) (audio.PCM, int, *flight, error) {
	for {
		f, mine := vs.flights.join(key)
		if mine {
			f.pcm, f.unknown, f.err = vs.synthesize(ctx, p, sentence, first)
			close(f.done)
			return f.pcm, f.unknown, f, f.err
		}
		select {
		case <-f.done:
			if f.err == nil {
				return f.pcm, f.unknown, nil, nil
			}
			// The other synthesis failed (its request was stopped, say):
			// once it has left, this one tries.
			vs.flights.leave(key, f)
		case <-ctx.Done():
			return audio.PCM{}, 0, nil, ctx.Err()
		}
	}
}

// join returns key's flight, and whether the caller started it (and must
// fly it).
func (fs *flights) join(key cache.PhraseKey) (*flight, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		return f, false
	}
	if fs.m == nil {
		fs.m = make(map[cache.PhraseKey]*flight)
	}
	f := &flight{done: make(chan struct{})}
	fs.m[key] = f
	return f, true
}

func (fs *flights) leave(key cache.PhraseKey, f *flight) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.m[key] == f {
		delete(fs.m, key)
	}
}
