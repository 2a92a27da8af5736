package voice

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Errors returned by the engine; the wrapped message has the details.
var (
	// ErrVoiceNotFound means the path holds no Piper voice.
	ErrVoiceNotFound = errors.New("voice not found")
	// ErrModelMismatch means the model's inputs or outputs do not follow the
	// Piper contract the config promises.
	ErrModelMismatch = errors.New("model does not match the piper contract")
	// ErrUnknownSpeaker means a request named a speaker the voice lacks.
	ErrUnknownSpeaker = reasoned("unknown speaker", "unknown_speaker")
	// ErrBadParameter means a request's rate or scale is out of range.
	ErrBadParameter = errors.New("bad synthesis parameter")
	// ErrTooManyFrames means one sentence would produce more audio than
	// PiperOptions.MaxSentenceAudio allows.
	ErrTooManyFrames = errors.New("sentence audio exceeds limit")
)

// Limits on one request's parameters. A rate of 4 is already hard to follow;
// below 0.25 a sentence takes longer than anyone waits for.
const (
	MinRate = 0.25
	MaxRate = 4.0
	// MaxPhonemeIDs bounds one ONNX run. The sentence splitter keeps
	// sentences far shorter; this guards against a front end that expands
	// wildly (numbers, abbreviations).
	MaxPhonemeIDs = 4096
)

// PiperOptions configure LoadPiper. A nil *PiperOptions means defaults.
type PiperOptions struct {
	// Session options for ONNX Runtime (threads, provider, arena).
	Session *ort.SessionOptions
	// KeepConv1D hands ONNX Runtime the model's 1-D convolutions as they
	// are. By default they are lifted to 2-D at load (onnx.LiftConv1D):
	// the same arithmetic, which ONNX Runtime's CPU kernels run faster
	// (BenchmarkSynthesizeOneThread has the figures), for a longer load
	// (BenchmarkLoadPiper).
	KeepConv1D bool
	// KeepLeakyRelu leaves out onnx.BlockLeakyRelu, which otherwise, with
	// the lifting, at graph optimization level "all" on x86 (AVX2 or
	// AVX-512), reads a residual stack's LeakyRelus through identity
	// convolutions, so that ONNX Runtime keeps the stream in its blocked
	// layout: the same samples, bit for bit, without two reorders of the
	// stream per residual block.
	KeepLeakyRelu bool
	// OptimizedDir keeps what ONNX Runtime makes of each model (its
	// optimized graph, in ONNX Runtime's own format) so that the next load
	// of the same file with the same ONNX Runtime, CPU and options skips
	// the optimizing: see optimized.go. "" keeps nothing. Used for the CPU
	// provider (and auto) only.
	OptimizedDir string
	// OptimizeLater, with OptimizedDir, has a load that finds no usable
	// entry take the model as the file has it, at once, instead of
	// building the entry first (optimized_load.go): the voice is ready
	// in a fraction of the time and speaks alike, a little slower, and
	// Piper.OptimizeDeferred reports it. OptimizePiper builds the entry;
	// a load after that takes it. For a process that keeps the voice
	// loaded and can build it apart (mynahd's engine, Options.
	// OptimizeInBackground); a process that speaks once and exits is
	// faster overall building it at load, as it then never waits again.
	OptimizeLater bool
	// SentenceSilence is the pause appended after every sentence but the
	// last; 0 means Piper's default of 0.2 s, negative means none.
	SentenceSilence time.Duration
	// Split limits characters per request and per sentence.
	Split *text.SplitOptions
	// MaxSentenceAudio bounds the audio of one sentence; longer output is
	// ErrTooManyFrames rather than an unbounded allocation. Default 60 s.
	MaxSentenceAudio time.Duration
	// MaxRunAudio caps the audio one model run is asked for, and so its
	// memory: SplitFor cuts a sentence estimated longer (from its phoneme
	// count and the length scale, PiperSecondsPerID) at clause, then word
	// boundaries. 0 means DefaultMaxRunAudio; negative turns it off.
	MaxRunAudio time.Duration
	// Precision picks a variant beside the model (NAME.<precision>.onnx:
	// fp16, int8, nbits) that passed the quality gate; "" or fp32 is the
	// model itself.
	Precision string
	Logger    *slog.Logger
}

