package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// mandarinVoice is the demo voice set up as a Mandarin voice (espeak
// voice cmn): it reads everything with the pinyin front end.
func mandarinVoice(t *testing.T) string {
	t.Helper()
	dir := demoVoice(t, "piper", "mandarin")
	path := filepath.Join(dir, demo.Name+".onnx.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	cfg["espeak"] = map[string]string{"voice": "cmn"}
	if data, err = json.Marshal(cfg); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func TestTextShowsTheReading(t *testing.T) {
	isolateUserCache(t)
	dir := demoVoice(t, "piper", "demo")
	const in = "It is 8:05 PM. The temperature is 21.5 °C and the battery is at 15 %."
	want, err := text.Normalize(in, &text.NormalizeOptions{Language: "en-us", Mandarin: true})
	if err != nil {
		t.Fatal(err)
	}
	stdout, stderr, err := mynah(t, "text", "--voice", dir, in)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	first, _, _ := strings.Cut(stdout, "\n")
	if first != strings.ReplaceAll(want, "\n", " ") || strings.ContainsFunc(first, unicode.IsDigit) {
		t.Errorf("first line %q, want the reading %q, in words", first, want)
	}
	// Two sentences, the second perhaps cut in two model runs (the demo
	// voice's runs are short).
	if n := strings.Count(stdout, "\nsentence "); n < 2 || n > 3 {
		t.Errorf("%d sentences shown, want 2 or 3:\n%s", n, stdout)
	}
	for _, part := range []string{"  phonemes: ", "  ids:      1 0 "} {
		if !strings.Contains(stdout, part) {
			t.Errorf("no %q in\n%s", part, stdout)
		}
	}
	if strings.Contains(stdout, "unknown:") {
		t.Errorf("the demo voice skipped phonemes:\n%s", stdout)
	}

	// --json: one object per sentence; --no-normalize keeps the digits.
	stdout, stderr, err = mynah(t, "text", "--voice", dir, "--json", "--no-normalize", "--", in)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if len(lines) < 2 || len(lines) > 3 {
		t.Fatalf("--json printed %d lines, want 2 or 3:\n%s", len(lines), stdout)
	}
	var raw string
	for i, line := range lines {
		var r struct {
			Sentence   int      `json:"sentence"`
			Normalized string   `json:"normalized"`
			Phonemes   []string `json:"phonemes"`
			IDs        []int64  `json:"ids"`
			Unknown    []string `json:"unknown"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %d %q: %v", i+1, line, err)
		}
		if r.Sentence != i+1 || len(r.Phonemes) == 0 || len(r.IDs) < len(r.Phonemes) || r.Unknown == nil {
			t.Errorf("line %d: %+v", i+1, r)
		}
		raw += r.Normalized
	}
	if !strings.Contains(raw, "8:05 PM") || !strings.Contains(raw, "21.5 °C") {
		t.Errorf("--no-normalize: %q is not the text as written", raw)
	}
}

func TestTextReadsMandarin(t *testing.T) {
	isolateUserCache(t)
	dir := mandarinVoice(t)
	stdout, stderr, err := mynah(t, "text", "--voice", dir, "--json", "温度是-3.5°C，电量15 %，上午8点05分")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	// One sentence, which the demo voice may say in more than one run
	// (cut at a comma).
	var said string
	for line := range strings.Lines(stdout) {
		var r struct {
			Normalized string   `json:"normalized"`
			Unknown    []string `json:"unknown"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		if len(r.Unknown) > 0 {
			t.Errorf("unknown phonemes %q", r.Unknown)
		}
		said += r.Normalized
	}
	if want := "温度是零下三点五摄氏度，电量百分之十五，上午八点零五分"; said != want {
		t.Errorf("read %q, want %q", said, want)
	}
}

// TestSayReadsAsTextShows: mynah say speaks the reading mynah text shows
// (the template and its reading are one phrase cache entry), and
// --no-normalize the text as written (an entry of its own).
func TestSayReadsAsTextShows(t *testing.T) {
	isolateUserCache(t)
	dir := demoVoice(t, "piper", "demo")
	const in = "The alarm is set for 07:30."
	reading, err := text.Normalize(in, &text.NormalizeOptions{Language: "en-us", Mandarin: true})
	if err != nil {
		t.Fatal(err)
	}
	cache := filepath.Join(t.TempDir(), "cache.db")
	for _, c := range []struct {
		args  []string
		cache string
	}{
		{[]string{in}, "cache: miss"},
		{[]string{reading}, "cache: hit"},
		{[]string{"--no-normalize", in}, "cache: miss"},
		{[]string{"--no-normalize", in}, "cache: hit"},
	} {
		summary, _ := say(t, append([]string{"--voice", dir, "--cache", cache}, c.args...)...)
		if !strings.HasSuffix(summary, c.cache) {
			t.Errorf("say %q: %s, want %s", c.args, summary, c.cache)
		}
	}
	if _, _, err := mynah(t, "say", "--emoji", "read", "hi"); err == nil || !strings.Contains(err.Error(), "--emoji") {
		t.Errorf("--emoji read: %v", err)
	}
}
