package voice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Errors of the pipeline engine. The wrapping message names the limit,
// the role or the tensor, and says what to do next.
var (
	// ErrReference means a reference recording cannot be enrolled: not
	// valid PCM, shorter than the encoder's min_seconds, longer than its
	// max_seconds, or without a voice in it (silence, noise, a whisper).
	ErrReference = reasoned("unusable reference audio", "bad_audio")
	// ErrReenroll means an embedding was made by another speaker encoder
	// than the voice's: embeddings of different encoders live in
	// different spaces, so the speaker must be enrolled again.
	ErrReenroll = reasoned("speaker must be enrolled again", "reenroll")
	// ErrInvalidEmbedding means an embedding does not fit the voice: the
	// wrong length, a non-finite or all-zero vector, or prompt ids out of
	// range (a damaged store, or an embedding of another model).
	ErrInvalidEmbedding = errors.New("invalid speaker embedding")
	// ErrTooManySteps means a sentence needs more decoder steps than the
	// manifest's decoder.max_steps, or more context than
	// decoder.kv.max_context leaves after the speaker prompt.
	ErrTooManySteps = errors.New("sentence exceeds the decoder's limits")
	// ErrSessionBusy means another sentence of the same session is being
	// synthesized; a session's sentences follow one another.
	ErrSessionBusy = errors.New("session is in use by another request")
)

// Defaults of PipelineOptions.
const (
	DefaultMaxPrefixes     = 8
	DefaultMaxPrefixBytes  = 64 << 20
	DefaultMaxSessions     = 16
	DefaultMaxSessionBytes = 64 << 20
	DefaultSessionTTL      = 5 * time.Minute
)

// PipelineOptions configure LoadPipeline. A nil *PipelineOptions means
// defaults; so does every zero field.
type PipelineOptions struct {
	// Session options for ONNX Runtime, used for all three models.
	Session *ort.SessionOptions
	// KeepConv1D hands ONNX Runtime the models' 1-D convolutions as they
	// are; by default they are lifted to 2-D at load (onnx.LiftConv1D),
	// which its CPU kernels run faster.
	KeepConv1D bool
	// Precision picks a variant of the bundle (fp16, int8, nbits; "" or
	// fp32: the original files); see bundle.WithPrecision.
	Precision string
	// ForcePrecision loads the Precision variant even when its gate
	// record says it failed (or has not finished): for the check that
	// decides that record (mynah quantize --voice), never for serving.
	ForcePrecision bool
	// SentenceSilence, Split and MaxSentenceAudio mean what PiperOptions'
	// fields of the same name mean. A nil Split (or one without
	// MaxSentenceChars) gets sentences of at most a third of the
	// decoder's max_steps characters, so that ordinary text stays within
	// the decoder's step limit (English IPA gives about two ids per
	// character with Piper's pads).
	SentenceSilence  time.Duration
	Split            *text.SplitOptions
	MaxSentenceAudio time.Duration
	// Inference holds the vocoder's noise_scale, length_scale and noise_w;
	// nil means Piper's defaults (0.667, 1, 0.8).
	Inference *Inference
	// DefaultReference, when set, is enrolled as the speaker of requests
	// that name none. Without it that speaker is the encoder's embedding
	// of a synthetic neutral voice (see DefaultSpeaker).
	DefaultReference *audio.PCM

	// MaxPrefixes and MaxPrefixBytes bound the speaker prefix cache (the
	// decoder's KV after each speaker's prompt), least recently used
	// first out. A negative MaxPrefixes turns the cache off: every
	// sentence prefills its speaker's prompt again.
	MaxPrefixes    int
	MaxPrefixBytes int64
	// MaxSessions, MaxSessionBytes and SessionTTL bound the session cache
	// (the KV after a session's last sentence): by count and bytes, least
	// recently used first out, and by idle time. A negative MaxSessions
	// turns sessions off: requests naming one are spoken without history.
	MaxSessions     int
	MaxSessionBytes int64
	SessionTTL      time.Duration
	// Clock returns the current time for session expiry; nil is time.Now.
	Clock  func() time.Time
	Logger *slog.Logger
}

