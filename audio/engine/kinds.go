package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Voice kinds: a plain Piper directory, or a bundle whose voice.json names
// its engine.
const (
	kindPiper    = "piper"
	kindStyle    = bundle.EngineStyleVector
	kindPipeline = bundle.EnginePipeline
)

// loadedVoice is a voice in the session cache, whatever its kind.
type loadedVoice struct {
	name    string // the name it was asked for (the directory's)
	kind    string
	info    voice.Info
	silence time.Duration // after every sentence but the last
	model   model
	// pipeline is set for a cloning voice: enrollment and its KV caches.
	pipeline *voice.Pipeline
	// precision is the variant loaded (fp32 is the original files).
	precision string
}

// A model is a loaded voice of one kind (Piper, style vector, pipeline)
// as the engine drives it: the one thing that differs between kinds is
// how a request is resolved against the voice.
type model interface {
	// prepare resolves a request against the voice.
	prepare(ctx context.Context, r Request) (plan, error)
	close() error
}

// A plan is a request resolved against a voice.
type plan interface {
	// spec names every setting that changes the audio (Text is filled
	// in per sentence to make the phrase cache key); cacheable is false
	// when a sentence's audio depends on more than the spec (a
	// conversation session carries the decoder's state over).
	spec() (spec cache.PhraseSpec, cacheable bool)
	// split cuts a text into sentences; runs cuts one of them into what
	// synthesize takes, one model run each (a sentence whose audio would
	// be too long for one run is several). Speak cuts each sentence only
	// when it comes to it, so first audio does not grow with the text.
	split(text string) ([]string, error)
	runs(sentence string) []string
	// synthesize also says how many phonemes the voice had no id for
	// (skipped).
	synthesize(ctx context.Context, sentence string) (audio.PCM, int, error)
	// transcribe is what synthesize would give the model (mynah text).
	transcribe(sentence string) (voice.Transcript, error)
}

// allRuns is every run of sentences, in order (what Speak makes of them
// one sentence at a time).
func allRuns(p plan, sentences []string) []string {
	var out []string
	for _, s := range sentences {
		out = append(out, p.runs(s)...)
	}
	return out
}

// phraseKey names one sentence's audio under a plan's settings, read by
// the normalization rules norm names (normalizeOff, or the version).
func phraseKey(p plan, sentence, norm string) cache.PhraseKey {
	spec, _ := p.spec()
	spec.Text = sentence
	spec.Settings = maps.Clone(spec.Settings)
	if spec.Settings == nil {
		spec.Settings = make(map[string]string, 1)
	}
	spec.Settings["normalize"] = norm
	return spec.Key()
}

// voiceKind says what engine the voice directory at path needs.
func voiceKind(path string) (string, error) {
	data, err := os.ReadFile(filepath.Join(path, bundle.ManifestName))
	if errors.Is(err, os.ErrNotExist) {
		if _, err := voice.FindPiper(path); err != nil {
			return "", err
		}
		return kindPiper, nil
	}
	if err != nil {
		return "", err
	}
	m, err := bundle.Parse(data)
	if err != nil {
		return "", err
	}
	switch m.Engine {
	case kindStyle, kindPipeline:
		return m.Engine, nil
	}
	return "", fmt.Errorf("%s: engine %q in a voice.json is not supported; a Piper voice needs no manifest", path, m.Engine)
}

// loadKind loads the voice at path with the engine of its kind, in the
// precision voices.precision(s) asks for. When auto chose a variant that
// turns out to be unusable (its file damaged or gone since the gate), the
// voice is loaded as it is, with a warning: a broken variant must not
// silence a voice that works. A precision named in the config is not
// replaced: that fails with the reason.
func (vs *Engine) loadKind(name, kind, path string) (*loadedVoice, error) {
	precision, err := vs.choosePrecision(name, kind, path)
	if err != nil {
		return nil, fmt.Errorf("voice %q: %w", name, err)
	}
	v, err := vs.loadPrecision(name, kind, path, precision)
	if err != nil && errors.Is(err, bundle.ErrNoVariant) && precision != bundle.PrecisionFP32 && vs.wants(name) == "auto" {
		vs.log.Warn("voice variant unusable, loading the original", "voice", name, "precision", precision, "err", err)
		return vs.loadPrecision(name, kind, path, bundle.PrecisionFP32)
	}
	return v, err
}

