package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
)

// isolateUserCache points the user's cache directory, where mynah say
// keeps its default cache file and the demo voice, at a temporary one.
func isolateUserCache(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

// demoVoice writes a demo voice of kind (piper, style or cloning) into a
// new directory called name, and returns its path.
func demoVoice(t *testing.T, kind, name string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	if _, stderr, err := mynah(t, "voice", "demo", "--kind", kind, "--out", dir); err != nil {
		t.Fatalf("voice demo --kind %s: %v\n%s", kind, err, stderr)
	}
	return dir
}

// say runs mynah say with args and returns its summary line and the WAV it
// wrote (args must not hold --out).
func say(t *testing.T, args ...string) (summary string, wav []byte) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "say.wav")
	_, stderr, err := mynah(t, append([]string{"say", "--out", out}, args...)...)
	if err != nil {
		t.Fatalf("say %q: %v\n%s", args, err, stderr)
	}
	for line := range strings.Lines(stderr) {
		if strings.Contains(line, "real-time factor") {
			summary = strings.TrimSpace(line)
		}
	}
	if summary == "" {
		t.Fatalf("say %q printed no summary line:\n%s", args, stderr)
	}
	wav, err = os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return summary, wav
}

// decodeWAV decodes what say wrote.
func decodeWAV(t *testing.T, data []byte) audio.PCM {
	t.Helper()
	pcm, err := audio.DecodeWAV(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pcm
}

// TestSayPhraseCache: the second mynah say of a text plays it from the
// cache file, reports it per sentence, and writes the very same audio.
func TestSayPhraseCache(t *testing.T) {
	isolateUserCache(t)
	dir := demoVoice(t, "piper", "mynah-demo")
	db := filepath.Join(t.TempDir(), "cache.db")
	const text = "The washing machine has finished. It is seven pm."

	first, wav1 := say(t, "--voice", dir, "--cache", db, text)
	second, wav2 := say(t, "--voice", dir, "--cache", db, text)
	t.Logf("first:  %s", first)
	t.Logf("second: %s", second)
	if !strings.HasSuffix(first, "cache: miss,miss") || !strings.HasSuffix(second, "cache: hit,hit") {
		t.Errorf("want miss,miss then hit,hit:\n%s\n%s", first, second)
	}
	if !bytes.Equal(wav1, wav2) {
		t.Errorf("the cached run wrote other audio (%d bytes, first %d)", len(wav2), len(wav1))
	}

	// Sentence by sentence: the first one is reused whatever the time.
	if s, _ := say(t, "--voice", dir, "--cache", db, "The washing machine has finished. It is eight pm."); !strings.HasSuffix(s, "cache: hit,miss") {
		t.Errorf("one sentence changed: %s", s)
	}
	// The settings are part of the key: another rate is another phrase.
	if s, _ := say(t, "--voice", dir, "--cache", db, "--rate", "1.5", text); !strings.HasSuffix(s, "cache: miss,miss") {
		t.Errorf("--rate 1.5: %s", s)
	}
	for _, off := range [][]string{{"--no-cache"}, {"--cache", ""}} {
		if s, _ := say(t, append(off, "--voice", dir, text)...); !strings.HasSuffix(s, "cache: off") {
			t.Errorf("%q: %s", off, s)
		}
	}
	// The default cache file is in the user's cache directory.
	say(t, "--voice", dir, "Hello.")
	if s, _ := say(t, "--voice", dir, "Hello."); !strings.HasSuffix(s, "cache: hit") {
		t.Errorf("default cache file: %s", s)
	}
	if _, err := os.Stat(filepath.Join(os.Getenv("XDG_CACHE_HOME"), "mynah", "cache.db")); err != nil {
		t.Errorf("default cache file: %v", err)
	}
}

// TestSayVoiceKinds: a style-vector bundle (with a speaker of its pack)
// and a cloning bundle speak through mynah say, as mynahd runs them.
func TestSayVoiceKinds(t *testing.T) {
	isolateUserCache(t)
	for _, c := range []struct {
		kind, name string
		args       []string
		rate       int
	}{
		{"style", "mynah-style", []string{"--speaker", "iris"}, 24000},
		{"cloning", "mynah-clone", nil, 22050},
	} {
		t.Run(c.kind, func(t *testing.T) {
			dir := demoVoice(t, c.kind, "kit")
			summary, wav := say(t, append(c.args, "--voice", dir, "--no-cache", "Good morning. The sun is out.")...)
			if !strings.Contains(summary, "2 sentence(s)") {
				t.Errorf("summary: %s", summary)
			}
			pcm := decodeWAV(t, wav)
			if pcm.Rate != c.rate || pcm.Duration().Seconds() < 1 {
				t.Errorf("wrote %d Hz, %v", pcm.Rate, pcm.Duration())
			}
		})
	}
	// The voice line names the voice the bundle declares.
	dir := demoVoice(t, "style", "kit")
	_, stderr, err := mynah(t, "say", "--voice", dir, "--no-cache", "--out", filepath.Join(t.TempDir(), "x.wav"), "Hi.")
	if err != nil || !strings.Contains(stderr, "voice mynah-style (24000 Hz, 3 speaker(s))") {
		t.Errorf("style voice line: %v\n%s", err, stderr)
	}
}

// TestSayClonedSpeaker: a speaker cloned into a cache file (through the
// engine, as mynahd's speaker/enroll does) speaks through mynah say
// --speaker with that file; while another process holds the file, mynah
// say speaks uncached and says why a cloned speaker is missing.
func TestSayClonedSpeaker(t *testing.T) {
	isolateUserCache(t)
	clone := demoVoice(t, "cloning", "clone")
	db := filepath.Join(t.TempDir(), "cache.db")

	// A reference recording: the demo voice's low speaker.
	_, ref := say(t, "--voice", demoVoice(t, "piper", "mynah-demo"), "--speaker", "heron", "--no-cache",
		"Good evening. The front door is open, and the lights in the kitchen are on.")
	store, err := cache.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, err := engine.Open(&engine.Options{Runtime: enginetest.OpenRuntime(t), Dir: filepath.Dir(clone), Default: "clone", Store: store})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.Enroll(context.Background(), engine.Enrollment{Name: "anna", Audio: decodeWAV(t, ref)}); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}

	const text = "Dinner is ready."
	first, anna := say(t, "--voice", clone, "--cache", db, "--speaker", "anna", text)
	again, anna2 := say(t, "--voice", clone, "--cache", db, "--speaker", "anna", text)
	_, plain := say(t, "--voice", clone, "--cache", db, text)
	if !strings.HasSuffix(first, "cache: miss") || !strings.HasSuffix(again, "cache: hit") {
		t.Errorf("want miss then hit:\n%s\n%s", first, again)
	}
	if !bytes.Equal(anna, anna2) {
		t.Error("the cached run of the cloned speaker wrote other audio")
	}
	if bytes.Equal(anna, plain) {
		t.Error("--speaker anna spoke in the voice's own speaker")
	}

	out := filepath.Join(t.TempDir(), "x.wav")
	for _, c := range []struct {
		args []string
		hint string
	}{
		{[]string{"--cache", db, "--speaker", "ben"}, `no speaker "ben" is cloned in ` + db},
		{[]string{"--no-cache", "--speaker", "anna"}, "the cache is off here: give --cache FILE"},
	} {
		_, _, err := mynah(t, append([]string{"say", "--voice", clone, "--out", out}, append(c.args, text)...)...)
		if !errors.Is(err, voice.ErrUnknownSpeaker) || !strings.Contains(err.Error(), c.hint) || exitCode(err) != 1 {
			t.Errorf("%q: %v", c.args, err)
		}
		if _, err := os.Stat(out); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%q: a failed say left %s behind (%v)", c.args, out, err)
		}
	}

	// Another process (here: this one, through another open file) holds
	// the lock, as a running mynahd does.
	held, err := cache.Open(db, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	_, stderr, err := mynah(t, "say", "--voice", clone, "--cache", db, "--out", out, text)
	if err != nil || !strings.Contains(stderr, "is in use by another process, most likely a running mynahd; speaking uncached") ||
		!strings.Contains(stderr, "cache: off") {
		t.Errorf("locked cache file: %v\n%s", err, stderr)
	}
	_, _, err = mynah(t, "say", "--voice", clone, "--cache", db, "--out", out, "--speaker", "anna", text)
	if !errors.Is(err, voice.ErrUnknownSpeaker) || !strings.Contains(err.Error(), "is locked by another process: a running mynahd?") {
		t.Errorf("cloned speaker, locked cache file: %v", err)
	}
}

