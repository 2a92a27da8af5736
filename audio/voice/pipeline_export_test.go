package voice

import (
	"context"
	"slices"

	"github.com/mynah-tts/mynah/audio"
)

// Hooks for the pipeline tests in package voice_test, which need the demo
// kits (package demo imports this package, so they cannot live here).

// SetProsodyObserver makes p call f with every sentence's phoneme ids and
// decoder prosody. Set it before synthesizing, not during.
func SetProsodyObserver(p *Pipeline, f func(sentence string, ids []int64, prosody []float32)) {
	p.observe = f
}

// SetStepwisePrefill makes p prefill speaker prompts one token at a time,
// the way a decoder without a prompt pass (or a cold cache) computes them.
func SetStepwisePrefill(p *Pipeline, on bool) { p.stepwisePrefill = on }

// ScratchProsody computes without any cache what a session speaking
// sentences one after another gets: the speaker's prompt one token at a
// time from an empty context, then each sentence's ids step by step, each
// sentence's feedback starting from zeros. It returns each sentence's
// prosody.
func ScratchProsody(p *Pipeline, e Embedding, sentences []string) ([][]float32, error) {
	ctx := context.Background()
	_, kv, err := p.dec.steps(ctx, e.Prompt, p.dec.empty(), false)
	if err != nil {
		return nil, err
	}
	var out [][]float32
	for _, s := range sentences {
		ids, _, err := p.phonemeIDs(s)
		if err != nil {
			return nil, err
		}
		var prosody []float32
		if prosody, kv, err = p.dec.steps(ctx, ids, kv, true); err != nil {
			return nil, err
		}
		out = append(out, prosody)
	}
	return out, nil
}

// NeutralReference is the synthetic voice behind the default speaker.
func NeutralReference(rate int, seconds float64) []float32 { return neutralReference(rate, seconds) }

// DecodeSentence runs only the decoder part of SynthesizeSentence (from
// the cached or prefilled prefix, or the session's state).
func DecodeSentence(ctx context.Context, p *Pipeline, sentence string, prm PipelineParams) ([]float32, error) {
	ids, _, err := p.phonemeIDs(sentence)
	if err != nil {
		return nil, err
	}
	return p.decodeSentence(ctx, ids, prm)
}

// SpeakAfterHistory speaks sentence the way an engine without session
// state has to for the sentence to hear its context: the decoder runs
// over the speaker prefix, then every history sentence, then the
// sentence, of which alone the audio is made.
func SpeakAfterHistory(ctx context.Context, p *Pipeline, prm PipelineParams, history []string, sentence string) (audio.PCM, error) {
	kv, err := p.prefix(ctx, prm)
	if err != nil {
		return audio.PCM{}, err
	}
	var ids []int64
	var prosody []float32
	for _, s := range slices.Concat(history, []string{sentence}) {
		if ids, _, err = p.phonemeIDs(s); err != nil {
			return audio.PCM{}, err
		}
		if prosody, kv, err = p.dec.steps(ctx, ids, kv, true); err != nil {
			return audio.PCM{}, err
		}
	}
	wave, err := p.vocode(ids, prosody, prm)
	if err != nil {
		return audio.PCM{}, err
	}
	return audio.FromFloat32(wave, p.info.SampleRate), nil
}

// CheckModel is checkModel, for the tests on the demo models.
var CheckModel = checkModel