// wants is the precision the config asks for a voice.
func (vs *Engine) wants(name string) string {
	want := vs.precision
	if p, ok := vs.precisions[name]; ok {
		want = p
	}
	if want == "" {
		want = "auto"
	}
	return want
}

// loadPrecision loads the voice at path with the engine of its kind as
// its variant of precision.
func (vs *Engine) loadPrecision(name, kind, path, precision string) (*loadedVoice, error) {
	var v *loadedVoice
	switch kind {
	case kindPiper:
		opts := *vs.opts
		opts.Precision = precision
		opts.OptimizeLater = vs.optim != nil
		p, err := voice.LoadPiper(vs.rt, path, &opts)
		if err != nil {
			return nil, err
		}
		v = piperVoice(name, p)
	case kindStyle:
		s, err := voice.LoadStyle(vs.rt, path, &voice.StyleOptions{
			Session: shrinking(vs.opts.Session), KeepConv1D: vs.opts.KeepConv1D, SentenceSilence: vs.opts.SentenceSilence, Logger: vs.opts.Logger, Precision: precision,
		})
		if err != nil {
			return nil, err
		}
		v = styleVoice(name, s)
	case kindPipeline:
		var err error
		if v, err = vs.loadPipeline(name, path, precision); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("voice %q: unknown kind %q", name, kind)
	}
	v.precision = precision
	return v, nil
}

// choosePrecision settles which variant of the voice to load: the
// voice's entry in voices.precisions, else voices.precision; auto takes
// the smallest variant whose gate passed (for onnx.provider) and that is
// usable on this CPU, with one warning naming any smaller one it passed
// over and why.
func (vs *Engine) choosePrecision(name, kind, path string) (string, error) {
	want := vs.wants(name)
	var gates map[string]bundle.GateRecord
	if kind == kindPiper {
		model, err := voice.FindPiper(path)
		if err != nil {
			return "", err
		}
		gates = voice.PiperGates(model)
	} else {
		// The manifest alone: the engine's own load verifies the files,
		// and hashing a large model twice would double its load time.
		data, err := os.ReadFile(filepath.Join(path, bundle.ManifestName))
		if err != nil {
			return "", err
		}
		m, err := bundle.Parse(data)
		if err != nil {
			return "", err
		}
		gates = m.Gates()
	}
	precision, passedOver, err := bundle.ChoosePrecision(want, gates, vs.provider, vs.cpu)
	if passedOver != "" {
		vs.log.Warn("voice variant passed over for this CPU", "voice", name, "cpu", vs.cpu, "precision", precision, "why", passedOver)
	}
	return precision, err
}

// piperModel is a Piper voice. Its sentences are cut to the voice's cap
// on the audio of one run at each request's rate.
type piperModel struct {
	name string
	v    *voice.Piper
}

type piperPlan struct {
	v      *voice.Piper
	prm    voice.Params
	phrase cache.PhraseSpec
}

func piperVoice(name string, v *voice.Piper) *loadedVoice {
	return &loadedVoice{name: name, kind: kindPiper, info: v.Info(), silence: v.SilenceAfter(), model: piperModel{name, v}}
}

func (m piperModel) releaseMemory() error { return m.v.ReleaseMemory() }

// shrinking is so for the voices that have no releaseMemory: with the
// arena, it is given back after every run (ort.SessionOptions.ArenaShrink)
// instead of when the engine is idle.
func shrinking(so *ort.SessionOptions) *ort.SessionOptions {
	if so == nil || !so.CPUArena {
		return so
	}
	o := *so
	o.ArenaShrink = true
	return &o
}

