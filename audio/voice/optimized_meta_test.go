package voice_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The optimized-model cache's sidecar parser (readOptimizedMeta): a table
// of what it takes and refuses, and a fuzz target.

// sidecarMeta is a valid sidecar's values (before its Check is set), as
// a Piper voice's entry has them.
func sidecarMeta() voice.OptimizedMeta {
	return voice.OptimizedMeta{
		Format:       voice.OptimizedFormat,
		Source:       "/var/lib/mynah/voices/en/mynah-demo.onnx",
		SourceSize:   126374,
		SourceMtime:  1764627337123456789,
		SourceSHA256: strings.Repeat("0f", 32),
		MadeFor:      "4ab7100102eddf7a672800e2e5356f89",
		ORTSize:      131072,
		ORTCRC32C:    0xdeadbeef,
		Inputs: []ort.TensorInfo{
			{Name: "input", Type: ort.Int64, Dims: []int64{1, -1}},
			{Name: "input_lengths", Type: ort.Int64, Dims: []int64{1}},
			{Name: "scales", Type: ort.Float32, Dims: []int64{3}},
			{Name: "sid", Type: ort.Int64, Dims: []int64{1}},
		},
		Outputs: []ort.TensorInfo{{Name: "output", Type: ort.Float32, Dims: []int64{1, 1, -1}}},
	}
}

// sealed is the sidecar of sidecarMeta changed by edit, with its Check
// set: only the rule the edit breaks can refuse it.
func sealed(edit func(m *voice.OptimizedMeta)) []byte {
	m := sidecarMeta()
	if edit != nil {
		edit(&m)
	}
	return voice.EncodeOptimizedMeta(m)
}

// replaced is the valid sidecar with old replaced by new once, its Check
// left as it was.
func replaced(t testing.TB, old, new string) []byte {
	js := sealed(nil)
	if !bytes.Contains(js, []byte(old)) {
		t.Fatalf("%q not in %s", old, js)
	}
	return bytes.Replace(js, []byte(old), []byte(new), 1)
}

