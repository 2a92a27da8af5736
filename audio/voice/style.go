package voice

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// StyleOptions configure LoadStyle. A nil *StyleOptions means defaults;
// the fields mean what PiperOptions' fields of the same name mean.
type StyleOptions struct {
	Session *ort.SessionOptions
	// KeepConv1D: as PiperOptions.KeepConv1D.
	KeepConv1D       bool
	SentenceSilence  time.Duration // 0: DefaultSentenceSilence; negative: none
	Split            *text.SplitOptions
	MaxSentenceAudio time.Duration // 0: 60 s
	// Precision picks a variant of the bundle (fp16, int8, nbits; "" or
	// fp32: the original files); see bundle.WithPrecision.
	Precision string
	// ForcePrecision means what PipelineOptions.ForcePrecision means.
	ForcePrecision bool
	Logger         *slog.Logger
}

func (opts *StyleOptions) withDefaults() StyleOptions {
	var o StyleOptions
	if opts != nil {
		o = *opts
	}
	p := (&PiperOptions{SentenceSilence: o.SentenceSilence, MaxSentenceAudio: o.MaxSentenceAudio, Logger: o.Logger}).withDefaults()
	o.SentenceSilence, o.MaxSentenceAudio, o.Logger = p.SentenceSilence, p.MaxSentenceAudio, p.Logger
	return o
}

// Style runs a style_vector bundle (a Kokoro-style model and its voice
// pack): phonemes → tokens with the manifest's token map, 0 at both ends;
// the style vector is a row of the request's voice picked by the token
// count (the manifest's row_rule); the request's rate is the model's
// speed. One ONNX Runtime run per sentence, sentences streamed as Piper's
// are. The pack's voices are the speakers. It is safe for concurrent use.
type Style struct {
	bundle *bundle.Bundle
	info   Info
	sess   session
	names  struct{ tokens, style, speed, audio string }
	speedT ort.ElementType
	tokens map[string][]int64
	front  text.Phonemizer
	pinyin text.Phonemizer // Mandarin sentences, when the map covers pinyin
	space  []int64         // ids of " ": where an overlong sentence is cut
	split  *text.SplitOptions
	silence,
	maxAudio time.Duration
	log *slog.Logger

	mu     sync.Mutex
	styles map[string][]float32 // voice → [rows × dim], read on first use

	warnOnce sync.Map // phoneme → struct{}
}

var _ Synthesizer = (*Style)(nil)

// StyleParams are a request's resolved parameters: with the bundle and the
// sentence, everything that decides the audio.
type StyleParams struct {
	Voice string  // a voice of the pack
	Speed float32 // 1 is the model's own pace; 2 twice as fast
}

// LoadStyle loads the style_vector bundle in dir: bundle.Load verifies
// every file, the model is decoded and checked in Go before ONNX Runtime
// sees the same bytes, and the session's tensors are checked against the
// manifest. Voice files are read (and their digests checked again) when a
// request first uses them.
func LoadStyle(rt *ort.Runtime, dir string, opts *StyleOptions) (*Style, error) {
	o := opts.withDefaults()
	b, err := loadBundle(dir, o.Precision, o.ForcePrecision)
	if err != nil {
		return nil, fmt.Errorf("load style voice: %w", err)
	}
	if b.Manifest.Engine != bundle.EngineStyleVector {
		return nil, fmt.Errorf("load style voice %s: %w: engine is %q, not %q", dir, ErrVoiceNotFound, b.Manifest.Engine, bundle.EngineStyleVector)
	}
	f, err := b.RoleFile(bundle.RoleModel)
	if err != nil {
		return nil, fmt.Errorf("load style voice: %w", err)
	}
	sess, err := openModel(rt, b, f, o.Session, o.KeepConv1D)
	if err != nil {
		return nil, fmt.Errorf("load style voice %s: %w", f.Path, err)
	}
	s, err := newStyle(b, sess, o)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("load style voice %s: %w", dir, err)
	}
	s.info.ModelPath = f.Path
	s.info.SizeBytes = f.Size
	return s, nil
}

// newStyle wires a voice from a loaded bundle and a session of its model.
func newStyle(b *bundle.Bundle, sess session, o StyleOptions) (*Style, error) {
	m := b.Manifest
	if err := b.CheckModel(bundle.RoleModel, sess); err != nil {
		return nil, err
	}
	s := &Style{
		bundle:   b,
		sess:     sess,
		tokens:   m.Text.PhonemeIDMap,
		space:    m.Text.PhonemeIDMap[" "],
		split:    o.Split,
		silence:  max(o.SentenceSilence, 0),
		maxAudio: o.MaxSentenceAudio,
		log:      o.Logger,
		styles:   make(map[string][]float32),
	}
	role := m.Model.Tensors
	s.names.tokens, s.names.style, s.names.speed, s.names.audio = role.Inputs["tokens"], role.Inputs["style"], role.Inputs["speed"], role.Outputs["audio"]
	for _, in := range sess.Inputs() {
		if in.Name == s.names.speed {
			s.speedT = in.Type
		}
	}
	var err error
	var ptype string
	s.front, s.pinyin, ptype, err = frontEnds(m.Text.Phonemes, m.Text.Language, text.PhonemeIDMap(m.Text.PhonemeIDMap))
	if err != nil {
		return nil, err
	}
	s.info = Info{
		Name:       m.Name,
		Digest:     b.Digest,
		SampleRate: m.SampleRate,
		Speakers:   b.VoiceNames(),
		Provider:   string(sess.Provider()),
		Phonemes:   ptype,
		Language:   readingLanguage(ptype, m.Text.Language),
		Mandarin:   s.pinyin != nil,
	}
	return s, nil
}

