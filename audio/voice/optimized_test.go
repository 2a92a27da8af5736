package voice_test

import (
	"bytes"
	"hash/crc32"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

// The optimized-model cache (PiperOptions.OptimizedDir) on the demo voice:
// what a first load writes, that a second load uses it and speaks alike,
// that nothing damaged, outdated or unwritable fails a load.

// TestOptimizedMissThenHit: the first load keeps one entry, the second
// uses it without writing anything, and both speak as the model file
// does.
func TestOptimizedMissThenHit(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := filepath.Join(t.TempDir(), "optimized") // made by the first load
	log, logs := newLogBuffer()

	var temps []string
	voice.SetOptimizedTempHook(t, func(path string) { temps = append(temps, path) })

	miss := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	if len(temps) != 1 {
		t.Fatalf("first load made %d temp files, want 1", len(temps))
	}
	base := onlyEntry(t, cacheDir)
	checkEntry(t, base, model)
	requireDigest(t, miss, model)
	for _, ext := range []string{".ort", ".json"} {
		fi, err := os.Stat(base + ext)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 {
			t.Errorf("%s%s: mode %v, want 0644 (as other cache files)", filepath.Base(base), ext, fi.Mode())
		}
	}
	before := dirState(t, cacheDir)

	// A file written again gets a later modification time (or a new
	// inode, if renamed into place).
	time.Sleep(10 * time.Millisecond)
	hit := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	if len(temps) != 1 {
		t.Fatalf("second load made a temp file (%q): not a hit", temps[1:])
	}
	if after := dirState(t, cacheDir); !sameFiles(before, after) {
		t.Fatalf("second load changed the cache: %v, then %v", before, after)
	}
	requireDigest(t, hit, model)
	requireNoWarnings(t, logs)
	if got := hit.Info().Provider; got != string(ort.ProviderCPU) {
		t.Errorf("hit runs on %q, want cpu", got)
	}

	plain := loadVoice(t, rt, dir, &voice.PiperOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU}})
	requireDigest(t, plain, model)

	missOut, _ := speak(t, miss, still(cacheSentence))
	hitOut, _ := speak(t, hit, still(cacheSentence))
	plainOut, _ := speak(t, plain, still(cacheSentence))
	if d := maxDifference(t, missOut, hitOut); d != 0 {
		t.Errorf("the hit speaks differently from the load that made its entry: up to %.3g", d)
	}
	// The optimized graph may run other kernels than the file's, whose
	// summation order differs (as lift_test.go allows).
	if d := maxDifference(t, plainOut, hitOut); d > 2e-3 {
		t.Errorf("the hit speaks differently from the model file: up to %.3g", d)
	}
}

// sameFiles reports whether two dirStates list the same files, none
// written again.
func sameFiles(a, b map[string]fileState) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !v.mtime.Equal(w.mtime) || v.size != w.size || v.ino != w.ino {
			return false
		}
	}
	return true
}