func (opts *PipelineOptions) withDefaults() PipelineOptions {
	var o PipelineOptions
	if opts != nil {
		o = *opts
	}
	p := (&PiperOptions{SentenceSilence: o.SentenceSilence, MaxSentenceAudio: o.MaxSentenceAudio, Logger: o.Logger}).withDefaults()
	o.SentenceSilence, o.MaxSentenceAudio, o.Logger = p.SentenceSilence, p.MaxSentenceAudio, p.Logger
	if o.Inference == nil {
		o.Inference = &Inference{NoiseScale: DefaultNoiseScale, LengthScale: DefaultLengthScale, NoiseW: DefaultNoiseW}
	}
	if o.MaxPrefixes == 0 {
		o.MaxPrefixes = DefaultMaxPrefixes
	}
	if o.MaxPrefixBytes <= 0 {
		o.MaxPrefixBytes = DefaultMaxPrefixBytes
	}
	if o.MaxSessions == 0 {
		o.MaxSessions = DefaultMaxSessions
	}
	if o.MaxSessionBytes <= 0 {
		o.MaxSessionBytes = DefaultMaxSessionBytes
	}
	if o.SessionTTL <= 0 {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.Clock == nil {
		o.Clock = time.Now
	}
	return o
}

// PipelineInfo describes a loaded pipeline voice. Info.Digest is the
// sha256 of voice.json, which pins the three models' digests, so a phrase
// cache keyed on it never serves audio of a replaced model; SizeBytes is
// the three files together; ModelPath is the bundle directory.
type PipelineInfo struct {
	Info
	Engine                                      string // bundle.EnginePipeline
	EncoderDigest, DecoderDigest, VocoderDigest string
	EncoderBytes, DecoderBytes, VocoderBytes    int64
	// EmbeddingDim and PromptTokens are the encoder's D and K (0 when the
	// model leaves them dynamic).
	EmbeddingDim, PromptTokens int
	MaxSteps, MaxContext       int // the decoder's limits from the manifest
}

// Pipeline runs a pipeline bundle: a speaker encoder that turns a
// reference recording into an embedding and speaker prompt tokens, an
// autoregressive decoder with a KV cache that gives three prosody
// adjustments per phoneme id, and a vocoder that speaks the ids with that
// prosody in the embedding's voice.
//
// It is safe for concurrent use: Enroll only reads, the caches have their
// own lock, and a sentence of a session holds that session alone (a second
// sentence of the same session at once gets ErrSessionBusy).
//
// Ownership of KV tensors: a cached prefix or session state is never
// written once stored. A decoder run reads it as its past and ONNX
// Runtime writes the present into buffers the sentence allocated for
// itself (RunWithOutputs), so no output ever aliases cached memory; a
// session's state is taken out of the cache while its sentence runs and
// the buffer holding the final present is put back in its place.
type Pipeline struct {
	bundle        *bundle.Bundle
	info          PipelineInfo
	enc, voc      session
	dec           *arDecoder
	names         pipelineNames
	ids           text.PhonemeIDMap
	front, pinyin text.Phonemizer
	split         *text.SplitOptions
	silence,
	maxAudio time.Duration
	inference Inference
	log       *slog.Logger
	caches    *kvCaches

	defaultRef     *audio.PCM
	defaultSpeaker func() (Embedding, error) // once

	warnOnce sync.Map // phoneme → struct{}

	// observe, when set (by tests), sees every sentence's ids and prosody.
	observe func(sentence string, ids []int64, prosody []float32)
	// stepwisePrefill makes prefills run the prompt one token at a time
	// (tests and benchmarks compare it with the cached path).
	stepwisePrefill bool
}

// pipelineNames are the models' real tensor names from the manifest.
type pipelineNames struct {
	encAudio, encEmbedding, encPrompt                           string
	vocIDs, vocLengths, vocScales, vocProsody, vocEmbed, vocOut string
}

// LoadPipeline loads the pipeline bundle in dir: bundle.Load verifies every
// file's digest, each model is decoded in Go before ONNX Runtime sees the
// same bytes, and each session's tensors are checked against the manifest.
// Errors name the role whose model failed.
func LoadPipeline(rt *ort.Runtime, dir string, opts *PipelineOptions) (*Pipeline, error) {
	o := opts.withDefaults()
	b, err := loadBundle(dir, o.Precision, o.ForcePrecision)
	if err != nil {
		return nil, fmt.Errorf("load pipeline voice: %w", err)
	}
	if b.Manifest.Engine != bundle.EnginePipeline {
		return nil, fmt.Errorf("load pipeline voice %s: %w: engine is %q, not %q", dir, ErrVoiceNotFound, b.Manifest.Engine, bundle.EnginePipeline)
	}
	roles := []string{bundle.RoleEncoder, bundle.RoleDecoder, bundle.RoleVocoder}
	sessions := make(map[string]*ort.Session, len(roles))
	files := make(map[string]bundle.File, len(roles))
	closeAll := func() {
		for _, s := range sessions {
			s.Close()
		}
	}
	for _, role := range roles {
		f, err := b.RoleFile(role)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("load pipeline voice: %s: %w", role, err)
		}
		s, err := openModel(rt, b, f, o.Session, o.KeepConv1D)
		if err != nil {
			closeAll()
			return nil, fmt.Errorf("load pipeline voice: %s (%s): %w", role, f.Rel, err)
		}
		sessions[role], files[role] = s, f
		if err := b.CheckModel(role, s); err != nil {
			closeAll()
			return nil, fmt.Errorf("load pipeline voice: %s (%s): %w", role, f.Rel, err)
		}
	}
	p, err := newPipeline(b, sessions[bundle.RoleEncoder], sessions[bundle.RoleDecoder], sessions[bundle.RoleVocoder], o)
	if err != nil {
		closeAll()
		return nil, fmt.Errorf("load pipeline voice %s: %w", dir, err)
	}
	enc, dec, voc := files[bundle.RoleEncoder], files[bundle.RoleDecoder], files[bundle.RoleVocoder]
	p.info.EncoderDigest, p.info.DecoderDigest, p.info.VocoderDigest = enc.SHA256, dec.SHA256, voc.SHA256
	p.info.EncoderBytes, p.info.DecoderBytes, p.info.VocoderBytes = enc.Size, dec.Size, voc.Size
	p.info.SizeBytes = enc.Size + dec.Size + voc.Size
	return p, nil
}

