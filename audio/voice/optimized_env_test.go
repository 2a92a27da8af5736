package voice_test

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The optimized-model cache where it cannot be written, is not wanted, or
// is shared: the voice always loads (helpers in optimized_test.go).

// TestOptimizedUnwritable: a cache that cannot be written costs the
// optimized model, never the voice.
func TestOptimizedUnwritable(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	want, _ := speak(t, loadVoice(t, rt, dir, cacheOptions("", nil)), still(cacheSentence))

	loadsWithout := func(t *testing.T, cacheDir, warning string) {
		t.Helper()
		log, logs := newLogBuffer()
		p := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
		requireWarning(t, logs, warning)
		// And nothing else: nothing was there to find unusable.
		for _, w := range logs.warnings() {
			if !strings.Contains(w, warning) {
				t.Errorf("warning %q", w)
			}
		}
		t.Logf("warnings: %q", logs.warnings())
		requireDigest(t, p, model)
		got, _ := speak(t, p, still(cacheSentence))
		if d := maxDifference(t, want, got); d != 0 {
			t.Errorf("speaks differently: up to %.3g", d)
		}
	}

	t.Run("dir under a regular file", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "file")
		writeFile(t, file, []byte("not a directory"))
		loadsWithout(t, filepath.Join(file, "optimized"), "optimized model not kept")
		if got := readFile(t, file); string(got) != "not a directory" {
			t.Fatalf("the file became %q", got)
		}
	})

	t.Run("read-only dir", func(t *testing.T) {
		cacheDir := t.TempDir()
		if err := os.Chmod(cacheDir, 0o555); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(cacheDir, 0o755) })
		if f, err := os.CreateTemp(cacheDir, "probe"); err == nil {
			f.Close()
			os.Remove(f.Name())
			t.Skip("a directory of mode 0555 is writable here (running as root or with CAP_DAC_OVERRIDE); " +
				"the unwritable case is covered by \"dir under a regular file\"")
		}
		loadsWithout(t, cacheDir, "optimized model not kept")
		if got := names(dirState(t, cacheDir)); len(got) != 0 {
			t.Fatalf("read-only cache holds %q", got)
		}
	})

	t.Run("ONNX Runtime cannot write the model", func(t *testing.T) {
		// The temp file becomes a directory before ONNX Runtime opens it,
		// as a full disk or a cleaned-up directory fails its write.
		cacheDir := t.TempDir()
		voice.SetOptimizedTempHook(t, func(path string) {
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
			if err := os.Mkdir(path, 0o755); err != nil {
				t.Error(err)
			}
		})
		loadsWithout(t, cacheDir, "optimized model not kept")
		if got := names(dirState(t, cacheDir)); len(got) != 0 {
			t.Fatalf("cache holds %q", got)
		}
	})

	t.Run("disk full", func(t *testing.T) {
		// ONNX Runtime's own write fails, once it has built the session.
		if _, err := os.Stat("/dev/full"); err != nil {
			t.Skip("no /dev/full here: \"ONNX Runtime cannot write the model\" covers the failed save")
		}
		cacheDir := t.TempDir()
		voice.SetOptimizedTempHook(t, func(path string) {
			if err := os.Remove(path); err != nil {
				t.Error(err)
			}
			if err := os.Symlink("/dev/full", path); err != nil {
				t.Error(err)
			}
		})
		loadsWithout(t, cacheDir, "optimized model not kept")
		if got := names(dirState(t, cacheDir)); len(got) != 0 {
			t.Fatalf("cache holds %q", got)
		}
	})

	t.Run("dir removed while loading", func(t *testing.T) {
		cacheDir := filepath.Join(t.TempDir(), "optimized")
		voice.SetOptimizedTempHook(t, func(string) {
			if err := os.RemoveAll(cacheDir); err != nil {
				t.Error(err)
			}
		})
		loadsWithout(t, cacheDir, "optimized model not kept")
		if _, err := os.Stat(cacheDir); !os.IsNotExist(err) {
			t.Fatalf("cache dir: %v, want it gone", err)
		}
	})

	t.Run("no dir", func(t *testing.T) {
		// Nothing is written anywhere: not beside the voice, not in the
		// temp dir, not in the working directory.
		tmp := t.TempDir()
		t.Setenv("TMPDIR", tmp)
		voiceBefore := dirState(t, dir)
		wd, err := os.Getwd()
		if err != nil {
			t.Fatal(err)
		}
		wdBefore := dirState(t, wd)
		var temps int
		voice.SetOptimizedTempHook(t, func(string) { temps++ })
		log, logs := newLogBuffer()
		p := loadVoice(t, rt, dir, cacheOptions("", log))
		requireDigest(t, p, model)
		requireNoWarnings(t, logs)
		if temps != 0 {
			t.Fatalf("%d optimized-model temp files made", temps)
		}
		if got := names(dirState(t, tmp)); len(got) != 0 {
			t.Fatalf("TMPDIR holds %q", got)
		}
		if after := dirState(t, dir); !sameFiles(voiceBefore, after) {
			t.Fatalf("the voice's directory changed: %q", names(after))
		}
		if after := dirState(t, wd); !sameFiles(wdBefore, after) {
			t.Fatalf("the working directory changed: %q", names(after))
		}
	})
}

