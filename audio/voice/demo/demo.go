// Package demo builds mynah's demo voice: a small ONNX model that follows
// the Piper voice contract exactly (inputs input, input_lengths, scales and
// sid; output [1, 1, 1, T] at 22050 Hz) and makes speech-like audio by
// signal processing inside the graph.
//
// No real voice can be downloaded where mynah is built and tested, so the
// project makes its own. The voice is robotic by design. What matters is
// that it is a real ONNX model that ONNX Runtime runs through the same code
// path as any Piper voice, and that its acoustics are known: every phoneme
// has formant targets and a duration (Targets), every speaker a pitch and a
// vocal tract length (Speakers), so tests can measure the output against
// them.
//
// Synthesis, all inside the graph: phoneme ids gather rows of a parameter
// table (duration, formant targets and gains, bandwidths, voicing, noise
// bands, stop closure); durations times length_scale (and a fixed jitter
// scaled by noise_w) place phonemes on 10 ms frames; the frame tracks are
// smoothed across phoneme boundaries and interpolated to the sample rate.
// The voiced part is phase-aligned formant synthesis: for each of four
// formants, a sine carrier at the two harmonics around the formant,
// crossfaded, times a periodic bell exp(γ(cos θ − 1)) of the fundamental's
// phase θ; it makes a harmonic spectrum with a peak at each formant and
// costs a few operations per sample. Unvoiced parts are band-limited noise
// from fixed tables, weighted per phoneme; noise_scale scales breath noise
// under voicing.
//
// The package also builds the cloning kit (BuildCloning, WriteCloning): a
// voice bundle for the pipeline engine whose speaker encoder, GPT-style
// decoder with KV cache and vocoder are generated the same way, the
// vocoder being this synthesizer with the speaker taken from an embedding.
package demo

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// ErrInvalidOptions means Options are out of range; the message names the
// field.
var ErrInvalidOptions = errors.New("invalid demo voice options")

// Defaults and limits.
const (
	// SampleRate is the default output rate, the rate of Piper's medium voices.
	SampleRate = 22050
	// DefaultMaxSeconds caps the audio of one run. The graph cuts longer
	// phoneme sequences there (and reads at most 800 ids per second of the
	// cap), so a runaway input costs bounded memory
	// (about 4 MB of intermediate tensors per second of audio, 250 MB at
	// the default cap).
	DefaultMaxSeconds = 60
	// MaxMaxSeconds is the largest cap Options accept.
	MaxMaxSeconds = 600
	// Name is the base name of the files Write creates.
	Name = "mynah-demo"
	// FramesPerSecond is the nominal rate of the model's parameter tracks:
	// frames of SampleRate/100 samples (rounded down), about 10 ms.
	FramesPerSecond = 100
)

// Options configure Build. A nil *Options means the defaults.
type Options struct {
	// SampleRate of the output in Hz, 8000..48000; 0 means SampleRate
	// (22050).
	SampleRate int
	// MaxSeconds caps the audio of one run, 1..MaxMaxSeconds; 0 means
	// DefaultMaxSeconds.
	MaxSeconds int
}

func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.SampleRate == 0 {
		r.SampleRate = SampleRate
	}
	if r.MaxSeconds == 0 {
		r.MaxSeconds = DefaultMaxSeconds
	}
	if r.SampleRate < 8000 || r.SampleRate > 48000 {
		return r, fmt.Errorf("%w: SampleRate %d: want 8000..48000", ErrInvalidOptions, r.SampleRate)
	}
	if r.MaxSeconds < 1 || r.MaxSeconds > MaxMaxSeconds {
		return r, fmt.Errorf("%w: MaxSeconds %d: want 1..%d", ErrInvalidOptions, r.MaxSeconds, MaxMaxSeconds)
	}
	return r, nil
}

// Speaker is one of the demo voice's speakers.
type Speaker struct {
	Name string
	ID   int64 // the sid input
	// F0 is the base pitch in Hz. The intonation contour moves it by about
	// ±10%; the median f0 of a sentence stays close to it.
	F0 float64
	// FormantScale multiplies every formant target: a shorter vocal tract.
	FormantScale float64
	tilt         float64 // gain factor per formant above F1: a softer voice below 1
	breath       float64 // breath noise under voicing at noise_scale 1
}

var speakers = []Speaker{
	{Name: "heron", ID: 0, F0: 100, FormantScale: 1.0, tilt: 1.0, breath: 0.01},
	{Name: "robin", ID: 1, F0: 165, FormantScale: 1.12, tilt: 0.85, breath: 0.02},
	{Name: "wren", ID: 2, F0: 240, FormantScale: 1.22, tilt: 0.75, breath: 0.03},
}

// Speakers returns the voice's speakers in id order.
func Speakers() []Speaker { return append([]Speaker(nil), speakers...) }

var symbolIndex = sync.OnceValue(func() map[string]int {
	m := make(map[string]int, len(inventory))
	for i, s := range inventory {
		m[s.sym] = i
	}
	return m
})