// openModel reads a verified file (its digest checked again on the bytes
// read) and hands exactly those bytes to ONNX Runtime once Go has parsed
// them (a malformed model can crash ONNX Runtime inside cgo), or the
// parsed model with its 1-D convolutions lifted to 2-D unless keep1D.
func openModel(rt *ort.Runtime, b *bundle.Bundle, f bundle.File, so *ort.SessionOptions, keep1D bool) (*ort.Session, error) {
	data, err := b.ReadFile(f)
	if err != nil {
		return nil, err
	}
	m, err := checkModel(data, nil)
	if err != nil {
		return nil, err
	}
	if !keep1D {
		lifted, free, err := liftModel(m, 0)
		if err != nil {
			return nil, err
		}
		if lifted != nil {
			defer free()
			data = lifted
		}
	}
	return rt.NewSession(data, so)
}

// newPipeline wires a voice from a loaded bundle and the sessions of its
// three models, already checked against the manifest.
func newPipeline(b *bundle.Bundle, enc session, dec kvSession, voc session, o PipelineOptions) (*Pipeline, error) {
	m := b.Manifest
	p := &Pipeline{
		bundle:     b,
		enc:        enc,
		voc:        voc,
		silence:    max(o.SentenceSilence, 0),
		maxAudio:   o.MaxSentenceAudio,
		inference:  *o.Inference,
		log:        o.Logger,
		defaultRef: o.DefaultReference,
	}
	if err := checkInference(p.inference); err != nil {
		return nil, err
	}
	ei, vi := m.Encoder.Inputs, m.Vocoder.Inputs
	p.names = pipelineNames{
		encAudio: ei["audio"], encEmbedding: m.Encoder.Outputs["embedding"], encPrompt: m.Encoder.Outputs["prompt"],
		vocIDs: vi["ids"], vocLengths: vi["lengths"], vocScales: vi["scales"], vocProsody: vi["prosody"],
		vocEmbed: vi["embedding"], vocOut: m.Vocoder.Outputs["audio"],
	}
	p.dec = newARDecoder(dec, m.Decoder)
	dim, k := fixedDim(enc.Outputs(), p.names.encEmbedding, 1), fixedDim(enc.Outputs(), p.names.encPrompt, 1)
	if vd := fixedDim(voc.Inputs(), p.names.vocEmbed, 1); dim == 0 {
		dim = vd
	} else if vd != 0 && vd != dim {
		return nil, fmt.Errorf("%w: encoder embedding has %d values, the vocoder's input %d", bundle.ErrModelMismatch, dim, vd)
	}
	if k >= p.dec.maxContext {
		return nil, fmt.Errorf("%w: the encoder's %d prompt tokens leave no room in decoder.kv.max_context (%d)", bundle.ErrModelMismatch, k, p.dec.maxContext)
	}
	ids, err := text.NewPhonemeIDMap(m.Text.PhonemeIDMap, 0)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", bundle.ErrInvalidManifest, err)
	}
	p.ids = ids
	var ptype string
	p.front, p.pinyin, ptype, err = frontEnds(m.Text.Phonemes, m.Text.Language, ids)
	if err != nil {
		return nil, err
	}
	split := text.SplitOptions{}
	if o.Split != nil {
		split = *o.Split
	}
	if split.MaxSentenceChars <= 0 {
		split.MaxSentenceChars = min(max(min(p.dec.maxSteps, p.dec.maxContext-k)/3, 20), text.DefaultMaxSentenceChars)
	}
	p.split = &split
	p.caches = newKVCaches(o, p.log)
	p.defaultSpeaker = sync.OnceValues(p.enrollDefault)
	p.info = PipelineInfo{
		Info: Info{
			Name:       m.Name,
			ModelPath:  b.Dir,
			Digest:     b.Digest,
			SampleRate: m.SampleRate,
			Provider:   string(dec.Provider()),
			Phonemes:   ptype,
			Language:   readingLanguage(ptype, m.Text.Language),
			Mandarin:   p.pinyin != nil,
		},
		Engine:       bundle.EnginePipeline,
		EmbeddingDim: dim,
		PromptTokens: k,
		MaxSteps:     p.dec.maxSteps,
		MaxContext:   p.dec.maxContext,
	}
	return p, nil
}