// DefaultSentenceSilence is Piper's pause between sentences.
const DefaultSentenceSilence = 200 * time.Millisecond

// Request is one thing to say. Zero values mean the voice's defaults.
type Request struct {
	Text string
	// Speaker is a name from the voice's speaker_id_map or a speaker
	// number; "" is speaker 0.
	Speaker string
	// Rate is the speaking rate: 2 is twice as fast. It divides the length
	// scale; 0 means 1.
	Rate float64
	// LengthScale, NoiseScale and NoiseW override the voice's inference
	// defaults when non-nil.
	LengthScale, NoiseScale, NoiseW *float32
}

// Chunk is one sentence of synthesized speech.
type Chunk struct {
	Index    int    // 0-based sentence number
	Last     bool   // no sentence follows
	Sentence string // the text it speaks
	PCM      audio.PCM
	// Silence is the pause that follows the sentence (zero after the last).
	// It is not part of PCM so that a phrase cache can store speech alone.
	Silence time.Duration
	// Unknown counts phonemes the voice has no id for; they were skipped.
	Unknown int
	// Synth is how long synthesis of this sentence took.
	Synth time.Duration
}

// Info describes a loaded voice.
type Info struct {
	Name       string
	ModelPath  string
	Digest     string // sha256 of the .onnx file
	SizeBytes  int64
	SampleRate int
	Speakers   []string // by id; a generated name where the map has none
	Provider   string   // the ONNX Runtime execution provider in use
	Phonemes   string   // phoneme_type
	// Language is what text.Normalize reads the voice's text as: its
	// espeak-ng voice (or language code), "zh" for a pinyin voice.
	Language string
	// Mandarin is set when sentences mostly in Han go to the pinyin front
	// end although the voice is another language's (it covers pinyin).
	Mandarin bool
	// Optimized is set when the session is the optimized-model cache's
	// entry (PiperOptions.OptimizedDir).
	Optimized bool
}

// readingLanguage is Info.Language for a front end of type ptype set up
// for language.
func readingLanguage(ptype, language string) string {
	if ptype == PhonemePinyin {
		return "zh"
	}
	return language
}

// session is the part of an ONNX Runtime session the engine needs.
type session interface {
	Inputs() []ort.TensorInfo
	Outputs() []ort.TensorInfo
	Run(inputs []ort.Tensor) ([]ort.Tensor, error)
	Provider() ort.Provider
	Close() error
}

// Piper runs one Piper voice. It is safe for concurrent use.
type Piper struct {
	cfg    *PiperConfig
	info   Info
	sess   session
	ids    text.PhonemeIDMap
	front  text.Phonemizer
	pinyin text.Phonemizer // Mandarin sentences, when the voice covers pinyin
	split  *text.SplitOptions
	silence,
	maxAudio,
	maxRun time.Duration
	hasSID bool
	// deferred: the model was loaded as the file has it, its optimized
	// entry left for OptimizePiper (PiperOptions.OptimizeLater).
	deferred bool
	log      *slog.Logger

	warnOnce sync.Map // phoneme → struct{}: log each unknown phoneme once
	// split keeps the phoneme ids SplitFor computed, for SynthesizeSentence.
	splitIDs phonemeMemo
	runs     runsMemo // RunsFor's answers
	// ran: the model ran since the last ReleaseMemory, so its arena may
	// hold memory to give back.
	ran atomic.Bool
}

// FindPiper resolves path to a Piper voice's .onnx file: path itself, or the
// one NAME.onnx with a NAME.onnx.json beside it in the directory path.
func FindPiper(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrVoiceNotFound, err)
	}
	if !st.IsDir() {
		return path, nil
	}
	matches, err := filepath.Glob(filepath.Join(path, "*.onnx"))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrVoiceNotFound, err)
	}
	var voices []string
	for _, m := range matches {
		if _, err := os.Stat(m + ".json"); err == nil && !isVariantFile(m, matches) {
			voices = append(voices, m)
		}
	}
	switch len(voices) {
	case 0:
		return "", fmt.Errorf("%w: no NAME.onnx with NAME.onnx.json in %s", ErrVoiceNotFound, path)
	case 1:
		return voices[0], nil
	}
	return "", fmt.Errorf("%w: %s holds %d voices (%s); name the .onnx file", ErrVoiceNotFound, path, len(voices), strings.Join(voices, ", "))
}

