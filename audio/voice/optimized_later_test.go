package voice_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
)

// liftTolerance is how far the model as its file has it may speak from
// its lifted and optimized copy: the lift's rounding
// (TestLiftedConvolutionsSpeakAlike).
const liftTolerance = 2e-3

// closeTo fails the test unless a and b are the same length and no
// sample differs by more than liftTolerance.
func closeTo(t *testing.T, what string, a, b []float64) {
	t.Helper()
	if len(a) != len(b) || len(a) == 0 {
		t.Fatalf("%s: %d samples, then %d", what, len(a), len(b))
	}
	var worst float64
	for i := range a {
		worst = max(worst, math.Abs(a[i]-b[i]))
	}
	if worst > liftTolerance {
		t.Errorf("%s: samples differ by up to %.3g", what, worst)
	}
}

// A load with OptimizeLater and an empty optimized-model cache is the
// model as its file has it, with nothing written; OptimizePiper writes
// the entry, and the next load is the entry, speaking alike.
func TestOptimizeLater(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, _ := cachedVoice(t)
	cacheDir := filepath.Join(t.TempDir(), "optimized")
	opts := cacheOptions(cacheDir, nil)
	opts.OptimizeLater = true

	first := loadVoice(t, rt, dir, opts)
	if !first.OptimizeDeferred() || first.Info().Optimized {
		t.Fatalf("first load: deferred %v, optimized %v; want the file's model, its entry left", first.OptimizeDeferred(), first.Info().Optimized)
	}
	if got := dirState(t, cacheDir); len(got) != 0 {
		t.Fatalf("the first load wrote %v", got)
	}
	before, _ := speak(t, first, still(cacheSentence))

	if err := voice.OptimizePiper(rt, dir, opts); err != nil {
		t.Fatal(err)
	}
	entry := dirState(t, cacheDir)
	if len(entry) != 2 {
		t.Fatalf("after OptimizePiper the cache holds %v, want KEY.ort and KEY.json", entry)
	}
	// Built once: a second call finds it.
	if err := voice.OptimizePiper(rt, dir, opts); err != nil {
		t.Fatal(err)
	}
	if again := dirState(t, cacheDir); !sameState(entry, again) {
		t.Errorf("OptimizePiper wrote the entry again: %v, then %v", entry, again)
	}

	later := loadVoice(t, rt, dir, opts)
	if later.OptimizeDeferred() || !later.Info().Optimized {
		t.Fatalf("later load: deferred %v, optimized %v; want the entry", later.OptimizeDeferred(), later.Info().Optimized)
	}
	after, _ := speak(t, later, still(cacheSentence))
	closeTo(t, "the file's model, then its entry", before, after)
	if first.Info().Digest != later.Info().Digest {
		t.Errorf("digest %s, then %s", first.Info().Digest, later.Info().Digest)
	}
}

// An optimized-model cache that cannot be written, or holds a damaged
// entry, never fails a load with OptimizeLater nor its speech; the
// damaged entry is built again.
func TestOptimizeLaterDamagedCache(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, _ := cachedVoice(t)

	t.Run("not a directory", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "optimized")
		if err := os.WriteFile(file, []byte("not a directory"), 0o644); err != nil {
			t.Fatal(err)
		}
		opts := cacheOptions(file, nil)
		opts.OptimizeLater = true
		p := loadVoice(t, rt, dir, opts)
		speak(t, p, still(cacheSentence))
		if err := voice.OptimizePiper(rt, dir, opts); err == nil {
			t.Error("OptimizePiper into a file: no error")
		}
		speak(t, p, still(cacheSentence))
	})

	t.Run("damaged entry", func(t *testing.T) {
		cacheDir := t.TempDir()
		log, logs := newLogBuffer()
		opts := cacheOptions(cacheDir, log)
		if err := voice.OptimizePiper(rt, dir, opts); err != nil {
			t.Fatal(err)
		}
		orts, _ := filepath.Glob(filepath.Join(cacheDir, "*.ort"))
		if len(orts) != 1 {
			t.Fatalf("entries: %v", orts)
		}
		data, err := os.ReadFile(orts[0])
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(orts[0], data, 0o644); err != nil {
			t.Fatal(err)
		}
		opts.OptimizeLater = true
		p := loadVoice(t, rt, dir, opts)
		if !p.OptimizeDeferred() || len(logs.warnings()) != 1 {
			t.Fatalf("damaged entry: deferred %v, warnings %q", p.OptimizeDeferred(), logs.warnings())
		}
		speak(t, p, still(cacheSentence))
		if err := voice.OptimizePiper(rt, dir, opts); err != nil {
			t.Fatal(err)
		}
		if q := loadVoice(t, rt, dir, opts); !q.Info().Optimized {
			t.Error("the damaged entry was not built again")
		}
	})
}