// Targets returns the acoustic targets of a phoneme_id_map key as the
// espeak (IPA) front end means it, and false for a symbol the voice does
// not know.
func Targets(phoneme string) (Phone, bool) {
	i, ok := symbolIndex()[phoneme]
	if !ok {
		return Phone{}, false
	}
	return phoneOf(inventory[i]), true
}

// PinyinTargets returns the acoustic targets of a token of the pinyin
// front end (text.PinyinTokens). Where pinyin and IPA spell differently
// with the same letter (j, x, z, h as initials; e, v and the one-letter
// finals, which are whole syllables) the model reads the pinyin meaning
// whenever the sequence has a tone digit in it; final says which reading
// of a letter that is both (m, n) is wanted.
func PinyinTargets(token string, final bool) (Phone, bool) {
	alt := pinyinInitials
	if final {
		alt = pinyinFinals
	}
	for _, s := range alt {
		if s.sym == token {
			return phoneOf(s), true
		}
	}
	return Targets(token)
}

func phoneOf(s spec) Phone {
	mid := s.tr[1]
	var noisy bool
	for _, n := range s.noise {
		noisy = noisy || n > 0
	}
	return Phone{
		F1: mid.f1, F2: mid.f2, F3: mid.f3,
		Duration: time.Duration(s.dur * float64(time.Millisecond)),
		Voiced:   mid.av > 0,
		Noisy:    noisy,
	}
}

// PhonemeIDMap returns the voice's phoneme_id_map: one id per symbol,
// "_" = 0, "^" = 1, "$" = 2 as in Piper's standard map.
func PhonemeIDMap() map[string][]int64 {
	m := make(map[string][]int64, len(inventory))
	for i, s := range inventory {
		m[s.sym] = []int64{int64(i)}
	}
	return m
}

// Config returns the voice's .onnx.json contents for opts.
func Config(opts *Options) (*voice.PiperConfig, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	var c voice.PiperConfig
	c.Audio.SampleRate = o.SampleRate
	c.Audio.Quality = "x_low"
	c.Espeak.Voice = "en-us"
	c.Inference = voice.Inference{
		NoiseScale:  voice.DefaultNoiseScale,
		LengthScale: voice.DefaultLengthScale,
		NoiseW:      voice.DefaultNoiseW,
	}
	c.PhonemeType = voice.PhonemeEspeak
	c.PhonemeIDMap = PhonemeIDMap()
	c.NumSymbols = len(inventory)
	c.NumSpeakers = len(speakers)
	c.SpeakerIDMap = make(map[string]int64, len(speakers))
	for _, s := range speakers {
		c.SpeakerIDMap[s.Name] = s.ID
	}
	c.Language.Code = "en_US"
	c.Dataset = Name
	return &c, nil
}

// Build returns the model and its .onnx.json. The same options give the
// same bytes: the tables come from fixed-seed generators and the protobuf
// and JSON encodings are deterministic.
func Build(opts *Options) (model, config []byte, err error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, nil, err
	}
	m, err := buildModel(o)
	if err != nil {
		return nil, nil, fmt.Errorf("build demo voice: %w", err)
	}
	model, err = onnx.Encode(m)
	if err != nil {
		return nil, nil, fmt.Errorf("build demo voice: %w", err)
	}
	c, err := Config(&o)
	if err != nil {
		return nil, nil, err
	}
	config, err = json.MarshalIndent(c, "", "  ")
	if err != nil {
		return nil, nil, fmt.Errorf("build demo voice config: %w", err)
	}
	config = append(config, '\n')
	if _, err := voice.ParsePiperConfig(config); err != nil {
		return nil, nil, fmt.Errorf("build demo voice config: %w", err)
	}
	return model, config, nil
}

// Write builds the voice into dir as Name.onnx and Name.onnx.json and
// returns the model's path. Each file is written to a temporary name,
// synced and renamed, so a reader never sees half a file; the config goes
// first because loaders look for the model.
func Write(dir string, opts *Options) (onnxPath string, err error) {
	model, config, err := Build(opts)
	if err != nil {
		return "", err
	}
	onnxPath = filepath.Join(dir, Name+".onnx")
	if err := writeAtomic(onnxPath+".json", config); err != nil {
		return "", err
	}
	if err := writeAtomic(onnxPath, model); err != nil {
		return "", err
	}
	return onnxPath, nil
}

func writeAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	if err := f.Chmod(0o644); err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("write demo voice: %w", err)
	}
	return nil
}

// Models returns every ONNX model the demo voice and kits are made of, by
// name: "demo" (the Piper voice), "cloning/" plus EncoderFile,
// DecoderFile and VocoderFile, and "style/" plus StyleModelFile. Tests
// that must hold for every model the project makes range over it.
func Models() (map[string][]byte, error) {
	models := map[string][]byte{}
	model, _, err := Build(nil)
	if err != nil {
		return nil, err
	}
	models["demo"] = model
	kit, err := BuildCloning(nil)
	if err != nil {
		return nil, err
	}
	for _, f := range []string{EncoderFile, DecoderFile, VocoderFile} {
		models["cloning/"+f] = kit[f]
	}
	style, err := BuildStyle(nil)
	if err != nil {
		return nil, err
	}
	models["style/"+StyleModelFile] = style[StyleModelFile]
	return models, nil
}
