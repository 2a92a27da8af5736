package peer_test

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/audio/voice/peer"
	"github.com/mynah-tts/mynah/quant/benchmodel"
)

// The benchmark's settings, from the environment (scripts/bench-peer.sh
// sets the first three).
const (
	nodeModulesEnv = "MYNAH_PEER_NODE_MODULES" // where sherpa-onnx-node is installed
	espeakDataEnv  = "MYNAH_PEER_ESPEAK_DATA"  // espeak-ng-data for sherpa
	dirEnv         = "MYNAH_PEER_DIR"          // where the models are written (default: a temp dir)
	roundsEnv      = "MYNAH_PEER_ROUNDS"       // timed rounds of the sentences (default 3)
	startsEnv      = "MYNAH_PEER_STARTS"       // worker starts per side (default 11: 5 later starts)
	firstsEnv      = "MYNAH_PEER_FIRSTS"       // of them, first starts: no optimized copy (default 3)
	installsEnv    = "MYNAH_PEER_INSTALLS"     // of them, starts right after an install's prepare (default 3)
	nodeEnv        = "MYNAH_PEER_NODE"         // the node binary (default: node on PATH)
)

// debianEspeakData is where Debian's espeak-ng-data package puts it on x64.
const debianEspeakData = "/usr/lib/x86_64-linux-gnu/espeak-ng-data"

// peerSentences are what both sides speak, one call per sentence: short
// announcements as a home assistant makes them, one sentence each (no
// abbreviations or numbers the two front ends could read differently),
// short enough that mynah never cuts one into two runs.
var peerSentences = []string{
	"The washing machine has finished.",
	"Good morning, it is seven degrees and cloudy outside.",
	"Someone is at the front door.",
	"The garage door has been open for ten minutes.",
	"Your train to the city leaves in twenty minutes.",
	"Please remember to take out the recycling tonight.",
	"The living room window is still open, and it is starting to rain.",
	"Dinner will be ready in about a quarter of an hour.",
	"The battery of the smoke detector in the hallway is running low.",
	"Welcome home, the heating is on and the lights are ready.",
}

// peerModel writes one Piper voice into dir and returns its .onnx path.
type peerModel struct {
	name  string
	write func(dir string) (string, error)
}

var peerModels = []peerModel{
	{"demo", func(dir string) (string, error) { return demo.Write(dir, nil) }},
	{"medium", func(dir string) (string, error) { return writeBenchVoice(dir, nil) }},
}

// writeBenchVoice writes benchmodel's model (with nil opts the 15
// M-parameter Piper-medium-shaped one) as a Piper voice: NAME.onnx and the
// NAME.onnx.json that Piper medium voices carry, with benchmodel's
// phoneme_id_map.
func writeBenchVoice(dir string, opts *benchmodel.Options) (string, error) {
	model, err := benchmodel.PiperMedium(opts)
	if err != nil {
		return "", err
	}
	var cfg voice.PiperConfig
	cfg.Audio.SampleRate = benchmodel.SampleRate
	cfg.Audio.Quality = "medium"
	cfg.Espeak.Voice = "en-us"
	cfg.Inference = voice.Inference{NoiseScale: voice.DefaultNoiseScale, LengthScale: voice.DefaultLengthScale, NoiseW: voice.DefaultNoiseW}
	cfg.PhonemeType = voice.PhonemeEspeak
	cfg.PhonemeIDMap = benchmodel.PhonemeIDMap()
	cfg.NumSymbols = benchmodel.DefaultSymbols
	cfg.NumSpeakers = 1
	cfg.Language.Code = "en_US"
	cfg.Dataset = "piper-medium-bench"
	js, err := json.MarshalIndent(&cfg, "", "  ")
	if err != nil {
		return "", err
	}
	path := filepath.Join(dir, "piper-medium.onnx")
	if err := os.WriteFile(path+".json", js, 0o644); err != nil {
		return "", err
	}
	return path, os.WriteFile(path, model, 0o644)
}

