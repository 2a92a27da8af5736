package demo

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// The cloning kit is a voice bundle of three models the project generates
// itself (ManifestFile names them, with the roles' tensor names), for the pipeline engine (speaker encoder → autoregressive decoder
// with KV cache → vocoder), so that enrollment, prefix caching and session
// continuation run through ONNX Runtime without downloading a real
// cloning model:
//
//   - the encoder turns a reference clip into an L2-normalized speaker
//     embedding (pitch and spectral statistics measured inside the graph,
//     then a fixed orthonormal projection) and K speaker prompt tokens
//     (vector-quantized spectra of K stretches of the clip);
//   - the decoder is a small GPT (pre-norm blocks, causal multi-head
//     attention with past/present KV tensors in the common naming) with
//     fixed pseudo-random weights whose tanh head gives three bounded
//     prosody adjustments per phoneme;
//   - the vocoder is the demo voice's synthesizer with the speaker taken
//     from the embedding (pitch, formant scale) and each phoneme's
//     duration, pitch and energy scaled by the adjustments, within
//     ±25%, ±10% and ±30%, so the audio stays speech-like whatever the
//     decoder says.

// Names and rates of the cloning kit.
const (
	// CloneName is the voice name in voice.json.
	CloneName = "mynah-clone"
	// ManifestFile, EncoderFile, DecoderFile and VocoderFile are the names
	// of the bundle's files.
	ManifestFile = "voice.json"
	EncoderFile  = "encoder.onnx"
	DecoderFile  = "decoder.onnx"
	VocoderFile  = "vocoder.onnx"
	// EncoderSampleRate is the rate the encoder expects its audio at.
	EncoderSampleRate = 16000
	// EncoderMinSeconds and EncoderMaxSeconds bound the reference clip the
	// manifest asks for. The encoder graph itself reads at most
	// EncoderMaxSeconds (it drops the rest) and accepts shorter clips, but
	// under a second has too few voiced frames for a stable embedding.
	EncoderMinSeconds = 1
	EncoderMaxSeconds = 30
	// EmbeddingDim is D, the length of the speaker embedding.
	EmbeddingDim = 128
	// ProsodyDim is the last axis of the decoder's prosody: duration, pitch
	// and energy adjustments.
	ProsodyDim = 3
)

// Defaults and limits of CloningOptions.
const (
	DefaultLayers       = 4
	DefaultHeads        = 4
	DefaultHeadDim      = 64
	DefaultPromptTokens = 64
	DefaultCodes        = 64
	DefaultMaxContext   = 512
	// DefaultSeed seeds the decoder weights and the encoder's codebook.
	DefaultSeed = 0x636c6f6e65 // "clone"

	MaxLayers       = 8
	MaxHeads        = 8
	MaxHeadDim      = 128
	MaxPromptTokens = 256
	MaxCodes        = 1024
	// MaxMaxContext bounds MaxContext: attention costs grow with it, and
	// the KV of one session is layers·2·heads·MaxContext·head_dim floats.
	MaxMaxContext = 4096
)

// CloningOptions configure BuildCloning. A nil *CloningOptions means the
// defaults, and so does every zero field.
type CloningOptions struct {
	// SampleRate and MaxSeconds are the vocoder's, as in Options.
	SampleRate int
	MaxSeconds int
	// Layers (1..MaxLayers), Heads (1..MaxHeads) and HeadDim (even,
	// 8..MaxHeadDim) shape the decoder; its model width is Heads·HeadDim.
	Layers, Heads, HeadDim int
	// PromptTokens is K, the speaker prompt tokens the encoder makes,
	// 1..MaxPromptTokens.
	PromptTokens int
	// Codes is C, the number of speech-token codes above the phoneme ids,
	// 2..MaxCodes.
	Codes int
	// MaxContext is the most tokens (prompt, requests and session history)
	// the decoder is meant to hold, PromptTokens+1..MaxMaxContext. The
	// manifest's decoder max_steps is MaxContext − PromptTokens.
	MaxContext int
	// Seed seeds the decoder weights and the encoder codebook; 0 means
	// DefaultSeed.
	Seed uint64
}