// fixedDim returns dimension axis of the named tensor when the model fixes
// it, else 0.
func fixedDim(list []ort.TensorInfo, name string, axis int) int {
	for _, t := range list {
		if t.Name == name && axis < len(t.Dims) && t.Dims[axis] > 0 {
			return int(t.Dims[axis])
		}
	}
	return 0
}

func checkInference(inf Inference) error {
	for _, f := range []struct {
		name string
		v    float32
	}{{"noise_scale", inf.NoiseScale}, {"length_scale", inf.LengthScale}, {"noise_w", inf.NoiseW}} {
		if math.IsNaN(float64(f.v)) || f.v < 0 || f.v > 10 {
			return fmt.Errorf("%w: inference %s %v outside 0..10", ErrBadParameter, f.name, f.v)
		}
	}
	if inf.LengthScale == 0 {
		return fmt.Errorf("%w: inference length_scale must be above 0", ErrBadParameter)
	}
	return nil
}

// Info describes the voice.
func (p *Pipeline) Info() PipelineInfo { return p.info }

// EncoderDigest is the sha256 of the speaker encoder: every Embedding
// records the digest of the encoder that made it.
func (p *Pipeline) EncoderDigest() string { return p.info.EncoderDigest }

// Bundle returns the loaded bundle (manifest, verified files).
func (p *Pipeline) Bundle() *bundle.Bundle { return p.bundle }

// Split splits text into the sentences Synthesize would speak.
func (p *Pipeline) Split(s string) ([]string, error) { return text.Split(s, p.split) }

// SilenceAfter is the pause that follows every sentence but the last.
func (p *Pipeline) SilenceAfter() time.Duration { return p.silence }