// BenchmarkPeerSherpa compares mynah with sherpa-onnx (npm
// sherpa-onnx-node, its own ONNX Runtime) on the same Piper-contract
// models, each side in a worker process of its own with one intra-op
// thread: synthesis of the same sentences, interleaved sentence by
// sentence so that both meet the same machine; the cold load inside the
// worker; process start to ready; and peak RSS (VmHWM) after the load and
// one pass over the sentences. mynah's worker runs as mynahd does,
// glibc's allocator tuned alike (mynahdMalloc; MYNAH_MALLOC_TUNE=0 turns
// that off, for measuring). Ratios are mynah/sherpa: below 1 is mynah
// ahead. scripts/bench-peer.sh installs sherpa, runs this and prints one
// table per model.
func BenchmarkPeerSherpa(b *testing.B) {
	env := peerEnv(b)
	for _, m := range peerModels {
		b.Run(m.name, func(b *testing.B) {
			pair := preparePair(b, env, m)
			var r peerResult
			for range b.N {
				r = measurePeers(b, env, pair)
			}
			r.report(b)
		})
	}
}

// peerSetup is the benchmark's environment, checked.
type peerSetup struct {
	nodeModules, espeakData, workerJS, node, dir string
	rounds, starts, firsts, installs             int
}

func peerEnv(b *testing.B) peerSetup {
	nm := os.Getenv(nodeModulesEnv)
	if nm == "" {
		b.Skipf("sherpa-onnx is not set up: run `make bench-peer` (installs sherpa-onnx-node into .peer/ and runs this with %s set)", nodeModulesEnv)
	}
	s := peerSetup{nodeModules: nm, espeakData: os.Getenv(espeakDataEnv), dir: os.Getenv(dirEnv), node: os.Getenv(nodeEnv)}
	if _, err := os.Stat(filepath.Join(nm, "sherpa-onnx-node", "package.json")); err != nil {
		b.Fatalf("%s=%s holds no sherpa-onnx-node (run make bench-peer): %v", nodeModulesEnv, nm, err)
	}
	if s.espeakData == "" {
		s.espeakData = debianEspeakData
	}
	if _, err := os.Stat(filepath.Join(s.espeakData, "phontab")); err != nil {
		b.Fatalf("no espeak-ng-data at %s (scripts/setup.sh installs Debian's espeak-ng-data; or set %s): %v", s.espeakData, espeakDataEnv, err)
	}
	js, err := filepath.Abs(filepath.Join("..", "..", "..", "scripts", "peer", "sherpa-worker.js"))
	if err != nil {
		b.Fatal(err)
	}
	s.workerJS = js
	if s.node == "" {
		if s.node, err = exec.LookPath("node"); err != nil {
			b.Fatalf("node not found (apt-get install nodejs, or set %s): %v", nodeEnv, err)
		}
	}
	if s.dir == "" {
		s.dir = b.TempDir()
	}
	s.rounds = envInt(b, roundsEnv, 3)
	s.starts = envInt(b, startsEnv, 11)
	s.firsts = envInt(b, firstsEnv, 3)
	s.installs = envInt(b, installsEnv, 3)
	if s.starts < s.firsts+s.installs+1 {
		b.Fatalf("%s=%d: want at least %s+%s+1 = %d (mynah's first %d starts find no optimized copy, the next %d each follow an install's prepare, the others are later starts)",
			startsEnv, s.starts, firstsEnv, installsEnv, s.firsts+s.installs+1, s.firsts, s.installs)
	}
	return s
}

func envInt(b *testing.B, name string, def int) int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > 100 {
		b.Fatalf("%s=%q: want a count 1..100", name, v)
	}
	return n
}

// peerPair is one model as each side loads it.
type peerPair struct {
	voicesDir, voiceName string // mynah: the original voice, in a voices directory
	model                string // mynah: the voice's model file
	optimizedDir         string // mynah: its optimized-model cache, empty at the first start
	sherpa               *peer.SherpaVoice
}