func (m piperModel) prepare(_ context.Context, r Request) (plan, error) {
	prm, err := m.v.Resolve(voice.Request{Speaker: r.Speaker, Rate: r.Rate,
		LengthScale: r.LengthScale, NoiseScale: r.NoiseScale, NoiseW: r.NoiseW})
	if err != nil {
		return nil, err
	}
	info := m.v.Info()
	return piperPlan{v: m.v, prm: prm, phrase: cache.PhraseSpec{
		ModelDigest: info.Digest,
		Voice:       m.name,
		Speaker:     strconv.FormatInt(prm.Speaker, 10),
		Params:      scaleParams(prm.NoiseScale, prm.LengthScale, prm.NoiseW),
		Settings:    map[string]string{"engine": kindPiper, "phonemes": info.Phonemes},
		SampleRate:  info.SampleRate,
	}}, nil
}

func (m piperModel) close() error { return m.v.Close() }

func (p piperPlan) spec() (cache.PhraseSpec, bool)      { return p.phrase, true }
func (p piperPlan) split(text string) ([]string, error) { return p.v.Split(text) }
func (p piperPlan) runs(sentence string) []string       { return p.v.RunsFor(sentence, p.prm) }
func (p piperPlan) transcribe(sentence string) (voice.Transcript, error) {
	return p.v.Transcribe(sentence)
}
func (p piperPlan) synthesize(_ context.Context, sentence string) (audio.PCM, int, error) {
	return p.v.SynthesizeSentence(sentence, p.prm)
}

// styleModel is a style-vector voice (Kokoro-like): a pack of voices, one
// speed.
type styleModel struct {
	name string
	v    *voice.Style
}

type stylePlan struct {
	v      *voice.Style
	prm    voice.StyleParams
	phrase cache.PhraseSpec
}

func styleVoice(name string, v *voice.Style) *loadedVoice {
	return &loadedVoice{name: name, kind: kindStyle, info: v.Info(), silence: v.SilenceAfter(), model: styleModel{name, v}}
}

func (m styleModel) prepare(_ context.Context, r Request) (plan, error) {
	prm, err := m.v.Resolve(voice.Request{Speaker: r.Speaker, Rate: r.Rate})
	if err != nil {
		return nil, err
	}
	info := m.v.Info()
	return stylePlan{v: m.v, prm: prm, phrase: cache.PhraseSpec{
		ModelDigest: info.Digest, // of voice.json, which pins every file's digest
		Voice:       m.name,
		Speaker:     prm.Voice,
		Params:      map[string]float64{"speed": float64(prm.Speed)},
		Settings:    map[string]string{"engine": kindStyle, "phonemes": info.Phonemes},
		SampleRate:  info.SampleRate,
	}}, nil
}

func (m styleModel) close() error { return m.v.Close() }

func (p stylePlan) spec() (cache.PhraseSpec, bool)      { return p.phrase, true }
func (p stylePlan) split(text string) ([]string, error) { return p.v.Split(text) }
func (p stylePlan) runs(sentence string) []string       { return []string{sentence} }
func (p stylePlan) transcribe(sentence string) (voice.Transcript, error) {
	return p.v.Transcribe(sentence)
}
func (p stylePlan) synthesize(_ context.Context, sentence string) (audio.PCM, int, error) {
	return p.v.SynthesizeSentence(sentence, p.prm)
}

// pipelineModel is a cloning voice (speaker encoder, decoder, vocoder):
// its speakers are embeddings from the cache file.
type pipelineModel struct {
	name string
	p    *voice.Pipeline
	vs   *Engine // for the cloned speakers
}

type pipelinePlan struct {
	p       *voice.Pipeline
	prm     voice.PipelineParams
	phrase  cache.PhraseSpec
	session bool
}

