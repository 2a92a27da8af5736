package main

// A voice's first mynahd start right after `mynah voice install`: the
// real CLI installs the 15 M-parameter Piper-shaped voice from an offline
// (file://) copy of a collection, then the mynahd binary starts on it.

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/systemd/systemdtest"
)

// benchKey is the 15 M voice's key in the served collection.
const benchKey = "en_US-bench-medium"

// buildMynah builds the CLI binary.
func buildMynah(t testing.TB) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mynah")
	goBin := filepath.Join(runtime.GOROOT(), "bin", "go")
	if out, err := exec.Command(goBin, "build", "-o", bin, "../mynah").CombinedOutput(); err != nil {
		t.Fatalf("go build mynah: %v\n%s", err, out)
	}
	return bin
}

// benchCollection writes a collection holding the 15 M voice as
// benchKey into a directory of t's and returns its file:// URL.
func benchCollection(t testing.TB) string {
	t.Helper()
	model, err := benchmodel.PiperMedium(nil)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	catalogtest.WriteCollection(t, root, catalogtest.Voice{Key: benchKey, Model: model, Config: benchmodel.PiperConfig()})
	return "file://" + root + "/"
}

// firstStart is one voice install and the two mynahd starts after it.
type firstStart struct {
	install       time.Duration // mynah voice install from the offline copy, prepare included
	ready         [2]time.Duration
	firstAudio    [2]float64 // ms, the say's first_audio_ms (received → first PCM at the sink)
	optimizedDir  string
	before, after map[string]time.Time // the optimized copy's files before and after the first start
	logs          [2]string
}

// installAndStart installs benchKey with the mynah CLI into a voices
// directory mynahd has run on before (with the demo voice: its cache and
// spool files exist, as on a device in use), then starts the mynahd
// binary twice with benchKey as the default voice (the first start after
// the install, then a later one), each time timing exec → READY=1 and
// asking for one sentence.
func installAndStart(t testing.TB, mynah, mynahd, collection, broker string) firstStart {
	t.Helper()
	dir := t.TempDir()
	r := firstStart{optimizedDir: filepath.Join(dir, "optimized")}
	conf := filepath.Join(dir, "mynahd.yaml")
	writeConf := func(defaultVoice string) {
		if err := os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker+"\nvoices:\n  dir: "+dir+"/voices\n  default: "+defaultVoice+
			"\n  catalog_url: "+collection+"voices.json\n  download_url: "+collection+
			"\nonnx:\n  optimized_dir: "+r.optimizedDir+"\ncache:\n  file: "+dir+"/cache.db\naudio:\n  device: \"null\"\nlog:\n  level: info\n"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(dir, "voices", demo.Name), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Write(filepath.Join(dir, "voices", demo.Name), nil); err != nil {
		t.Fatal(err)
	}
	writeConf(demo.Name)
	events := collectEvents(mqtttest.Subscribe(t, broker, "mynah/den/event"))
	startAndSay(t, mynahd, conf, broker, events, "before")
	warm, err := fileTimes(r.optimizedDir)
	if err != nil {
		t.Fatal(err)
	}

	writeConf(benchKey)
	var out []byte
	start := time.Now()
	out, err = exec.Command(mynah, "voice", "install", "--config", conf, benchKey).CombinedOutput()
	if err != nil {
		t.Fatalf("mynah voice install: %v\n%s", err, out)
	}
	r.install = time.Since(start)
	if r.before, err = fileTimes(r.optimizedDir); err != nil {
		t.Fatal(err)
	}
	if len(r.before) <= len(warm) {
		t.Fatalf("the install prepared nothing in %s:\n%s", r.optimizedDir, out)
	}
	for i := range 2 {
		r.ready[i], r.firstAudio[i], r.logs[i] = startAndSay(t, mynahd, conf, broker, events, fmt.Sprintf("start%d", i))
		if i == 0 {
			if r.after, err = fileTimes(r.optimizedDir); err != nil {
				t.Fatal(err)
			}
		}
	}
	return r
}

// startAndSay starts the mynahd binary on conf, waits for READY=1, has it
// say one sentence (uncached) as request id and stops it; it returns the
// time to READY, the say's first_audio_ms and mynahd's log.
func startAndSay(t testing.TB, mynahd, conf, broker string, events *eventLog, id string) (ready time.Duration, firstAudio float64, log string) {
	t.Helper()
	sd := systemdtest.New(t)
	cmd := exec.Command(mynahd, "-config", conf)
	var stderr lockedBuffer
	cmd.Stderr = &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	sd.Expect("READY=1")
	ready = time.Since(start)
	mqtttest.Publish(t, broker, "mynah/den/say", fmt.Appendf(nil, `{"id":%q,"text":"The garage door is closed.","cache":false}`, id), false)
	e := events.wait(t, id, daemon.EventStarted)
	if e.FirstAudioMS == nil {
		t.Fatalf("%s: started event without first_audio_ms", id)
	}
	events.wait(t, id, daemon.EventFinished)
	cmd.Process.Signal(os.Interrupt)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("mynahd (%s): %v\n%s", id, err, &stderr)
	}
	return ready, *e.FirstAudioMS, stderr.String()
}

