package voice_test

// Helpers of the optimized-model cache tests (optimized_test.go,
// optimized_env_test.go).

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"hash/crc32"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

const cacheSentence = "The washing machine has finished."

// cachedVoice is a copy of the demo voice in a directory of its own (so
// that its model can be changed) and the path of its model.
func cachedVoice(t *testing.T) (dir, model string) {
	t.Helper()
	dir = t.TempDir()
	src := demoVoice(t)
	for _, name := range []string{demo.Name + ".onnx", demo.Name + ".onnx.json"} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir, filepath.Join(dir, demo.Name+".onnx")
}

// logBuffer keeps what a text slog handler writes.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// warnings are the lines logged at WARN or above.
func (b *logBuffer) warnings() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for line := range strings.Lines(b.buf.String()) {
		if strings.Contains(line, "level=WARN") || strings.Contains(line, "level=ERROR") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

func newLogBuffer() (*slog.Logger, *logBuffer) {
	b := new(logBuffer)
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}

// cacheOptions are the voice options these tests load with: the CPU
// provider (auto would cache nothing where it finds a GPU).
func cacheOptions(cacheDir string, log *slog.Logger) *voice.PiperOptions {
	return &voice.PiperOptions{
		Session:      &ort.SessionOptions{Provider: ort.ProviderCPU},
		OptimizedDir: cacheDir,
		Logger:       log,
	}
}

// loadVoice loads the voice at dir until the test ends.
func loadVoice(t *testing.T, rt *ort.Runtime, dir string, opts *voice.PiperOptions) *voice.Piper {
	t.Helper()
	p, err := voice.LoadPiper(rt, dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// fileState is what of a file tells whether it was written again.
type fileState struct {
	size  int64
	mtime time.Time
	ino   uint64
}

// dirState lists the files of dir (none when it does not exist).
func dirState(t *testing.T, dir string) map[string]fileState {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	out := map[string]fileState{}
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		s := fileState{size: fi.Size(), mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			s.ino = st.Ino
		}
		out[e.Name()] = s
	}
	return out
}

func names(state map[string]fileState) []string {
	var out []string
	for name := range state {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// onlyEntry requires dir to hold exactly one entry, KEY.ort and KEY.json
// and nothing else, and returns KEY's path.
func onlyEntry(t *testing.T, dir string) string {
	t.Helper()
	got := names(dirState(t, dir))
	if len(got) != 2 || !strings.HasSuffix(got[0], ".json") || got[1] != strings.TrimSuffix(got[0], ".json")+".ort" {
		t.Fatalf("cache holds %q, want one KEY.json and KEY.ort", got)
	}
	return filepath.Join(dir, strings.TrimSuffix(got[0], ".json"))
}

// checkEntry requires the entry at base to be whole: its sidecar valid,
// made from model, and the .ort file the size and CRC-32C it names.
func checkEntry(t *testing.T, base, model string) voice.OptimizedMeta {
	t.Helper()
	meta, err := voice.ReadOptimizedMeta(base + ".json")
	if err != nil {
		t.Fatalf("entry's sidecar: %v", err)
	}
	data, err := os.ReadFile(base + ".ort")
	if err != nil {
		t.Fatal(err)
	}
	if int64(len(data)) != meta.ORTSize || crc32.Checksum(data, crc32.MakeTable(crc32.Castagnoli)) != meta.ORTCRC32C {
		t.Fatalf("%s.ort: %d bytes, the sidecar says %d bytes, CRC-32C %08x", base, len(data), meta.ORTSize, meta.ORTCRC32C)
	}
	if !ort.IsORTFormat(data) {
		t.Fatalf("%s.ort is not in ONNX Runtime's format", base)
	}
	abs, _ := filepath.Abs(model)
	if meta.Source != abs || meta.SourceSHA256 != fileSHA256(t, model) {
		t.Fatalf("entry made from %s (sha256 %s), want %s (%s)", meta.Source, meta.SourceSHA256, abs, fileSHA256(t, model))
	}
	return meta
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// requireDigest requires the voice to name its model by the file's sha256.
func requireDigest(t *testing.T, p *voice.Piper, model string) {
	t.Helper()
	fi, err := os.Stat(model)
	if err != nil {
		t.Fatal(err)
	}
	if info := p.Info(); info.Digest != fileSHA256(t, model) || info.SizeBytes != fi.Size() {
		t.Fatalf("voice digest %s, %d bytes; the model file's sha256 is %s, %d bytes", info.Digest, info.SizeBytes, fileSHA256(t, model), fi.Size())
	}
}

func requireNoWarnings(t *testing.T, log *logBuffer) {
	t.Helper()
	if w := log.warnings(); len(w) > 0 {
		t.Fatalf("warnings: %q", w)
	}
}

// requireWarning requires a warning that contains msg.
func requireWarning(t *testing.T, log *logBuffer, msg string) {
	t.Helper()
	w := log.warnings()
	if !slices.ContainsFunc(w, func(line string) bool { return strings.Contains(line, msg) }) {
		t.Fatalf("warnings %q, want one with %q", w, msg)
	}
}

// maxDifference is the largest difference between two equally long
// signals, failing the test when their lengths differ.
func maxDifference(t *testing.T, a, b []float64) float64 {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%d samples against %d", len(a), len(b))
	}
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(a[i]-b[i]))
	}
	return worst
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func remove(t *testing.T, path string) {
	t.Helper()
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
}