// preparePair writes the model as a voice mynah loads unchanged, and the
// copy sherpa loads.
func preparePair(b *testing.B, env peerSetup, m peerModel) peerPair {
	b.Helper()
	root := filepath.Join(env.dir, m.name)
	voicesDir := filepath.Join(root, "mynah")
	if err := os.RemoveAll(root); err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(voicesDir, m.name), 0o755); err != nil {
		b.Fatal(err)
	}
	progress("%s: writing the voice", m.name)
	path, err := m.write(filepath.Join(voicesDir, m.name))
	if err != nil {
		b.Fatalf("%s: write voice: %v", m.name, err)
	}
	progress("%s: exporting it for sherpa-onnx (metadata_props, tokens.txt)", m.name)
	sv, err := peer.ExportSherpa(path, filepath.Join(root, "sherpa"))
	if err != nil {
		b.Fatal(err)
	}
	if len(sv.Skipped) > 0 {
		b.Logf("%s: tokens.txt leaves out %d symbols sherpa cannot hold (one codepoint, one id each): %q", m.name, len(sv.Skipped), sv.Skipped)
	}
	// The two copies just written (60 MB each for the 15 M model) go to
	// the disk now, not by the kernel's writeback during a timed load.
	syscall.Sync()
	return peerPair{voicesDir: voicesDir, voiceName: m.name, model: path, optimizedDir: filepath.Join(root, "optimized"), sherpa: sv}
}

func progress(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "peer: "+format+"\n", args...)
}

// side is one runtime's numbers for one model.
type side struct {
	name      string
	runtime   string
	load      []float64 // ms, one per start
	ready     []float64 // ms, one per start
	rounds    []float64 // ms, the sentences' sum per timed round
	sentences [][]float64
	audio     float64 // seconds of audio of one pass over the sentences
	loadPeak  int64   // bytes, VmHWM once loaded
	peak      int64   // bytes, VmHWM after the load and one pass
	base      int64   // bytes, RSS before the load
}

type peerResult struct {
	mynah, sherpa side
	prepare       []float64 // ms, mynah voice install's prepare, one per install start
	later         int       // later starts
}

// mynahCmd is a start of the mynah worker; wantOptimized makes it fail
// unless the voice loads from its optimized copy.
func (p peerPair) mynahCmd(wantOptimized bool) *exec.Cmd {
	want := "0"
	if wantOptimized {
		want = "1"
	}
	cmd := exec.Command(selfExe())
	cmd.Env = mynahdMalloc(append(os.Environ(), workerEnv+"=mynah", voicesEnv+"="+p.voicesDir, voiceEnv+"="+p.voiceName,
		optimizedEnv+"="+p.optimizedDir, wantOptimizedEnv+"="+want))
	return cmd
}

// prepare runs what `mynah voice install` does once the files are in
// place (the prepare role) and returns its time in ms.
func (p peerPair) prepare(b *testing.B) float64 {
	b.Helper()
	cmd := exec.Command(selfExe())
	cmd.Env = append(os.Environ(), workerEnv+"=mynah-prepare", modelEnv+"="+p.model, optimizedEnv+"="+p.optimizedDir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s: prepare: %v\n%s", p.voiceName, err, stderr.String())
	}
	var line preparedLine
	if err := json.Unmarshal(out, &line); err != nil || line.PrepareMS <= 0 {
		b.Fatalf("%s: prepare printed %q (%v)", p.voiceName, out, err)
	}
	return line.PrepareMS
}

func selfExe() string {
	self, err := os.Executable()
	if err != nil {
		return os.Args[0]
	}
	return self
}

func (p peerPair) sherpaCmd(env peerSetup) *exec.Cmd {
	inf := p.sherpa.Config.Inference
	f := func(v float32) string { return strconv.FormatFloat(float64(v), 'g', -1, 32) }
	cmd := exec.Command(env.node, env.workerJS,
		"--model", p.sherpa.Model, "--tokens", p.sherpa.Tokens, "--data-dir", env.espeakData,
		"--noise-scale", f(inf.NoiseScale), "--noise-w", f(inf.NoiseW), "--length-scale", f(inf.LengthScale))
	cmd.Env = append(os.Environ(), "NODE_PATH="+env.nodeModules)
	return cmd
}

