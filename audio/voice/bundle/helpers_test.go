package bundle_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// digest is a placeholder sha256 for manifests that are only parsed.
var digest = strings.Repeat("ab", 32)

func piperMap() map[string][]int64 {
	return map[string][]int64{"_": {0}, "^": {1}, "$": {2}, "a": {14}, " ": {3}}
}

// pipelineJSON is the contract's example manifest.
const pipelineJSON = `{
  "format": 1,
  "engine": "pipeline",
  "name": "mynah-clone",
  "sample_rate": 22050,
  "text": {"phonemes": "espeak", "language": "en-us",
           "phoneme_id_map": {"_": [0], "^": [1], "$": [2], "a": [14]}},
  "files": {"encoder": {"path": "encoder.onnx", "sha256": "` + "abababababababababababababababababababababababababababababababab" + `"},
            "decoder": {"path": "decoder.onnx", "sha256": "` + "abababababababababababababababababababababababababababababababab" + `"},
            "vocoder": {"path": "vocoder.onnx", "sha256": "` + "abababababababababababababababababababababababababababababababab" + `"}},
  "encoder": {"file": "encoder", "sample_rate": 16000, "min_seconds": 1, "max_seconds": 30,
              "inputs": {"audio": "audio"},
              "outputs": {"embedding": "embedding", "prompt": "prompt_ids"}},
  "decoder": {"file": "decoder", "max_steps": 1024,
              "inputs": {"ids": "input_ids", "prev": "prev_prosody"},
              "outputs": {"prosody": "prosody"},
              "kv": {"layout": "per_layer", "layers": 2, "heads": 2, "head_dim": 32, "max_context": 512,
                     "past_key": "past_key_values.{i}.key", "past_value": "past_key_values.{i}.value",
                     "present_key": "present.{i}.key", "present_value": "present.{i}.value"}},
  "vocoder": {"file": "vocoder",
              "inputs": {"ids": "input", "lengths": "input_lengths", "scales": "scales",
                         "prosody": "prosody", "embedding": "speaker_embedding"},
              "outputs": {"audio": "output"}}
}`

func styleManifest() *bundle.Manifest {
	return &bundle.Manifest{
		Format:     1,
		Engine:     bundle.EngineStyleVector,
		Name:       "kokoro-like",
		SampleRate: 24000,
		Text:       bundle.Text{Phonemes: "espeak", Language: "en-us", PhonemeIDMap: map[string][]int64{"_": {0}, "a": {43}, "b": {44}}},
		Files:      map[string]bundle.FileRef{"model": {Path: "model.onnx", SHA256: digest}},
		Model: &bundle.ModelRole{Tensors: bundle.Tensors{File: "model",
			Inputs:  map[string]string{"tokens": "tokens", "style": "style", "speed": "speed"},
			Outputs: map[string]string{"audio": "audio"}}},
		Style: &bundle.Style{Dim: 256, Rows: 510, RowRule: bundle.RowRuleTokens},
		Voices: map[string]bundle.FileRef{
			"amber": {Path: "voices/amber.bin", SHA256: digest},
			"jade":  {Path: "voices/jade.bin", SHA256: digest},
		},
	}
}

func piperManifest() *bundle.Manifest {
	return &bundle.Manifest{
		Format:     1,
		Engine:     bundle.EnginePiper,
		Name:       "piper-in-a-bundle",
		SampleRate: 22050,
		Text:       bundle.Text{Phonemes: "espeak", Language: "en-us", PhonemeIDMap: piperMap()},
		Files:      map[string]bundle.FileRef{"model": {Path: "voice.onnx", SHA256: digest}},
		Model: &bundle.ModelRole{Tensors: bundle.Tensors{File: "model",
			Inputs:  map[string]string{"ids": "input", "lengths": "input_lengths", "scales": "scales", "sid": "sid"},
			Outputs: map[string]string{"audio": "output"}}},
	}
}

// asMap turns JSON into a generic tree that tests can edit by path.
func asMap(t testing.TB, data []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// set sets the value at a dotted path ("decoder.kv.layers"), creating
// objects on the way; a nil value deletes the key.
func set(m map[string]any, dotted string, v any) {
	keys := strings.Split(dotted, ".")
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(map[string]any)
		if !ok {
			next = map[string]any{}
			m[k] = next
		}
		m = next
	}
	last := keys[len(keys)-1]
	if v == nil {
		delete(m, last)
		return
	}
	m[last] = v
}

// writeBundle writes m's files with the given contents into a new
// directory, fills in the digests (and sizes, when withSizes), and writes
// voice.json.
func writeBundle(t testing.TB, m *bundle.Manifest, contents map[string][]byte, withSizes bool) string {
	t.Helper()
	dir := t.TempDir()
	fill := func(refs map[string]bundle.FileRef) {
		for k, ref := range refs {
			data, ok := contents[ref.Path]
			if !ok {
				t.Fatalf("no contents for %s", ref.Path)
			}
			p := filepath.Join(dir, filepath.FromSlash(ref.Path))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			ref.SHA256 = hex.EncodeToString(sum[:])
			if withSizes {
				ref.Size = int64(len(data))
			}
			refs[k] = ref
		}
	}
	fill(m.Files)
	fill(m.Voices)
	for p, v := range m.Variants {
		fill(v.Files)
		m.Variants[p] = v
	}
	data, err := m.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestName), data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}