// sameState reports whether two listings name the same files unchanged.
func sameState(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for name, s := range a {
		if b[name] != s {
			return false
		}
	}
	return true
}

// BenchmarkFirstLoad is a voice's first load with an empty optimized-model
// cache against its later loads, in one run, on one thread, as mynahd
// loads it: first is OptimizeLater's (the model as its file has it, the
// entry built apart, untimed, by OptimizePiper), later loads the entry
// that built, inline is a first load without OptimizeLater (building the
// entry, as before issue 24). Each is timed to the loaded voice (*-ms)
// and to its first sentence's audio (*-speech-ms); first/later and
// inline/later are the ratios of the loads, speech-ratio that of the
// first sentence.
func BenchmarkFirstLoad(b *testing.B) {
	rt := enginetest.OpenRuntime(b)
	for _, v := range benchVoices(b) {
		b.Run(v.name, func(b *testing.B) {
			var first, later, inline, firstSpeech, laterSpeech time.Duration
			load := func(opts *voice.PiperOptions) (loaded, spoken time.Duration) {
				start := time.Now()
				p, err := voice.LoadPiper(rt, v.dir, opts)
				if err != nil {
					b.Fatal(err)
				}
				defer p.Close()
				loaded = time.Since(start)
				err = p.Synthesize(context.Background(), voice.Request{Text: "The garage door is closed."}, func(voice.Chunk) error { return nil })
				if err != nil {
					b.Fatal(err)
				}
				return loaded, time.Since(start)
			}
			options := func(dir string, later bool) *voice.PiperOptions {
				so := oneThread()
				so.CPUArena = true
				return &voice.PiperOptions{Session: so, OptimizedDir: dir, OptimizeLater: later}
			}
			// ONNX Runtime's and espeak-ng's one-off costs.
			load(options("", false))
			n := 0
			for b.Loop() {
				dir := filepath.Join(b.TempDir(), "optimized")
				l, s := load(options(dir, true))
				first, firstSpeech = first+l, firstSpeech+s
				b.StopTimer()
				if err := voice.OptimizePiper(rt, v.dir, options(dir, true)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				l, s = load(options(dir, true))
				later, laterSpeech = later+l, laterSpeech+s
				l, _ = load(options(filepath.Join(b.TempDir(), "inline"), false))
				inline += l
				n++
			}
			ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 / float64(n) }
			b.ReportMetric(ms(first), "first-ms")
			b.ReportMetric(ms(later), "later-ms")
			b.ReportMetric(ms(inline), "inline-ms")
			b.ReportMetric(ms(firstSpeech), "first-speech-ms")
			b.ReportMetric(ms(laterSpeech), "later-speech-ms")
			b.ReportMetric(first.Seconds()/later.Seconds(), "first/later")
			b.ReportMetric(inline.Seconds()/later.Seconds(), "inline/later")
			b.ReportMetric(firstSpeech.Seconds()/laterSpeech.Seconds(), "speech-ratio")
		})
	}
}
