package engine

import (
	"context"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// backgroundEngine opens an engine over dir with Options.OptimizeInBackground
// and the optimized-model cache optimized. Each background build waits at
// its start for a value on the returned gate (closed at cleanup) and
// reports its voice and error on the returned channel.
func backgroundEngine(t *testing.T, dir, def, optimized string) (*Engine, chan<- struct{}, <-chan optimizeResult) {
	t.Helper()
	log := slog.New(slog.DiscardHandler)
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: def, Sessions: testSessions(),
		Piper:                &voice.PiperOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU}, OptimizedDir: optimized, Logger: log},
		Logger:               log,
		OptimizeInBackground: true})
	if err != nil {
		t.Fatal(err)
	}
	gate := make(chan struct{})
	done := make(chan optimizeResult, 16)
	vs.optimizing = func(string) { <-gate }
	vs.optimized = func(name string, err error) { done <- optimizeResult{name, err} }
	t.Cleanup(func() {
		close(gate)
		vs.Close()
	})
	return vs, gate, done
}

type optimizeResult struct {
	name string
	err  error
}

// loadedInfo is the loaded voice name's Info; false when it is not loaded.
func loadedInfo(vs *Engine, name string) (voice.Info, bool) {
	var info voice.Info
	found := false
	vs.sessions.Each(func(key string, v *loadedVoice) {
		if key == name {
			info, found = v.info, true
		}
	})
	return info, found
}

// speakStill says text in voiceName without noise and returns its samples.
func speakStill(t *testing.T, vs *Engine, voiceName, text string, each func(Chunk)) []float64 {
	t.Helper()
	zero := float32(0)
	var out []float64
	err := vs.Speak(context.Background(), Request{Voice: voiceName, Text: text, NoiseScale: &zero, NoiseW: &zero}, func(c Chunk) error {
		for _, s := range c.PCM.Samples {
			out = append(out, float64(s)/32768)
		}
		if each != nil {
			each(c)
		}
		return nil
	})
	if err != nil || len(out) == 0 {
		t.Fatalf("speak in %s: %d samples, err %v", voiceName, len(out), err)
	}
	return out
}

// alike fails the test unless a and b differ by no more than the lift's
// rounding (voice.TestLiftedConvolutionsSpeakAlike).
func alike(t *testing.T, what string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) {
		t.Fatalf("%s: %d samples, then %d", what, len(a), len(b))
	}
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(a[i]-b[i]))
	}
	if worst > 2e-3 {
		t.Errorf("%s: samples differ by up to %.3g", what, worst)
	}
}

func cacheFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// The first load with an empty optimized-model cache does not wait for
// the copy: the voice speaks from its file at once, the copy is built in
// the background, and the voice is switched to it between requests: a
// request that started before the switch ends on the session it started
// with, the next one speaks from the copy, alike.
func TestOptimizeInBackground(t *testing.T) {
	dir, optimized := t.TempDir(), filepath.Join(t.TempDir(), "optimized")
	enginetest.WriteVoices(t, dir, "alto")
	vs, gate, done := backgroundEngine(t, dir, "alto", optimized)

	info, err := vs.Preload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if info.Optimized {
		t.Fatal("the first load waited for the optimized copy")
	}
	if files := cacheFiles(t, optimized); len(files) != 0 {
		t.Fatalf("an entry before the build was let start: %v", files)
	}
	const text = "The washing machine has finished. Dinner is ready."
	before := speakStill(t, vs, "alto", text, nil)

	// A request in progress while the copy is built and switched to.
	var during []float64
	first := make(chan struct{})
	resume := make(chan struct{})
	spoke := make(chan struct{})
	go func() {
		defer close(spoke)
		n := 0
		during = speakStill(t, vs, "alto", text, func(Chunk) {
			if n++; n == 1 {
				close(first)
				<-resume
			}
		})
	}()
	<-first
	gate <- struct{}{}
	if r := <-done; r.name != "alto" || r.err != nil {
		t.Fatalf("background build: %+v", r)
	}
	if files := cacheFiles(t, optimized); len(files) != 1 {
		t.Fatalf("entries after the build: %v", files)
	}
	if got := vs.sessions.Stats().Replacements; got != 1 {
		t.Fatalf("%d switches", got)
	}
	close(resume)
	<-spoke
	// The same session throughout: the same samples as before.
	if len(during) != len(before) {
		t.Fatalf("the request across the switch: %d samples, before %d", len(during), len(before))
	}
	for i := range before {
		if during[i] != before[i] {
			t.Fatalf("the request across the switch changed session: sample %d is %v, was %v", i, during[i], before[i])
		}
	}

	info, ok := loadedInfo(vs, "alto")
	if !ok || !info.Optimized {
		t.Fatalf("after the switch: loaded %v, optimized %v", ok, info.Optimized)
	}
	alike(t, "before and after the switch", before, speakStill(t, vs, "alto", text, nil))
	if st := vs.sessions.Stats(); st.Loads != 1 || st.Sessions != 1 {
		t.Errorf("the switch went through the cache's loads: %+v", st)
	}
}

// An optimized-model directory that is not one never blocks or fails
// speech: the build fails, the voice goes on as loaded.
func TestOptimizeInBackgroundUnwritable(t *testing.T) {
	dir, file := t.TempDir(), filepath.Join(t.TempDir(), "optimized")
	if err := os.WriteFile(file, []byte("a file"), 0o644); err != nil {
		t.Fatal(err)
	}
	enginetest.WriteVoices(t, dir, "alto")
	vs, gate, done := backgroundEngine(t, dir, "alto", file)
	before := speakStill(t, vs, "alto", "Dinner is ready.", nil)
	gate <- struct{}{}
	if r := <-done; r.err == nil {
		t.Fatal("a build into a file: no error")
	}
	if info, _ := loadedInfo(vs, "alto"); info.Optimized || vs.sessions.Stats().Replacements != 0 {
		t.Fatalf("switched to a copy that cannot exist: %+v", info)
	}
	alike(t, "after the failed build", before, speakStill(t, vs, "alto", "Dinner is ready.", nil))
}

// A voice copied into the directory while the engine runs is optimized
// in the background before anyone asks for it, so its first load takes
// the copy.
func TestOptimizeVoiceCopiedIn(t *testing.T) {
	dir, optimized := t.TempDir(), filepath.Join(t.TempDir(), "optimized")
	enginetest.WriteVoices(t, dir, "alto")
	vs, gate, done := backgroundEngine(t, dir, "alto", optimized)

	enginetest.WriteVoices(t, dir, "tenor")
	if _, err := vs.ReloadVoices(); err != nil {
		t.Fatal(err)
	}
	gate <- struct{}{}
	if r := <-done; r.name != "tenor" || r.err != nil {
		t.Fatalf("background build: %+v", r)
	}
	if _, loaded := loadedInfo(vs, "tenor"); loaded {
		t.Fatal("tenor loaded by its build")
	}
	if files := cacheFiles(t, optimized); len(files) != 1 {
		t.Fatalf("entries after tenor's build: %v", files)
	}
	speakStill(t, vs, "tenor", "Dinner is ready.", nil)
	if info, _ := loadedInfo(vs, "tenor"); !info.Optimized {
		t.Error("tenor's first load did not take its optimized copy")
	}
}
