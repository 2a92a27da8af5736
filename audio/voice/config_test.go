package voice

import (
	"errors"
	"strings"
	"testing"
)

const goodConfig = `{
  "audio": {"sample_rate": 22050, "quality": "medium"},
  "espeak": {"voice": "en-us"},
  "inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},
  "phoneme_type": "espeak",
  "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [3]},
  "num_symbols": 4,
  "num_speakers": 1,
  "speaker_id_map": {},
  "piper_version": "1.0.0"
}`

func TestParsePiperConfig(t *testing.T) {
	c, err := ParsePiperConfig([]byte(goodConfig))
	if err != nil {
		t.Fatal(err)
	}
	if c.Audio.SampleRate != 22050 || c.Espeak.Voice != "en-us" || c.Inference.NoiseW != 0.8 || len(c.PhonemeIDMap) != 4 {
		t.Fatalf("parsed %+v", c)
	}
	// Inference values left out get Piper's defaults.
	c, err = ParsePiperConfig([]byte(strings.Replace(goodConfig, `"inference": {"noise_scale": 0.667, "length_scale": 1, "noise_w": 0.8},`, "", 1)))
	if err != nil || c.Inference != (Inference{DefaultNoiseScale, DefaultLengthScale, DefaultNoiseW}) {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

func TestParsePiperConfigRejects(t *testing.T) {
	edit := func(old, new string) string {
		if !strings.Contains(goodConfig, old) {
			t.Fatalf("test config lacks %q", old)
		}
		return strings.Replace(goodConfig, old, new, 1)
	}
	cases := []struct{ name, json, field string }{
		{"empty", "", "empty"},
		{"not json", "RIFF....WAVE", "invalid"},
		{"truncated", goodConfig[:60], "unexpected end"},
		{"no sample rate", edit(`"sample_rate": 22050`, `"x": 1`), "audio.sample_rate"},
		{"zero sample rate", edit(`22050`, `0`), "audio.sample_rate"},
		{"string sample rate", edit(`22050`, `"fast"`), "sample_rate"},
		{"no espeak voice", edit(`"voice": "en-us"`, `"voice": ""`), "espeak.voice"},
		{"unknown phoneme type", edit(`"phoneme_type": "espeak"`, `"phoneme_type": "klingon"`), "phoneme_type"},
		{"no id map", edit(`"phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [3]},`, ``), "phoneme_id_map"},
		{"no pad", edit(`"_": [0], `, ``), `"_"`},
		{"id out of range", edit(`"a": [3]`, `"a": [99]`), "num_symbols"},
		{"negative id", edit(`"a": [3]`, `"a": [-1]`), "phoneme_id_map"},
		{"speaker out of range", edit(`"speaker_id_map": {}`, `"speaker_id_map": {"x": 3}`), "speaker_id_map"},
		{"nan-ish scale", edit(`"noise_w": 0.8`, `"noise_w": 1e309`), "noise_w"},
		{"negative length", edit(`"length_scale": 1`, `"length_scale": -1`), "length_scale"},
		{"zero length", edit(`"length_scale": 1`, `"length_scale": 0`), "length_scale"},
		{"invalid utf-8", "{\"audio\": \xff}", "UTF-8"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := ParsePiperConfig([]byte(c.json))
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error %v is not ErrInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), c.field) {
				t.Fatalf("error %q does not name %q", err, c.field)
			}
		})
	}
	if _, err := ParsePiperConfig(make([]byte, MaxConfigBytes+1)); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("oversized: %v", err)
	}
}

func FuzzParsePiperConfig(f *testing.F) {
	f.Add([]byte(goodConfig))
	f.Add([]byte(`{"audio":{"sample_rate":8000},"phoneme_type":"text","phoneme_id_map":{"_":[0],"^":[1],"$":[2]}}`))
	f.Add([]byte(`{"phoneme_id_map":{"_":[0]},"num_speakers":-5}`))
	f.Add([]byte(`[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParsePiperConfig(data)
		if err != nil {
			if !errors.Is(err, ErrInvalidConfig) {
				t.Fatalf("error outside ErrInvalidConfig: %v", err)
			}
			return
		}
		// An accepted config is one synthesis can rely on.
		if c.Audio.SampleRate < 8000 || len(c.PhonemeIDMap["^"]) == 0 || c.Inference.LengthScale <= 0 {
			t.Fatalf("accepted unusable config %+v", c)
		}
	})
}
