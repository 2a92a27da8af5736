package bundle_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

func TestParseContractExample(t *testing.T) {
	m, err := bundle.Parse([]byte(pipelineJSON))
	if err != nil {
		t.Fatal(err)
	}
	if m.Engine != bundle.EnginePipeline || m.SampleRate != 22050 || m.Encoder.SampleRate != 16000 ||
		m.Encoder.MaxSeconds != 30 || m.Decoder.MaxSteps != 1024 || m.Decoder.KV.Layers != 2 {
		t.Fatalf("parsed %+v", m)
	}
	if got := m.Role(bundle.RoleVocoder).Inputs["embedding"]; got != "speaker_embedding" {
		t.Errorf("vocoder embedding input %q", got)
	}
	if got := m.Decoder.KV.Names(1); got != [4]string{"past_key_values.1.key", "past_key_values.1.value", "present.1.key", "present.1.value"} {
		t.Errorf("kv names of layer 1: %v", got)
	}
	if m.Role(bundle.RoleModel) != nil {
		t.Error("pipeline manifest has a model role")
	}
}

func TestParseRoundTrip(t *testing.T) {
	for name, m := range map[string]*bundle.Manifest{"style": styleManifest(), "piper": piperManifest()} {
		t.Run(name, func(t *testing.T) {
			data, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			back, err := bundle.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(back, m) {
				t.Fatalf("round trip changed the manifest:\n%+v\n%+v", back, m)
			}
			again, _ := back.Marshal()
			if !bytes.Equal(again, data) {
				t.Error("marshal is not deterministic")
			}
		})
	}
}

