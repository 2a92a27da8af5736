package engine

import (
	"context"
	"errors"
	"fmt"

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
		if ctx.Err() == nil {
			vs.log.Info("no render node answered: synthesizing here", "voice", r.Voice, "err", err)
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
	pcm, _, err := p.synthesize(ctx, r.Text)
	if err != nil {
		return key, nil, err
	}
	data, err := audio.EncodePhrase(pcm)
	if err != nil {
		return key, nil, err
	}
	if vs.store != nil {
		if err := vs.store.PutPhrase(key, name, data); err != nil {
			vs.log.Warn("rendered phrase not cached", "err", err)
		}
	}
	return key, data, nil
}
