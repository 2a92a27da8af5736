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
	"github.com/mynah-tts/mynah/audio/text"
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

// haSentences are Home Assistant announcements as templates fill them in.
var haSentences = []string{
	"It is 8:05 PM. The temperature is 21.5 °C and the battery is at 15 %.",
	"Power 1.2 kW, 3,400 W peak.",
	"The alarm is set for 07:30.",
	"Washer finished at 14:05 on 2026-12-01.",
	"Rain 0.4 mm/h, wind 12 km/h from the west.",
	"Timer 0:03:12 left.",
	"**Living room**: 21 °C, the window is open.",
	"Electricity today cost $4.99 for 12.5 kWh.",
}

// BenchmarkNormalizeShare reports what reading Home Assistant's values
// into words costs next to synthesizing them, on the demo voice: the
// time text.Normalize takes per sentence over the time one model run takes
// for it (normalize-%, which must stay under 1), measured in one run.
func BenchmarkNormalizeShare(b *testing.B) {
	v := loadDemo(b, nil)
	prm, err := v.Resolve(voice.Request{})
	if err != nil {
		b.Fatal(err)
	}
	opts := &text.NormalizeOptions{Language: v.Info().Language, Mandarin: v.Info().Mandarin}
	var norm, synth time.Duration
	sentences := 0
	b.ReportAllocs()
	for b.Loop() {
		for _, s := range haSentences {
			start := time.Now()
			said, err := text.Normalize(s, opts)
			norm += time.Since(start)
			if err != nil {
				b.Fatal(err)
			}
			parts, err := v.Split(said)
			if err != nil {
				b.Fatal(err)
			}
			start = time.Now()
			for _, p := range parts {
				if _, _, err := v.SynthesizeSentence(p, prm); err != nil {
					b.Fatal(err)
				}
				sentences++
			}
			synth += time.Since(start)
		}
	}
	b.ReportMetric(float64(norm.Nanoseconds())/float64(sentences)/1e3, "normalize-us/sentence")
	b.ReportMetric(float64(synth.Nanoseconds())/float64(sentences)/1e6, "synth-ms/sentence")
	b.ReportMetric(100*norm.Seconds()/synth.Seconds(), "normalize-%")
}
