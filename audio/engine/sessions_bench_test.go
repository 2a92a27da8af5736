package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/quant/ort"
)

// BenchmarkVoiceSwitch measures a request's latency to its first chunk
// (emit into nothing) right after a request in another voice, through the
// daemon's engine with real ONNX Runtime and demo voices:
//
//   - warm: the voice's session is cached; the sentence is synthesized.
//   - cold: the session was evicted before the request; it is loaded
//     (the optimized copy read and checked, ONNX Runtime session, a first
//     small run) and then synthesizes.
//   - warm-hit / cold-hit: the same with the sentence in the phrase cache,
//     so warm-hit is the whole cost of a warm switch and cold-hit is
//     mostly the load.
//
// Each op is one of each; the metrics are medians over all ops. The goal
// in DESIGN.md is cold/warm ≥ 20; cold/warm-hit is the gap a listener
// hears when the phrase is cached.
func BenchmarkVoiceSwitch(b *testing.B) {
	dir := b.TempDir()
	enginetest.WriteVoices(b, dir, "warm1", "warm2", "cold")
	log := slog.New(slog.DiscardHandler)
	// No memory checks: pressure must not evict the warm voices mid-run.
	sc := SessionOptions{MaxCount: DefaultMaxSessions}
	// The voices as mynahd loads them by default: ONNX Runtime's arena,
	// and the optimized-model cache, which the first load below fills.
	piper := &voice.PiperOptions{Logger: log, Session: &ort.SessionOptions{CPUArena: true}, OptimizedDir: b.TempDir()}
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(b), Dir: dir, Default: "warm1", Sessions: sc, Piper: piper, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer vs.Close()
	store, err := cache.Open(filepath.Join(b.TempDir(), "cache.db"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	const text = "Hi."
	firstChunk := func(name string) time.Duration {
		start := time.Now()
		var first time.Duration
		err := vs.Speak(ctx, Request{Voice: name, Text: text}, func(c Chunk) error {
			if first == 0 {
				first = time.Since(start)
			}
			return nil
		})
		if err != nil || first == 0 {
			b.Fatalf("speak in %s: %v", name, err)
		}
		return first
	}
	// Outside the timer: load everything once (ONNX Runtime's and the
	// phonemizer's first-use costs), and put the sentence in the phrase
	// cache in every voice.
	vs.store = store
	for _, v := range []string{"warm1", "warm2", "cold"} {
		firstChunk(v)
	}
	var warm, cold, warmHit, coldHit []time.Duration
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		w := []string{"warm1", "warm2"}[i%2]
		vs.store = nil
		warm = append(warm, firstChunk(w))
		if !vs.sessions.Evict("cold") {
			b.Fatal("cold voice was not cached")
		}
		cold = append(cold, firstChunk("cold"))
		vs.store = store
		warmHit = append(warmHit, firstChunk(w))
		vs.sessions.Evict("cold")
		coldHit = append(coldHit, firstChunk("cold"))
	}
	if st := vs.sessions.Stats(); st.Loads != uint64(3+2*b.N) {
		b.Fatalf("%d loads, want %d: warm voices were evicted", st.Loads, 3+2*b.N)
	}
	w, c, wh, ch := median(warm), median(cold), median(warmHit), median(coldHit)
	b.ReportMetric(ms(w), "warm-ms")
	b.ReportMetric(ms(c), "cold-ms")
	b.ReportMetric(float64(c)/float64(w), "cold/warm")
	b.ReportMetric(ms(wh), "warm-hit-ms")
	b.ReportMetric(ms(ch), "cold-hit-ms")
	b.ReportMetric(float64(c)/float64(wh), "cold/warm-hit")
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// BenchmarkFullPhraseCache fills a 64 MiB phrase cache (the default
// cache.max_bytes) with real speech records — demo-voice sentences in
// three speakers at several gains, encoded with audio.EncodePhrase as the
// daemon stores them — then reopens it and reads (and decodes) every
// record once, and reports the process's memory as the kernel sees it:
// VmRSS, split into RssAnon (heap, ONNX Runtime, the cache's index) and
// RssFile (mapped pages of the cache file and the binary; page cache the
// kernel can take back). base-* figures are read before the reopen, so the
// delta is the full cache's own share. The timed loop is a phrase hit:
// read and decode one record. cache's BenchmarkFullCache does the same
// with synthetic 32 KiB values and no voice loaded.
func BenchmarkFullPhraseCache(b *testing.B) {
	dir := b.TempDir()
	enginetest.WriteVoices(b, dir, demo.Name)
	log := slog.New(slog.DiscardHandler)
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(b), Dir: dir, Sessions: SessionOptions{MaxCount: DefaultMaxSessions, LowWater: 64 << 20, CheckInterval: 30 * time.Second},
		Piper: &voice.PiperOptions{Logger: log}, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer vs.Close()
	if _, err := vs.Preload(context.Background()); err != nil {
		b.Fatal(err)
	}
	path := filepath.Join(b.TempDir(), "cache.db")
	keys, rawBytes := fillPhraseCache(b, vs, path, cache.DefaultMaxBytes)

	runtime.GC()
	debug.FreeOSMemory()
	base := readProcStatus(b)
	s, err := cache.Open(path, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	for _, k := range keys {
		data, ok, err := s.GetPhrase(k)
		if !ok || err != nil {
			b.Fatal("record missing: ", err)
		}
		if _, err := audio.DecodePhrase(data); err != nil {
			b.Fatal(err)
		}
	}
	runtime.GC()
	debug.FreeOSMemory()
	full := readProcStatus(b)
	st := s.Stats()

	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		data, ok, err := s.GetPhrase(keys[(i*7919)%len(keys)])
		if !ok || err != nil {
			b.Fatal("miss: ", err)
		}
		if _, err := audio.DecodePhrase(data); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(keys)), "records")
	b.ReportMetric(mb(st.Bytes), "data-MB")
	b.ReportMetric(float64(rawBytes)/float64(st.Bytes), "pcm/encoded")
	b.ReportMetric(mb(st.FileBytes), "file-MB")
	b.ReportMetric(mb(full.rss), "VmRSS-MB")
	b.ReportMetric(mb(full.anon), "RssAnon-MB")
	b.ReportMetric(mb(full.file), "RssFile-MB")
	b.ReportMetric(mb(base.rss), "base-VmRSS-MB")
	b.ReportMetric(mb(full.rss-base.rss), "delta-VmRSS-MB")
	b.ReportMetric(mb(full.anon-base.anon), "delta-RssAnon-MB")
	b.ReportMetric(mb(full.file-base.file), "delta-RssFile-MB")
}

// fillPhraseCache writes speech records into a new cache file at path until
// the next one would pass maxBytes (nothing is evicted), closes it and
// returns the keys and the PCM bytes the records hold.
func fillPhraseCache(b *testing.B, vs *Engine, path string, maxBytes int64) ([]cache.PhraseKey, int64) {
	b.Helper()
	v, release, err := vs.sessions.Get(context.Background(), vs.def)
	if err != nil {
		b.Fatal(err)
	}
	defer release()
	var base []audio.PCM
	var plans []plan
	for _, spk := range demo.Speakers() {
		p, err := v.model.prepare(context.Background(), Request{Speaker: spk.Name})
		if err != nil {
			b.Fatal(err)
		}
		for _, sentence := range benchSentences() {
			pcm, _, err := p.synthesize(context.Background(), sentence)
			if err != nil {
				b.Fatal(err)
			}
			base = append(base, pcm)
			plans = append(plans, p)
		}
	}
	var records [][]byte
	var keys []cache.PhraseKey
	var total, raw int64
	// Each round scales every sentence by another gain, so no two records
	// are alike and every one still is speech.
fill:
	for round := 0; ; round++ {
		gain := 1 - 0.02*float64(round%25)
		for i, pcm := range base {
			scaled := scalePCM(pcm, gain)
			data, err := audio.EncodePhrase(scaled)
			if err != nil {
				b.Fatal(err)
			}
			if total+int64(len(data)) > maxBytes {
				break fill
			}
			total += int64(len(data))
			raw += 2 * int64(len(scaled.Samples))
			records = append(records, data)
			keys = append(keys, phraseKey(plans[i], fmt.Sprintf("round %d: sentence %d", round, i), normalizeVersion))
		}
	}
	s, err := cache.Open(path, &cache.Options{MaxBytes: maxBytes})
	if err != nil {
		b.Fatal(err)
	}
	// Concurrent puts share group commits: seconds instead of minutes.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := g; i < len(records); i += 8 {
				if err := s.PutPhrase(keys[i], vs.def, records[i]); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if st := s.Stats(); st.Entries != len(keys) || st.Evictions != 0 || st.Bytes != total {
		b.Fatalf("filled cache: %+v, want %d entries, %d bytes, no evictions", st, len(keys), total)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return keys, raw
}

func scalePCM(p audio.PCM, gain float64) audio.PCM {
	out := audio.PCM{Rate: p.Rate, Channels: p.Channels, Samples: make([]int16, len(p.Samples))}
	for i, s := range p.Samples {
		out.Samples[i] = int16(float64(s) * gain)
	}
	return out
}

// benchSentences are 48 household announcements of 2 to 8 words.
func benchSentences() []string {
	var out []string
	for _, who := range []string{"The washing machine", "The dishwasher", "The front door", "The garage",
		"Grandma", "The oven", "The parcel", "The kitchen window"} {
		for _, what := range []string{"is ready.", "has finished its program.", "needs attention now.",
			"is open.", "was checked at seven.", "will be done in ten minutes."} {
			out = append(out, who+" "+what)
		}
	}
	return out
}

// procStatus holds the memory lines of /proc/self/status, in bytes.
type procStatus struct{ rss, anon, file int64 }

func readProcStatus(b *testing.B) procStatus {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatalf("memory figures need Linux's /proc: %v", err)
	}
	var st procStatus
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" {
			continue
		}
		var dst *int64
		switch f[0] {
		case "VmRSS:":
			dst = &st.rss
		case "RssAnon:":
			dst = &st.anon
		case "RssFile:":
			dst = &st.file
		default:
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			b.Fatalf("/proc/self/status %s: %v", f[0], err)
		}
		*dst = kb << 10
		found++
	}
	if found != 3 {
		b.Fatalf("/proc/self/status lacks VmRSS, RssAnon or RssFile:\n%s", data)
	}
	return st
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
