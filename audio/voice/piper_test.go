package voice

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/quant/ort"
)

// fakeSession is a hand-written session for unit tests of the engine's
// logic; the integration tests in voice_test run the real ONNX Runtime.
type fakeSession struct {
	inputs  []ort.TensorInfo
	outputs []ort.TensorInfo
	run     func([]ort.Tensor) ([]ort.Tensor, error)
}

var _ session = (*fakeSession)(nil)

func (f *fakeSession) Inputs() []ort.TensorInfo  { return f.inputs }
func (f *fakeSession) Outputs() []ort.TensorInfo { return f.outputs }
func (f *fakeSession) Run(in []ort.Tensor) ([]ort.Tensor, error) {
	return f.run(in)
}
func (f *fakeSession) Provider() ort.Provider { return ort.ProviderCPU }
func (f *fakeSession) Close() error           { return nil }

func piperInputs(sid bool) []ort.TensorInfo {
	in := []ort.TensorInfo{
		{Name: "input", Type: ort.Int64, Dims: []int64{1, -1}},
		{Name: "input_lengths", Type: ort.Int64, Dims: []int64{1}},
		{Name: "scales", Type: ort.Float32, Dims: []int64{3}},
	}
	if sid {
		in = append(in, ort.TensorInfo{Name: "sid", Type: ort.Int64, Dims: []int64{1}})
	}
	return in
}

// textConfig is a two-speaker voice whose front end is the text's own
// codepoints, so these tests need neither espeak nor a model.
func textConfig() *PiperConfig {
	c := &PiperConfig{PhonemeType: PhonemeText, NumSpeakers: 2, NumSymbols: 40}
	c.Audio.SampleRate = 16000
	c.Inference = Inference{NoiseScale: 0.5, LengthScale: 1, NoiseW: 0.7}
	c.SpeakerIDMap = map[string]int64{"ann": 0, "bob": 1}
	c.PhonemeIDMap = map[string][]int64{"_": {0}, "^": {1}, "$": {2}, " ": {3}, ".": {4}}
	for i, r := range "abcdefghijklmnopqrstuvwxyz" {
		c.PhonemeIDMap[string(r)] = []int64{int64(10 + i)}
	}
	return c
}

// samplesPerID makes the fake model's output length proportional to its
// input, as a real voice's is.
const samplesPerID = 100

func echoRun(record func(string, []ort.Tensor)) func([]ort.Tensor) ([]ort.Tensor, error) {
	return func(in []ort.Tensor) ([]ort.Tensor, error) {
		record("run", in)
		n := len(in[0].Int64) * samplesPerID
		w := make([]float32, n)
		for i := range w {
			w[i] = float32(math.Sin(float64(i) / 5))
		}
		return []ort.Tensor{{Name: "output", Type: ort.Float32, Shape: []int64{1, 1, 1, int64(n)}, Float32: w}}, nil
	}
}