// LoadPiper loads the Piper voice at path (a .onnx file or a directory
// holding one) into a session of rt. The model is read and checked in Go
// before ONNX Runtime sees it.
func LoadPiper(rt *ort.Runtime, path string, opts *PiperOptions) (*Piper, error) {
	o := opts.withDefaults()
	modelPath, err := FindPiper(path)
	if err != nil {
		return nil, fmt.Errorf("load voice: %w", err)
	}
	if modelPath, err = piperVariantModel(modelPath, o.Precision); err != nil {
		return nil, fmt.Errorf("load voice: %w", err)
	}
	cfg, err := ReadPiperConfig(modelPath + ".json")
	if err != nil {
		return nil, fmt.Errorf("load voice: %w", err)
	}
	var cache *optimizedCache
	if o.OptimizedDir != "" {
		cache = &optimizedCache{dir: o.OptimizedDir, log: o.Logger}
	}
	sess, model, src, err := openModelFile(rt, modelPath, o.Session, o.rewrites(), cache, o.OptimizeLater)
	if err != nil {
		return nil, fmt.Errorf("load voice: %w", err)
	}
	p, err := newPiper(cfg, sess, o)
	if err != nil {
		sess.Close()
		return nil, fmt.Errorf("load voice %s: %w", modelPath, err)
	}
	p.info.Name = strings.TrimSuffix(filepath.Base(modelPath), ".onnx")
	p.info.ModelPath = modelPath
	p.info.Digest = model.Digest
	p.info.SizeBytes = model.Size
	p.info.Optimized = src == fromEntry
	p.deferred = src == deferredEntry
	return p, nil
}

// OptimizeDeferred reports whether the voice was loaded as its model file
// has it, with its optimized-model entry left for OptimizePiper
// (PiperOptions.OptimizeLater): once that has built the entry, loading
// the voice again gives its optimized session.
func (p *Piper) OptimizeDeferred() bool { return p.deferred }

