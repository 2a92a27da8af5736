package voice_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/ort"
)

var (
	mediumOnce sync.Once
	mediumModel,
	mediumConfig []byte
	mediumErr error
)

// mediumVoice writes quant/benchmodel's Piper-medium-shaped model (15 M
// parameters, about 60 MB) as a Piper voice into a directory of tb's: the
// size of the voices users run, which the demo voice is not. The model
// is built once per test binary.
func mediumVoice(tb testing.TB) string {
	tb.Helper()
	mediumOnce.Do(func() {
		if mediumModel, mediumErr = benchmodel.PiperMedium(nil); mediumErr != nil {
			return
		}
		mediumConfig = benchmodel.PiperConfig()
	})
	if mediumErr != nil {
		tb.Fatalf("medium voice: %v", mediumErr)
	}
	dir := tb.TempDir()
	path := filepath.Join(dir, "medium.onnx")
	if err := os.WriteFile(path, mediumModel, 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(path+".json", mediumConfig, 0o644); err != nil {
		tb.Fatal(err)
	}
	return dir
}

// benchVoices are the two voices the load and synthesis benchmarks run:
// the demo voice and the 15 M-parameter one.
func benchVoices(tb testing.TB) []struct{ name, dir string } {
	return []struct{ name, dir string }{{"demo", demoVoice(tb)}, {"medium-15M", mediumVoice(tb)}}
}

// oneThread is how the peer comparison (issue 15) runs both engines.
func oneThread() *ort.SessionOptions {
	return &ort.SessionOptions{IntraOpThreads: 1, Provider: ort.ProviderCPU}
}

// BenchmarkLoadPiper loads a voice (file read, check in Go, ONNX Runtime
// session) and closes it, on one thread, in this process: the session
// cache's cold load. conv1d loads the model as the file has it; lifted
// lifts its 1-D convolutions first (which makes ONNX Runtime's optimizing
// dearer); optimized-miss does that with an empty optimized-model cache
// (PiperOptions.OptimizedDir), so ONNX Runtime also writes its optimized
// model there, as a voice's first load in mynahd does; optimized-hit
// loads that copy, as every later one does. BenchmarkLoadProcess has the
// memory figures.
func BenchmarkLoadPiper(b *testing.B) {
	rt := enginetest.OpenRuntime(b)
	for _, v := range benchVoices(b) {
		for _, mode := range []string{"conv1d", "lifted", "optimized-miss", "optimized-hit"} {
			b.Run(v.name+"/"+mode, func(b *testing.B) {
				hitDir := b.TempDir()
				opts := func() *voice.PiperOptions {
					o := &voice.PiperOptions{Session: oneThread(), KeepConv1D: mode == "conv1d"}
					switch mode {
					case "optimized-miss":
						o.OptimizedDir = filepath.Join(b.TempDir(), "optimized")
					case "optimized-hit":
						o.OptimizedDir = hitDir
					}
					return o
				}
				// The first load pays ONNX Runtime's and espeak-ng's one-off
				// costs (and fills hitDir); the page cache holds the file for
				// every load after.
				p, err := voice.LoadPiper(rt, v.dir, opts())
				if err != nil {
					b.Fatal(err)
				}
				p.Close()
				b.ReportAllocs()
				for b.Loop() {
					p, err := voice.LoadPiper(rt, v.dir, opts())
					if err != nil {
						b.Fatal(err)
					}
					p.Close()
				}
			})
		}
	}
}

// loadProcessEnv names the voice TestLoadProcess loads, when set.
const loadProcessEnv = "MYNAH_TEST_LOAD_PROCESS"

// BenchmarkLoadProcess starts a fresh process (this test binary, running
// TestLoadProcess) that opens ONNX Runtime, loads a voice on one thread
// and speaks one sentence, as the peer comparison of issue 15 runs each
// engine, and reports medians of: the process's start to the loaded voice
// (ready-ms), its peak resident memory then (load-peak-MB), the peak
// after the sentence (peak-MB), and the resident memory once the Go heap
// has given back what it can (idle-MB; ONNX Runtime's C heap stays as
// glibc left it, which mynahd trims after speech).
func BenchmarkLoadProcess(b *testing.B) {
	for _, v := range benchVoices(b) {
		b.Run(v.name, func(b *testing.B) {
			var ready, loadPeak, peak, idle []float64
			for b.Loop() {
				r, ms := runLoadProcess(b, v.dir)
				ready = append(ready, ms)
				loadPeak = append(loadPeak, r.LoadPeakMB)
				peak = append(peak, r.PeakMB)
				idle = append(idle, r.IdleMB)
			}
			b.ReportMetric(medianOf(ready), "ready-ms")
			b.ReportMetric(medianOf(loadPeak), "load-peak-MB")
			b.ReportMetric(medianOf(peak), "peak-MB")
			b.ReportMetric(medianOf(idle), "idle-MB")
		})
	}
}

// runLoadProcess runs TestLoadProcess on the voice in dir and returns its
// report and the milliseconds from starting it to its line saying the
// voice is loaded.
func runLoadProcess(b *testing.B, dir string) (loadReport, float64) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestLoadProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), loadProcessEnv+"="+dir)
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var r loadReport
	var ready time.Duration
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		line := sc.Text()
		if line == "load-ready" {
			ready = time.Since(start)
		}
		if js, ok := strings.CutPrefix(line, "load-report "); ok {
			if err := json.Unmarshal([]byte(js), &r); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := cmd.Wait(); err != nil || ready == 0 || r.PeakMB == 0 {
		b.Fatalf("load process: %v (ready after %v, report %+v)", err, ready, r)
	}
	return r, float64(ready.Microseconds()) / 1000
}