// Close releases the three ONNX Runtime sessions and drops the caches.
func (p *Pipeline) Close() error {
	p.caches.evict(math.MaxInt64)
	return errors.Join(p.enc.Close(), p.dec.sess.Close(), p.voc.Close())
}

// PipelineRequest is one thing to say with a cloned voice.
type PipelineRequest struct {
	Text string
	// Speaker is an embedding from Enroll (or stored after it); nil means
	// DefaultSpeaker. Synthesize reads it during the call (do not change
	// it meanwhile) and keeps no reference to it.
	Speaker *Embedding
	// Session, when not empty, continues the decoder's context from the
	// previous sentence of the same session (within this request and
	// across requests), so that a follow-up is spoken as a follow-up.
	// Without it every sentence starts from the speaker's prompt alone,
	// which makes sentences independent and cacheable.
	Session string
	// Rate is the speaking rate: 2 is twice as fast; 0 means 1. It
	// divides the length scale.
	Rate float64
}

// PipelineParams are a request's resolved parameters: with the bundle and
// the sentence, everything that decides a session-less sentence's audio.
// A phrase cache keys on SpeakerDigest and the scales.
type PipelineParams struct {
	Speaker       Embedding
	SpeakerDigest string
	Session       string
	NoiseScale    float32
	LengthScale   float32
	NoiseW        float32
}

// Resolve checks a request's speaker and rate against the voice and
// returns the values synthesis will use.
func (p *Pipeline) Resolve(req PipelineRequest) (PipelineParams, error) {
	prm := PipelineParams{
		Session:     req.Session,
		NoiseScale:  p.inference.NoiseScale,
		LengthScale: p.inference.LengthScale,
		NoiseW:      p.inference.NoiseW,
	}
	rate, err := checkRate(req.Rate)
	if err != nil {
		return prm, err
	}
	prm.LengthScale = float32(float64(prm.LengthScale) / rate)
	if req.Speaker == nil {
		e, err := p.DefaultSpeaker()
		if err != nil {
			return prm, err
		}
		prm.Speaker = e
	} else {
		if err := p.CheckEmbedding(*req.Speaker); err != nil {
			return prm, err
		}
		prm.Speaker = *req.Speaker
	}
	prm.SpeakerDigest = prm.Speaker.Digest()
	return prm, nil
}

// Synthesize speaks req sentence by sentence, as Piper.Synthesize does:
// validation errors come before any audio, emit gets each sentence as
// soon as it is made (Play runs synthesis one sentence ahead of
// playback), and an error from emit stops synthesis and is returned.
func (p *Pipeline) Synthesize(ctx context.Context, req PipelineRequest, emit func(Chunk) error) error {
	prm, err := p.Resolve(req)
	if err != nil {
		return err
	}
	sentences, err := p.Split(req.Text)
	if err != nil {
		return err
	}
	return speakSentences(ctx, sentences, p.silence, func(s string) (audio.PCM, int, error) {
		return p.SynthesizeSentence(ctx, s, prm)
	}, emit)
}

// With returns p as a Synthesizer (for Play) that speaks every Request
// with speaker (nil: DefaultSpeaker) in session ("": none). Of the
// Request it uses Text and Rate; a pipeline voice has no named speakers
// and no noise settings per request.
func (p *Pipeline) With(speaker *Embedding, session string) Synthesizer {
	return pipelineVoice{p: p, speaker: speaker, session: session}
}

type pipelineVoice struct {
	p       *Pipeline
	speaker *Embedding
	session string
}

func (v pipelineVoice) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	return v.p.Synthesize(ctx, PipelineRequest{Text: req.Text, Speaker: v.speaker, Session: v.session, Rate: req.Rate}, emit)
}

// SynthesizeSentence speaks one sentence from Split and also returns how
// many phonemes the voice had no id for. With prm.Session the decoder
// continues that session's context and leaves its own behind for the
// next sentence; without, it starts from the speaker's prefix.
func (p *Pipeline) SynthesizeSentence(ctx context.Context, sentence string, prm PipelineParams) (audio.PCM, int, error) {
	ids, unknown, err := p.phonemeIDs(sentence)
	if err != nil {
		return audio.PCM{}, unknown, err
	}
	prosody, err := p.decodeSentence(ctx, ids, prm)
	if err != nil {
		return audio.PCM{}, unknown, err
	}
	if p.observe != nil {
		p.observe(sentence, ids, prosody)
	}
	wave, err := p.vocode(ids, prosody, prm)
	if err != nil {
		return audio.PCM{}, unknown, err
	}
	return audio.FromFloat32(wave, p.info.SampleRate), unknown, nil
}