// measurePeers starts both workers env.starts times, alternating (the
// last pair stays up), then speaks the sentences interleaved: one pass to
// warm up, after which peak RSS is read, then env.rounds timed passes.
//
// mynah's first env.firsts starts are of a voice copied in by hand: no
// optimized copy, so it loads the model as its file has it and builds the
// copy in the background. Each is closed before sherpa's start of the pair
// (its close waits for the build), so that sherpa does not share the
// machine with it, and the copy is thrown away before the next. Before
// each of the next env.installs starts the copy is thrown away and the
// install's prepare builds it again, timed, so each is a first start
// after `mynah voice install`; the others are later starts.
func measurePeers(b *testing.B, env peerSetup, p peerPair) peerResult {
	b.Helper()
	r := peerResult{mynah: side{name: "mynah"}, sherpa: side{name: "sherpa"}, later: env.starts - env.firsts - env.installs}
	var mw, sw *peer.Worker
	for i := range env.starts {
		first, install := i < env.firsts, i >= env.firsts && i < env.firsts+env.installs
		if first || install {
			if err := os.RemoveAll(p.optimizedDir); err != nil {
				b.Fatal(err)
			}
		}
		if install {
			progress("%s: mynah voice install's prepare", p.voiceName)
			r.prepare = append(r.prepare, p.prepare(b))
		}
		progress("%s: start %d/%d of each worker", p.voiceName, i+1, env.starts)
		mw = startSide(b, &r.mynah, p.mynahCmd(!first))
		if first {
			closeWorker(b, mw)
		}
		sw = startSide(b, &r.sherpa, p.sherpaCmd(env))
		if i < env.starts-1 {
			if !first {
				closeWorker(b, mw)
			}
			closeWorker(b, sw)
		}
	}
	defer closeWorker(b, mw)
	defer closeWorker(b, sw)

	workers := []*peer.Worker{mw, sw}
	sides := []*side{&r.mynah, &r.sherpa}
	progress("%s: warm-up pass over %d sentences", p.voiceName, len(peerSentences))
	for _, s := range peerSentences {
		for i, w := range workers {
			said := say(b, w, s)
			sides[i].audio += float64(said.Samples) / float64(w.Ready.SampleRate)
		}
	}
	for i, w := range workers {
		peak, err := w.PeakRSS()
		if err != nil {
			b.Fatal(err)
		}
		sides[i].peak = peak
	}
	for round := range env.rounds {
		progress("%s: timed pass %d/%d", p.voiceName, round+1, env.rounds)
		sums := make([]float64, 2)
		per := make([][]float64, 2)
		for _, s := range peerSentences {
			for i, w := range workers {
				said := say(b, w, s)
				sums[i] += said.MS
				per[i] = append(per[i], said.MS)
			}
		}
		for i := range sides {
			sides[i].rounds = append(sides[i].rounds, sums[i])
			sides[i].sentences = append(sides[i].sentences, per[i])
		}
	}
	checkAudio(b, r)
	return r
}

func startSide(b *testing.B, s *side, cmd *exec.Cmd) *peer.Worker {
	b.Helper()
	w, err := peer.StartWorker(s.name, cmd, nil)
	if err != nil {
		b.Fatal(err)
	}
	s.runtime = w.Ready.Runtime
	s.load = append(s.load, w.Ready.LoadMS)
	s.ready = append(s.ready, ms(w.StartToReady))
	s.base = w.Ready.BaseRSSKB << 10
	if s.loadPeak, err = w.PeakRSS(); err != nil {
		b.Fatal(err)
	}
	return w
}

func say(b *testing.B, w *peer.Worker, text string) peer.Said {
	b.Helper()
	said, err := w.Say(text)
	if err != nil {
		b.Fatal(err)
	}
	if said.Samples == 0 {
		b.Fatalf("%s: no audio for %q", w.Name, text)
	}
	return said
}

func closeWorker(b *testing.B, w *peer.Worker) {
	b.Helper()
	if err := w.Close(); err != nil {
		b.Error(err)
	}
}

// checkAudio fails the benchmark when one side's audio is far from the
// other's: then they did not synthesize the same thing, and the times
// compare nothing. (Both front ends are espeak-ng with Debian's data, and
// the lengths come out equal; the margin is for another espeak-ng.)
func checkAudio(b *testing.B, r peerResult) {
	b.Helper()
	if q := r.mynah.audio / r.sherpa.audio; q < 0.9 || q > 1.1 {
		b.Errorf("audio of one pass: mynah %.2f s, sherpa %.2f s (%.2f×): the two sides do not say the same", r.mynah.audio, r.sherpa.audio, q)
	}
}