func (o *CloningOptions) resolve() (CloningOptions, Options, error) {
	var r CloningOptions
	if o != nil {
		r = *o
	}
	v, err := (&Options{SampleRate: r.SampleRate, MaxSeconds: r.MaxSeconds}).resolve()
	if err != nil {
		return r, v, err
	}
	r.SampleRate, r.MaxSeconds = v.SampleRate, v.MaxSeconds
	def := func(p *int, d int) {
		if *p == 0 {
			*p = d
		}
	}
	def(&r.Layers, DefaultLayers)
	def(&r.Heads, DefaultHeads)
	def(&r.HeadDim, DefaultHeadDim)
	def(&r.PromptTokens, DefaultPromptTokens)
	def(&r.Codes, DefaultCodes)
	def(&r.MaxContext, DefaultMaxContext)
	if r.Seed == 0 {
		r.Seed = DefaultSeed
	}
	for _, c := range []struct {
		name   string
		v      int
		lo, hi int
		limit  string
	}{
		{"Layers", r.Layers, 1, MaxLayers, "MaxLayers"},
		{"Heads", r.Heads, 1, MaxHeads, "MaxHeads"},
		{"HeadDim", r.HeadDim, 8, MaxHeadDim, "MaxHeadDim"},
		{"PromptTokens", r.PromptTokens, 1, MaxPromptTokens, "MaxPromptTokens"},
		{"Codes", r.Codes, 2, MaxCodes, "MaxCodes"},
		{"MaxContext", r.MaxContext, r.PromptTokens + 1, MaxMaxContext, "MaxMaxContext"},
	} {
		if c.v < c.lo || c.v > c.hi {
			return r, v, fmt.Errorf("%w: %s %d: want %d..%d (%s)", ErrInvalidOptions, c.name, c.v, c.lo, c.hi, c.limit)
		}
	}
	if r.HeadDim%2 != 0 {
		return r, v, fmt.Errorf("%w: HeadDim %d: want an even number", ErrInvalidOptions, r.HeadDim)
	}
	return r, v, nil
}

// vocab is the decoder's vocabulary: the phoneme ids, then the codes.
func (o CloningOptions) vocab() int { return len(inventory) + o.Codes }

// BuildCloning returns the cloning kit's files by name: EncoderFile,
// DecoderFile, VocoderFile and ManifestFile (voice.json, with each
// model's sha256). The same options give the same bytes.
func BuildCloning(opts *CloningOptions) (files map[string][]byte, err error) {
	o, vo, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	files = make(map[string][]byte, 4)
	for _, m := range []struct {
		file  string
		build func() (*onnx.Model, error)
	}{
		{EncoderFile, func() (*onnx.Model, error) { return buildEncoder(o) }},
		{DecoderFile, func() (*onnx.Model, error) { return buildDecoder(o) }},
		{VocoderFile, func() (*onnx.Model, error) { return buildVocoder(vo) }},
	} {
		model, err := m.build()
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", m.file, err)
		}
		data, err := onnx.Encode(model)
		if err != nil {
			return nil, fmt.Errorf("build %s: %w", m.file, err)
		}
		files[m.file] = data
	}
	manifest, err := cloningManifest(o, files).Marshal()
	if err != nil {
		return nil, fmt.Errorf("build %s: %w", ManifestFile, err)
	}
	files[ManifestFile] = manifest
	return files, nil
}

// WriteCloning builds the kit into dir (which must exist). Each file is
// written to a temporary name, synced and renamed; the manifest goes last,
// so a loader that finds voice.json finds the models it names.
func WriteCloning(dir string, opts *CloningOptions) error {
	files, err := BuildCloning(opts)
	if err != nil {
		return err
	}
	for _, name := range []string{EncoderFile, DecoderFile, VocoderFile, ManifestFile} {
		if err := writeAtomic(filepath.Join(dir, name), files[name]); err != nil {
			return err
		}
	}
	return nil
}