// loadReport is what TestLoadProcess prints for BenchmarkLoadProcess.
type loadReport struct {
	LoadPeakMB, PeakMB, IdleMB float64
}

// TestLoadProcess is BenchmarkLoadProcess's child; without its variable
// it has nothing to do.
func TestLoadProcess(t *testing.T) {
	dir := os.Getenv(loadProcessEnv)
	if dir == "" {
		return
	}
	rt, err := ort.Open(nil)
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	p, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{Session: oneThread()})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	fmt.Println("load-ready")
	var r loadReport
	r.LoadPeakMB = procStatusMB(t, "VmHWM")
	err = p.Synthesize(context.Background(), voice.Request{Text: "The washing machine has finished, and the laundry is ready."},
		func(voice.Chunk) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	r.PeakMB = procStatusMB(t, "VmHWM")
	runtime.GC()
	debug.FreeOSMemory()
	r.IdleMB = procStatusMB(t, "VmRSS")
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("load-report %s\n", js)
}

// synthSentences are household announcements of different lengths: a
// sentence of a new length is a run of new input shapes, for which ONNX
// Runtime has no memory plan yet, as in use.
var synthSentences = []string{
	"The washing machine has finished, and the laundry is ready to be hung up outside.",
	"Dinner is ready.",
	"The front door has been open for ten minutes.",
	"Tomorrow will be sunny and warm, with a light breeze from the west in the afternoon.",
	"The garage door is closed.",
	"Please take the bins out tonight; the collection is early tomorrow morning.",
	"The oven has reached two hundred degrees.",
	"A parcel was left at the side door.",
	"The dishwasher needs more salt, and the rinse aid is running low as well.",
	"Grandma called.",
	"The living room window is still open, and it will rain within the hour.",
	"Your timer is done.",
}

// BenchmarkSynthesizeOneThread speaks the synthSentences in turn with
// each voice on one thread, as the peer comparison does, in mynahd's
// default setup (lifted: the 1-D convolutions lifted to 2-D at load;
// arena: ONNX Runtime's CPU arena, kept between the sentences of a burst
// and given back once the engine is idle, which it never is here) and
// with each part of it undone: conv1d (the model as the file has it),
// arena-shrink (the arena given back after every run, as the cloning and
// style voices do), arena-off (a malloc per tensor), extended (graph
// optimization one level down, without the blocked convolution kernels
// that lifting opens up on x86). It reports the real-time factor, the
// process's peak resident memory so far (the sub-benchmarks run in
// order) and its resident memory after the sentences, session still
// open. Run it under mynahd's glibc settings (MALLOC_ARENA_MAX=2
// MALLOC_MMAP_THRESHOLD_=262144), where allocation costs what it costs
// in the daemon.
func BenchmarkSynthesizeOneThread(b *testing.B) {
	rt := enginetest.OpenRuntime(b)
	for _, v := range benchVoices(b) {
		for _, mode := range []struct {
			name                  string
			arena, shrink, keep1D bool
			level                 ort.GraphOptimization
		}{
			{"lifted-arena", true, false, false, ort.GraphOptimizationAll},
			{"conv1d-arena", true, false, true, ort.GraphOptimizationAll},
			{"lifted-arena-shrink", true, true, false, ort.GraphOptimizationAll},
			{"lifted-arena-off", false, false, false, ort.GraphOptimizationAll},
			{"conv1d-arena-off", false, false, true, ort.GraphOptimizationAll},
			{"lifted-arena-extended", true, false, false, ort.GraphOptimizationExtended},
		} {
			so := oneThread()
			so.CPUArena, so.ArenaShrink, so.GraphOptimization = mode.arena, mode.shrink, mode.level
			b.Run(v.name+"/"+mode.name, func(b *testing.B) { synthesizeSentences(b, rt, v.dir, so, mode.keep1D) })
		}
	}
}

func synthesizeSentences(b *testing.B, rt *ort.Runtime, dir string, so *ort.SessionOptions, keep1D bool) {
	p, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{Session: so, KeepConv1D: keep1D})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var audioDur, synth time.Duration
	speak := func(text string) {
		start := time.Now()
		err := p.Synthesize(context.Background(), voice.Request{Text: text}, func(c voice.Chunk) error {
			audioDur += c.PCM.Duration()
			return nil
		})
		synth += time.Since(start)
		if err != nil {
			b.Fatal(err)
		}
	}
	speak("Hello.") // ONNX Runtime's first run of a session
	audioDur, synth = 0, 0
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		speak(synthSentences[i%len(synthSentences)])
	}
	b.ReportMetric(synth.Seconds()/audioDur.Seconds(), "rtf")
	b.ReportMetric(procStatusMB(b, "VmHWM"), "peak-MB")
	b.ReportMetric(procStatusMB(b, "VmRSS"), "rss-MB")
}

func medianOf(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return s[len(s)/2]
}