// TestOptimizedDamaged damages a kept entry in every way a crash, a full
// disk or a bad sector can, and requires the next load to work, warn,
// and leave a whole entry that the load after uses as it is.
func TestOptimizedDamaged(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	source, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	var want []float64
	{
		ref := loadVoice(t, rt, dir, cacheOptions(t.TempDir(), nil))
		want, _ = speak(t, ref, still(cacheSentence))
	}
	flip := func(at func(n int) int) func(t *testing.T, base string) {
		return func(t *testing.T, base string) {
			data := readFile(t, base+".ort")
			data[at(len(data))] ^= 0x10
			writeFile(t, base+".ort", data)
		}
	}
	editMeta := func(edit func(m *voice.OptimizedMeta)) func(t *testing.T, base string) {
		return func(t *testing.T, base string) {
			m, err := voice.ReadOptimizedMeta(base + ".json")
			if err != nil {
				t.Fatal(err)
			}
			edit(&m)
			writeFile(t, base+".json", voice.EncodeOptimizedMeta(m))
		}
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, base string)
	}{
		{"ort byte flipped", flip(func(n int) int { return n / 2 })},
		{"ort header byte flipped", flip(func(int) int { return 5 })},
		{"ort last byte flipped", flip(func(n int) int { return n - 1 })},
		{"ort truncated", func(t *testing.T, base string) {
			writeFile(t, base+".ort", readFile(t, base+".ort")[:1000])
		}},
		{"ort emptied", func(t *testing.T, base string) { writeFile(t, base+".ort", nil) }},
		{"ort one byte longer", func(t *testing.T, base string) {
			writeFile(t, base+".ort", append(readFile(t, base+".ort"), 0))
		}},
		{"ort removed (sidecar only)", func(t *testing.T, base string) { remove(t, base+".ort") }},
		{"ort a directory", func(t *testing.T, base string) {
			remove(t, base+".ort")
			if err := os.Mkdir(base+".ort", 0o755); err != nil {
				t.Fatal(err)
			}
		}},
		{"ort another format, sums matching", func(t *testing.T, base string) {
			// The size and CRC-32C pass: ONNX Runtime itself refuses it.
			writeFile(t, base+".ort", source)
			editMeta(func(m *voice.OptimizedMeta) {
				m.ORTSize, m.ORTCRC32C = int64(len(source)), crc32.Checksum(source, crc32.MakeTable(crc32.Castagnoli))
			})(t, base)
		}},
		{"sidecar removed (ort only)", func(t *testing.T, base string) { remove(t, base+".json") }},
		{"sidecar emptied", func(t *testing.T, base string) { writeFile(t, base+".json", nil) }},
		{"sidecar truncated", func(t *testing.T, base string) {
			js := readFile(t, base+".json")
			writeFile(t, base+".json", js[:len(js)/2])
		}},
		{"sidecar invalid JSON", func(t *testing.T, base string) {
			writeFile(t, base+".json", []byte(`{"format": "2", "source": `))
		}},
		{"sidecar garbage", func(t *testing.T, base string) {
			garbage := make([]byte, 4096)
			for i := range garbage {
				garbage[i] = byte(i*131 + i>>3)
			}
			writeFile(t, base+".json", garbage)
		}},
		{"sidecar format of another version", editMeta(func(m *voice.OptimizedMeta) { m.Format = "1" })},
		{"sidecar format field wrong type", func(t *testing.T, base string) {
			js := readFile(t, base+".json")
			js = bytes.Replace(js, []byte(`"format": "`+voice.OptimizedFormat+`"`), []byte(`"format": 2`), 1)
			writeFile(t, base+".json", js)
		}},
		{"sidecar over the limit", func(t *testing.T, base string) {
			// Valid JSON but for its size.
			js := readFile(t, base+".json")
			pad := bytes.Repeat([]byte(" "), voice.MaxOptimizedMeta+1-len(js)+1)
			writeFile(t, base+".json", append(js, pad...))
		}},
		{"sidecar value changed, check not", func(t *testing.T, base string) {
			js := readFile(t, base+".json")
			m, _ := voice.ReadOptimizedMeta(base + ".json")
			other := strings.Repeat("0", 64)
			js = bytes.Replace(js, []byte(m.SourceSHA256), []byte(other), 1)
			writeFile(t, base+".json", js)
		}},
		{"sidecar dimension changed, check not", func(t *testing.T, base string) {
			js := readFile(t, base+".json")
			i := bytes.Index(js, []byte(`"Dims": [`))
			if i < 0 {
				t.Fatalf("no dims in %s", js)
			}
			js = slices.Insert(js, i+len(`"Dims": [`), []byte("7, ")...)
			writeFile(t, base+".json", js)
		}},
		{"sidecar CRC-32C wrong", editMeta(func(m *voice.OptimizedMeta) { m.ORTCRC32C ^= 1 })},
		{"sidecar size wrong", editMeta(func(m *voice.OptimizedMeta) { m.ORTSize-- })},
		{"sidecar of another source", editMeta(func(m *voice.OptimizedMeta) { m.Source = filepath.Join(filepath.Dir(m.Source), "other.onnx") })},
		{"sidecar of another mtime", editMeta(func(m *voice.OptimizedMeta) { m.SourceMtime++ })},
		{"sidecar a directory", func(t *testing.T, base string) {
			remove(t, base+".json")
			if err := os.Mkdir(base+".json", 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cacheDir := t.TempDir()
			log, logs := newLogBuffer()
			loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
			base := onlyEntry(t, cacheDir)
			c.damage(t, base)

			rebuilt := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
			requireWarning(t, logs, "optimized model unusable")
			requireDigest(t, rebuilt, model)
			if got := onlyEntry(t, cacheDir); got != base {
				t.Fatalf("rebuilt as %s, want %s", got, base)
			}
			checkEntry(t, base, model)
			got, _ := speak(t, rebuilt, still(cacheSentence))
			if d := maxDifference(t, want, got); d != 0 {
				t.Errorf("the rebuilt voice speaks differently: up to %.3g", d)
			}

			before, warned := dirState(t, cacheDir), len(logs.warnings())
			hit := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
			if after := dirState(t, cacheDir); !sameFiles(before, after) {
				t.Fatalf("the load after the rebuild wrote the cache again: %v, then %v", before, after)
			}
			if w := logs.warnings(); len(w) != warned {
				t.Fatalf("the load after the rebuild warned: %q", w[warned:])
			}
			got, _ = speak(t, hit, still(cacheSentence))
			if d := maxDifference(t, want, got); d != 0 {
				t.Errorf("the rebuilt entry speaks differently: up to %.3g", d)
			}
		})
	}
}