// frontEnds picks the phonemizers the way newPiper does: Debian's
// espeak-ng reads Mandarin as English, so a map that covers the pinyin
// inventory gets mynah's own Mandarin front end, for every sentence when
// the language is Mandarin and for Han sentences otherwise.
func frontEnds(ptype, language string, ids text.PhonemeIDMap) (front, pinyin text.Phonemizer, used string, err error) {
	coversPinyin := covers(ids, text.PinyinTokens())
	if ptype == PhonemeEspeak && isMandarin(language) && coversPinyin {
		ptype = PhonemePinyin
	}
	front, err = text.NewPhonemizer(ptype, language)
	if err != nil {
		return nil, nil, "", fmt.Errorf("front end: %w", err)
	}
	if ptype != PhonemePinyin && coversPinyin {
		if pinyin, err = text.NewPhonemizer(PhonemePinyin, ""); err != nil {
			return nil, nil, "", fmt.Errorf("front end: %w", err)
		}
	}
	return front, pinyin, ptype, nil
}

// Info describes the voice. Digest is the sha256 of voice.json, which
// pins the digest of the model and of every voice file, so it changes
// whenever anything that decides the audio does.
func (s *Style) Info() Info {
	i := s.info
	i.Speakers = slices.Clone(i.Speakers)
	return i
}

// Bundle returns the loaded bundle (manifest, verified files).
func (s *Style) Bundle() *bundle.Bundle { return s.bundle }

// Close releases the ONNX Runtime session.
func (s *Style) Close() error { return s.sess.Close() }

// Split splits text into the sentences Synthesize would speak.
func (s *Style) Split(str string) ([]string, error) { return text.Split(str, s.split) }

// SilenceAfter is the pause that follows every sentence but the last.
func (s *Style) SilenceAfter() time.Duration { return s.silence }

// Resolve checks a request's voice and rate. Speaker names a voice of the
// pack ("" is the first by name); Rate is the speed (0 means 1); a
// LengthScale divides it. NoiseScale and NoiseW do not apply: a
// style-vector model has no noise inputs, and they are ignored.
func (s *Style) Resolve(req Request) (StyleParams, error) {
	prm := StyleParams{Voice: req.Speaker, Speed: 1}
	if prm.Voice == "" {
		prm.Voice = s.info.Speakers[0]
	}
	if _, ok := s.bundle.Voice(prm.Voice); !ok {
		return prm, unknownSpeaker(req.Speaker, s.info.Speakers)
	}
	speed, err := checkRate(req.Rate)
	if err != nil {
		return prm, err
	}
	if req.LengthScale != nil {
		ls := float64(*req.LengthScale)
		if math.IsNaN(ls) || ls <= 0 || ls > 10 {
			return prm, fmt.Errorf("%w: length_scale %v outside (0, 10]", ErrBadParameter, ls)
		}
		speed /= ls
	}
	prm.Speed = float32(speed)
	return prm, nil
}

// Synthesize speaks req sentence by sentence, as Piper.Synthesize does:
// validation errors come before any audio, emit gets each sentence as soon
// as it is made, and an error from emit stops synthesis and is returned.
func (s *Style) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	prm, err := s.Resolve(req)
	if err != nil {
		return err
	}
	sentences, err := s.Split(req.Text)
	if err != nil {
		return err
	}
	return speakSentences(ctx, sentences, s.silence, func(sentence string) (audio.PCM, int, error) {
		return s.SynthesizeSentence(sentence, prm)
	}, emit)
}

// Tokens returns a sentence's tokens, pads not included, and how many
// phonemes the token map had no id for (they are skipped and logged once).
func (s *Style) Tokens(sentence string) ([]int64, int, error) {
	phonemes, err := frontFor(s.front, s.pinyin, sentence).Phonemize(sentence)
	if err != nil {
		return nil, 0, fmt.Errorf("phonemize: %w", err)
	}
	tokens := make([]int64, 0, len(phonemes))
	unknown := 0
	for _, p := range phonemes {
		ids, ok := s.tokens[p]
		if !ok {
			unknown++
			if _, seen := s.warnOnce.LoadOrStore(p, struct{}{}); !seen {
				s.log.Warn("phoneme not in voice, skipped", "phoneme", p, "voice", s.info.Name)
			}
			continue
		}
		tokens = append(tokens, ids...)
	}
	if len(tokens) > MaxPhonemeIDs {
		return nil, unknown, fmt.Errorf("%w: %d tokens, limit MaxPhonemeIDs (%d)", ErrTooManyFrames, len(tokens), MaxPhonemeIDs)
	}
	return tokens, unknown, nil
}

