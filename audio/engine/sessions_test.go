package engine

// Tests of the voice session cache as the engine wires it: real ONNX
// Runtime and copies of the demo voice under several names.

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// noCgroup is a memory probe without an answer, so that a test does not
// depend on the cgroup limits of the machine it runs on.
type noCgroup struct{}

func (noCgroup) Available() (int64, bool) { return 0, false }

// testEngine opens the voices in dir with sc, logging into a recorder.
// The cgroup probe is replaced by noCgroup.
func testEngine(t *testing.T, dir, def string, sc SessionOptions) (*Engine, *enginetest.Recorder) {
	t.Helper()
	rec := enginetest.NewRecorder()
	log := slog.New(rec)
	vs, err := Open(&Options{Runtime: enginetest.OpenRuntime(t), Dir: dir, Default: def, Sessions: sc, Piper: &voice.PiperOptions{Logger: log}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	vs.sessions.Close()
	opts := sessionOptions(sc, vs.def, vs.load, vs.unload, log)
	m := opts.Memory.(sessionMemory)
	m.cgroup = noCgroup{}
	opts.Memory = m
	vs.sessions = newSessionLRU(opts)
	t.Cleanup(func() { vs.Close() })
	return vs, rec
}

// speak says a short sentence in voiceName and fails the test unless audio
// came out.
func speak(t *testing.T, vs *Engine, voiceName string) {
	t.Helper()
	samples := 0
	err := vs.Speak(context.Background(), Request{Voice: voiceName, Text: "Hello."}, func(c Chunk) error {
		samples += len(c.PCM.Samples)
		return nil
	})
	if err != nil || samples == 0 {
		t.Fatalf("speak in %s: %d samples, err %v", voiceName, samples, err)
	}
}

// testSessions are mynahd's default bounds without the memory checks.
func testSessions() SessionOptions {
	return SessionOptions{MaxCount: DefaultMaxSessions}
}

// TestSessionsEvictLeastRecentlyUsed: past max_count the least recently
// used idle voice is closed — not the oldest loaded, not a pinned one, not
// the default — and a warm voice is never loaded again.
func TestSessionsEvictLeastRecentlyUsed(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a", "b", "c", "dflt", "pin")
	sc := testSessions()
	sc.MaxCount, sc.Preload, sc.Pinned = 4, []string{"pin"}, []string{"pin"}
	vs, rec := testEngine(t, dir, "dflt", sc)
	if _, err := vs.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	speak(t, vs, "a")
	speak(t, vs, "b")
	speak(t, vs, "a") // a is now more recent than b
	if got := rec.VoicesWith("voice unloaded"); len(got) != 0 {
		t.Fatalf("unloaded %v within max_count 4", got)
	}
	speak(t, vs, "c") // fifth voice: b goes
	if got := rec.VoicesWith("voice unloaded"); !slices.Equal(got, []string{"b"}) {
		t.Fatalf("unloaded %v, want [b] (least recently used)", got)
	}
	for _, v := range []string{"pin", "dflt", "a", ""} {
		speak(t, vs, v) // all warm: no load
	}
	speak(t, vs, "b") // cold again; c is now the least recently used
	if got := rec.VoicesWith("voice unloaded"); !slices.Equal(got, []string{"b", "c"}) {
		t.Fatalf("unloaded %v, want [b c]", got)
	}
	if got := rec.VoicesWith("voice loaded"); !slices.Equal(got, []string{"dflt", "pin", "a", "b", "c", "b"}) {
		t.Fatalf("loads %v, want [dflt pin a b c b]", got)
	}
	if st := vs.sessions.Stats(); st.Sessions != 4 || st.Evictions != 2 {
		t.Fatalf("stats %+v, want 4 sessions after 2 evictions", st)
	}
}

// TestSessionsMemoryPressureKeepsPins: with memory_budget below what the
// process already uses, the timer closes every idle unpinned voice and
// keeps the default and the pinned ones.
func TestSessionsMemoryPressureKeepsPins(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a", "dflt", "pin")
	sc := testSessions()
	sc.Preload, sc.Pinned = []string{"pin"}, []string{"pin"}
	sc.MemoryBudget, sc.LowWater, sc.CheckInterval = 16<<20, 15<<20, time.Second
	vs, rec := testEngine(t, dir, "dflt", sc)
	if _, err := vs.Preload(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Pressure needs the process (Go runtime, ONNX Runtime, two voices) to
	// use more than budget − low_water, 1 MiB.
	if n := anonResidentBytes(); n < sc.MemoryBudget-sc.LowWater {
		t.Fatalf("anonymous resident memory %d is under 1 MiB: /proc/self/statm unread?", n)
	}
	speak(t, vs, "a")
	rec.WaitFor(t, "voice unloaded", "a")
	if got := rec.VoicesWith("voice unloaded"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("unloaded %v, want only [a]", got)
	}
	if st := vs.sessions.Stats(); st.Sessions != 2 || st.PressureEvictions != 1 {
		t.Fatalf("stats %+v, want the 2 pinned sessions left after 1 pressure eviction", st)
	}
}

// TestSessionsConcurrentColdLoad: two requests for one cold voice load it
// once. The load is held until both requests wait for it.
func TestSessionsConcurrentColdLoad(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a", "dflt")
	vs, rec := testEngine(t, dir, "dflt", testSessions())
	hold := make(chan struct{})
	vs.loading = func(name string) {
		if name == "a" {
			<-hold
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, 2)
	samples := make([]int, 2)
	for i := range 2 {
		wg.Go(func() {
			errs[i] = vs.Speak(context.Background(), Request{Voice: "a", Text: "Hello."}, func(c Chunk) error {
				samples[i] += len(c.PCM.Samples)
				return nil
			})
		})
	}
	for deadline := time.Now().Add(enginetest.Wait); vs.sessions.Stats().Misses < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			close(hold)
			t.Fatalf("the two requests never both waited: %+v", vs.sessions.Stats())
		}
	}
	close(hold)
	wg.Wait()
	for i := range 2 {
		if errs[i] != nil || samples[i] == 0 {
			t.Fatalf("request %d: %d samples, err %v", i, samples[i], errs[i])
		}
	}
	if got := rec.VoicesWith("voice loaded"); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("loads %v, want [a] once", got)
	}
	if st := vs.sessions.Stats(); st.Loads != 1 {
		t.Fatalf("stats %+v, want 1 load", st)
	}
}

func TestSessionMemory(t *testing.T) {
	tests := []struct {
		name   string
		m      sessionMemory
		avail  int64
		answer bool
	}{
		{"cgroup wins", sessionMemory{cgroup: fixedProbe{100, true}, budget: fixedProbe{5, true}}, 100, true},
		{"budget without cgroup limit", sessionMemory{cgroup: fixedProbe{0, false}, budget: fixedProbe{-5, true}}, -5, true},
		{"neither", sessionMemory{cgroup: fixedProbe{0, false}}, 0, false},
		{"budget without answer", sessionMemory{cgroup: fixedProbe{0, false}, budget: budgetMemory{}}, 0, false},
	}
	for _, tt := range tests {
		if avail, ok := tt.m.Available(); avail != tt.avail || ok != tt.answer {
			t.Errorf("%s: Available() = %d, %v; want %d, %v", tt.name, avail, ok, tt.avail, tt.answer)
		}
	}
}

type fixedProbe struct {
	avail int64
	ok    bool
}

func (p fixedProbe) Available() (int64, bool) { return p.avail, p.ok }

// TestSessionOptions: the config reaches the session cache, with the
// default voice pinned first.
func TestSessionOptions(t *testing.T) {
	sc := SessionOptions{MaxCount: 3, MaxBytes: 5 << 20, Pinned: []string{"x"}, LowWater: 7, MemoryBudget: 1 << 30, CheckInterval: time.Minute}
	o := sessionOptions(sc, "dflt", nil, nil, nil)
	if o.MaxCount != 3 || o.MaxBytes != 5<<20 || !slices.Equal(o.Pinned, []string{"dflt", "x"}) ||
		o.LowWater != 7 || o.MemoryInterval != time.Minute {
		t.Fatalf("sessionOptions = %+v", o)
	}
	m, ok := o.Memory.(sessionMemory)
	if !ok || m.budget == nil {
		t.Fatalf("memory probe %#v, want a budget behind the cgroup", o.Memory)
	}
	if b := m.budget.(budgetMemory); b.Budget != 1<<30 {
		t.Fatalf("budget %d", b.Budget)
	}
	if sc.MemoryBudget = 0; sessionOptions(sc, "dflt", nil, nil, nil).Memory.(sessionMemory).budget != nil {
		t.Fatal("a budget without memory_budget")
	}
}

func TestParseStatm(t *testing.T) {
	tests := []struct {
		in               string
		page             int64
		resident, shared int64 // resident -1: error
	}{
		{"11466 2531 1983 195 0 1238 0\n", 4096, 2531 * 4096, 1983 * 4096},
		{"1 0 0 0 0 0 0", 4096, 0, 0},
		{"100 50 7", 16384, 50 * 16384, 7 * 16384},
		{"  7   3  1 ", 4096, 3 * 4096, 4096},
		{"", 4096, -1, 0},
		{"12345", 4096, -1, 0},
		{"1 2", 4096, -1, 0},
		{"1 x 3", 4096, -1, 0},
		{"1 2 y", 4096, -1, 0},
		{"1 -2 3", 4096, -1, 0},
		{"1 2 -3", 4096, -1, 0},
		{"1 2.5 3", 4096, -1, 0},
		{"1 99999999999999999999 3", 4096, -1, 0},
		{"1 9223372036854775807 3", 4096, -1, 0}, // bytes overflow int64
		{"1 2 9223372036854775807", 4096, -1, 0},
		{"1 2 3", 0, -1, 0},
		{"1 2 3", -4096, -1, 0},
		{"1 2 3 " + strings.Repeat("9", maxStatmBytes), 4096, -1, 0},
	}
	for _, tt := range tests {
		resident, shared, err := parseStatm([]byte(tt.in), tt.page)
		if tt.resident < 0 {
			if err == nil || !errors.Is(err, errStatm) {
				t.Errorf("parse(%.30q) = %d, %d, %v; want an errStatm error", tt.in, resident, shared, err)
			}
			continue
		}
		if err != nil || resident != tt.resident || shared != tt.shared {
			t.Errorf("parse(%.30q) = %d, %d, %v; want %d, %d", tt.in, resident, shared, err, tt.resident, tt.shared)
		}
	}
	if n := anonResidentBytes(); n <= 0 {
		t.Errorf("anonResidentBytes() = %d on Linux", n)
	}
}

func FuzzParseStatm(f *testing.F) {
	for _, s := range []string{"11466 2531 1983 195 0 1238 0\n", "", "1", "1 -1 0", "1 1e9 2", "1 9223372036854775807 0", "\x00 \x00 \x00", "0 0 0"} {
		f.Add([]byte(s), int64(4096))
	}
	f.Add([]byte("1 2 3"), int64(0))
	f.Add([]byte("1 2 3"), int64(-4096))
	f.Fuzz(func(t *testing.T, data []byte, page int64) {
		resident, shared, err := parseStatm(data, page)
		if err != nil {
			if !errors.Is(err, errStatm) {
				t.Fatalf("error %v does not wrap errStatm", err)
			}
			return
		}
		if resident < 0 || shared < 0 || page <= 0 || resident%page != 0 || shared%page != 0 || len(data) > maxStatmBytes {
			t.Fatalf("parse(%q, %d) = %d, %d", data, page, resident, shared)
		}
	})
}

// TestPreloadSkipsBrokenVoice: a preloaded voice that fails to load is
// logged and skipped; the daemon's default voice still loads.
func TestPreloadSkipsBrokenVoice(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "broken", "dflt")
	model := filepath.Join(dir, "broken", demo.Name+".onnx")
	if err := os.WriteFile(model, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	sc := testSessions()
	sc.Preload = []string{"broken"}
	vs, rec := testEngine(t, dir, "dflt", sc)
	info, err := vs.Preload(context.Background())
	if err != nil || info.SampleRate != demo.SampleRate {
		t.Fatalf("Preload = %+v, %v; want the default voice", info, err)
	}
	if rec.Index("preload voice failed, skipping it", "broken") < 0 {
		t.Fatal("no warning for the broken voice")
	}
	if got := rec.VoicesWith("voice loaded"); !slices.Equal(got, []string{"dflt"}) {
		t.Fatalf("loads %v, want [dflt]", got)
	}
}
