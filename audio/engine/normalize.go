package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
)

// normalizeOff is the phrase cache's name for text spoken as written.
const normalizeOff = "off"

// normalizeVersion names text.Normalize's rules in the phrase cache key:
// a sentence read under other rules is other audio, even where the words
// came out the same.
var normalizeVersion = strconv.Itoa(text.NormalizeVersion)

// normalize reads a request's text the way voice v speaks it (see
// text.Normalize), unless raw or the engine's NoNormalize says to speak
// it as written. It returns the text to split and the rules' name for the
// phrase cache key.
func (vs *Engine) normalize(v *loadedVoice, s string, raw bool) (string, string, error) {
	if raw || vs.noNormalize {
		return s, normalizeOff, nil
	}
	out, err := text.Normalize(s, vs.normalizeOptions(v.info.Language, v.info.Mandarin))
	if err != nil {
		return "", "", err
	}
	return out, normalizeVersion, nil
}

func (vs *Engine) normalizeOptions(language string, mandarin bool) *text.NormalizeOptions {
	return &text.NormalizeOptions{Language: language, Mandarin: mandarin, Emoji: vs.emoji}
}

// Reading is one sentence of a request as a voice will speak it: the
// sentence after normalization and splitting, and what the voice's front
// end makes of it.
type Reading struct {
	Sentence string
	voice.Transcript
}

// Read returns what Speak would make of s, sentence by sentence, without
// synthesizing anything (mynah text): the text normalized as the voice
// reads it (unless s.NoNormalize), split, and phonemized.
func (vs *Engine) Read(ctx context.Context, s Request) ([]Reading, error) {
	v, release, err := vs.sessions.Get(ctx, cmp.Or(s.Voice, vs.def))
	if err != nil {
		return nil, err
	}
	defer release()
	p, sentences, _, err := vs.read(ctx, v, s)
	if err != nil {
		return nil, err
	}
	sentences = allRuns(p, sentences)
	out := make([]Reading, 0, len(sentences))
	for i, sentence := range sentences {
		t, err := p.transcribe(sentence)
		if err != nil {
			return nil, fmt.Errorf("sentence %d: %w", i+1, err)
		}
		out = append(out, Reading{Sentence: sentence, Transcript: t})
	}
	return out, nil
}

// read resolves s against the loaded voice v and cuts its text, as v
// reads it, into sentences (each is cut into the plan's runs later, by
// plan.runs); norm names the
// reading rules for the phrase cache key. Speak and Read share it.
func (vs *Engine) read(ctx context.Context, v *loadedVoice, s Request) (p plan, sentences []string, norm string, err error) {
	if p, err = v.model.prepare(ctx, s); err != nil {
		return nil, nil, "", err
	}
	said, norm, err := vs.normalize(v, s.Text, s.NoNormalize)
	if err != nil {
		return nil, nil, "", err
	}
	if norm != normalizeOff {
		vs.log.Debug("text normalized", "voice", v.name, "text", said)
	}
	sentences, err = p.split(said)
	if errors.Is(err, text.ErrEmptyText) {
		return nil, nil, "", fmt.Errorf("%w: %w", ErrNothingToSay, err)
	}
	if err != nil {
		return nil, nil, "", err
	}
	return p, sentences, norm, nil
}
