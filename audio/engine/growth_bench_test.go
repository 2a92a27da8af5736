package engine

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

// BenchmarkGrowth speaks texts of 1, 10, 100 and 500 distinct sentences
// in the demo voice, with no phrase cache (every sentence synthesized),
// through Speak with an emit that drops each chunk's PCM as a sink does
// once it has played, and reports how cost grows with the text:
//
//   - first-audio-ms: Speak called → first chunk emitted. Speak
//     synthesizes a sentence, emits it, then synthesizes the next, so
//     what grows with the text here is only what is done to all of it
//     before the first sentence: normalizing, splitting, and the run
//     cap's estimate (voice.Piper.SplitFor phonemizes every sentence).
//   - total-ms and per-sentence-ms: Speak called → returned, and that
//     over the sentences.
//   - peak-heap-MB: the most Go heap in objects (live and not yet
//     collected) seen at any emit or at the return; live-heap-MB the most
//     the garbage collector found live during the call. Both come from
//     runtime/metrics, which does not stop the world.
//   - peak-rss-growth-MB: the process's resident-memory high-water mark
//     during the call (VmHWM, reset through /proc/self/clear_refs before
//     it) over its VmRSS before; rss-growth-MB: VmRSS after over before.
//     RSS is the whole process's (ONNX Runtime's C heap and arena
//     included, which the Go figures miss), and there is nothing else
//     running in it.
//
// Times are medians over the ops, memory the largest any op saw. The
// sentences are two words ("Red cat.", nine runes with the space), so
// 500 of them (4,500 runes) fit one request's limit, text.DefaultMaxChars
// and mynahd's MaxTextRunes, both 5,000; household sentences of 50 runes
// would stop at 100. One op of 500 sentences takes seconds, so at the
// default -benchtime each size runs once or a few times; -benchtime 3x
// gives three of each.
func BenchmarkGrowth(b *testing.B) {
	dir := b.TempDir()
	enginetest.WriteVoices(b, dir, demo.Name)
	log := slog.New(slog.DiscardHandler)
	// As mynahd loads voices by default: ONNX Runtime's arena and the
	// optimized copy (built here at load, outside the timer). No Store:
	// the cache is off.
	piper := &voice.PiperOptions{Logger: log, Session: &ort.SessionOptions{CPUArena: true}, OptimizedDir: b.TempDir()}
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(b), Dir: dir, Sessions: SessionOptions{MaxCount: DefaultMaxSessions}, Piper: piper, Logger: log})
	if err != nil {
		b.Fatal(err)
	}
	defer vs.Close()
	ctx := context.Background()
	if _, err := vs.Preload(ctx); err != nil {
		b.Fatal(err)
	}
	sentences := growthSentences()
	// ONNX Runtime's and the phonemizer's first-use costs, and the arena's
	// growth to a run of this size, fall on no sub-benchmark.
	if err := vs.Speak(ctx, Request{Text: strings.Join(sentences[:10], " ")}, func(Chunk) error { return nil }); err != nil {
		b.Fatal(err)
	}
	for _, n := range []int{1, 10, 100, 500} {
		b.Run(fmt.Sprintf("sentences=%d", n), func(b *testing.B) {
			req := Request{Text: strings.Join(sentences[:n], " ")}
			heap := newHeapSampler()
			var firsts, totals []time.Duration
			var peakHeap, liveHeap, peakRSS, rssGrowth uint64
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				runtime.GC()
				before := readGrowthProc(b)
				resetPeakRSS(b)
				heap.reset()
				b.StartTimer()

				chunks := 0
				var first time.Duration
				start := time.Now()
				err := vs.Speak(ctx, req, func(c Chunk) error {
					if chunks == 0 {
						first = time.Since(start)
					}
					chunks++
					heap.sample()
					return nil
				})
				total := time.Since(start)
				heap.sample()

				b.StopTimer()
				after := readGrowthProc(b)
				if err != nil {
					b.Fatal(err)
				}
				if chunks != n {
					b.Fatalf("%d chunks for %d sentences", chunks, n)
				}
				firsts, totals = append(firsts, first), append(totals, total)
				peakHeap, liveHeap = max(peakHeap, heap.peakObjects), max(liveHeap, heap.peakLive)
				peakRSS = max(peakRSS, after.hwm-min(after.hwm, before.rss))
				rssGrowth = max(rssGrowth, after.rss-min(after.rss, before.rss))
				b.StartTimer()
			}
			total := median(totals)
			b.ReportMetric(ms(median(firsts)), "first-audio-ms")
			b.ReportMetric(ms(total), "total-ms")
			b.ReportMetric(ms(total)/float64(n), "per-sentence-ms")
			b.ReportMetric(mb(int64(peakHeap)), "peak-heap-MB")
			b.ReportMetric(mb(int64(liveHeap)), "live-heap-MB")
			b.ReportMetric(mb(int64(peakRSS)), "peak-rss-growth-MB")
			b.ReportMetric(mb(int64(rssGrowth)), "rss-growth-MB")
		})
	}
}