// loadPipeline loads a cloning voice.
func (vs *Engine) loadPipeline(name, path, precision string) (*loadedVoice, error) {
	p, err := voice.LoadPipeline(vs.rt, path, &voice.PipelineOptions{
		Session: shrinking(vs.opts.Session), KeepConv1D: vs.opts.KeepConv1D, SentenceSilence: vs.opts.SentenceSilence, Logger: vs.opts.Logger, Precision: precision,
	})
	if err != nil {
		return nil, err
	}
	return &loadedVoice{name: name, kind: kindPipeline, info: p.Info().Info, silence: p.SilenceAfter(),
		model: pipelineModel{name, p, vs}, pipeline: p}, nil
}

func (m pipelineModel) prepare(_ context.Context, r Request) (plan, error) {
	req := voice.PipelineRequest{Session: r.Session, Rate: r.Rate}
	if r.Speaker != "" {
		e, err := m.vs.speaker(r.Owner, r.Speaker, m.p)
		if err != nil {
			return nil, err
		}
		req.Speaker = &e
	}
	prm, err := m.p.Resolve(req)
	if err != nil {
		return nil, err
	}
	info := m.p.Info()
	return pipelinePlan{p: m.p, prm: prm, session: r.Session != "", phrase: cache.PhraseSpec{
		ModelDigest: info.Digest, // of voice.json, which pins the three models
		Voice:       m.name,
		// The embedding, not the name: a speaker enrolled again from
		// another recording is another voice.
		Speaker:    "embedding:" + prm.SpeakerDigest,
		Params:     scaleParams(prm.NoiseScale, prm.LengthScale, prm.NoiseW),
		Settings:   map[string]string{"engine": kindPipeline, "phonemes": info.Phonemes},
		SampleRate: info.SampleRate,
	}}, nil
}

func (m pipelineModel) close() error { return m.p.Close() }

// A session's sentence depends on what was said before it: not cacheable.
func (p pipelinePlan) spec() (cache.PhraseSpec, bool)      { return p.phrase, !p.session }
func (p pipelinePlan) split(text string) ([]string, error) { return p.p.Split(text) }
func (p pipelinePlan) runs(sentence string) []string       { return []string{sentence} }
func (p pipelinePlan) transcribe(sentence string) (voice.Transcript, error) {
	return p.p.Transcribe(sentence)
}
func (p pipelinePlan) synthesize(ctx context.Context, sentence string) (audio.PCM, int, error) {
	return p.p.SynthesizeSentence(ctx, sentence, p.prm)
}

// speaker finds a cloned speaker for a request of owner: the owner's own
// first, then a shared one. One made by another encoder than p's must be
// enrolled again.
func (vs *Engine) speaker(owner, name string, p *voice.Pipeline) (voice.Embedding, error) {
	if vs.store == nil {
		return voice.Embedding{}, fmt.Errorf("%w %q: cloned speakers live in the cache file, and there is none", voice.ErrUnknownSpeaker, name)
	}
	for _, o := range []string{owner, ""} {
		sp, ok, err := vs.store.GetSpeaker(o, name)
		if err != nil {
			return voice.Embedding{}, err
		}
		if !ok {
			if o == "" {
				break
			}
			continue
		}
		e := voice.Embedding{Vector: sp.Embedding, Prompt: sp.Prompt, EncoderDigest: sp.EncoderDigest}
		if err := p.CheckEmbedding(e); err != nil {
			return voice.Embedding{}, err
		}
		return e, nil
	}
	return voice.Embedding{}, fmt.Errorf("%w %q", voice.ErrUnknownSpeaker, name)
}

// scaleParams are a VITS-style model's synthesis scales as phrase cache
// parameters.
func scaleParams(noise, length, noiseW float32) map[string]float64 {
	return map[string]float64{"length_scale": float64(length), "noise_scale": float64(noise), "noise_w": float64(noiseW)}
}