// pairedRatio is the median of m[i]/s[i].
func pairedRatio(m, s []float64) float64 {
	q := make([]float64, len(m))
	for i := range m {
		q[i] = m[i] / s[i]
	}
	return median(q)
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// report puts each metric as raw numbers and a mynah/sherpa ratio. Times
// are medians (over the timed rounds, over the starts); their ratio is the
// median of the paired ratios, each of two measurements taken back to
// back, so that a machine that slows down for a while (others' jobs on a
// shared box) slows both sides of a pair.
func (r peerResult) report(b *testing.B) {
	n := float64(len(peerSentences))
	m, s := r.mynah, r.sherpa
	firsts := len(m.load) - len(r.prepare) - r.later // the first install start
	later := firsts + len(r.prepare)                 // the first later start
	mb := func(v int64) float64 { return float64(v) / (1 << 20) }
	metrics := []struct {
		key          string
		mynah, sherp float64
		ratio        float64
	}{
		{"synth-ms/sentence", median(m.rounds) / n, median(s.rounds) / n, pairedRatio(m.rounds, s.rounds)},
		// The first starts are mynah's only loads from the model file,
		// and the next ones each its first after an install's prepare:
		// they stand apart from the later starts.
		{"firstload-ms", median(m.load[:firsts]), median(s.load[:firsts]), pairedRatio(m.load[:firsts], s.load[:firsts])},
		{"installload-ms", median(m.load[firsts:later]), median(s.load[firsts:later]), pairedRatio(m.load[firsts:later], s.load[firsts:later])},
		{"load-ms", median(m.load[later:]), median(s.load[later:]), pairedRatio(m.load[later:], s.load[later:])},
		{"ready-ms", median(m.ready), median(s.ready), pairedRatio(m.ready, s.ready)},
		{"peak-MB", mb(m.peak), mb(s.peak), float64(m.peak) / float64(s.peak)},
	}
	for _, x := range metrics {
		b.ReportMetric(x.mynah, "mynah-"+x.key)
		b.ReportMetric(x.sherp, "sherpa-"+x.key)
		b.ReportMetric(x.ratio, ratioUnit(x.key))
	}
	b.ReportMetric(median(r.prepare), "mynah-prepare-ms")
	b.ReportMetric(m.audio, "mynah-audio-s")
	b.ReportMetric(s.audio, "sherpa-audio-s")
	b.ReportMetric(mb(m.base), "mynah-base-MB")
	b.ReportMetric(mb(s.base), "sherpa-base-MB")
	b.ReportMetric(mb(m.loadPeak), "mynah-loadpeak-MB")
	b.ReportMetric(mb(s.loadPeak), "sherpa-loadpeak-MB")
	b.ReportMetric(0, "ns/op") // the whole comparison's time says nothing
	b.Logf("mynah: %s; sherpa: %s", m.runtime, s.runtime)
	b.Logf("synthesis of %d sentences per timed round (ms): mynah %.1f, sherpa %.1f", len(peerSentences), m.rounds, s.rounds)
	b.Logf("mynah voice install's prepare (ms): %.1f", r.prepare)
	b.Logf("cold load (ms): mynah %.1f, sherpa %.1f; start→ready (ms): mynah %.1f, sherpa %.1f", m.load, s.load, m.ready, s.ready)
	b.Logf("audio of one pass: mynah %.2f s, sherpa %.2f s", m.audio, s.audio)
	b.Logf("RSS before the load: mynah %.1f MB, sherpa %.1f MB; peak once loaded: mynah %.1f MB, sherpa %.1f MB", mb(m.base), mb(s.base), mb(m.loadPeak), mb(s.loadPeak))
	for i := range peerSentences {
		b.Logf("sentence %2d (ms per round): mynah %.1f  sherpa %.1f", i+1, column(m.sentences, i), column(s.sentences, i))
	}
}

func ratioUnit(key string) string {
	name, _, _ := strings.Cut(key, "/")
	return "ratio-" + name
}

func column(rows [][]float64, i int) []float64 {
	out := make([]float64, len(rows))
	for r, row := range rows {
		out[r] = row[i]
	}
	return out
}