// Tensor names of the three models; the manifest maps roles to them.
const (
	encAudio     = "audio"
	encEmbedding = "embedding"
	encPrompt    = "prompt_ids"
	decIDs       = "input_ids"
	decPrev      = "prev_prosody"
	decProsody   = "prosody"
	kvPastKey    = "past_key_values.{i}.key"
	kvPastValue  = "past_key_values.{i}.value"
	kvPresentKey = "present.{i}.key"
	kvPresentVal = "present.{i}.value"
	vocProsody   = "prosody"
	vocEmbedding = "speaker_embedding"
)

// kvName fills a {i} pattern for layer i.
func kvName(pattern string, i int) string {
	return strings.ReplaceAll(pattern, "{i}", strconv.Itoa(i))
}

func cloningManifest(o CloningOptions, files map[string][]byte) *bundle.Manifest {
	ref := func(name string) bundle.FileRef {
		sum := sha256.Sum256(files[name])
		return bundle.FileRef{Path: name, SHA256: hex.EncodeToString(sum[:]), Size: int64(len(files[name]))}
	}
	return &bundle.Manifest{
		Format:     bundle.FormatVersion,
		Engine:     bundle.EnginePipeline,
		Name:       CloneName,
		SampleRate: o.SampleRate,
		Text:       bundle.Text{Phonemes: "espeak", Language: "en-us", PhonemeIDMap: PhonemeIDMap()},
		Files: map[string]bundle.FileRef{
			"encoder": ref(EncoderFile),
			"decoder": ref(DecoderFile),
			"vocoder": ref(VocoderFile),
		},
		Encoder: &bundle.EncoderRole{
			Tensors: bundle.Tensors{File: "encoder",
				Inputs:  map[string]string{"audio": encAudio},
				Outputs: map[string]string{"embedding": encEmbedding, "prompt": encPrompt}},
			SampleRate: EncoderSampleRate, MinSeconds: EncoderMinSeconds, MaxSeconds: EncoderMaxSeconds,
		},
		Decoder: &bundle.DecoderRole{
			Tensors: bundle.Tensors{File: "decoder",
				Inputs:  map[string]string{"ids": decIDs, "prev": decPrev},
				Outputs: map[string]string{"prosody": decProsody}},
			MaxSteps: o.MaxContext - o.PromptTokens,
			KV: bundle.KV{
				Layout: bundle.KVLayoutPerLayer, Layers: o.Layers, Heads: o.Heads, HeadDim: o.HeadDim,
				MaxContext: o.MaxContext,
				PastKey:    kvPastKey, PastValue: kvPastValue,
				PresentKey: kvPresentKey, PresentValue: kvPresentVal,
			},
		},
		Vocoder: &bundle.VocoderRole{Tensors: bundle.Tensors{File: "vocoder",
			Inputs: map[string]string{
				"ids": "input", "lengths": "input_lengths", "scales": "scales",
				"prosody": vocProsody, "embedding": vocEmbedding,
			},
			Outputs: map[string]string{"audio": "output"}}},
	}
}

// splitmix is a tiny fixed-seed generator (SplitMix64): the weights must
// be the same on every machine and Go version, which math/rand's
// unexported algorithms do not promise for Float64 and NormFloat64.
type splitmix struct{ s uint64 }

func (r *splitmix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// uniform returns a float64 in [0, 1) from the top 53 bits.
func (r *splitmix) uniform() float64 { return float64(r.next()>>11) / (1 << 53) }

// normal returns a standard normal value (Box–Muller).
func (r *splitmix) normal() float64 {
	u := 1 - r.uniform() // (0, 1]: the log stays finite
	v := r.uniform()
	return math.Sqrt(-2*math.Log(u)) * math.Cos(2*math.Pi*v)
}

// normals returns n values with standard deviation std.
func (r *splitmix) normals(n int, std float64) []float32 {
	out := make([]float32, n)
	for i := range out {
		out[i] = float32(r.normal() * std)
	}
	return out
}
