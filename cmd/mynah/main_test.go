package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/audiotest"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// mynah runs the CLI in-process and returns its output.
func mynah(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	err = run(context.Background(), args, &o, &e)
	return o.String(), e.String(), err
}

func TestParseInterspersed(t *testing.T) {
	cases := []struct {
		args []string
		pos  string
		rate float64
	}{
		{[]string{"hello", "--rate", "2", "world"}, "hello world", 2},
		{[]string{"--rate=3", "hi"}, "hi", 3},
		{[]string{"a", "--", "--rate", "5"}, "a --rate 5", 1},
		{nil, "", 1},
	}
	for _, c := range cases {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		rate := fs.Float64("rate", 1, "")
		pos, err := parseInterspersed(fs, c.args)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Join(pos, " ") != c.pos || *rate != c.rate {
			t.Errorf("%q: positional %q rate %v", c.args, pos, *rate)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		nil,
		{"sing"},
		{"voice"},
		{"voice", "demo"},
		{"voice", "demo", "--kind", "bogus", "--out", "x"},
		{"say", "--rate"},
		{"say", "--provider", "quantum", "hi"},
		{"devices", "extra"},
	} {
		_, _, err := mynah(t, args...)
		if exitCode(err) != 2 {
			t.Errorf("%q: error %v, want a usage error (exit 2)", args, err)
		}
	}
	if _, stderr, err := mynah(t, "--help"); err != nil || !strings.Contains(stderr, "mynah say") {
		t.Errorf("--help: %v %q", err, stderr)
	}
	if _, stderr, err := mynah(t, "say", "-h"); !errors.Is(err, flag.ErrHelp) || !strings.Contains(stderr, "--voice") {
		t.Errorf("say -h: %v %q", err, stderr)
	}
}

func TestVoiceDemoIsReproducible(t *testing.T) {
	a, b := t.TempDir(), filepath.Join(t.TempDir(), "nested", "dir")
	for _, dir := range []string{a, b} {
		if _, stderr, err := mynah(t, "voice", "demo", "--out", dir); err != nil {
			t.Fatalf("voice demo: %v\n%s", err, stderr)
		}
	}
	for _, name := range []string{"mynah-demo.onnx", "mynah-demo.onnx.json"} {
		x, err := os.ReadFile(filepath.Join(a, name))
		if err != nil {
			t.Fatal(err)
		}
		y, err := os.ReadFile(filepath.Join(b, name))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds", name)
		}
	}
	out, _, err := mynah(t, "voice", "info", a)
	if err != nil || !strings.Contains(out, "22050 Hz") || !strings.Contains(out, "speakers     3") {
		t.Fatalf("voice info: %v\n%s", err, out)
	}
}

func TestVoiceDemoKits(t *testing.T) {
	for kind, engine := range map[string]string{"cloning": "pipeline", "style": "style_vector"} {
		dir := t.TempDir()
		out, stderr, err := mynah(t, "voice", "demo", "--kind", kind, "--out", dir)
		if err != nil || !strings.Contains(out, engine+" bundle") {
			t.Fatalf("voice demo --kind %s: %v\n%s%s", kind, err, out, stderr)
		}
		if _, err := bundle.Load(dir); err != nil {
			t.Errorf("%s kit does not load: %v", kind, err)
		}
	}
}

func TestSayToWAV(t *testing.T) {
	isolateUserCache(t)
	dir := t.TempDir()
	if _, _, err := mynah(t, "voice", "demo", "--out", dir); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "hello.wav")
	_, stderr, err := mynah(t, "say", "--voice", dir, "--speaker", "robin", "--out", out, "Hello there. How are you?")
	if err != nil {
		t.Fatalf("say: %v\n%s", err, stderr)
	}
	for _, want := range []string{"voice mynah-demo", "provider cpu", "2 sentence(s)", "real-time factor"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := audio.DecodeWAV(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	if pcm.Rate != 22050 || pcm.Channels != 1 || pcm.Duration().Seconds() < 1 {
		t.Fatalf("wrote %d Hz × %d, %v", pcm.Rate, pcm.Channels, pcm.Duration())
	}

	for _, bad := range [][]string{
		{"say", "--voice", dir, "--out", out, "--speaker", "nobody", "hi"},
		{"say", "--voice", dir, "--out", out, "--rate", "NaN", "hi"},
		{"say", "--voice", filepath.Join(dir, "missing"), "--out", out, "hi"},
		{"say", "--voice", dir, "--out", out, "--ort-lib", "/nonexistent/libonnxruntime.so", "hi"},
	} {
		if _, _, err := mynah(t, bad...); err == nil || exitCode(err) != 1 {
			t.Errorf("%q: error %v", bad, err)
		}
	}
}

// alsaCapture holds what PortAudio played: the default ALSA device records
// into it (see package audiotest).
var alsaCapture string

// asMynahEnv set to 1 makes the test binary run as mynah itself (main):
// a test that needs mynah in a process of its own (asMynah) starts it so.
const asMynahEnv = "MYNAH_TEST_AS_MYNAH"

func TestMain(m *testing.M) {
	if os.Getenv(asMynahEnv) == "1" {
		main()
		os.Exit(0)
	}
	audiotest.Main(m, &alsaCapture)
}

// TestSayThroughPortAudio: what "mynah say" played through PortAudio is,
// byte for byte, what it writes to a WAV file for the same request.
func TestSayThroughPortAudio(t *testing.T) {
	isolateUserCache(t)
	dir := t.TempDir()
	if _, _, err := mynah(t, "voice", "demo", "--out", dir); err != nil {
		t.Fatal(err)
	}
	args := []string{"say", "--voice", dir, "--speaker", "wren", "--noise-scale", "0", "--noise-w", "0", "Good evening. The door is open."}
	_, stderr, err := mynah(t, args...)
	if err != nil {
		t.Fatalf("say: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "output default audio device") {
		t.Fatalf("did not play through the audio device:\n%s", stderr)
	}
	played, err := os.ReadFile(alsaCapture)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "same.wav")
	if _, stderr, err := mynah(t, append([]string{"say", "--out", out}, args[1:]...)...); err != nil {
		t.Fatalf("say --out: %v\n%s", err, stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := audio.DecodeWAV(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := data[len(data)-2*len(pcm.Samples):] // the data chunk: int16 LE
	if len(played) == 0 || !bytes.Equal(played, want) {
		t.Fatalf("PortAudio played %d bytes, the WAV holds %d; they must be equal", len(played), len(want))
	}
}