func TestParseCleansPaths(t *testing.T) {
	m := asMap(t, []byte(pipelineJSON))
	set(m, "files.encoder.path", "./models//encoder.onnx")
	got, err := bundle.Parse(marshal(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Files["encoder"].Path; p != "models/encoder.onnx" {
		t.Errorf("path %q, want models/encoder.onnx", p)
	}
}

func TestStyleRow(t *testing.T) {
	s := bundle.Style{Dim: 4, Rows: 510, RowRule: bundle.RowRuleTokens}
	m1 := bundle.Style{Dim: 4, Rows: 510, RowRule: bundle.RowRuleTokensMinusOne}
	for _, c := range []struct{ tokens, plain, minusOne int }{
		{0, 0, 0}, {1, 1, 0}, {37, 37, 36}, {509, 509, 508}, {510, 509, 509}, {2000, 509, 509},
	} {
		if got := s.Row(c.tokens); got != c.plain {
			t.Errorf("tokens rule, %d tokens: row %d, want %d", c.tokens, got, c.plain)
		}
		if got := m1.Row(c.tokens); got != c.minusOne {
			t.Errorf("tokens_minus_one rule, %d tokens: row %d, want %d", c.tokens, got, c.minusOne)
		}
	}
	if s.VoiceBytes() != 510*4*4 {
		t.Errorf("voice bytes %d", s.VoiceBytes())
	}
}

// TestParseRejects: every bad manifest is an ErrInvalidManifest whose
// message names what is wrong.
func TestParseRejects(t *testing.T) {
	pipeline := func(path string, v any) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			m := asMap(t, []byte(pipelineJSON))
			set(m, path, v)
			return marshal(t, m)
		}
	}
	style := func(edit func(*bundle.Manifest)) func(t *testing.T) []byte {
		return func(t *testing.T) []byte {
			m := styleManifest()
			edit(m)
			return marshal(t, m)
		}
	}
	raw := func(s string) func(t *testing.T) []byte { return func(*testing.T) []byte { return []byte(s) } }
	del := any(nil)
	cases := []struct {
		name string
		data func(t *testing.T) []byte
		want string
	}{
		{"empty", raw(""), "empty"},
		{"too large", raw(`{"format":1,"name":"` + strings.Repeat("x", bundle.MaxManifestBytes) + `"}`), "MaxManifestBytes"},
		{"not utf-8", raw("{\"format\":1,\"name\":\"\xff\"}"), "UTF-8"},
		{"not json", raw("format = 1"), "invalid character"},
		{"not an object", raw("[1]"), "cannot unmarshal array"},
		{"trailing data", raw(pipelineJSON + `{}`), "after top-level value"},
		{"duplicate key", raw(strings.Replace(pipelineJSON, `"max_steps": 1024,`, `"max_steps": 1024, "max_steps": 5,`, 1)), `key "max_steps" appears twice`},
		{"format missing", pipeline("format", del), "format: missing"},
		{"format 2", pipeline("format", 2), "format: 2 is not supported"},
		{"unknown top-level key", pipeline("speakers", []string{"x"}), `unknown field "speakers"`},
		{"unknown nested key", pipeline("encoder.sampel_rate", 16000), `unknown field "sampel_rate"`},
		{"unknown engine", pipeline("engine", "vits2"), `engine: "vits2" is not one of`},
		{"missing role", pipeline("vocoder", del), "vocoder: missing (engine pipeline needs roles encoder, decoder, vocoder)"},
		{"role of another engine", pipeline("model", map[string]any{"file": "encoder"}), "model: engine pipeline has no role model"},
		{"role file not in files", pipeline("vocoder.file", "voc"), `vocoder.file: "voc" is not a key of "files"`},
		{"role file missing", pipeline("vocoder.file", del), "vocoder.file: missing"},
		{"unused file", pipeline("files.extra", map[string]any{"path": "x.onnx", "sha256": digest}), "files.extra: no role uses it"},
		{"two roles one file", pipeline("vocoder.file", "decoder"), `vocoder.file: "decoder" is already the file of role decoder`},
		{"dotdot path", pipeline("files.encoder.path", "../encoder.onnx"), `files.encoder.path: "../encoder.onnx" has a ".." element`},
		{"dotdot inside path", pipeline("files.encoder.path", "a/../../b.onnx"), `has a ".." element`},
		{"absolute path", pipeline("files.encoder.path", "/etc/passwd"), "is absolute"},
		{"empty path", pipeline("files.encoder.path", ""), "files.encoder.path: missing"},
		{"dot path", pipeline("files.encoder.path", "./"), "does not name a file inside"},
		{"backslash path", pipeline("files.encoder.path", `..\x.onnx`), "backslash"},
		{"long path", pipeline("files.encoder.path", strings.Repeat("a", bundle.MaxPathBytes+1)), "MaxPathBytes"},
		{"uppercase digest", pipeline("files.encoder.sha256", strings.ToUpper(digest)), "files.encoder.sha256"},
		{"short digest", pipeline("files.encoder.sha256", "abcd"), "not 64 lowercase hex"},
		{"negative size", pipeline("files.encoder.size", -1), "files.encoder.size"},
		{"bad file key", pipeline("files.en/coder", map[string]any{"path": "x.onnx", "sha256": digest}), "files key"},
		{"no files", pipeline("files", map[string]any{}), "files: missing or empty"},
		{"kv name without {i}", pipeline("decoder.kv.past_key", "past.key"), `decoder.kv.past_key: "past.key" has no "{i}"`},
		{"kv names equal", pipeline("decoder.kv.past_value", "past_key_values.{i}.key"), "decoder.kv.past_value"},
		{"kv name collides with input", pipeline("decoder.inputs.ids", "present.1.key"), "also the tensor of ids"},
		{"kv layout", pipeline("decoder.kv.layout", "stacked"), `decoder.kv.layout: "stacked" is not supported`},
		{"kv layers zero", pipeline("decoder.kv.layers", 0), "decoder.kv.layers: 0"},
		{"kv layers too many", pipeline("decoder.kv.layers", bundle.MaxKVLayers+1), "MaxKVLayers"},
		{"kv heads too many", pipeline("decoder.kv.heads", bundle.MaxKVHeads+1), "MaxKVHeads"},
		{"kv context too long", pipeline("decoder.kv.max_context", bundle.MaxKVContext+1), "MaxKVContext"},
		{"max steps zero", pipeline("decoder.max_steps", 0), "decoder.max_steps"},
		{"max steps too many", pipeline("decoder.max_steps", bundle.MaxDecoderSteps+1), "MaxDecoderSteps"},
		{"unknown input key", pipeline("encoder.inputs.audio2", "x"), `encoder.inputs: unknown key "audio2" (known: audio)`},
		{"unknown output key", pipeline("vocoder.outputs.wave", "x"), `vocoder.outputs: unknown key "wave"`},
		{"missing input", pipeline("vocoder.inputs.embedding", del), "vocoder.inputs.embedding: missing"},
		{"missing output", pipeline("encoder.outputs.prompt", del), "encoder.outputs.prompt: missing"},
		{"empty tensor name", pipeline("decoder.inputs.prev", ""), "decoder.inputs.prev: empty tensor name"},
		{"tensor name type", pipeline("decoder.inputs.prev", 3), "cannot unmarshal number"},
		{"sample rate missing", pipeline("sample_rate", del), "sample_rate: 0 Hz"},
		{"sample rate huge", pipeline("sample_rate", 1e6), "sample_rate: 1000000 Hz"},
		{"sample rate float", pipeline("sample_rate", 22050.5), "cannot unmarshal number 22050.5"},
		{"encoder rate", pipeline("encoder.sample_rate", 100), "encoder.sample_rate"},
		{"encoder min over max", pipeline("encoder.min_seconds", 40), "encoder.min_seconds: 40"},
		{"encoder max too long", pipeline("encoder.max_seconds", 3600), "MaxEncoderSeconds"},
		{"name missing", pipeline("name", del), "name: missing"},
		{"name with slash", pipeline("name", "a/b"), `name: "a/b" has '/'`},
		{"name too long", pipeline("name", strings.Repeat("n", bundle.MaxNameBytes+1)), "MaxNameBytes"},
		{"phonemes unknown", pipeline("text.phonemes", "ipa"), `text.phonemes: "ipa" is not one of`},
		{"espeak without language", pipeline("text.language", del), "text.language: missing"},
		{"language with dots", pipeline("text.language", "../en"), "text.language"},
		{"no id map", pipeline("text.phoneme_id_map", del), "text.phoneme_id_map: missing"},
		{"no pad id", pipeline("text.phoneme_id_map._", del), `no id for "_"`},
		{"negative id", pipeline("text.phoneme_id_map.a", []int{-1}), `"a" maps to -1`},
		{"huge id", pipeline("text.phoneme_id_map.a", []int{bundle.MaxTokenID}), "MaxTokenID"},
		{"symbol without ids", pipeline("text.phoneme_id_map.a", []int{}), `"a" has no ids`},
		{"style on pipeline", pipeline("style", map[string]any{"dim": 1, "rows": 1, "row_rule": "tokens"}), "style: only engine style_vector"},
		{"style missing", style(func(m *bundle.Manifest) { m.Style = nil }), "style: missing"},
		{"style dim", style(func(m *bundle.Manifest) { m.Style.Dim = 0 }), "style.dim"},
		{"style rows", style(func(m *bundle.Manifest) { m.Style.Rows = bundle.MaxStyleRows + 1 }), "MaxStyleRows"},
		{"row rule", style(func(m *bundle.Manifest) { m.Style.RowRule = "tokens_plus_one" }), `style.row_rule: "tokens_plus_one"`},
		{"no voices", style(func(m *bundle.Manifest) { m.Voices = nil }), "voices: missing or empty"},
		{"voice name", style(func(m *bundle.Manifest) { m.Voices["../x"] = bundle.FileRef{Path: "x.bin", SHA256: digest} }), "voices key"},
		{"voice path", style(func(m *bundle.Manifest) { m.Voices["x"] = bundle.FileRef{Path: "../x.bin", SHA256: digest} }), "voices.x.path"},
		{"voice size", style(func(m *bundle.Manifest) { m.Voices["x"] = bundle.FileRef{Path: "x.bin", SHA256: digest, Size: 10} }), "voices.x.size: 10 bytes"},
		{"style missing input", style(func(m *bundle.Manifest) { delete(m.Model.Inputs, "speed") }), "model.inputs.speed: missing"},
		{"style pipeline key", style(func(m *bundle.Manifest) { m.Model.Inputs["prosody"] = "p" }), `model.inputs: unknown key "prosody" (known: tokens, style, speed)`},
		{"style with encoder", style(func(m *bundle.Manifest) {
			m.Encoder = &bundle.EncoderRole{Tensors: bundle.Tensors{File: "model"}}
		}), "encoder: engine style_vector has no role encoder"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := bundle.Parse(c.data(t))
			if !errors.Is(err, bundle.ErrInvalidManifest) {
				t.Fatalf("err = %v, want ErrInvalidManifest", err)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %q, want it to mention %q", err, c.want)
			}
		})
	}
}

func TestMarshalValidates(t *testing.T) {
	m := styleManifest()
	m.Style.RowRule = ""
	if _, err := m.Marshal(); !errors.Is(err, bundle.ErrInvalidManifest) {
		t.Fatalf("marshal of an invalid manifest: %v", err)
	}
}
