package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"unicode/utf8"
)

// ManifestName is the manifest's file name inside a bundle directory.
const ManifestName = "voice.json"

// FormatVersion is the manifest format this package reads and writes.
const FormatVersion = 1

// Engines a manifest may name.
const (
	EnginePiper       = "piper"
	EnginePipeline    = "pipeline"
	EngineStyleVector = "style_vector"
)

// Roles: the part a model file plays. Each is a key of the manifest.
const (
	RoleModel   = "model"   // piper, style_vector
	RoleEncoder = "encoder" // pipeline: reference audio → embedding, prompt
	RoleDecoder = "decoder" // pipeline: autoregressive prosody decoder
	RoleVocoder = "vocoder" // pipeline: ids + prosody + embedding → audio
)

// Row rules of a style_vector voice pack: which row a sentence of n tokens
// (pads not counted) uses. Exports of Kokoro-style models disagree by one.
const (
	RowRuleTokens         = "tokens"           // row n
	RowRuleTokensMinusOne = "tokens_minus_one" // row n-1
)

// KVLayoutPerLayer is the only KV layout of format 1: one past and one
// present tensor per layer for keys and one for values, each
// [batch, heads, seq, head_dim] with seq on axis 2, names made from a
// pattern with "{i}" for the layer number.
const KVLayoutPerLayer = "per_layer"

// Phoneme front ends a manifest may name in text.phonemes.
const (
	PhonemesEspeak = "espeak"
	PhonemesText   = "text"
	PhonemesPinyin = "pinyin"
)

// Limits. Parse and Load refuse anything beyond them with an error naming
// the limit. They are far above real voices and far below what would hurt
// a small device.
const (
	// MaxManifestBytes bounds voice.json. A phoneme map of a few hundred
	// symbols and a hundred voices is tens of kilobytes.
	MaxManifestBytes = 1 << 20
	// MaxFiles bounds the entries of "files".
	MaxFiles = 64
	// MaxVoices bounds the entries of "voices" (Kokoro v1.0 ships 54).
	MaxVoices = 256
	// MaxFileBytes bounds one file of the bundle: the most a protobuf
	// model can be (2 GiB − 1, the same as quant/ort's MaxModelBytes).
	MaxFileBytes = 2<<30 - 1
	// MaxPathBytes bounds one path in the manifest.
	MaxPathBytes = 512
	// MaxNameBytes bounds the voice's name, voice names of the pack, file
	// keys and tensor names.
	MaxNameBytes = 64
	// MaxTensorNameBytes bounds a tensor name (and a KV name pattern).
	MaxTensorNameBytes = 256
	// MaxSymbols bounds the entries of text.phoneme_id_map, and
	// MaxIDsPerSymbol the ids of one entry.
	MaxSymbols      = 4096
	MaxIDsPerSymbol = 16
	// MaxTokenID bounds every id of the phoneme map: a model's embedding
	// table is far smaller, and an id beyond it makes Gather read out of
	// bounds.
	MaxTokenID = 1 << 20
	// MinSampleRate and MaxSampleRate bound sample_rate and
	// encoder.sample_rate.
	MinSampleRate = 8000
	MaxSampleRate = 192000
	// MaxEncoderSeconds bounds encoder.max_seconds: reference clips are
	// seconds long, and the encoder's input memory grows with them.
	MaxEncoderSeconds = 300
	// MaxDecoderSteps bounds decoder.max_steps.
	MaxDecoderSteps = 1 << 16
	// MaxKVLayers, MaxKVHeads, MaxKVHeadDim and MaxKVContext bound the
	// decoder's KV cache description.
	MaxKVLayers  = 128
	MaxKVHeads   = 256
	MaxKVHeadDim = 1024
	MaxKVContext = 1 << 17
	// MaxStyleDim and MaxStyleRows bound a voice pack's table; Kokoro's is
	// 256 × 510.
	MaxStyleDim  = 4096
	MaxStyleRows = 8192
)

// Manifest is voice.json. Only the keys of the manifest's engine may be
// present; Parse checks which.
type Manifest struct {
	Format     int                `json:"format"`
	Engine     string             `json:"engine"`
	Name       string             `json:"name"`
	SampleRate int                `json:"sample_rate"` // Hz of the audio the engine outputs
	Text       Text               `json:"text"`
	Files      map[string]FileRef `json:"files"`

	Encoder *EncoderRole `json:"encoder,omitempty"`
	Decoder *DecoderRole `json:"decoder,omitempty"`
	Vocoder *VocoderRole `json:"vocoder,omitempty"`
	Model   *ModelRole   `json:"model,omitempty"`

	Style  *Style             `json:"style,omitempty"`
	Voices map[string]FileRef `json:"voices,omitempty"`

	// Variants are precision variants (fp16, int8, nbits) made by mynah
	// quantize --voice, with the quality gate's verdict.
	Variants map[string]Variant `json:"variants,omitempty"`
}

// Text is the front end: which phonemizer and the symbol → id map. For
// piper and pipeline it is a Piper phoneme_id_map ("^", "_" and "$"
// required); for style_vector it is the token map, and id 0 is the pad
// that surrounds every sequence.
type Text struct {
	Phonemes     string             `json:"phonemes"`
	Language     string             `json:"language,omitempty"` // espeak-ng voice, required for espeak
	PhonemeIDMap map[string][]int64 `json:"phoneme_id_map"`
}