// TestSayRefusesWhatMynahdRefuses: mynah say has mynahd's limits and
// errors, each with what to do.
func TestSayRefusesWhatMynahdRefuses(t *testing.T) {
	isolateUserCache(t)
	dir := demoVoice(t, "piper", "mynah-demo")
	out := filepath.Join(t.TempDir(), "x.wav")
	for _, c := range []struct {
		text, want string
		is         error
		code       int
	}{
		{`<speak><break time="1s"/></speak>`, "once markup is removed (give it words to speak)", engine.ErrNothingToSay, 1},
		{strings.Repeat("a", 5001), "5001 characters, over mynahd's limit of 5000", errUsage, 2},
		{"a\x00b", "NUL", errUsage, 2},
	} {
		_, _, err := mynah(t, "say", "--voice", dir, "--out", out, c.text)
		if !errors.Is(err, c.is) || !strings.Contains(fmt.Sprint(err), c.want) || exitCode(err) != c.code {
			t.Errorf("%.40q: %v (exit %d)", c.text, err, exitCode(err))
		}
	}
	if _, _, err := mynah(t, "say", "--voice", dir, "--out", out, strings.Repeat("a", 5000)); err != nil {
		t.Errorf("5000 characters: %v", err)
	}

	// --voice PATH: what is wrong with it, in its own terms.
	notVoice := t.TempDir()
	twin := filepath.Join(t.TempDir(), "twin")
	if _, _, err := mynah(t, "voice", "demo", "--out", twin); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"twin.onnx", "twin.onnx.json"} {
		data, err := os.ReadFile(filepath.Join(twin, "mynah-demo."+strings.TrimPrefix(name, "twin.")))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(filepath.Dir(twin), name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ voice, want string }{
		{filepath.Join(dir, "missing"), "voice not found"},
		{notVoice, "no NAME.onnx with NAME.onnx.json in " + notVoice},
		{filepath.Join(dir, "mynah-demo.onnx.json"), "neither a directory nor a NAME.onnx file"},
		{twin, "twin.onnx beside it has the same name"},
	} {
		_, _, err := mynah(t, "say", "--voice", c.voice, "--out", out, "hi")
		if err == nil || !strings.Contains(err.Error(), c.want) || exitCode(err) != 1 {
			t.Errorf("--voice %s: %v", c.voice, err)
		}
	}
	// A NAME.onnx file is a voice too, named NAME.
	if _, stderr, err := mynah(t, "say", "--voice", filepath.Join(filepath.Dir(twin), "twin.onnx"), "--out", out, "hi"); err != nil {
		t.Errorf("--voice twin.onnx: %v\n%s", err, stderr)
	}
}

