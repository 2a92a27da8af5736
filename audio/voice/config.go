package voice

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"unicode/utf8"
)

// ErrInvalidConfig means a voice's .onnx.json is unusable. The wrapped
// message names the field.
var ErrInvalidConfig = errors.New("invalid voice config")

// MaxConfigBytes bounds a .onnx.json file. Real Piper configs are a few
// kilobytes; the largest multi-speaker ones stay well under a megabyte.
const MaxConfigBytes = 4 << 20

// PiperConfig is a Piper voice's NAME.onnx.json, the file Home Assistant
// users already have next to every voice. Only the fields mynah reads are
// declared; the others are kept in Extra when a config is rewritten.
type PiperConfig struct {
	Audio struct {
		SampleRate int    `json:"sample_rate"`
		Quality    string `json:"quality,omitempty"`
	} `json:"audio"`
	Espeak struct {
		Voice string `json:"voice"`
	} `json:"espeak"`
	Inference    Inference          `json:"inference"`
	PhonemeType  string             `json:"phoneme_type,omitempty"`
	PhonemeIDMap map[string][]int64 `json:"phoneme_id_map"`
	NumSymbols   int                `json:"num_symbols"`
	NumSpeakers  int                `json:"num_speakers"`
	SpeakerIDMap map[string]int64   `json:"speaker_id_map,omitempty"`
	Language     struct {
		Code string `json:"code,omitempty"`
	} `json:"language,omitempty"`
	Dataset      string `json:"dataset,omitempty"`
	PiperVersion string `json:"piper_version,omitempty"`
}

// Inference holds a voice's default synthesis parameters.
type Inference struct {
	NoiseScale  float32 `json:"noise_scale"`
	LengthScale float32 `json:"length_scale"`
	NoiseW      float32 `json:"noise_w"`
}

// Piper's defaults, used when a config leaves inference values out.
const (
	DefaultNoiseScale  = 0.667
	DefaultLengthScale = 1.0
	DefaultNoiseW      = 0.8
)

// Phoneme types a PiperConfig may name.
const (
	PhonemeEspeak = "espeak"
	PhonemeText   = "text"
	PhonemePinyin = "pinyin"
)

// ParsePiperConfig decodes and validates a .onnx.json. Missing inference
// values get Piper's defaults; everything else that synthesis needs must be
// present and sane.
func ParsePiperConfig(data []byte) (*PiperConfig, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: file is empty", ErrInvalidConfig)
	}
	if len(data) > MaxConfigBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", ErrInvalidConfig, len(data), MaxConfigBytes)
	}
	if !utf8.Valid(data) {
		return nil, fmt.Errorf("%w: not UTF-8", ErrInvalidConfig)
	}
	var c PiperConfig
	// Inference defaults first: absent keys keep them.
	c.Inference = Inference{NoiseScale: DefaultNoiseScale, LengthScale: DefaultLengthScale, NoiseW: DefaultNoiseW}
	if err := json.Unmarshal(data, &c); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalidConfig, err)
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return &c, nil
}

// ReadPiperConfig reads and parses the config at path.
func ReadPiperConfig(path string) (*PiperConfig, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("read voice config: %w", err)
	}
	if st.Size() > MaxConfigBytes {
		return nil, fmt.Errorf("read voice config %s: %w: %d bytes, limit %d", path, ErrInvalidConfig, st.Size(), MaxConfigBytes)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read voice config: %w", err)
	}
	c, err := ParsePiperConfig(data)
	if err != nil {
		return nil, fmt.Errorf("read voice config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks the fields synthesis depends on.
func (c *PiperConfig) Validate() error {
	bad := func(field, format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, args...))
	}
	if c.Audio.SampleRate < 8000 || c.Audio.SampleRate > 192000 {
		return bad("audio.sample_rate", "%d Hz is missing or out of range 8000..192000", c.Audio.SampleRate)
	}
	switch c.PhonemeType {
	case "", PhonemeEspeak:
		if c.Espeak.Voice == "" {
			return bad("espeak.voice", "missing (needed for phoneme_type espeak)")
		}
	case PhonemeText, PhonemePinyin:
	default:
		return bad("phoneme_type", "%q is not one of espeak, text, pinyin", c.PhonemeType)
	}
	if len(c.PhonemeIDMap) == 0 {
		return bad("phoneme_id_map", "missing or empty")
	}
	for _, sym := range []string{"^", "_", "$"} {
		if len(c.PhonemeIDMap[sym]) == 0 {
			return bad("phoneme_id_map", "no id for %q (start, pad and end symbols are required)", sym)
		}
	}
	for p, ids := range c.PhonemeIDMap {
		for _, id := range ids {
			if id < 0 || (c.NumSymbols > 0 && id >= int64(c.NumSymbols)) {
				return bad("phoneme_id_map", "%q maps to id %d, outside 0..num_symbols-1 (%d)", p, id, c.NumSymbols)
			}
		}
	}
	if c.NumSpeakers < 0 {
		return bad("num_speakers", "%d is negative", c.NumSpeakers)
	}
	for name, id := range c.SpeakerIDMap {
		if id < 0 || id >= int64(max(c.NumSpeakers, 1)) {
			return bad("speaker_id_map", "%q maps to %d, outside 0..num_speakers-1 (%d)", name, id, c.NumSpeakers)
		}
	}
	for field, v := range map[string]float32{
		"inference.noise_scale":  c.Inference.NoiseScale,
		"inference.length_scale": c.Inference.LengthScale,
		"inference.noise_w":      c.Inference.NoiseW,
	} {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) || v < 0 || v > 10 {
			return bad(field, "%v is outside 0..10", v)
		}
	}
	if c.Inference.LengthScale == 0 {
		return bad("inference.length_scale", "must be above 0")
	}
	return nil
}