func newTestPiper(t *testing.T, cfg *PiperConfig, run func([]ort.Tensor) ([]ort.Tensor, error)) *Piper {
	t.Helper()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sess := &fakeSession{inputs: piperInputs(cfg.NumSpeakers > 1), outputs: []ort.TensorInfo{{Name: "output", Type: ort.Float32}}, run: run}
	p, err := newPiper(cfg, sess, PiperOptions{SentenceSilence: 150 * time.Millisecond, MaxSentenceAudio: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestSynthesizeStreamsSentenceBySentence(t *testing.T) {
	var events []string
	var runs [][]ort.Tensor
	p := newTestPiper(t, textConfig(), echoRun(func(ev string, in []ort.Tensor) {
		events = append(events, ev)
		runs = append(runs, in)
	}))
	var chunks []Chunk
	err := p.Synthesize(context.Background(), Request{Text: "ab cd. ef! g", Speaker: "bob"}, func(c Chunk) error {
		events = append(events, "emit")
		chunks = append(chunks, c)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(events, ","); got != "run,emit,run,emit,run,emit" {
		t.Fatalf("events %s: sentence n must reach the caller before sentence n+1 is synthesized", got)
	}
	// ^ _ a _ b _ ␠ _ c _ d _ . _ $ for "ab cd."
	want := []int64{1, 0, 10, 0, 11, 0, 3, 0, 12, 0, 13, 0, 4, 0, 2}
	if got := runs[0][0].Int64; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("ids %v, want %v", got, want)
	}
	if l := runs[0][1].Int64; len(l) != 1 || l[0] != int64(len(want)) {
		t.Fatalf("input_lengths %v", l)
	}
	if s := runs[0][2].Float32; fmt.Sprint(s) != "[0.5 1 0.7]" {
		t.Fatalf("scales %v, want the voice's defaults in Piper's order", s)
	}
	if sid := runs[0][3]; sid.Name != "sid" || sid.Int64[0] != 1 {
		t.Fatalf("sid %+v, want bob = 1", sid)
	}
	if len(chunks) != 3 || !chunks[2].Last || chunks[1].Last {
		t.Fatalf("chunks %d, last flags wrong", len(chunks))
	}
	for i, c := range chunks {
		wantSilence := 150 * time.Millisecond
		if c.Last {
			wantSilence = 0
		}
		if c.Silence != wantSilence || c.Index != i || c.PCM.Rate != 16000 {
			t.Fatalf("chunk %d: %+v", i, c)
		}
	}
}

func TestRequestParameters(t *testing.T) {
	var scales []float32
	var sid []int64
	p := newTestPiper(t, textConfig(), echoRun(func(_ string, in []ort.Tensor) {
		scales = in[2].Float32
		sid = in[3].Int64
	}))
	f := func(v float32) *float32 { return &v }
	ok := []struct {
		req    Request
		scales string
		sid    int64
	}{
		{Request{Rate: 2}, "[0.5 0.5 0.7]", 0},
		{Request{Rate: 0.5, Speaker: "1"}, "[0.5 2 0.7]", 1},
		{Request{LengthScale: f(1.5), NoiseScale: f(0), NoiseW: f(0)}, "[0 1.5 0]", 0},
		{Request{Speaker: "ann"}, "[0.5 1 0.7]", 0},
	}
	for _, c := range ok {
		c.req.Text = "a."
		if err := p.Synthesize(context.Background(), c.req, func(Chunk) error { return nil }); err != nil {
			t.Fatalf("%+v: %v", c.req, err)
		}
		if fmt.Sprint(scales) != c.scales || sid[0] != c.sid {
			t.Errorf("%+v: scales %v sid %v, want %s %d", c.req, scales, sid, c.scales, c.sid)
		}
	}
	bad := []struct {
		req  Request
		want error
	}{
		{Request{Speaker: "carol"}, ErrUnknownSpeaker},
		{Request{Speaker: "2"}, ErrUnknownSpeaker},
		{Request{Speaker: "-1"}, ErrUnknownSpeaker},
		{Request{Speaker: "../../etc/passwd\x00"}, ErrUnknownSpeaker},
		{Request{Rate: math.NaN()}, ErrBadParameter},
		{Request{Rate: 100}, ErrBadParameter},
		{Request{Rate: 0.01}, ErrBadParameter},
		{Request{LengthScale: f(float32(math.Inf(1)))}, ErrBadParameter},
		{Request{LengthScale: f(0)}, ErrBadParameter},
		{Request{NoiseW: f(-1)}, ErrBadParameter},
	}
	for _, c := range bad {
		c.req.Text = "a."
		err := p.Synthesize(context.Background(), c.req, func(Chunk) error { t.Fatal("audio for a bad request"); return nil })
		if !errors.Is(err, c.want) {
			t.Errorf("%+v: error %v, want %v", c.req, err, c.want)
		}
	}
}

func TestUnknownPhonemesSkippedAndCounted(t *testing.T) {
	var ids []int64
	p := newTestPiper(t, textConfig(), echoRun(func(_ string, in []ort.Tensor) { ids = in[0].Int64 }))
	var unknown int
	err := p.Synthesize(context.Background(), Request{Text: "a7b9 é"}, func(c Chunk) error {
		unknown += c.Unknown
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// 7, 9 and the combining acute of the NFD "é" have no ids; "e" has.
	if unknown != 3 {
		t.Fatalf("unknown %d, want 3 (ids %v)", unknown, ids)
	}
	if fmt.Sprint(ids) != "[1 0 10 0 11 0 3 0 14 0 2]" {
		t.Fatalf("ids %v", ids)
	}
}

func TestSynthesizeErrors(t *testing.T) {
	p := newTestPiper(t, textConfig(), echoRun(func(string, []ort.Tensor) {}))
	for _, txt := range []string{"", "   \n\t", strings.Repeat("a", 6000)} {
		if err := p.Synthesize(context.Background(), Request{Text: txt}, func(Chunk) error { return nil }); err == nil {
			t.Errorf("text of %d bytes accepted", len(txt))
		}
	}
	// The emit error stops synthesis and comes back unchanged.
	stop := errors.New("listener gone")
	runs := 0
	p = newTestPiper(t, textConfig(), echoRun(func(string, []ort.Tensor) { runs++ }))
	if err := p.Synthesize(context.Background(), Request{Text: "a. b. c."}, func(Chunk) error { return stop }); err != stop {
		t.Fatalf("emit error: %v", err)
	}
	if runs != 1 {
		t.Fatalf("%d runs after the listener failed, want 1", runs)
	}
	// A model that returns more audio than allowed.
	p = newTestPiper(t, textConfig(), func(in []ort.Tensor) ([]ort.Tensor, error) {
		return []ort.Tensor{{Type: ort.Float32, Float32: make([]float32, 16000*61)}}, nil
	})
	if err := p.Synthesize(context.Background(), Request{Text: "a."}, func(Chunk) error { return nil }); !errors.Is(err, ErrTooManyFrames) {
		t.Fatalf("oversized output: %v", err)
	}
	// Cancellation between sentences.
	ctx, cancel := context.WithCancel(context.Background())
	p = newTestPiper(t, textConfig(), echoRun(func(string, []ort.Tensor) {}))
	err := p.Synthesize(ctx, Request{Text: "a. b. c."}, func(Chunk) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancel: %v", err)
	}
}

func TestContractMismatch(t *testing.T) {
	cfg := textConfig()
	cases := map[string][]ort.TensorInfo{
		"no scales":                         piperInputs(true)[:2],
		"no sid for a multi-speaker config": piperInputs(false),
		"float ids": {
			{Name: "input", Type: ort.Float32}, {Name: "input_lengths", Type: ort.Int64},
			{Name: "scales", Type: ort.Float32}, {Name: "sid", Type: ort.Int64}},
		"extra input": append(piperInputs(true), ort.TensorInfo{Name: "style", Type: ort.Float32}),
	}
	for name, in := range cases {
		sess := &fakeSession{inputs: in, outputs: []ort.TensorInfo{{Name: "output", Type: ort.Float32}}}
		if _, err := newPiper(cfg, sess, PiperOptions{}); !errors.Is(err, ErrModelMismatch) {
			t.Errorf("%s: %v", name, err)
		}
	}
	sess := &fakeSession{inputs: piperInputs(true), outputs: []ort.TensorInfo{{Name: "output", Type: ort.Int64}}}
	if _, err := newPiper(cfg, sess, PiperOptions{}); !errors.Is(err, ErrModelMismatch) {
		t.Errorf("int output: %v", err)
	}
}

// releasingSession is a fakeSession with an arena to give back.
type releasingSession struct {
	*fakeSession
	releases int
}

func (r *releasingSession) ReleaseArena([]ort.Tensor) error {
	r.releases++
	return nil
}

// TestReleaseMemoryOnlyAfterRuns: ReleaseMemory runs the model (to shrink
// its arena) only when it ran since the last release, so an idle engine
// does not run every loaded voice after each burst of another.
func TestReleaseMemoryOnlyAfterRuns(t *testing.T) {
	cfg := textConfig()
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	sess := &releasingSession{fakeSession: &fakeSession{inputs: piperInputs(cfg.NumSpeakers > 1), outputs: []ort.TensorInfo{{Name: "output", Type: ort.Float32}},
		run: echoRun(func(string, []ort.Tensor) {})}}
	p, err := newPiper(cfg, sess, PiperOptions{})
	if err != nil {
		t.Fatal(err)
	}
	release := func(want int) {
		t.Helper()
		if err := p.ReleaseMemory(); err != nil {
			t.Fatal(err)
		}
		if sess.releases != want {
			t.Fatalf("%d arena releases, want %d", sess.releases, want)
		}
	}
	release(0) // loaded, never ran
	if _, _, err := p.SynthesizeSentence("ab", Params{LengthScale: 1}); err != nil {
		t.Fatal(err)
	}
	release(1)
	release(1) // nothing ran since
	if _, _, err := p.SynthesizeSentence("cd", Params{LengthScale: 1}); err != nil {
		t.Fatal(err)
	}
	release(2)
}

// countingFront counts the sentences a front end is asked for.
type countingFront struct {
	text.Phonemizer
	calls atomic.Int32
}

func (c *countingFront) Phonemize(s string) ([]string, error) {
	c.calls.Add(1)
	return c.Phonemizer.Phonemize(s)
}

// SplitFor has phonemized every sentence to estimate its audio;
// SynthesizeSentence takes those ids instead of phonemizing again, and
// they are the ids it would have computed.
func TestSynthesizeSentenceReusesSplitForIDs(t *testing.T) {
	var runs [][]int64
	p := newTestPiper(t, textConfig(), echoRun(func(_ string, in []ort.Tensor) { runs = append(runs, in[0].Int64) }))
	front := &countingFront{Phonemizer: p.front}
	p.front = front
	prm, err := p.Resolve(Request{})
	if err != nil {
		t.Fatal(err)
	}
	sentences, err := p.SplitFor("ab cd. ef! g", prm)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sentences {
		if _, _, err := p.SynthesizeSentence(s, prm); err != nil {
			t.Fatal(err)
		}
	}
	if n := front.calls.Load(); n != int32(len(sentences)) {
		t.Fatalf("front end ran %d times for %d sentences, want once each", n, len(sentences))
	}
	// Taken once: a second synthesis phonemizes again, to the same ids.
	for i, s := range sentences {
		if _, _, err := p.SynthesizeSentence(s, prm); err != nil {
			t.Fatal(err)
		}
		if got, want := runs[len(sentences)+i], runs[i]; !slices.Equal(got, want) {
			t.Fatalf("%q: ids %v after SplitFor, %v without", s, want, got)
		}
	}
	if n := front.calls.Load(); n != int32(2*len(sentences)) {
		t.Fatalf("front end ran %d times, want %d", n, 2*len(sentences))
	}
}

// The memo keeps the last phonemeMemoSize sentences: a longer request's
// first ones are phonemized again, with the same result.
func TestPhonemeMemoEvictsOldest(t *testing.T) {
	var m phonemeMemo
	for i := range phonemeMemoSize + 2 {
		m.put(strconv.Itoa(i), []int64{int64(i)}, nil)
	}
	for i := range phonemeMemoSize + 2 {
		ids, _, ok := m.take(strconv.Itoa(i))
		if want := i >= 2; ok != want || (ok && ids[0] != int64(i)) {
			t.Fatalf("sentence %d: %v %v, want found %v", i, ids, ok, want)
		}
	}
}

// Concurrent requests of the same and of other sentences each get the
// ids of their own sentence (go test -race).
func TestPhonemeMemoConcurrent(t *testing.T) {
	p := newTestPiper(t, textConfig(), echoRun(func(string, []ort.Tensor) {}))
	prm, err := p.Resolve(Request{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 50 {
				txt := strings.Repeat("ab ", 1+(g+i)%5) + "."
				sentences, err := p.SplitFor(txt, prm)
				if err != nil {
					t.Error(err)
					return
				}
				for _, s := range sentences {
					pcm, _, err := p.SynthesizeSentence(s, prm)
					if err != nil {
						t.Error(err)
						return
					}
					want, err := p.Transcribe(s)
					if err != nil {
						t.Error(err)
						return
					}
					if pcm.Frames() != len(want.IDs)*samplesPerID {
						t.Errorf("%q: %d frames, want %d", s, pcm.Frames(), len(want.IDs)*samplesPerID)
					}
				}
			}
		})
	}
	wg.Wait()
}

// RunsFor remembers a sentence's runs: asked again for the same sentence
// and rate (a phrase-cache hit coming back), it answers without the front
// end, the same runs; another rate is a sentence of its own.
func TestRunsForRemembers(t *testing.T) {
	p := newTestPiper(t, textConfig(), echoRun(func(string, []ort.Tensor) {}))
	front := &countingFront{Phonemizer: p.front}
	p.front = front
	prm, err := p.Resolve(Request{})
	if err != nil {
		t.Fatal(err)
	}
	first := p.RunsFor("ab cd ef", prm)
	if n := front.calls.Load(); n != 1 {
		t.Fatalf("front end ran %d times for one sentence", n)
	}
	if again := p.RunsFor("ab cd ef", prm); !slices.Equal(again, first) || front.calls.Load() != 1 {
		t.Fatalf("again: %q after %q, front end ran %d times; want the same runs, no second run", again, first, front.calls.Load())
	}
	slow := prm
	slow.LengthScale *= 2
	p.RunsFor("ab cd ef", slow)
	if n := front.calls.Load(); n != 2 {
		t.Fatalf("another rate: front end ran %d times in all, want 2", n)
	}
	// A synthesis after a remembered answer finds no ids kept for it and
	// phonemizes: the same audio as ever.
	if _, _, err := p.SynthesizeSentence("ab cd ef", prm); err != nil {
		t.Fatal(err)
	}
}

// The runs memo forgets the oldest sentence first and holds at most
// runsMemoSize.
func TestRunsMemoEvictsOldest(t *testing.T) {
	var m runsMemo
	for i := range runsMemoSize + 2 {
		m.put(runsKey{strconv.Itoa(i), 1}, []string{strconv.Itoa(i)})
	}
	m.put(runsKey{"5", 1}, []string{"not kept: 5 is there"})
	for i := range runsMemoSize + 2 {
		runs, ok := m.get(runsKey{strconv.Itoa(i), 1})
		if want := i >= 2; ok != want || (ok && runs[0] != strconv.Itoa(i)) {
			t.Fatalf("sentence %d: %q %v, want found %v", i, runs, ok, want)
		}
	}
	if _, ok := m.get(runsKey{"9", 2}); ok {
		t.Fatal("found a sentence under a rate it was not cut for")
	}
	if len(m.m) != runsMemoSize {
		t.Fatalf("memo holds %d, want %d", len(m.m), runsMemoSize)
	}
}
