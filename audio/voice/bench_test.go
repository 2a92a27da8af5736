package voice_test

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
)

const fiveSentences = "The washing machine has finished. The dryer needs another twenty minutes. " +
	"Dinner will be ready at seven. Please take the bins out tonight. Tomorrow will be sunny and warm."

// BenchmarkSentence reports the real-time factor of the demo voice for one
// typical sentence: synthesis time / audio duration (lower is faster).
func BenchmarkSentence(b *testing.B) {
	v := loadDemo(b, nil)
	req := voice.Request{Text: "The washing machine has finished, and the laundry is ready."}
	var audioDur, synth time.Duration
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		err := v.Synthesize(context.Background(), req, func(c voice.Chunk) error {
			audioDur += c.PCM.Duration()
			return nil
		})
		synth += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(synth.Seconds()/audioDur.Seconds(), "rtf")
}

// BenchmarkFirstAudio plays a five-sentence text into a null sink and
// reports time to first audio over total time: streaming sentence by
// sentence keeps it near 1/5 instead of 1.
func BenchmarkFirstAudio(b *testing.B) {
	v := loadDemo(b, nil)
	sink, err := audio.NewNullSink(nil)
	if err != nil {
		b.Fatal(err)
	}
	var first, total time.Duration
	b.ReportAllocs()
	for b.Loop() {
		st, err := voice.Play(context.Background(), v, voice.Request{Text: fiveSentences}, sink)
		if err != nil {
			b.Fatal(err)
		}
		first += st.FirstAudio
		total += st.Total
	}
	b.ReportMetric(float64(first.Microseconds())/float64(b.N)/1000, "first-ms")
	b.ReportMetric(float64(total.Microseconds())/float64(b.N)/1000, "total-ms")
	b.ReportMetric(first.Seconds()/total.Seconds(), "first/total")
}

// BenchmarkRSS reports the process's resident memory while it synthesizes
// the five-sentence text (ONNX Runtime's C++ heap included, which Go's own
// memory statistics miss): the high-water mark, and the current RSS after
// synthesis.
func BenchmarkRSS(b *testing.B) {
	v := loadDemo(b, nil)
	for b.Loop() {
		if err := v.Synthesize(context.Background(), voice.Request{Text: fiveSentences}, func(voice.Chunk) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(procStatusMB(b, "VmHWM"), "peak-rss-MB")
	b.ReportMetric(procStatusMB(b, "VmRSS"), "rss-MB")
}

// procStatusMB reads a kB field of /proc/self/status in MB.
func procStatusMB(b testing.TB, field string) float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
		if err != nil {
			b.Fatal(err)
		}
		return kb / 1024
	}
	b.Fatalf("no %s in /proc/self/status", field)
	return 0
}