// FileRef is one file of the bundle: a path relative to the bundle
// directory (slash-separated, no "..") and its sha256 in lowercase hex.
// Size is optional; when set, Load compares it before hashing so that a
// truncated download is named as such.
type FileRef struct {
	Path   string `json:"path"`
	SHA256 string `json:"sha256"`
	Size   int64  `json:"size,omitempty"`
}

// Tensors is what every role has: the key of its file in "files" and the
// model's real tensor names, keyed by what the engine calls them.
type Tensors struct {
	File    string            `json:"file"`
	Inputs  map[string]string `json:"inputs"`
	Outputs map[string]string `json:"outputs"`
}

// EncoderRole is the pipeline's speaker encoder.
type EncoderRole struct {
	Tensors
	SampleRate int     `json:"sample_rate"` // Hz the reference audio is resampled to
	MinSeconds float64 `json:"min_seconds"` // shortest reference clip accepted
	MaxSeconds float64 `json:"max_seconds"` // longest; at most MaxEncoderSeconds
}

// DecoderRole is the pipeline's autoregressive decoder.
type DecoderRole struct {
	Tensors
	MaxSteps int `json:"max_steps"` // decoder runs per request at most
	KV       KV  `json:"kv"`
}

// KV describes the decoder's key/value cache.
type KV struct {
	Layout     string `json:"layout"` // KVLayoutPerLayer
	Layers     int    `json:"layers"`
	Heads      int    `json:"heads"`
	HeadDim    int    `json:"head_dim"`
	MaxContext int    `json:"max_context"` // past length at most, prompt included
	// Name patterns; "{i}" is replaced by the layer number 0..Layers-1.
	PastKey      string `json:"past_key"`
	PastValue    string `json:"past_value"`
	PresentKey   string `json:"present_key"`
	PresentValue string `json:"present_value"`
}

// VocoderRole is the pipeline's vocoder.
type VocoderRole struct {
	Tensors
}

// ModelRole is the single model of a piper or style_vector bundle.
type ModelRole struct {
	Tensors
}

// Style describes a style_vector voice pack: every voice file is raw
// little-endian float32 [Rows, 1, Dim].
type Style struct {
	Dim     int    `json:"dim"`
	Rows    int    `json:"rows"`
	RowRule string `json:"row_rule"`
}

// Row returns the pack row for a sentence of tokens tokens (pads not
// counted) under the row rule, clamped to 0..Rows-1.
func (s *Style) Row(tokens int) int {
	r := tokens
	if s.RowRule == RowRuleTokensMinusOne {
		r--
	}
	return min(max(r, 0), s.Rows-1)
}

// VoiceBytes is the size of one voice file: Rows × Dim float32s.
func (s *Style) VoiceBytes() int64 { return int64(s.Rows) * int64(s.Dim) * 4 }

// Parse decodes and validates a manifest. Decoding is strict: unknown keys
// (at any level), duplicate keys, trailing data, and a format other than
// FormatVersion are errors, all wrapping ErrInvalidManifest.
func Parse(data []byte) (*Manifest, error) {
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("%w: empty", ErrInvalidManifest)
	case len(data) > MaxManifestBytes:
		return nil, fmt.Errorf("%w: %d bytes, over MaxManifestBytes (%d)", ErrInvalidManifest, len(data), MaxManifestBytes)
	case !utf8.Valid(data):
		return nil, fmt.Errorf("%w: not UTF-8", ErrInvalidManifest)
	}
	if err := checkDuplicateKeys(data); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	// The format comes first: a newer manifest would otherwise fail on its
	// new keys with an error that does not say why. Unmarshal also refuses
	// anything after the object.
	var head struct {
		Format *int `json:"format"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	switch {
	case head.Format == nil:
		return nil, fmt.Errorf("%w: format: missing (want %d)", ErrInvalidManifest, FormatVersion)
	case *head.Format != FormatVersion:
		return nil, fmt.Errorf("%w: format: %d is not supported (this mynah reads format %d)", ErrInvalidManifest, *head.Format, FormatVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Manifest
	if err := dec.Decode(&m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidManifest, err)
	}
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return &m, nil
}

// Marshal encodes m as indented JSON after validating it: what a tool that
// writes bundles stores as voice.json. Map keys are sorted, so the same
// manifest gives the same bytes.
func (m *Manifest) Marshal() ([]byte, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	return append(data, '\n'), nil
}

// checkDuplicateKeys walks the JSON tokens and refuses an object with the
// same key twice: encoding/json would keep the last one silently, so two
// readers of the file could disagree about, say, a digest.
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	type frame struct {
		keys   map[string]bool
		object bool
		wantKy bool // next token in this object is a key
	}
	var stack []frame
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		if n := len(stack); n > 0 && stack[n-1].object {
			top := &stack[n-1]
			if top.wantKy {
				if key, ok := tok.(string); ok {
					if top.keys[key] {
						return fmt.Errorf("key %q appears twice in one object", key)
					}
					top.keys[key] = true
					top.wantKy = false
					continue
				}
			} else {
				top.wantKy = true // this token is the value
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, frame{keys: make(map[string]bool), object: true, wantKy: true})
		case json.Delim('['):
			stack = append(stack, frame{})
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
	}
}