// growthSentences are 500 distinct two-word sentences of nine runes with
// the space that joins them: no numbers or abbreviations, so
// normalization leaves them as they are and each is one sentence.
func growthSentences() []string {
	adjectives := []string{"Red", "Big", "Old", "New", "Hot", "Wet", "Dry", "Fat", "Sad", "Shy", "Odd", "Raw", "Low",
		"Tan", "Fit", "Mad", "Icy", "Sly", "Coy", "Dim", "Apt", "Far", "Few", "Top", "Wry"}
	nouns := []string{"cat", "dog", "hen", "fox", "cow", "pig", "owl", "bee", "ant", "elk",
		"yak", "bat", "rat", "eel", "ape", "emu", "gnu", "cup", "hat", "bag"}
	out := make([]string, 0, len(adjectives)*len(nouns))
	for _, a := range adjectives {
		for _, n := range nouns {
			out = append(out, a+" "+n+".")
		}
	}
	return out
}

// heapSampler keeps the most Go heap seen by its samples.
type heapSampler struct {
	samples               []metrics.Sample
	peakObjects, peakLive uint64
}

func newHeapSampler() *heapSampler {
	return &heapSampler{samples: []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/gc/heap/live:bytes"},
	}}
}

func (h *heapSampler) reset() { h.peakObjects, h.peakLive = 0, 0 }

func (h *heapSampler) sample() {
	metrics.Read(h.samples)
	h.peakObjects = max(h.peakObjects, h.samples[0].Value.Uint64())
	h.peakLive = max(h.peakLive, h.samples[1].Value.Uint64())
}

// growthProc is the process's resident memory from /proc/self/status,
// in bytes: now (VmRSS) and its high-water mark (VmHWM).
type growthProc struct{ rss, hwm uint64 }

func readGrowthProc(b *testing.B) growthProc {
	b.Helper()
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		b.Fatalf("memory figures need Linux's /proc: %v", err)
	}
	var st growthProc
	found := 0
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 3 || f[2] != "kB" || (f[0] != "VmRSS:" && f[0] != "VmHWM:") {
			continue
		}
		kb, err := strconv.ParseUint(f[1], 10, 64)
		if err != nil {
			b.Fatalf("/proc/self/status %s: %v", f[0], err)
		}
		if f[0] == "VmRSS:" {
			st.rss = kb << 10
		} else {
			st.hwm = kb << 10
		}
		found++
	}
	if found != 2 {
		b.Fatalf("/proc/self/status lacks VmRSS or VmHWM:\n%s", data)
	}
	return st
}

// resetPeakRSS sets VmHWM back to the current VmRSS (Linux 4.0+), so the
// next reading is the peak of what ran since: without it the high-water
// mark is the whole process's, earlier sub-benchmarks included.
func resetPeakRSS(b *testing.B) {
	b.Helper()
	if err := os.WriteFile("/proc/self/clear_refs", []byte("5"), 0); err != nil {
		b.Fatalf("reset VmHWM: %v", err)
	}
}