func writeSidecar(t testing.TB, data []byte) string {
	path := filepath.Join(t.TempDir(), "4ab7100102eddf7a672800e2e5356f89.json")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReadOptimizedMeta(t *testing.T) {
	compact := func() []byte {
		var m voice.OptimizedMeta
		if err := json.Unmarshal(sealed(nil), &m); err != nil {
			t.Fatal(err)
		}
		js, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return js
	}
	checkWrong := func() []byte {
		var m voice.OptimizedMeta
		if err := json.Unmarshal(sealed(nil), &m); err != nil {
			t.Fatal(err)
		}
		return replaced(t, fmt.Sprintf(`"check_crc32c": %d`, m.Check), fmt.Sprintf(`"check_crc32c": %d`, m.Check^1))
	}
	atLimit := sealed(nil)
	atLimit = append(atLimit, bytes.Repeat([]byte("\n"), voice.MaxOptimizedMeta-len(atLimit))...)
	cases := []struct {
		name string
		data []byte
		ok   bool
	}{
		{"valid", sealed(nil), true},
		{"compact", compact(), true},
		{"unknown field", replaced(t, "{", `{"written_by": "mynah 2",`), true},
		{"whitespace up to the limit", atLimit, true},
		{"scalar tensors", sealed(func(m *voice.OptimizedMeta) { m.Outputs[0].Dims = nil }), true},

		{"empty", nil, false},
		{"null", []byte("null"), false},
		{"array", []byte("[]"), false},
		{"empty object", []byte("{}"), false},
		{"truncated", sealed(nil)[:200], false},
		{"trailing garbage", append(sealed(nil), "}x"...), false},
		{"one byte over the limit", append(atLimit, ' '), false},
		{"garbage", bytes.Repeat([]byte{0xff, 0x00, 0x7b}, 100), false},

		{"format of another version", sealed(func(m *voice.OptimizedMeta) { m.Format = "1" }), false},
		{"format missing", sealed(func(m *voice.OptimizedMeta) { m.Format = "" }), false},
		{"format a number", replaced(t, `"format": "`+voice.OptimizedFormat+`"`, `"format": `+voice.OptimizedFormat), false},
		{"check missing", replaced(t, `"check_crc32c"`, `"unchecked"`), false},
		{"check wrong", checkWrong(), false},
		{"value changed, check not", replaced(t, `"source_size": 126374`, `"source_size": 126375`), false},
		{"tensor renamed, check not", replaced(t, `"Name": "sid"`, `"Name": "sie"`), false},
		{"source relative", sealed(func(m *voice.OptimizedMeta) { m.Source = "voices/en/mynah-demo.onnx" }), false},
		{"source not clean", sealed(func(m *voice.OptimizedMeta) { m.Source = "/var/lib/mynah/../mynah/x.onnx" }), false},
		{"source missing", sealed(func(m *voice.OptimizedMeta) { m.Source = "" }), false},
		{"source size zero", sealed(func(m *voice.OptimizedMeta) { m.SourceSize = 0 }), false},
		{"source size negative", sealed(func(m *voice.OptimizedMeta) { m.SourceSize = -1 }), false},
		{"source size over the limit", sealed(func(m *voice.OptimizedMeta) { m.SourceSize = onnx.DefaultMaxBytes + 1 }), false},
		{"sha256 upper case", sealed(func(m *voice.OptimizedMeta) { m.SourceSHA256 = strings.Repeat("0F", 32) }), false},
		{"sha256 short", sealed(func(m *voice.OptimizedMeta) { m.SourceSHA256 = strings.Repeat("0f", 31) }), false},
		{"sha256 not hex", sealed(func(m *voice.OptimizedMeta) { m.SourceSHA256 = strings.Repeat("g0", 32) }), false},
		{"made_for missing", sealed(func(m *voice.OptimizedMeta) { m.MadeFor = "" }), false},
		{"ort size zero", sealed(func(m *voice.OptimizedMeta) { m.ORTSize = 0 }), false},
		{"ort size negative", sealed(func(m *voice.OptimizedMeta) { m.ORTSize = -131072 }), false},
		{"ort size over the limit", sealed(func(m *voice.OptimizedMeta) { m.ORTSize = ort.MaxModelBytes + 1 }), false},
		{"ort crc negative", replaced(t, `"ort_crc32c": 3735928559`, `"ort_crc32c": -1`), false},
		{"ort crc over 32 bits", replaced(t, `"ort_crc32c": 3735928559`, `"ort_crc32c": 4294967296`), false},
		{"ort crc a fraction", replaced(t, `"ort_crc32c": 3735928559`, `"ort_crc32c": 1.5`), false},
		{"no inputs", sealed(func(m *voice.OptimizedMeta) { m.Inputs = nil }), false},
		{"no outputs", sealed(func(m *voice.OptimizedMeta) { m.Outputs = []ort.TensorInfo{} }), false},
		{"tensor without a name", sealed(func(m *voice.OptimizedMeta) { m.Inputs[1].Name = "" }), false},
		{"tensor type undefined", sealed(func(m *voice.OptimizedMeta) { m.Inputs[0].Type = ort.Undefined }), false},
		{"tensor type unknown", sealed(func(m *voice.OptimizedMeta) { m.Outputs[0].Type = 200 }), false},
		{"tensor type over 8 bits", replaced(t, `"Type": 1`, `"Type": 257`), false},
		{"dimension under -1", sealed(func(m *voice.OptimizedMeta) { m.Outputs[0].Dims[2] = -2 }), false},
		{"source size a string", replaced(t, `"source_size": 126374`, `"source_size": "126374"`), false},
		{"inputs an object", replaced(t, `"inputs": [`, `"inputs": {"x": 1}, "y": [`), false},
		{"dims a string", replaced(t, `"Dims": [`, `"Dims": "1" , "x": [`), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := voice.ReadOptimizedMeta(writeSidecar(t, c.data))
			if c.ok {
				if err != nil {
					t.Fatal(err)
				}
				want := sidecarMeta()
				if c.name == "scalar tensors" {
					want.Outputs[0].Dims = nil
				}
				m.Check = 0
				if !reflect.DeepEqual(m, want) {
					t.Fatalf("read %+v, want %+v", m, want)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted %+v", m)
			}
			t.Log(err)
			if errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("%v: reads as a missing sidecar", err)
			}
			if !reflect.DeepEqual(m, voice.OptimizedMeta{}) {
				t.Fatalf("refused (%v) but returned %+v", err, m)
			}
		})
	}

	t.Run("missing", func(t *testing.T) {
		_, err := voice.ReadOptimizedMeta(filepath.Join(t.TempDir(), "none.json"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v, want fs.ErrNotExist", err)
		}
	})
	t.Run("a directory", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "dir.json")
		if err := os.Mkdir(path, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := voice.ReadOptimizedMeta(path); err == nil || errors.Is(err, fs.ErrNotExist) {
			t.Fatalf("%v, want an error other than fs.ErrNotExist", err)
		}
	})
}

