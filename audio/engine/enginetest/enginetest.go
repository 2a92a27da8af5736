// Package enginetest has what tests of the speech engine and of its front
// ends share: copies of the demo voice under several names, the real ONNX
// Runtime, and a log recorder to see what was loaded, unloaded and spoken,
// in order.
package enginetest

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Wait bounds every wait of these helpers; exceeding it fails the test
// (a hang detector, not a speed requirement).
const Wait = 30 * time.Second

// WriteVoices puts a copy of the demo voice into dir under each name.
func WriteVoices(tb testing.TB, dir string, names ...string) {
	tb.Helper()
	for _, name := range names {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		if _, err := demo.Write(d, nil); err != nil {
			tb.Fatal(err)
		}
	}
}

// WriteKits puts the demo cloning kit (demo.CloneName) and, with style,
// the style-vector kit (demo.StyleName) into dir, each under its name,
// and returns the cloning kit's directory.
func WriteKits(tb testing.TB, dir string, style bool) string {
	tb.Helper()
	kits := map[string]func(string) error{demo.CloneName: func(d string) error { return demo.WriteCloning(d, nil) }}
	if style {
		kits[demo.StyleName] = func(d string) error { return demo.WriteStyle(d, nil) }
	}
	for name, write := range kits {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			tb.Fatal(err)
		}
		if err := write(d); err != nil {
			tb.Fatal(err)
		}
	}
	return filepath.Join(dir, demo.CloneName)
}

// OpenRuntime opens ONNX Runtime (MYNAH_ORT_LIB or the project's copy)
// until the test ends.
func OpenRuntime(tb testing.TB) *ort.Runtime {
	tb.Helper()
	rt, err := ort.Open(nil)
	if err != nil {
		tb.Fatalf("onnx runtime (run scripts/setup.sh): %v", err)
	}
	tb.Cleanup(func() { rt.Close() })
	return rt
}

// Record is one log line: its message and attributes as text.
type Record struct {
	Msg   string
	Attrs map[string]string
}

// Recorder is a slog.Handler that keeps every record.
type Recorder struct {
	mu      *sync.Mutex
	records *[]Record
	attrs   []slog.Attr
}

// NewRecorder returns an empty Recorder.
func NewRecorder() *Recorder {
	return &Recorder{mu: new(sync.Mutex), records: new([]Record)}
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	lr := Record{Msg: rec.Message, Attrs: map[string]string{}}
	for _, a := range r.attrs {
		lr.Attrs[a.Key] = a.Value.String()
	}
	rec.Attrs(func(a slog.Attr) bool {
		lr.Attrs[a.Key] = a.Value.String()
		return true
	})
	r.mu.Lock()
	*r.records = append(*r.records, lr)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) WithAttrs(as []slog.Attr) slog.Handler {
	c := *r
	c.attrs = append(slices.Clone(r.attrs), as...)
	return &c
}

func (r *Recorder) WithGroup(string) slog.Handler { return r }

// All returns the records so far.
func (r *Recorder) All() []Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(*r.records)
}

// VoicesWith returns the "voice" attribute of every record with message
// msg, in order.
func (r *Recorder) VoicesWith(msg string) []string {
	var out []string
	for _, lr := range r.All() {
		if lr.Msg == msg {
			out = append(out, lr.Attrs["voice"])
		}
	}
	return out
}

// Index returns the position of the first record with message msg (and
// voice, if not empty), or -1.
func (r *Recorder) Index(msg, voiceName string) int {
	return slices.IndexFunc(r.All(), func(lr Record) bool {
		return lr.Msg == msg && (voiceName == "" || lr.Attrs["voice"] == voiceName)
	})
}

// WaitFor returns the index of the first record with message msg (and
// voice, if not empty), failing the test if none comes within Wait.
func (r *Recorder) WaitFor(tb testing.TB, msg, voiceName string) int {
	tb.Helper()
	deadline := time.Now().Add(Wait)
	for {
		if i := r.Index(msg, voiceName); i >= 0 {
			return i
		}
		if time.Now().After(deadline) {
			tb.Fatalf("no %q log line for voice %q within %v", msg, voiceName, Wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
