// Package catalogtest serves a Piper-style voice collection for tests: a
// voices.json in the real format listing demo voices under Piper keys,
// and their files laid out as the collection lays them out, from an
// httptest server (or, for offline mirrors, from the directory itself).
package catalogtest

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// Voice is one voice of the served collection.
type Voice struct {
	Key      string // en_US-lessac-medium; the name, language and quality are read from it
	Aliases  []string
	Speakers int // 0 is 1
	// Model and Config, when set, are the voice's files; by default it is
	// the demo voice.
	Model, Config []byte
}

// Server serves a collection. Its fields are set before the first
// request.
type Server struct {
	*httptest.Server
	// Root is the collection's directory: a file:// mirror of it.
	Root string
	// BaseURL is the download URL, CatalogURL the voices.json's.
	BaseURL, CatalogURL string
	// Intercept, when set, sees every request first; returning true
	// means it answered.
	Intercept func(w http.ResponseWriter, r *http.Request) bool

	mu   sync.Mutex
	gets map[string]int
}

var (
	buildOnce             sync.Once
	demoModel, demoConfig []byte
	buildErr              error
)

// DemoFiles returns the demo voice's model and config, as demo.Write
// writes them.
func DemoFiles(t testing.TB) (model, config []byte) {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "catalogtest")
		if err != nil {
			buildErr = err
			return
		}
		defer os.RemoveAll(dir)
		p, err := demo.Write(dir, nil)
		if err != nil {
			buildErr = err
			return
		}
		if demoModel, buildErr = os.ReadFile(p); buildErr == nil {
			demoConfig, buildErr = os.ReadFile(p + ".json")
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return demoModel, demoConfig
}

// FilePath is where the collection keeps a voice's file: FAMILY/CODE/
// NAME/QUALITY/FILE.
func FilePath(key, file string) string {
	code, name, quality := split(key)
	family, _, _ := strings.Cut(code, "_")
	return path.Join(family, code, name, quality, file)
}

func split(key string) (code, name, quality string) {
	parts := strings.SplitN(key, "-", 3)
	for len(parts) < 3 {
		parts = append(parts, "x")
	}
	return parts[0], parts[1], parts[2]
}

// New writes the collection of voices into a temp directory and serves
// it; the server closes with the test.
func New(t testing.TB, voices ...Voice) *Server {
	t.Helper()
	s := &Server{Root: t.TempDir(), gets: map[string]int{}}
	WriteCollection(t, s.Root, voices...)
	files := http.FileServer(http.Dir(s.Root))
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.gets[r.URL.Path]++
		s.mu.Unlock()
		if s.Intercept != nil && s.Intercept(w, r) {
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(s.Close)
	s.BaseURL = s.URL + "/"
	s.CatalogURL = s.URL + "/voices.json"
	return s
}

// Gets is how many requests asked for the URL path p ("/voices.json").
func (s *Server) Gets(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gets[p]
}

// ModelURLPath is the URL path of a voice's model.
func ModelURLPath(key string) string { return "/" + FilePath(key, key+".onnx") }

// WriteCollection lays the voices out in root with a voices.json, in the
// collection's format, each voice being the demo voice unless its Model
// is set.
func WriteCollection(t testing.TB, root string, voices ...Voice) {
	t.Helper()
	model, config := DemoFiles(t)
	catalog := map[string]any{}
	for _, v := range voices {
		code, name, quality := split(v.Key)
		family, region, _ := strings.Cut(code, "_")
		files := map[string]any{}
		vm, vc := model, config
		if v.Model != nil {
			vm, vc = v.Model, v.Config
		}
		for file, data := range map[string][]byte{v.Key + ".onnx": vm, v.Key + ".onnx.json": vc, "MODEL_CARD": []byte("# Model card for " + v.Key + "\nLicense: demo\n")} {
			rel := FilePath(v.Key, file)
			p := filepath.Join(root, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, data, 0o644); err != nil {
				t.Fatal(err)
			}
			sum := md5.Sum(data)
			files[rel] = map[string]any{"size_bytes": len(data), "md5_digest": hex.EncodeToString(sum[:])}
		}
		speakers := max(v.Speakers, 1)
		speakerMap := map[string]int{}
		if speakers > 1 {
			for i := range speakers {
				speakerMap["speaker_"+string(rune('a'+i%26))] = i
			}
		}
		aliases := v.Aliases
		if aliases == nil {
			aliases = []string{}
		}
		catalog[v.Key] = map[string]any{
			"key":  v.Key,
			"name": name,
			"language": map[string]any{
				"code": code, "family": family, "region": region,
				"name_native": family, "name_english": "Language " + family, "country_english": "Country " + region,
			},
			"quality":        quality,
			"num_speakers":   speakers,
			"speaker_id_map": speakerMap,
			"files":          files,
			"aliases":        aliases,
		}
	}
	data, err := json.MarshalIndent(catalog, "", "    ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "voices.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// Standard is the collection most tests serve: three en_US voices of
// different qualities, a British one, a German one with an alias, and a
// multi-speaker one.
var Standard = []Voice{
	{Key: "en_US-lessac-medium"},
	{Key: "en_US-lessac-high"},
	{Key: "en_US-amy-low"},
	{Key: "en_US-arctic-medium", Speakers: 3},
	{Key: "en_GB-alan-medium"},
	{Key: "de_DE-thorsten-medium", Aliases: []string{"de-thorsten-medium"}},
}

// DropFirst makes the first request for key's model get half the file
// and then a dropped connection; later requests are served as usual (the
// file server honours Range). It returns the Range header of every
// request for the model, in order.
func (s *Server) DropFirst(t testing.TB, key string) (ranges func() []string) {
	t.Helper()
	model, _ := DemoFiles(t)
	var mu sync.Mutex
	var seen []string
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != ModelURLPath(key) {
			return false
		}
		mu.Lock()
		seen = append(seen, r.Header.Get("Range"))
		first := len(seen) == 1
		mu.Unlock()
		if !first {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(model)))
		w.WriteHeader(http.StatusOK)
		w.Write(model[:len(model)/2])
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return true
	}
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}
