package catalog_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
)

// realEntry is an entry as the collection's voices.json has it (the
// wyoming-piper copy), trimmed to one voice.
const realEntry = `{
    "ca_ES-upc_ona-x_low": {
        "key": "ca_ES-upc_ona-x_low",
        "name": "upc_ona",
        "language": {
            "code": "ca_ES",
            "family": "ca",
            "region": "ES",
            "name_native": "Català",
            "name_english": "Catalan",
            "country_english": "Spain"
        },
        "quality": "x_low",
        "num_speakers": 1,
        "speaker_id_map": {},
        "files": {
            "ca/ca_ES/upc_ona/x_low/ca_ES-upc_ona-x_low.onnx": {
                "size_bytes": 20628813,
                "md5_digest": "ca22734cd8c5b01dd1fefbb42067ab06"
            },
            "ca/ca_ES/upc_ona/x_low/ca_ES-upc_ona-x_low.onnx.json": {
                "size_bytes": 4159,
                "md5_digest": "82ccdadad1c203feaff8f77aef9087a3"
            },
            "ca/ca_ES/upc_ona/x_low/MODEL_CARD": {
                "size_bytes": 258,
                "md5_digest": "1f555643ff6f7d9133679d730f3f6016"
            }
        },
        "aliases": [
            "ca-upc_ona-x-low"
        ]
    }
}`

func TestParseRealEntry(t *testing.T) {
	c, err := catalog.Parse([]byte(realEntry))
	if err != nil {
		t.Fatal(err)
	}
	v, ok := c.Voice("ca_ES-upc_ona-x_low")
	if !ok || c.Len() != 1 {
		t.Fatalf("voices %v", c.Voices())
	}
	if v.Name != "upc_ona" || v.Quality != "x_low" || v.Language.Code != "ca_ES" || v.Language.NameNative != "Català" ||
		v.Language.CountryEnglish != "Spain" || v.Speakers() != 1 {
		t.Errorf("voice %+v", v)
	}
	if v.ModelPath() != "ca/ca_ES/upc_ona/x_low/ca_ES-upc_ona-x_low.onnx" || v.ConfigPath() != v.ModelPath()+".json" {
		t.Errorf("paths %q %q", v.ModelPath(), v.ConfigPath())
	}
	if v.Size() != 20628813+4159+258 {
		t.Errorf("size %d", v.Size())
	}
	if r, err := c.Resolve("ca-upc_ona-x-low", ""); err != nil || r.Voice != v || r.By != catalog.ByAlias {
		t.Errorf("alias: %+v %v", r, err)
	}
}

func TestParse(t *testing.T) {
	entry := func(key, body string) string { return `{"` + key + `": ` + body + `}` }
	files := func(key string) string {
		return `"files": {"a/` + key + `.onnx": {"size_bytes": 10, "md5_digest": "0123456789abcdef0123456789abcdef"},
			"a/` + key + `.onnx.json": {"size_bytes": 5, "md5_digest": "0123456789abcdef0123456789abcdef"}}`
	}
	ok := entry("en_US-x-medium", `{"name": "x", "quality": "medium", "language": {"code": "en_US"}, `+files("en_US-x-medium")+`}`)
	tests := []struct {
		name    string
		in      string
		bad     bool // ErrBadCatalog
		voices  int
		skipped int
	}{
		{"ok", ok, false, 1, 0},
		{"key filled in", entry("k", `{`+files("k")+`}`), false, 1, 0},
		{"empty", ``, true, 0, 0},
		{"html", `<html>404</html>`, true, 0, 0},
		{"array", `[1, 2]`, true, 0, 0},
		{"no voices", `{}`, true, 0, 0},
		{"truncated", ok[:len(ok)-5], true, 0, 0},
		{"not UTF-8", "{\"\xff\": {}}", true, 0, 0},
		{"only bad entries", entry("../etc", `{`+files("../etc")+`}`), true, 0, 1},
		{"key mismatch", ok[:len(ok)-1] + `, "b": {"key": "c", ` + files("b") + `}}`, false, 1, 1},
		{"hidden key", ok[:len(ok)-1] + `, ".b": {` + files(".b") + `}}`, false, 1, 1},
		{"escaping path", ok[:len(ok)-1] + `, "b": {"files": {"../b.onnx": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}, "b.onnx.json": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"absolute path", ok[:len(ok)-1] + `, "b": {"files": {"/b.onnx": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}, "b.onnx.json": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"no config", ok[:len(ok)-1] + `, "b": {"files": {"b.onnx": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"bad md5", ok[:len(ok)-1] + `, "b": {"files": {"b.onnx": {"size_bytes": 1, "md5_digest": "xyz"}, "b.onnx.json": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"negative size", ok[:len(ok)-1] + `, "b": {"files": {"b.onnx": {"size_bytes": -1, "md5_digest": "0123456789abcdef0123456789abcdef"}, "b.onnx.json": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"size as string", ok[:len(ok)-1] + `, "b": {"files": {"b.onnx": {"size_bytes": "1", "md5_digest": "0123456789abcdef0123456789abcdef"}}}}`, false, 1, 1},
		{"speakers negative", ok[:len(ok)-1] + `, "b": {"num_speakers": -2, ` + files("b") + `}}`, false, 1, 1},
		{"entry not an object", ok[:len(ok)-1] + `, "b": 7}`, false, 1, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := catalog.Parse([]byte(tt.in))
			if tt.bad {
				if !errors.Is(err, catalog.ErrBadCatalog) {
					t.Fatalf("err = %v, want ErrBadCatalog", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Len() != tt.voices || len(c.Skipped) != tt.skipped {
				t.Errorf("voices %d skipped %q", c.Len(), c.Skipped)
			}
		})
	}
}

// FuzzParse: any input parses or fails with ErrBadCatalog, and every
// voice it yields is safe to install: a key that is a directory name,
// file paths that stay inside the collection, the two files present.
func FuzzParse(f *testing.F) {
	f.Add([]byte(realEntry))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"a": {"files": {"a.onnx": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}, "a.onnx.json": {"size_bytes": 1, "md5_digest": "0123456789abcdef0123456789abcdef"}}, "aliases": ["b", "a", "../c"]}}`))
	dir := f.TempDir()
	catalogtest.WriteCollection(f, dir, catalogtest.Standard...)
	if data, err := os.ReadFile(filepath.Join(dir, "voices.json")); err == nil {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := catalog.Parse(data)
		if err != nil {
			if !errors.Is(err, catalog.ErrBadCatalog) {
				t.Fatalf("error %v does not wrap ErrBadCatalog", err)
			}
			return
		}
		for _, v := range c.Voices() {
			if !catalog.ValidKey(v.Key) || v.ModelPath() == "" || v.ConfigPath() == "" {
				t.Fatalf("voice %+v", v)
			}
			for p := range v.Files {
				if strings.HasPrefix(p, "/") || strings.Contains("/"+p+"/", "/../") || strings.Contains(p, "\\") {
					t.Fatalf("unsafe path %q", p)
				}
			}
			if _, err := c.Resolve(v.Key, ""); err != nil {
				t.Fatalf("resolve own key %q: %v", v.Key, err)
			}
		}
	})
}

func standardCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	dir := t.TempDir()
	catalogtest.WriteCollection(t, dir, catalogtest.Standard...)
	data, err := os.ReadFile(filepath.Join(dir, "voices.json"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestResolve(t *testing.T) {
	c := standardCatalog(t)
	tests := []struct {
		req, quality, key, by string
	}{
		{"en_US-lessac-medium", "", "en_US-lessac-medium", catalog.ByKey},
		{"EN_us-LESSAC-high", "", "en_US-lessac-high", catalog.ByKey},
		{"de-thorsten-medium", "", "de_DE-thorsten-medium", catalog.ByAlias},
		{"en_US", "", "en_US-lessac-medium", catalog.ByLanguage},
		{"en-us", "", "en_US-lessac-medium", catalog.ByLanguage},
		{"en_US", "high", "en_US-lessac-high", catalog.ByLanguage},
		{"en_US", "low", "en_US-amy-low", catalog.ByLanguage},
		{"en_US", "x_low", "en_US-amy-low", catalog.ByLanguage},
		{"en", "", "en_GB-alan-medium", catalog.ByLanguage},
		{"de", "", "de_DE-thorsten-medium", catalog.ByLanguage},
		{"lessac", "", "en_US-lessac-medium", catalog.ByName},
		{"lessac", "high", "en_US-lessac-high", catalog.ByName},
		{"arctic", "", "en_US-arctic-medium", catalog.ByName},
	}
	for _, tt := range tests {
		r, err := c.Resolve(tt.req, tt.quality)
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tt.req, tt.quality, err)
			continue
		}
		if r.Voice.Key != tt.key || r.By != tt.by {
			t.Errorf("Resolve(%q, %q) = %s by %s, want %s by %s", tt.req, tt.quality, r.Voice.Key, r.By, tt.key, tt.by)
		}
	}
	// Deterministic: the candidates come in the same order every time.
	a, _ := c.Resolve("en_US", "")
	b, _ := c.Resolve("en_US", "")
	for i := range a.Candidates {
		if a.Candidates[i] != b.Candidates[i] {
			t.Fatal("candidates differ between calls")
		}
	}
	if len(a.Candidates) != 4 || a.Candidates[1].Key != "en_US-arctic-medium" {
		t.Errorf("candidates %v", keys(a.Candidates))
	}
}

func keys(vs []*catalog.Voice) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Key)
	}
	return out
}

func TestResolveNotFound(t *testing.T) {
	c := standardCatalog(t)
	for _, req := range []string{"en_US-lesac-medium", "xx_XX", "", strings.Repeat("a", 4096), "../etc"} {
		_, err := c.Resolve(req, "")
		if !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("Resolve(%.20q): %v, want ErrNotFound", req, err)
		}
	}
	_, err := c.Resolve("en_US-lesac-medium", "")
	if !strings.Contains(err.Error(), "nearest: en_US-lessac-medium,") {
		t.Errorf("no nearest names: %v", err)
	}
	if _, err := c.Resolve("en_US", "ultra"); err == nil {
		t.Error("quality ultra accepted")
	}
}

func TestResolveAmbiguousName(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteCollection(t, dir, catalogtest.Voice{Key: "en_US-kim-medium"}, catalogtest.Voice{Key: "ko_KR-kim-medium"})
	data, _ := os.ReadFile(filepath.Join(dir, "voices.json"))
	c, err := catalog.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Resolve("kim", ""); !errors.Is(err, catalog.ErrAmbiguous) {
		t.Errorf("err = %v, want ErrAmbiguous", err)
	}
}