// wait returns the event of request id in state, failing after wait.
func (l *eventLog) wait(t testing.TB, id, state string) daemon.Event {
	t.Helper()
	for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, e := range l.snapshot() {
			if e.ID == id && e.State == state {
				return e
			}
			if e.ID == id && (e.State == daemon.EventFailed || e.State == daemon.EventDropped) {
				t.Fatalf("%s: %s (%s: %s)", id, e.State, e.Reason, e.Error)
			}
		}
	}
	t.Fatalf("%s: no %s event within %v", id, state, wait)
	return daemon.Event{}
}

// fileTimes lists the files under dir with their modification times.
func fileTimes(dir string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = info.ModTime()
		return nil
	})
	return out, err
}

// TestFirstStartAfterInstall: after `mynah voice install` the voice's
// first mynahd start is a later start in every respect: it loads the
// optimized copy the install prepared (the log says optimized=true) and
// builds, writes and switches nothing (the copy's files are untouched,
// no switch is logged), so READY and the first audio take what a later
// start takes. BenchmarkFirstStartAfterInstall times the two.
func TestFirstStartAfterInstall(t *testing.T) {
	mynah, mynahd := buildMynah(t), buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	r := installAndStart(t, mynah, mynahd, benchCollection(t), broker.URL())
	for i, log := range r.logs {
		loaded := ""
		for line := range strings.Lines(log) {
			if strings.Contains(line, `msg="voice loaded"`) && strings.Contains(line, "voice="+benchKey) {
				loaded = line
			}
		}
		if !strings.Contains(loaded, "optimized=true") {
			t.Errorf("start %d: the voice did not load its optimized copy: %q\n%s", i+1, loaded, log)
		}
		if strings.Contains(log, "switched to its optimized copy") {
			t.Errorf("start %d switched to an optimized copy, so it had loaded without:\n%s", i+1, log)
		}
	}
	if len(r.after) != len(r.before) {
		t.Errorf("the first start changed the optimized copies: %d files before, %d after", len(r.before), len(r.after))
	}
	for p, mt := range r.before {
		if !r.after[p].Equal(mt) {
			t.Errorf("the first start rewrote %s", p)
		}
	}
	t.Logf("install %v; start → READY %v then %v; first audio %.1f then %.1f ms",
		r.install.Round(time.Millisecond), r.ready[0].Round(time.Millisecond), r.ready[1].Round(time.Millisecond), r.firstAudio[0], r.firstAudio[1])
}

// BenchmarkFirstStartAfterInstall installs the 15 M voice with `mynah
// voice install` (offline copy: the download is a local file copy) and
// starts mynahd on it twice, per op: install-ms (the whole command,
// checksums and the optimized copy's build included), ready-ms and
// first-audio-ms of the first start after the install and of the later
// one, and the first/later ratios (medians of the ops' pairs).
func BenchmarkFirstStartAfterInstall(b *testing.B) {
	mynah, mynahd := buildMynah(b), buildMynahd(b)
	broker := mqtttest.StartMosquitto(b)
	collection := benchCollection(b)
	var install, ready, later, audio, laterAudio, readyRatio, audioRatio []float64
	for b.Loop() {
		r := installAndStart(b, mynah, mynahd, collection, broker.URL())
		install = append(install, ms(r.install))
		ready, later = append(ready, ms(r.ready[0])), append(later, ms(r.ready[1]))
		audio, laterAudio = append(audio, r.firstAudio[0]), append(laterAudio, r.firstAudio[1])
		readyRatio = append(readyRatio, ms(r.ready[0])/ms(r.ready[1]))
		audioRatio = append(audioRatio, r.firstAudio[0]/r.firstAudio[1])
	}
	b.ReportMetric(medianOf(install), "install-ms")
	b.ReportMetric(medianOf(ready), "first-ready-ms")
	b.ReportMetric(medianOf(later), "later-ready-ms")
	b.ReportMetric(medianOf(audio), "first-audio-ms")
	b.ReportMetric(medianOf(laterAudio), "later-audio-ms")
	b.ReportMetric(medianOf(readyRatio), "ready-first/later")
	b.ReportMetric(medianOf(audioRatio), "audio-first/later")
	b.ReportMetric(0, "ns/op")
}

func medianOf(v []float64) float64 {
	s := append([]float64(nil), v...)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
