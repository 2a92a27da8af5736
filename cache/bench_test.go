package cache

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// phraseSize is a typical cached sentence: about 2 s of 22.05 kHz 16-bit
// speech after a 2-3× lossless codec.
const phraseSize = 32 << 10

// BenchmarkGetPhraseHit is the cache's share of the phrase-hit path: a
// read transaction and a copy of the value, at a short (1 KiB) and a
// typical (32 KiB) sentence size.
func BenchmarkGetPhraseHit(b *testing.B) {
	for _, size := range []int{1 << 10, phraseSize} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			s := openTemp(b, nil)
			keys := make([]PhraseKey, 256)
			for i := range keys {
				keys[i] = key(fmt.Sprint("hit ", i))
				mustPut(b, s, keys[i], "v", filler(size, byte(i)))
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				v, ok, err := s.GetPhrase(keys[i%len(keys)])
				if !ok || err != nil || len(v) != size {
					b.Fatal(ok, err)
				}
				i++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/1e3/float64(b.N), "µs/hit")
		})
	}
}

func BenchmarkGetPhraseMiss(b *testing.B) {
	s := openTemp(b, nil)
	k := key("absent")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok, _ := s.GetPhrase(k); ok {
			b.Fatal("hit")
		}
	}
}

// BenchmarkPutPhrase stores 32 KiB phrases one after another; each put is
// a committed, fsynced transaction (past 64 MiB it also evicts).
func BenchmarkPutPhrase(b *testing.B) {
	s := openTemp(b, nil)
	value := filler(phraseSize, 3)
	b.SetBytes(phraseSize)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		mustPut(b, s, key(strconv.Itoa(i)), "v", value)
		i++
	}
}

// BenchmarkPutPhraseParallel shows the group commit: concurrent puts share
// transactions and fsyncs.
func BenchmarkPutPhraseParallel(b *testing.B) {
	s := openTemp(b, nil)
	value := filler(phraseSize, 3)
	var n sync.Mutex
	next := 0
	b.SetBytes(phraseSize)
	b.SetParallelism(4)
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n.Lock()
			i := next
			next++
			n.Unlock()
			mustPut(b, s, key(strconv.Itoa(i)), "v", value)
		}
	})
}

// BenchmarkSpoolPut is the cost the daemon pays before acknowledging an
// MQTT command: one durable (fsynced) commit.
func BenchmarkSpoolPut(b *testing.B) {
	s := openTemp(b, &Options{MaxSpoolEntries: 1 << 30})
	payload := []byte(`{"text":"The washing machine has finished.","voice":"amy","id":"0123456789"}`)
	now := time.Now()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		id := strconv.Itoa(i)
		if err := s.SpoolPut(id, payload, now, time.Time{}); err != nil {
			b.Fatal(err)
		}
		if err := s.SpoolDelete(id); err != nil {
			b.Fatal(err)
		}
		i++
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(2*b.N), "µs/commit")
}

// fullFile builds a cache file filled to its 64 MiB budget (concurrent puts,
// so it takes seconds, not minutes) and returns its path and keys.
func fullFile(b *testing.B) (string, []PhraseKey) {
	b.Helper()
	path := filepath.Join(b.TempDir(), "full.db")
	s, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	n := DefaultMaxBytes / phraseSize
	keys := make([]PhraseKey, n)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < n; i += 8 {
				keys[i] = key(fmt.Sprint("full ", i))
				if err := s.PutPhrase(keys[i], "v", filler(phraseSize, byte(i))); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Entries != n || st.Evictions != 0 {
		b.Fatalf("full cache stats %+v", st)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return path, keys
}

// BenchmarkOpenFull is the start-up cost of a full 64 MiB file: the
// structural walk, bbolt's tx.Check and loading the index.
func BenchmarkOpenFull(b *testing.B) {
	path, _ := fullFile(b)
	fi, _ := os.Stat(path)
	b.ReportAllocs()
	for b.Loop() {
		s, err := Open(path, nil)
		if err != nil || s.Recovery() != nil {
			b.Fatal(err, s.Recovery())
		}
		if err := s.Close(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(fi.Size())/(1<<20), "file-MB")
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(b.N), "ms/open")
}

// BenchmarkFullCache reports memory and disk for a full 64 MiB cache. The
// process's memory is split as the kernel reports it: anonymous memory
// (heap: the index and buffers) and mapped file pages (bbolt maps the file
// read-only; pages it touched stay resident but are page cache the kernel
// can take back under pressure). Both are read after opening the file and
// after reading every phrase once. The timed loop reads random phrases.
func BenchmarkFullCache(b *testing.B) {
	path, keys := fullFile(b)
	runtime.GC()
	debug.FreeOSMemory()
	baseAnon, _ := rssMB(b)
	s, err := Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	runtime.GC()
	debug.FreeOSMemory()
	openAnon, openFile := rssMB(b)
	for _, k := range keys {
		if _, ok, err := s.GetPhrase(k); !ok || err != nil {
			b.Fatal(ok, err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	_, hotFile := rssMB(b)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok, _ := s.GetPhrase(keys[(i*7919)%len(keys)]); !ok {
			b.Fatal("miss")
		}
		i++
	}
	st := s.Stats()
	b.ReportMetric(float64(st.FileBytes)/(1<<20), "file-MB")
	b.ReportMetric(float64(st.FileBytes)/float64(st.Bytes), "file/data")
	b.ReportMetric(openAnon-baseAnon, "anon-open-delta-MB")
	b.ReportMetric(openFile, "mapped-open-MB")
	b.ReportMetric(hotFile, "mapped-hot-MB")
}

// rssMB reads the process's resident anonymous and file-backed memory from
// /proc (Linux).
func rssMB(b *testing.B) (anon, file float64) {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Skipf("no /proc: %v", err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 2 {
			continue
		}
		kb, _ := strconv.ParseFloat(f[1], 64)
		switch f[0] {
		case "RssAnon:":
			anon = kb / 1024
		case "RssFile:":
			file = kb / 1024
		}
	}
	return anon, file
}