// FuzzOptimizedMeta feeds the sidecar parser what a damaged cache
// directory can hold. It must never panic, and what it accepts must hold
// the invariants the cache relies on and be exactly what store would
// write for those values.
func FuzzOptimizedMeta(f *testing.F) {
	f.Add(sealed(nil))
	f.Add(sealed(func(m *voice.OptimizedMeta) { m.Outputs[0].Dims = nil }))
	f.Add(sealed(func(m *voice.OptimizedMeta) { m.ORTSize = 0 }))
	f.Add(sealed(nil)[:300])
	f.Add(replaced(f, `"source_size": 126374`, `"source_size": "126374"`))
	f.Add([]byte(`{"format": "2"}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "meta.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := voice.ReadOptimizedMeta(path)
		if err != nil {
			if !reflect.DeepEqual(m, voice.OptimizedMeta{}) {
				t.Fatalf("refused (%v) but returned %+v", err, m)
			}
			return
		}
		if len(data) > voice.MaxOptimizedMeta {
			t.Fatalf("accepted %d bytes, limit %d", len(data), voice.MaxOptimizedMeta)
		}
		switch {
		case m.Format != voice.OptimizedFormat:
			t.Fatalf("accepted format %q", m.Format)
		case !filepath.IsAbs(m.Source) || filepath.Clean(m.Source) != m.Source:
			t.Fatalf("accepted source %q", m.Source)
		case m.SourceSize <= 0 || m.SourceSize > onnx.DefaultMaxBytes:
			t.Fatalf("accepted source size %d", m.SourceSize)
		case len(m.SourceSHA256) != 64 || strings.Trim(m.SourceSHA256, "0123456789abcdef") != "":
			t.Fatalf("accepted sha256 %q", m.SourceSHA256)
		case m.MadeFor == "":
			t.Fatal("accepted no made_for")
		case m.ORTSize <= 0 || m.ORTSize > ort.MaxModelBytes:
			t.Fatalf("accepted ort size %d", m.ORTSize)
		case len(m.Inputs) == 0 || len(m.Outputs) == 0:
			t.Fatalf("accepted %d inputs, %d outputs", len(m.Inputs), len(m.Outputs))
		}
		for _, ti := range append(append([]ort.TensorInfo(nil), m.Inputs...), m.Outputs...) {
			if ti.Name == "" || ti.Type == ort.Undefined || strings.HasPrefix(ti.Type.String(), "ElementType(") {
				t.Fatalf("accepted tensor %s", ti)
			}
			for _, d := range ti.Dims {
				if d < -1 {
					t.Fatalf("accepted tensor %s", ti)
				}
			}
		}
		// The values sum to the check they carry: written again as store
		// writes them, they read back the same.
		again, err := voice.ReadOptimizedMeta(writeSidecar(t, voice.EncodeOptimizedMeta(m)))
		if err != nil {
			t.Fatalf("accepted %+v, which does not read back: %v", m, err)
		}
		if !reflect.DeepEqual(again, m) {
			t.Fatalf("accepted %+v, which reads back as %+v", m, again)
		}
	})
}