func (opts *PiperOptions) withDefaults() PiperOptions {
	var o PiperOptions
	if opts != nil {
		o = *opts
	}
	// Negative (none) stays negative, so that defaults applied twice
	// (LoadPiper, then newPiper) do not turn "none" into the default.
	if o.SentenceSilence == 0 {
		o.SentenceSilence = DefaultSentenceSilence
	}
	if o.MaxSentenceAudio <= 0 {
		o.MaxSentenceAudio = 60 * time.Second
	}
	if o.MaxRunAudio == 0 {
		o.MaxRunAudio = DefaultMaxRunAudio
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

// newPiper wires a voice from its parts; LoadPiper reads them from disk.
func newPiper(cfg *PiperConfig, sess session, opts PiperOptions) (*Piper, error) {
	o := opts.withDefaults()
	p := &Piper{
		cfg:      cfg,
		sess:     sess,
		split:    o.Split,
		silence:  max(o.SentenceSilence, 0),
		maxAudio: o.MaxSentenceAudio,
		maxRun:   max(o.MaxRunAudio, 0),
		log:      o.Logger,
	}
	if err := p.checkContract(); err != nil {
		return nil, err
	}
	ids, err := text.NewPhonemeIDMap(cfg.PhonemeIDMap, cfg.NumSymbols)
	if err != nil {
		return nil, fmt.Errorf("%w: phoneme_id_map: %v", ErrInvalidConfig, err)
	}
	p.ids = ids
	ptype := cfg.PhonemeType
	if ptype == "" {
		ptype = PhonemeEspeak
	}
	// Debian's espeak-ng reads Mandarin as English; voices that cover the
	// pinyin inventory get mynah's own Mandarin front end instead.
	if p.front, p.pinyin, ptype, err = frontEnds(ptype, cfg.Espeak.Voice, ids); err != nil {
		return nil, err
	}
	speakers := make([]string, max(cfg.NumSpeakers, 1))
	for name, id := range cfg.SpeakerIDMap {
		speakers[id] = name
	}
	for i, s := range speakers {
		if s == "" {
			speakers[i] = strconv.Itoa(i)
		}
	}
	p.info = Info{
		SampleRate: cfg.Audio.SampleRate,
		Speakers:   speakers,
		Provider:   string(sess.Provider()),
		Phonemes:   ptype,
		Language:   readingLanguage(ptype, cmp.Or(cfg.Espeak.Voice, cfg.Language.Code)),
		Mandarin:   p.pinyin != nil,
	}
	return p, nil
}

// covers reports whether every token has an id in m.
func covers(m text.PhonemeIDMap, tokens []string) bool {
	for _, t := range tokens {
		if len(m[t]) == 0 {
			return false
		}
	}
	return len(tokens) > 0
}

func isMandarin(espeakVoice string) bool {
	v := strings.ToLower(espeakVoice)
	return v == "zh" || v == "cmn" || strings.HasPrefix(v, "cmn-") || strings.HasPrefix(v, "zh-") || strings.HasPrefix(v, "zh_")
}

// checkContract verifies the model's real inputs and outputs against what
// the config promises, so a mismatched pair fails at load with a message
// that names the tensor, not at the first sentence.
func (p *Piper) checkContract() error {
	want := map[string]ort.ElementType{"input": ort.Int64, "input_lengths": ort.Int64, "scales": ort.Float32}
	have := make(map[string]ort.ElementType)
	for _, in := range p.sess.Inputs() {
		have[in.Name] = in.Type
	}
	if t, ok := have["sid"]; ok {
		if t != ort.Int64 {
			return fmt.Errorf("%w: input sid is %s, want int64", ErrModelMismatch, t)
		}
		p.hasSID = true
	}
	if p.cfg.NumSpeakers > 1 && !p.hasSID {
		return fmt.Errorf("%w: config has %d speakers but the model has no sid input", ErrModelMismatch, p.cfg.NumSpeakers)
	}
	for name, typ := range want {
		t, ok := have[name]
		if !ok {
			return fmt.Errorf("%w: model has no input %q (inputs: %v)", ErrModelMismatch, name, p.sess.Inputs())
		}
		if t != typ {
			return fmt.Errorf("%w: input %q is %s, want %s", ErrModelMismatch, name, t, typ)
		}
	}
	if len(have) != len(want)+btoi(p.hasSID) {
		return fmt.Errorf("%w: unexpected inputs %v", ErrModelMismatch, p.sess.Inputs())
	}
	outs := p.sess.Outputs()
	if len(outs) == 0 || outs[0].Type != ort.Float32 {
		return fmt.Errorf("%w: first output must be float32 audio (outputs: %v)", ErrModelMismatch, outs)
	}
	return nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Info describes the voice.
func (p *Piper) Info() Info {
	i := p.info
	i.Speakers = slices.Clone(i.Speakers)
	return i
}

// Config returns the voice's parsed .onnx.json.
func (p *Piper) Config() *PiperConfig { return p.cfg }

// Close releases the ONNX Runtime session.
func (p *Piper) Close() error { return p.sess.Close() }

// Params are a request's resolved synthesis parameters: together with the
// model and the sentence, everything that decides the audio. A phrase
// cache keys on them.
type Params struct {
	Speaker     int64
	NoiseScale  float32
	LengthScale float32
	NoiseW      float32
}

// Resolve checks a request's speaker and parameters against the voice and
// returns the values synthesis will use.
func (p *Piper) Resolve(req Request) (Params, error) {
	inf := p.cfg.Inference
	out := Params{NoiseScale: inf.NoiseScale, LengthScale: inf.LengthScale, NoiseW: inf.NoiseW}
	sid, err := p.speakerID(req.Speaker)
	if err != nil {
		return out, err
	}
	out.Speaker = sid
	for _, f := range []struct {
		name string
		src  *float32
		dst  *float32
	}{{"length_scale", req.LengthScale, &out.LengthScale}, {"noise_scale", req.NoiseScale, &out.NoiseScale}, {"noise_w", req.NoiseW, &out.NoiseW}} {
		if f.src == nil {
			continue
		}
		v := *f.src
		if math.IsNaN(float64(v)) || v < 0 || v > 10 {
			return out, fmt.Errorf("%w: %s %v outside 0..10", ErrBadParameter, f.name, v)
		}
		*f.dst = v
	}
	rate, err := checkRate(req.Rate)
	if err != nil {
		return out, err
	}
	out.LengthScale = float32(float64(out.LengthScale) / rate)
	if out.LengthScale <= 0 {
		return out, fmt.Errorf("%w: length_scale must be above 0", ErrBadParameter)
	}
	return out, nil
}

func (p *Piper) speakerID(s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	if id, ok := p.cfg.SpeakerIDMap[s]; ok {
		return id, nil
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil && n >= 0 && n < int64(max(p.cfg.NumSpeakers, 1)) {
		return n, nil
	}
	return 0, unknownSpeaker(s, p.info.Speakers)
}

// unknownSpeaker is ErrUnknownSpeaker naming what the voice has (the
// first ten).
func unknownSpeaker(name string, speakers []string) error {
	names := slices.Clone(speakers)
	if len(names) > 10 {
		names = append(names[:10], "…")
	}
	return fmt.Errorf("%w: %q (this voice has %d: %s)", ErrUnknownSpeaker, truncate(name, 64), len(speakers), strings.Join(names, ", "))
}

// checkRate returns a request's speaking rate, 1 for 0, or
// ErrBadParameter outside MinRate..MaxRate.
func checkRate(rate float64) (float64, error) {
	if rate == 0 {
		return 1, nil
	}
	if math.IsNaN(rate) || rate < MinRate || rate > MaxRate {
		return 0, fmt.Errorf("%w: rate %v outside %v..%v", ErrBadParameter, rate, MinRate, MaxRate)
	}
	return rate, nil
}

func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

// Synthesize speaks req sentence by sentence: emit gets sentence 1's audio
// before sentence 2 is synthesized. An error from emit stops synthesis and
// is returned as is. Validation errors (empty text, too long, unknown
// speaker, bad parameter) come before any audio.
func (p *Piper) Synthesize(ctx context.Context, req Request, emit func(Chunk) error) error {
	prm, err := p.Resolve(req)
	if err != nil {
		return err
	}
	sentences, err := p.SplitFor(req.Text, prm)
	if err != nil {
		return err
	}
	return speakSentences(ctx, sentences, p.silence, func(s string) (audio.PCM, int, error) {
		return p.SynthesizeSentence(s, prm)
	}, emit)
}

// Split splits text into sentences with the voice's limits. Synthesize
// speaks SplitFor's runs, which also cap each run's audio.
func (p *Piper) Split(s string) ([]string, error) {
	return text.Split(s, p.split)
}

// SilenceAfter is the pause that follows every sentence but the last.
func (p *Piper) SilenceAfter() time.Duration { return p.silence }

// phonemeIDs is a sentence's model input, and the phonemes the voice
// has no id for (skipped) with their counts.
func (p *Piper) phonemeIDs(s string) ([]int64, map[string]int, error) {
	phonemes, err := frontFor(p.front, p.pinyin, s).Phonemize(s)
	if err != nil {
		return nil, nil, fmt.Errorf("phonemize: %w", err)
	}
	ids, unknown := p.ids.IDs(phonemes)
	return ids, unknown, nil
}

// phonemeMemoSize is how many sentences' ids a voice keeps between
// SplitFor and SynthesizeSentence: a request's first sentences, or all
// of a short one (the common announcement is one to three sentences).
const phonemeMemoSize = 16

// phonemeMemo hands the phoneme ids SplitFor computed to estimate each
// sentence's audio on to SynthesizeSentence, which would otherwise run
// the front end (espeak-ng through cgo, 0.1–0.2 ms a sentence) a second
// time on the same text for the same result. It keeps the last
// phonemeMemoSize sentences put; take removes what it finds, so a
// sentence split but never synthesized (a phrase-cache hit) is only
// pushed out. A miss only costs the front end again.
type phonemeMemo struct {
	mu      sync.Mutex
	next    int
	entries [phonemeMemoSize]phonemeEntry
}

type phonemeEntry struct {
	sentence string
	ids      []int64
	unknown  map[string]int
	ok       bool
}

func (m *phonemeMemo) put(sentence string, ids []int64, unknown map[string]int) {
	m.mu.Lock()
	m.entries[m.next] = phonemeEntry{sentence: sentence, ids: ids, unknown: unknown, ok: true}
	m.next = (m.next + 1) % len(m.entries)
	m.mu.Unlock()
}

func (m *phonemeMemo) take(sentence string) ([]int64, map[string]int, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for i := range m.entries {
		if e := &m.entries[i]; e.ok && e.sentence == sentence {
			ids, unknown := e.ids, e.unknown
			*e = phonemeEntry{}
			return ids, unknown, true
		}
	}
	return nil, nil, false
}

// SynthesizeSentence runs one ONNX call for one sentence from SplitFor
// (or Split), and also returns how many phonemes the voice had no id for.
func (p *Piper) SynthesizeSentence(s string, prm Params) (audio.PCM, int, error) {
	ids, unknown, ok := p.splitIDs.take(s)
	if !ok {
		var err error
		if ids, unknown, err = p.phonemeIDs(s); err != nil {
			return audio.PCM{}, 0, err
		}
	}
	n := 0
	for ph, k := range unknown {
		n += k
		if _, seen := p.warnOnce.LoadOrStore(ph, struct{}{}); !seen {
			p.log.Warn("phoneme not in voice, skipped", "phoneme", ph, "voice", p.info.Name)
		}
	}
	if len(ids) > MaxPhonemeIDs {
		return audio.PCM{}, n, fmt.Errorf("%w: %d phoneme ids, limit %d", ErrTooManyFrames, len(ids), MaxPhonemeIDs)
	}
	outs, err := p.sess.Run(p.inputs(ids, prm))
	p.ran.Store(true) // after the run: a release during it leaves its memory
	if err != nil {
		return audio.PCM{}, n, fmt.Errorf("run model: %w", err)
	}
	wave := outs[0].Float32
	if max := int(p.maxAudio.Seconds() * float64(p.cfg.Audio.SampleRate)); len(wave) > max {
		return audio.PCM{}, n, fmt.Errorf("%w: %d samples, limit %d", ErrTooManyFrames, len(wave), max)
	}
	return audio.FromFloat32(wave, p.cfg.Audio.SampleRate), n, nil
}

// inputs are the model's inputs for one run.
func (p *Piper) inputs(ids []int64, prm Params) []ort.Tensor {
	inputs := []ort.Tensor{
		{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
		{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
		{Name: "scales", Shape: []int64{3}, Float32: []float32{prm.NoiseScale, prm.LengthScale, prm.NoiseW}},
	}
	if p.hasSID {
		inputs = append(inputs, ort.Tensor{Name: "sid", Shape: []int64{1}, Int64: []int64{prm.Speaker}})
	}
	return inputs
}

// arenaReleaser is a session whose memory arena can be given back
// (ort.Session.ReleaseArena).
type arenaReleaser interface {
	ReleaseArena(inputs []ort.Tensor) error
}

// releaseText is what ReleaseMemory runs the model on: a word, the
// smallest input that is sure to make audio.
const releaseText = "a"

// ReleaseMemory gives back the memory ONNX Runtime's arena kept from the
// voice's runs (ort.SessionOptions.CPUArena without ArenaShrink), by one
// run on a single word; without the arena, or when the voice has not run
// since the last release, it does nothing. The engine calls it once it is
// idle, so that memory kept to speed up a burst of sentences does not
// outlast the burst.
func (p *Piper) ReleaseMemory() error {
	r, ok := p.sess.(arenaReleaser)
	if !ok || !p.ran.Swap(false) {
		return nil
	}
	ids, _, err := p.phonemeIDs(releaseText)
	if err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	if err := r.ReleaseArena(p.inputs(ids, Params{LengthScale: 1})); err != nil {
		return fmt.Errorf("release memory: %w", err)
	}
	return nil
}

// rewrites is the load-time rewrites o asks for.
func (o *PiperOptions) rewrites() rewrites {
	return rewrites{keep1D: o.KeepConv1D, keepLeaky: o.KeepLeakyRelu}
}