// TestOptimizedSourceChanged: a model file written again gets a new
// entry, and the one of its earlier version goes.
func TestOptimizedSourceChanged(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := t.TempDir()
	log, logs := newLogBuffer()

	first := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	old := onlyEntry(t, cacheDir)
	requireDigest(t, first, model)

	// Another demo model (a lower cap on a run's audio), written over the
	// file in place: the same inode, a later modification time.
	other, _, err := demo.Build(&demo.Options{MaxSeconds: 30})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(other, readFile(t, model)) {
		t.Fatal("the other demo model is the same file")
	}
	writeFile(t, model, other)
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(model, later, later); err != nil {
		t.Fatal(err)
	}

	second := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	requireDigest(t, second, model)
	current := onlyEntry(t, cacheDir)
	if current == old {
		t.Fatalf("the changed file kept the entry key %s", filepath.Base(old))
	}
	checkEntry(t, current, model)
	requireNoWarnings(t, logs)

	// Only the time changed: a new key as well.
	earlier := later.Add(-time.Minute)
	if err := os.Chtimes(model, earlier, earlier); err != nil {
		t.Fatal(err)
	}
	third := loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	requireDigest(t, third, model)
	if got := onlyEntry(t, cacheDir); got == current {
		t.Fatalf("the touched file kept the entry key %s", filepath.Base(current))
	}
	requireNoWarnings(t, logs)
}