// TestOptimizedGPUProviderNotCached: a GPU provider's graph is not kept;
// whether ONNX Runtime has the provider or not, nothing is written.
func TestOptimizedGPUProviderNotCached(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, _ := cachedVoice(t)
	for _, p := range []ort.Provider{ort.ProviderCUDA, "CUDA", ort.ProviderTensorRT} {
		cacheDir := filepath.Join(t.TempDir(), "optimized")
		o := cacheOptions(cacheDir, nil)
		o.Session.Provider = p
		if v, err := voice.LoadPiper(rt, dir, o); err == nil {
			v.Close()
		}
		if got := names(dirState(t, cacheDir)); len(got) != 0 {
			t.Errorf("provider %s: cache holds %q", p, got)
		}
		if _, err := os.Stat(cacheDir); err == nil {
			t.Errorf("provider %s: the cache directory was made", p)
		}
	}
}

// TestOptimizedAuto: with auto, the daemon's default, a load that ends up
// on the CPU keeps its entry; one that found a GPU keeps none and says
// nothing.
func TestOptimizedAuto(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := t.TempDir()
	log, logs := newLogBuffer()
	o := cacheOptions(cacheDir, log)
	o.Session.Provider = ort.ProviderAuto
	p := loadVoice(t, rt, dir, o)
	requireDigest(t, p, model)
	requireNoWarnings(t, logs)
	if got := p.Info().Provider; got != string(ort.ProviderCPU) {
		if n := names(dirState(t, cacheDir)); len(n) != 0 {
			t.Fatalf("auto chose %s; cache holds %q", got, n)
		}
		return
	}
	checkEntry(t, onlyEntry(t, cacheDir), model)
	before := dirState(t, cacheDir)
	loadVoice(t, rt, dir, o)
	if after := dirState(t, cacheDir); !sameFiles(before, after) {
		t.Fatalf("second load changed the cache: %v, then %v", before, after)
	}
	requireNoWarnings(t, logs)
}

// TestOptimizedConcurrentLoads: loads of one voice at once, into an empty
// cache, all work, none warns, and they leave one whole entry and no temp
// files. ONNX Runtime's files of one model differ from build to build, so
// without the directory lock one store's model ends beside another's
// sidecar (1 run in 30 of -count 30 failed before the lock).
func TestOptimizedConcurrentLoads(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := t.TempDir()
	log, logs := newLogBuffer()
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() {
			p, err := voice.LoadPiper(rt, dir, cacheOptions(cacheDir, log))
			if err == nil {
				p.Close()
			}
			errs[i] = err
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("load %d: %v", i, err)
		}
	}
	requireNoWarnings(t, logs)
	checkEntry(t, onlyEntry(t, cacheDir), model)
}