// MaxRunTokens is the most tokens one model run gets: a voice pack has a
// row per token count, so a model is not made for longer runs (Kokoro's
// pack has 510 rows for its 512-token context). A longer sentence is
// spoken in several runs, cut at the last word boundary that fits.
func (s *Style) MaxRunTokens() int { return s.bundle.Manifest.Style.Rows }

// SynthesizeSentence speaks one sentence from Split and also returns how
// many phonemes the voice had no id for.
func (s *Style) SynthesizeSentence(sentence string, prm StyleParams) (audio.PCM, int, error) {
	tokens, unknown, err := s.Tokens(sentence)
	if err != nil {
		return audio.PCM{}, unknown, err
	}
	pack, err := s.voice(prm.Voice)
	if err != nil {
		return audio.PCM{}, unknown, err
	}
	st := s.bundle.Manifest.Style
	limit := int(s.maxAudio.Seconds() * float64(s.info.SampleRate))
	var wave []float32
	for _, run := range cutRuns(tokens, s.MaxRunTokens(), s.space) {
		row := st.Row(len(run))
		y, err := s.run(run, pack[row*st.Dim:(row+1)*st.Dim], prm.Speed)
		if err != nil {
			return audio.PCM{}, unknown, err
		}
		if len(wave)+len(y) > limit {
			return audio.PCM{}, unknown, fmt.Errorf("%w: over %d samples, limit MaxSentenceAudio (%v)", ErrTooManyFrames, limit, s.maxAudio)
		}
		wave = append(wave, y...)
	}
	return audio.FromFloat32(wave, s.info.SampleRate), unknown, nil
}

// run is one model run on tokens (pads added here) with one style row.
func (s *Style) run(tokens []int64, style []float32, speed float32) ([]float32, error) {
	padded := make([]int64, 0, len(tokens)+2)
	padded = append(append(append(padded, 0), tokens...), 0)
	sp := ort.Tensor{Name: s.names.speed, Shape: []int64{1}, Float32: []float32{speed}}
	if s.speedT == ort.Int32 {
		// Exports with an int32 speed only know whole speeds.
		sp = ort.Tensor{Name: s.names.speed, Shape: []int64{1}, Int32: []int32{int32(max(1, math.Round(float64(speed))))}}
	}
	outs, err := s.sess.Run([]ort.Tensor{
		{Name: s.names.tokens, Shape: []int64{1, int64(len(padded))}, Int64: padded},
		{Name: s.names.style, Shape: []int64{1, int64(len(style))}, Float32: style},
		sp,
	})
	if err != nil {
		return nil, fmt.Errorf("run model: %w", err)
	}
	for _, o := range outs {
		if o.Name == s.names.audio {
			return o.Float32, nil
		}
	}
	return nil, fmt.Errorf("run model: %w: no output %q", ErrModelMismatch, s.names.audio)
}

// cutRuns splits tokens into runs of at most limit, each cut after the
// last space token that fits (or at the limit, when a run has none). A
// sentence that fits is one run; an empty one is one empty run, which
// the model turns into (almost) no audio.
func cutRuns(tokens []int64, limit int, space []int64) [][]int64 {
	var runs [][]int64
	for len(tokens) > limit {
		cut := limit
		if len(space) > 0 {
			for i := limit - len(space); i > 0; i-- {
				if slices.Equal(tokens[i:i+len(space)], space) {
					cut = i + len(space)
					break
				}
			}
		}
		runs = append(runs, tokens[:cut])
		tokens = tokens[cut:]
	}
	return append(runs, tokens)
}

// voice returns a voice's table, reading and checking it on first use: the
// bytes are verified against the manifest's digest again and every value
// must be finite.
func (s *Style) voice(name string) ([]float32, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.styles[name]; ok {
		return t, nil
	}
	f, ok := s.bundle.Voice(name)
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownSpeaker, truncate(name, 64))
	}
	data, err := s.bundle.ReadFile(f)
	if err != nil {
		return nil, fmt.Errorf("voice %s: %w", name, err)
	}
	st := s.bundle.Manifest.Style
	if int64(len(data)) != st.VoiceBytes() {
		return nil, fmt.Errorf("voice %s: %w: %d bytes, want %d", name, bundle.ErrFileMismatch, len(data), st.VoiceBytes())
	}
	t := make([]float32, len(data)/4)
	for i := range t {
		t[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		if math.IsNaN(float64(t[i])) || math.IsInf(float64(t[i]), 0) {
			return nil, fmt.Errorf("voice %s: %w: row %d holds %v", name, bundle.ErrFileMismatch, i/st.Dim, t[i])
		}
	}
	s.styles[name] = t
	return t, nil
}