// TestOptimizedOptionsKeyed: options that change the optimized graph get
// entries of their own, side by side, each a hit the next time.
func TestOptimizedOptionsKeyed(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := t.TempDir()
	log, logs := newLogBuffer()
	variants := []struct {
		name string
		opts func(o *voice.PiperOptions)
	}{
		{"lifted", func(*voice.PiperOptions) {}},
		{"KeepConv1D", func(o *voice.PiperOptions) { o.KeepConv1D = true }},
		{"extended", func(o *voice.PiperOptions) { o.Session.GraphOptimization = ort.GraphOptimizationExtended }},
	}
	opts := func(i int) *voice.PiperOptions {
		o := cacheOptions(cacheDir, log)
		variants[i].opts(o)
		return o
	}
	keys := map[string]string{} // entry file → variant
	for i, v := range variants {
		before := dirState(t, cacheDir)
		p := loadVoice(t, rt, dir, opts(i))
		requireDigest(t, p, model)
		for name := range dirState(t, cacheDir) {
			if _, ok := before[name]; !ok {
				keys[name] = v.name
			}
		}
		if n := len(dirState(t, cacheDir)); n != 2*(i+1) {
			t.Fatalf("after %s the cache holds %q, want %d entries", v.name, names(dirState(t, cacheDir)), i+1)
		}
	}
	for name := range keys {
		if strings.HasSuffix(name, ".ort") {
			checkEntry(t, filepath.Join(cacheDir, strings.TrimSuffix(name, ".ort")), model)
		}
	}
	// Again, in another order: all hits.
	before := dirState(t, cacheDir)
	for _, i := range []int{2, 0, 1} {
		loadVoice(t, rt, dir, opts(i))
	}
	if after := dirState(t, cacheDir); !sameFiles(before, after) {
		t.Fatalf("loading each variant again changed the cache: %v, then %v", before, after)
	}
	requireNoWarnings(t, logs)
}

// TestOptimizedPrune: storing an entry removes the outdated entries of
// the same file (another version of it, another runtime, an earlier
// format) and what dead stores left long ago, and nothing else.
func TestOptimizedPrune(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	dir, model := cachedVoice(t)
	cacheDir := t.TempDir()
	log, logs := newLogBuffer()
	loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	current := onlyEntry(t, cacheDir)
	meta := checkEntry(t, current, model)
	remove(t, current+".json") // the next load stores it again
	remove(t, current+".ort")

	entry := func(key string, m voice.OptimizedMeta) {
		writeFile(t, filepath.Join(cacheDir, key+".ort"), []byte("ort"))
		writeFile(t, filepath.Join(cacheDir, key+".json"), voice.EncodeOptimizedMeta(m))
	}
	otherRuntime := meta
	otherRuntime.MadeFor = "another runtime"
	entry("0otherruntime", otherRuntime)
	otherSource := meta
	otherSource.Source, otherSource.MadeFor = filepath.Join(t.TempDir(), "other.onnx"), "another file"
	entry("0othersource", otherSource)
	writeFile(t, filepath.Join(cacheDir, "0oldformat.ort"), []byte("ort"))
	writeFile(t, filepath.Join(cacheDir, "0oldformat.json"), []byte(`{"format": "1", "source": "`+meta.Source+`"}`))
	writeFile(t, filepath.Join(cacheDir, "0garbage.json"), []byte("not json"))
	for _, name := range []string{"0dead.123.tmp", "0orphan.ort", "0dead.json.456.tmp", "0fresh.789.tmp", "0freshorphan.ort"} {
		writeFile(t, filepath.Join(cacheDir, name), []byte("partial"))
	}
	// Age alone removes nothing whole: the other file's entry is as old
	// as the leftovers.
	long := time.Now().Add(-2 * time.Hour)
	for _, name := range []string{"0dead.123.tmp", "0orphan.ort", "0dead.json.456.tmp", "0othersource.ort", "0othersource.json"} {
		if err := os.Chtimes(filepath.Join(cacheDir, name), long, long); err != nil {
			t.Fatal(err)
		}
	}

	loadVoice(t, rt, dir, cacheOptions(cacheDir, log))
	checkEntry(t, current, model)
	want := []string{"0fresh.789.tmp", "0freshorphan.ort", "0garbage.json", "0othersource.json", "0othersource.ort",
		filepath.Base(current) + ".json", filepath.Base(current) + ".ort"}
	slices.Sort(want)
	if got := names(dirState(t, cacheDir)); !slices.Equal(got, want) {
		t.Fatalf("after the store the cache holds %q, want %q", got, want)
	}
	requireNoWarnings(t, logs)
}
