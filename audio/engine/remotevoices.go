package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cache"
)

// RemoteVoice is a voice only the render nodes have, as their catalog
// describes it: a remote node without the voice's files speaks it with
// every sentence rendered elsewhere (Options.RemoteVoices).
type RemoteVoice struct {
	Name string
	// Language reads the text (text.NormalizeOptions.Language); empty:
	// the normalizer's default.
	Language   string
	SampleRate int
	Speakers   []string
}

// ErrRemoteOnly wraps the failure of a sentence of a voice this node
// does not have when no render node gave it; the Remote's own error (a
// render.ErrNoRenderer, whose reason is render) is wrapped too.
var ErrRemoteOnly = reasoned("the voice is only on the render nodes, and none gave the sentence", "render")

// remoteSilence is the pause after each sentence of a remote voice but
// the last: Piper's, which the render nodes' voices have unless
// configured otherwise.
const remoteSilence = voice.DefaultSentenceSilence

// remoteVoice returns the catalog entry of name when this node has no
// voice of that name and asks render nodes for every miss.
func (vs *Engine) remoteVoice(name string) (RemoteVoice, bool) {
	catalog := vs.catalogVoices()
	if catalog == nil {
		return RemoteVoice{}, false
	}
	if paths, err := vs.scan(); err == nil {
		if _, installed := paths[name]; installed {
			return RemoteVoice{}, false
		}
	}
	for _, v := range catalog {
		if v.Name == name {
			return v, true
		}
	}
	return RemoteVoice{}, false
}

// catalogVoices is the render nodes' catalog when this node speaks
// their voices (it asks render nodes for every miss), else nothing.
func (vs *Engine) catalogVoices() []RemoteVoice {
	if vs.remoteVoices == nil || vs.remote == nil || vs.remoteRenderBy || vs.store == nil {
		return nil
	}
	return vs.remoteVoices()
}

// speakRemote says s with a voice only the render nodes have: the text
// is read and split here by the catalog's language, each sentence comes
// from this node's phrase cache or a render node, and a sentence neither
// has fails the request (ErrRemoteOnly; reason render).
func (vs *Engine) speakRemote(ctx context.Context, rv RemoteVoice, s Request, emit func(Chunk) error) error {
	if s.Speaker != "" && !slices.Contains(rv.Speakers, s.Speaker) {
		return fmt.Errorf("voice %q on the render nodes: %w %q (it has %v)", rv.Name, voice.ErrUnknownSpeaker, s.Speaker, rv.Speakers)
	}
	rate := s.Rate
	if rate == 0 {
		rate = 1
	}
	if rate < 0.25 || rate > 4 {
		return fmt.Errorf("voice %q: rate %v is outside 0.25..4", rv.Name, rate)
	}
	said, norm := s.Text, normalizeOff
	if !s.NoNormalize && !vs.noNormalize {
		out, err := text.Normalize(s.Text, vs.normalizeOptions(rv.Language, false))
		if err != nil {
			return err
		}
		said, norm = out, normalizeVersion
	}
	sentences, err := text.Split(said, nil)
	if errors.Is(err, text.ErrEmptyText) {
		return fmt.Errorf("%w: %w", ErrNothingToSay, err)
	}
	if err != nil {
		return err
	}
	spec := cache.PhraseSpec{
		// Not a digest of model files this node does not have: the key
		// of the render nodes' voice by name. A voice replaced there under
		// the same name is played as cached here until the cache is purged.
		ModelDigest: "render-node:" + rv.Name,
		Voice:       rv.Name,
		Speaker:     s.Speaker,
		Params:      map[string]float64{"rate": rate},
		SampleRate:  rv.SampleRate,
	}
	for i, sentence := range sentences {
		if err := ctx.Err(); err != nil {
			return err
		}
		k := spec
		k.Text = sentence
		k.Settings = map[string]string{"normalize": norm}
		key := k.Key()
		c := Chunk{Index: i, Last: i == len(sentences)-1}
		if pcm, hit := vs.cached(key); hit {
			c.PCM, c.Cached = pcm, true
		} else {
			// No key in the request: the render node's key of its own
			// voice is the one that counts, and this node cannot compute
			// it.
			pcm, err := vs.renderedElsewhere(ctx, RemoteRequest{Voice: rv.Name, Speaker: s.Speaker, Rate: rate, Text: sentence, Normalized: norm != normalizeOff}, key)
			if err != nil {
				return fmt.Errorf("sentence %d: %w", i+1, err)
			}
			c.PCM, c.Rendered = pcm, true
		}
		if !c.Last || s.Continued {
			c.Silence = remoteSilence
		}
		if err := emit(c); err != nil {
			return err
		}
	}
	return nil
}

// renderedElsewhere asks the render nodes for one sentence of a remote
// voice and stores the answer under key.
func (vs *Engine) renderedElsewhere(ctx context.Context, r RemoteRequest, key cache.PhraseKey) (audio.PCM, error) {
	record, err := vs.remote.Render(ctx, r)
	if err != nil {
		return audio.PCM{}, fmt.Errorf("%w: %w", ErrRemoteOnly, err)
	}
	pcm, err := audio.DecodePhrase(record)
	if err != nil {
		return audio.PCM{}, fmt.Errorf("%w: the answer is damaged: %w", ErrRemoteOnly, err)
	}
	if err := vs.store.PutPhrase(key, r.Voice, record); err != nil {
		vs.log.Warn("rendered phrase not cached", "err", err)
	}
	return pcm, nil
}