// asMynah runs mynah with args in a process of its own (the test binary as
// mynah, asMynahEnv) with the environment env added to the test's, less
// the C allocator's variables: the tuning package memory makes as the
// binary loads reads them before main.
func asMynah(t *testing.T, env []string, args ...string) (stderr string, err error) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, args...)
	for _, kv := range os.Environ() {
		switch name, _, _ := strings.Cut(kv, "="); name {
		case "MALLOC_ARENA_MAX", "MALLOC_MMAP_THRESHOLD_", "GLIBC_TUNABLES", "MYNAH_MALLOC_TUNE":
		default:
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(append(cmd.Env, asMynahEnv+"=1"), env...)
	var e bytes.Buffer
	cmd.Stderr = &e
	err = cmd.Run()
	return e.String(), err
}

// TestSayTunesTheCAllocator: mynah say runs with mynahd's C allocator
// settings (package memory: at most 2 arenas, a fixed 256 KiB mmap
// threshold) and says so with -v; the C allocator's own variables win over
// them, and MYNAH_MALLOC_TUNE=0 leaves glibc's defaults.
func TestSayTunesTheCAllocator(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the C allocator is tuned on Linux (glibc) only")
	}
	dir := demoVoice(t, "piper", "mynah-demo")
	cases := []struct {
		env  []string
		want string
	}{
		{nil, fmt.Sprintf("tuned=true arena_max=%d mmap_threshold=%d", memory.ArenaMax, memory.MMapThreshold)},
		{[]string{"MALLOC_ARENA_MAX=4"}, fmt.Sprintf("tuned=true arena_max=0 mmap_threshold=%d", memory.MMapThreshold)},
		{[]string{"MALLOC_MMAP_THRESHOLD_=1048576"}, fmt.Sprintf("tuned=true arena_max=%d mmap_threshold=0", memory.ArenaMax)},
		{[]string{"MYNAH_MALLOC_TUNE=0"}, "tuned=false arena_max=0 mmap_threshold=0"},
	}
	for _, c := range cases {
		out := filepath.Join(t.TempDir(), "say.wav")
		stderr, err := asMynah(t, append([]string{"XDG_CACHE_HOME=" + t.TempDir()}, c.env...),
			"say", "-v", "--no-cache", "--threads", "1", "--voice", dir, "--out", out, "The door is open.")
		if err != nil {
			t.Fatalf("%q say: %v\n%s", c.env, err, stderr)
		}
		want := `msg="c allocator" ` + c.want
		if !strings.Contains(stderr, want) {
			t.Errorf("%q: mynah say -v does not log %s:\n%s", c.env, want, stderr)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("%q: %v", c.env, err)
		}
	}
}