// phonemeIDs is the sentence's Piper-style id sequence (^ _ (p _)* $),
// checked against the decoder's limits before any run.
func (p *Pipeline) phonemeIDs(sentence string) ([]int64, int, error) {
	phonemes, err := frontFor(p.front, p.pinyin, sentence).Phonemize(sentence)
	if err != nil {
		return nil, 0, fmt.Errorf("phonemize: %w", err)
	}
	ids, missing := p.ids.IDs(phonemes)
	unknown := 0
	for ph, k := range missing {
		unknown += k
		if _, seen := p.warnOnce.LoadOrStore(ph, struct{}{}); !seen {
			p.log.Warn("phoneme not in voice, skipped", "phoneme", ph, "voice", p.info.Name)
		}
	}
	switch n := len(ids); {
	case n > MaxPhonemeIDs:
		return nil, unknown, fmt.Errorf("%w: %d phoneme ids, limit MaxPhonemeIDs (%d)", ErrTooManyFrames, n, MaxPhonemeIDs)
	case n > p.dec.maxSteps:
		return nil, unknown, fmt.Errorf("%w: %d phoneme ids need %d decoder steps, over the voice's decoder.max_steps (%d); split the sentence",
			ErrTooManySteps, n, n, p.dec.maxSteps)
	}
	return ids, unknown, nil
}

// vocode runs the vocoder over the ids with their prosody, in the
// speaker's voice.
func (p *Pipeline) vocode(ids []int64, prosody []float32, prm PipelineParams) ([]float32, error) {
	n := int64(len(ids))
	emb := prm.Speaker.Vector
	outs, err := p.voc.Run([]ort.Tensor{
		{Name: p.names.vocIDs, Shape: []int64{1, n}, Int64: ids},
		{Name: p.names.vocLengths, Shape: []int64{1}, Int64: []int64{n}},
		{Name: p.names.vocScales, Shape: []int64{3}, Float32: []float32{prm.NoiseScale, prm.LengthScale, prm.NoiseW}},
		{Name: p.names.vocProsody, Shape: []int64{1, n, prosodyDim}, Float32: prosody},
		{Name: p.names.vocEmbed, Shape: []int64{1, int64(len(emb))}, Float32: emb},
	})
	if err != nil {
		return nil, fmt.Errorf("run vocoder: %w", err)
	}
	for _, o := range outs {
		if o.Name != p.names.vocOut {
			continue
		}
		if limit := int(p.maxAudio.Seconds() * float64(p.info.SampleRate)); len(o.Float32) > limit {
			return nil, fmt.Errorf("%w: %d samples, limit MaxSentenceAudio (%v)", ErrTooManyFrames, len(o.Float32), p.maxAudio)
		}
		return o.Float32, nil
	}
	return nil, fmt.Errorf("run vocoder: %w: no output %q", bundle.ErrModelMismatch, p.names.vocOut)
}

// KVStats reports the prefix and session caches.
func (p *Pipeline) KVStats() KVStats { return p.caches.stats() }

// EvictKV frees at least bytes of cached decoder state if it can, for
// memory pressure: idle sessions first (least recently used first), then
// speaker prefixes, which are cheaper to rebuild than a session's
// history is to lose. It returns the bytes freed; math.MaxInt64 drops
// everything. State of a sentence being synthesized is not touched.
func (p *Pipeline) EvictKV(bytes int64) int64 { return p.caches.evict(bytes) }

// DropSession forgets a session's context (the user said "new topic", or
// the conversation ended), and reports whether there was one.
func (p *Pipeline) DropSession(id string) bool { return p.caches.dropSession(id) }

// shortDigest shortens a hex digest for messages and logs.
func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
