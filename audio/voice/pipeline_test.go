package voice_test

// The pipeline engine on the project's own cloning kit (speaker encoder,
// KV-cached decoder, embedding-conditioned vocoder), in the real ONNX
// Runtime with the real libespeak-ng. Reference recordings are the demo
// voice's speakers.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

var cloneKits sync.Map // fmt of *demo.CloningOptions → *builtKit

type builtKit struct {
	once  sync.Once
	files map[string][]byte
	err   error
}

// cloneKit writes the cloning kit with opts into a fresh temporary
// directory of tb. The files are built once per test binary.
func cloneKit(tb testing.TB, opts *demo.CloningOptions) string {
	tb.Helper()
	key := "default"
	if opts != nil {
		key = fmt.Sprintf("%+v", *opts)
	}
	k, _ := cloneKits.LoadOrStore(key, &builtKit{})
	kit := k.(*builtKit)
	kit.once.Do(func() { kit.files, kit.err = demo.BuildCloning(opts) })
	if kit.err != nil {
		tb.Fatalf("cloning kit: %v", kit.err)
	}
	dir := tb.TempDir()
	for name, data := range kit.files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			tb.Fatal(err)
		}
	}
	return dir
}

func pipelineOptions(o *voice.PipelineOptions) *voice.PipelineOptions {
	var r voice.PipelineOptions
	if o != nil {
		r = *o
	}
	if r.Session == nil {
		r.Session = &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1}
	}
	return &r
}

func loadPipeline(tb testing.TB, dir string, opts *voice.PipelineOptions) *voice.Pipeline {
	tb.Helper()
	p, err := voice.LoadPipeline(enginetest.OpenRuntime(tb), dir, pipelineOptions(opts))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { p.Close() })
	return p
}

// Reference sentences.
const (
	refA = "The quick brown fox jumps over the lazy dog. Is it true?"
	refB = "She sells sea shells by the shore, and the weather was rough today."
	refC = "Please turn on the kitchen lights."
)

// referenceClip is a demo speaker saying s: what a user's recording of
// that speaker would be.
func referenceClip(tb testing.TB, speaker, s string) audio.PCM {
	tb.Helper()
	v := loadDemo(tb, nil)
	pcm := audio.PCM{Rate: v.Info().SampleRate, Channels: 1}
	err := v.Synthesize(context.Background(), voice.Request{Text: s, Speaker: speaker}, func(c voice.Chunk) error {
		pcm.Samples = append(pcm.Samples, c.PCM.Samples...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return pcm
}

// longClip repeats a speaker's sentences to seconds of audio.
func longClip(tb testing.TB, speaker string, seconds float64) audio.PCM {
	tb.Helper()
	src := referenceClip(tb, speaker, refA+" "+refB+" "+refC)
	n := int(seconds * float64(src.Rate))
	out := audio.PCM{Rate: src.Rate, Channels: 1, Samples: make([]int16, n)}
	for i := range out.Samples {
		out.Samples[i] = src.Samples[i%len(src.Samples)]
	}
	return out
}

func enroll(tb testing.TB, p *voice.Pipeline, pcm audio.PCM) voice.Embedding {
	tb.Helper()
	e, err := p.Enroll(context.Background(), pcm)
	if err != nil {
		tb.Fatal(err)
	}
	return e
}

// sentenceProsody collects what the decoder made of each sentence.
type sentenceProsody struct {
	mu       sync.Mutex
	ids      [][]int64
	prosody  [][]float32
	sentence []string
}

func observe(p *voice.Pipeline) *sentenceProsody {
	s := &sentenceProsody{}
	voice.SetProsodyObserver(p, func(sentence string, ids []int64, prosody []float32) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.sentence = append(s.sentence, sentence)
		s.ids = append(s.ids, slices.Clone(ids))
		s.prosody = append(s.prosody, slices.Clone(prosody))
	})
	return s
}

func (s *sentenceProsody) last() []float32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.prosody[len(s.prosody)-1]
}

// say synthesizes req and returns its chunks.
func say(tb testing.TB, p *voice.Pipeline, req voice.PipelineRequest) []voice.Chunk {
	tb.Helper()
	var chunks []voice.Chunk
	if err := p.Synthesize(context.Background(), req, func(c voice.Chunk) error {
		chunks = append(chunks, c)
		return nil
	}); err != nil {
		tb.Fatalf("synthesize %q: %v", req.Text, err)
	}
	return chunks
}

func joined(chunks []voice.Chunk) []int16 {
	var all []int16
	for _, c := range chunks {
		all = append(all, c.PCM.Samples...)
	}
	return all
}

func maxAbsDiff(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.Inf(1)
	}
	var m float64
	for i := range a {
		m = max(m, math.Abs(float64(a[i])-float64(b[i])))
	}
	return m
}

func fileDigest(tb testing.TB, path string) (string, int64) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), int64(len(data))
}

func TestPipelineLoads(t *testing.T) {
	dir := cloneKit(t, nil)
	p := loadPipeline(t, dir, nil)
	info := p.Info()
	manifest, _ := fileDigest(t, filepath.Join(dir, bundle.ManifestName))
	enc, encSize := fileDigest(t, filepath.Join(dir, demo.EncoderFile))
	dec, decSize := fileDigest(t, filepath.Join(dir, demo.DecoderFile))
	voc, vocSize := fileDigest(t, filepath.Join(dir, demo.VocoderFile))
	if info.Digest != manifest || info.EncoderDigest != enc || info.DecoderDigest != dec || info.VocoderDigest != voc {
		t.Errorf("digests %s %s %s %s do not describe the files", info.Digest, info.EncoderDigest, info.DecoderDigest, info.VocoderDigest)
	}
	if p.EncoderDigest() != enc {
		t.Errorf("EncoderDigest %s, want %s", p.EncoderDigest(), enc)
	}
	if info.SizeBytes != encSize+decSize+vocSize || info.EncoderBytes != encSize || info.DecoderBytes != decSize || info.VocoderBytes != vocSize {
		t.Errorf("sizes %d (%d %d %d), files %d %d %d", info.SizeBytes, info.EncoderBytes, info.DecoderBytes, info.VocoderBytes, encSize, decSize, vocSize)
	}
	if info.Engine != bundle.EnginePipeline || info.Name != demo.CloneName || info.SampleRate != demo.SampleRate ||
		info.Provider != "cpu" || info.Phonemes != "espeak" || info.EmbeddingDim != demo.EmbeddingDim ||
		info.PromptTokens != demo.DefaultPromptTokens || info.MaxContext != demo.DefaultMaxContext ||
		info.MaxSteps != demo.DefaultMaxContext-demo.DefaultPromptTokens {
		t.Errorf("info %+v", info)
	}
}

// editedKit copies the default kit with voice.json changed by edit.
func editedKit(t *testing.T, edit func(m map[string]any)) string {
	t.Helper()
	src := cloneKit(t, nil)
	dir := t.TempDir()
	for _, name := range []string{demo.EncoderFile, demo.DecoderFile, demo.VocoderFile, demo.ManifestFile} {
		data, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		if name == demo.ManifestFile {
			var m map[string]any
			if err := json.Unmarshal(data, &m); err != nil {
				t.Fatal(err)
			}
			edit(m)
			if data, err = json.Marshal(m); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPipelineLoadErrors(t *testing.T) {
	role := func(m map[string]any, r string) map[string]any { return m[r].(map[string]any) }
	for _, c := range []struct {
		name   string
		dir    func(t *testing.T) string
		target error
		want   string
	}{
		{"style kit", func(t *testing.T) string { return styleKit(t, bundle.RowRuleTokens) }, voice.ErrVoiceNotFound, `engine is "style_vector"`},
		{"plain piper voice", func(t *testing.T) string { return demoVoice(t) }, bundle.ErrNoManifest, "voice.json"},
		{"decoder output renamed", func(t *testing.T) string {
			return editedKit(t, func(m map[string]any) { role(m, "decoder")["outputs"].(map[string]any)["prosody"] = "durations" })
		}, bundle.ErrModelMismatch, `decoder (decoder.onnx)`},
		{"encoder input renamed", func(t *testing.T) string {
			return editedKit(t, func(m map[string]any) { role(m, "encoder")["inputs"].(map[string]any)["audio"] = "wav" })
		}, bundle.ErrModelMismatch, `encoder (encoder.onnx)`},
		{"decoder kv heads", func(t *testing.T) string {
			return editedKit(t, func(m map[string]any) { role(m, "decoder")["kv"].(map[string]any)["heads"] = 2 })
		}, bundle.ErrModelMismatch, `decoder (decoder.onnx)`},
		{"vocoder file swapped", func(t *testing.T) string {
			return editedKit(t, func(m map[string]any) {
				files := m["files"].(map[string]any)
				files["vocoder"], files["encoder"] = files["encoder"], files["vocoder"]
			})
		}, bundle.ErrModelMismatch, `encoder (vocoder.onnx)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := voice.LoadPipeline(enginetest.OpenRuntime(t), c.dir(t), pipelineOptions(nil))
			if !errors.Is(err, c.target) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.target, c.want)
			}
		})
	}
}

// Cosine bounds the issue sets for enrollment of the demo speakers.
const (
	sameSpeakerCosine  = 0.95
	otherSpeakerCosine = 0.9
)

func TestEnrollTellsSpeakersApart(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	speakers := []string{"heron", "robin", "wren"}
	emb := make(map[string][2]voice.Embedding)
	for _, s := range speakers {
		emb[s] = [2]voice.Embedding{enroll(t, p, referenceClip(t, s, refA)), enroll(t, p, referenceClip(t, s, refB))}
		c := vecpack.Cosine(emb[s][0].Vector, emb[s][1].Vector)
		t.Logf("%s, two sentences: cosine %.3f", s, c)
		if c <= sameSpeakerCosine {
			t.Errorf("%s: two clips have cosine %.3f, want > %.2f", s, c, sameSpeakerCosine)
		}
		if emb[s][0].EncoderDigest != p.EncoderDigest() || len(emb[s][0].Prompt) != demo.DefaultPromptTokens {
			t.Errorf("%s: embedding %s with %d prompt tokens", s, emb[s][0].EncoderDigest, len(emb[s][0].Prompt))
		}
	}
	for i, a := range speakers {
		for _, b := range speakers[:i] {
			for _, x := range emb[a] {
				for _, y := range emb[b] {
					if c := vecpack.Cosine(x.Vector, y.Vector); c >= otherSpeakerCosine {
						t.Errorf("%s and %s: cosine %.3f, want < %.2f", a, b, c, otherSpeakerCosine)
					}
				}
			}
		}
		t.Logf("%s vs heron: cosine %.3f", a, vecpack.Cosine(emb[a][0].Vector, emb["heron"][0].Vector))
	}
	// The same recording gives the same speaker, bit for bit.
	again := enroll(t, p, referenceClip(t, "heron", refA))
	if again.Digest() != emb["heron"][0].Digest() {
		t.Error("enrolling one recording twice gives two digests")
	}
}

func TestEnrollMixesDownAndResamples(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	mono := referenceClip(t, "robin", refB)
	ref := enroll(t, p, mono)
	stereo := audio.PCM{Rate: mono.Rate, Channels: 2, Samples: make([]int16, 2*len(mono.Samples))}
	for i, s := range mono.Samples {
		stereo.Samples[2*i], stereo.Samples[2*i+1] = s, s
	}
	if e := enroll(t, p, stereo); e.Digest() != ref.Digest() {
		t.Errorf("the same voice on two channels enrolls differently (cosine %.4f)", vecpack.Cosine(e.Vector, ref.Vector))
	}
	at48k, err := audio.Resample(mono, 48000)
	if err != nil {
		t.Fatal(err)
	}
	if c := vecpack.Cosine(enroll(t, p, at48k).Vector, ref.Vector); c < 0.99 {
		t.Errorf("the recording at 48 kHz: cosine %.4f with 22.05 kHz, want ≥ 0.99", c)
	}
}

func TestEnrollRejects(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	clip := referenceClip(t, "heron", refA)
	half := clip
	half.Samples = clip.Samples[:clip.Rate/2]
	for _, c := range []struct {
		name string
		pcm  audio.PCM
		want string
	}{
		{"half a second", half, "shorter than the voice's encoder.min_seconds (1 s)"},
		{"31 seconds", longClip(t, "heron", 31), "longer than the voice's encoder.max_seconds (30 s)"},
		{"silence", audio.Silence(16000, 1, 3e9), "no voice found in the reference"},
		{"quiet hiss", hiss(3 * 16000), "no voice found in the reference"},
		{"no rate", audio.PCM{Channels: 1, Samples: clip.Samples}, "invalid pcm"},
		{"empty", audio.PCM{Rate: 16000, Channels: 1}, "shorter than"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := p.Enroll(context.Background(), c.pcm)
			if !errors.Is(err, voice.ErrReference) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrReference mentioning %q", err, c.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := p.Enroll(ctx, clip); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled enrollment: %v", err)
	}
}

// hiss is white noise at about −30 dBFS, 16 kHz: sound, but no voice.
func hiss(n int) audio.PCM {
	pcm := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, n)}
	x := uint32(12345)
	for i := range pcm.Samples {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		pcm.Samples[i] = int16(int32(x%2001) - 1000)
	}
	return pcm
}

func TestPipelineClonesPitch(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	f0 := make(map[string]float64)
	for _, s := range []string{"heron", "wren"} {
		emb := enroll(t, p, referenceClip(t, s, refB))
		pcm := joined(say(t, p, voice.PipelineRequest{Text: refA, Speaker: &emb}))
		f0[s] = acoustic.MedianF0(acoustic.Float64s(pcm), demo.SampleRate)
		ref := acoustic.MedianF0(acoustic.Float64s(referenceClip(t, s, refB).Samples), demo.SampleRate)
		t.Logf("%s: reference median f0 %.1f Hz, clone %.1f Hz", s, ref, f0[s])
	}
	if !(f0["heron"]*1.5 < f0["wren"]) {
		t.Errorf("clone of the low voice has median f0 %.1f Hz, of the high voice %.1f Hz: want the low one at least 1.5× lower", f0["heron"], f0["wren"])
	}
}

func TestPipelineDefaultSpeaker(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	def, err := p.DefaultSpeaker()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CheckEmbedding(def); err != nil {
		t.Fatal(err)
	}
	chunks := say(t, p, voice.PipelineRequest{Text: refC})
	f0 := acoustic.MedianF0(acoustic.Float64s(joined(chunks)), demo.SampleRate)
	t.Logf("default speaker: median f0 %.1f Hz", f0)
	// The neutral voice is at 140 Hz: between the demo's low and high
	// speakers.
	if f0 < 120 || f0 > 165 {
		t.Errorf("default speaker's median f0 %.1f Hz, want 140 ± 20 Hz", f0)
	}
	again := say(t, p, voice.PipelineRequest{Text: refC, Speaker: &def})
	if !slices.Equal(joined(chunks), joined(again)) {
		t.Error("a nil speaker and DefaultSpeaker speak differently")
	}
	// A default reference recording replaces the neutral voice.
	wren := referenceClip(t, "wren", refA)
	q := loadPipeline(t, cloneKit(t, nil), &voice.PipelineOptions{DefaultReference: &wren})
	got, err := q.DefaultSpeaker()
	if err != nil {
		t.Fatal(err)
	}
	if want := enroll(t, q, wren); got.Digest() != want.Digest() {
		t.Error("DefaultReference is not the default speaker")
	}
}

func TestPipelineReenroll(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	other := loadPipeline(t, cloneKit(t, &demo.CloningOptions{Seed: 7}), nil)
	if p.EncoderDigest() == other.EncoderDigest() {
		t.Fatal("two seeds give one encoder")
	}
	emb := enroll(t, other, referenceClip(t, "robin", refA))
	for name, err := range map[string]error{
		"CheckEmbedding": p.CheckEmbedding(emb),
		"Synthesize":     p.Synthesize(context.Background(), voice.PipelineRequest{Text: refC, Speaker: &emb}, func(voice.Chunk) error { return nil }),
	} {
		if !errors.Is(err, voice.ErrReenroll) || !strings.Contains(err.Error(), "enroll the speaker again") {
			t.Errorf("%s with another encoder's embedding: %v, want ErrReenroll", name, err)
		}
	}
}

func TestPipelineRefusesBadEmbeddings(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	good := enroll(t, p, referenceClip(t, "robin", refA))
	for _, c := range []struct {
		name string
		edit func(e *voice.Embedding)
		want string
	}{
		{"short vector", func(e *voice.Embedding) { e.Vector = e.Vector[:10] }, "vector has 10 values, the encoder makes 128"},
		{"NaN", func(e *voice.Embedding) { e.Vector[3] = float32(math.NaN()) }, "vector[3] is NaN"},
		{"infinity", func(e *voice.Embedding) { e.Vector[0] = float32(math.Inf(-1)) }, "vector[0] is -Inf"},
		{"zero", func(e *voice.Embedding) { clear(e.Vector) }, "vector is zero"},
		{"no prompt", func(e *voice.Embedding) { e.Prompt = nil }, "no prompt tokens"},
		{"prompt length", func(e *voice.Embedding) { e.Prompt = append(e.Prompt, 70) }, "65 prompt tokens, the encoder makes 64"},
		{"negative id", func(e *voice.Embedding) { e.Prompt[5] = -1 }, "prompt[5] = -1"},
		{"huge id", func(e *voice.Embedding) { e.Prompt[0] = math.MaxInt64 }, "prompt[0] = 9223372036854775807"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := good.Clone()
			c.edit(&e)
			err := p.Synthesize(context.Background(), voice.PipelineRequest{Text: refC, Speaker: &e}, func(voice.Chunk) error {
				t.Fatal("audio from a bad embedding")
				return nil
			})
			if !errors.Is(err, voice.ErrInvalidEmbedding) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want ErrInvalidEmbedding mentioning %q", err, c.want)
			}
		})
	}
}

func TestPipelineBadRequests(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	for _, c := range []struct {
		req    voice.PipelineRequest
		target error
	}{
		{voice.PipelineRequest{Text: refC, Rate: 10}, voice.ErrBadParameter},
		{voice.PipelineRequest{Text: refC, Rate: math.NaN()}, voice.ErrBadParameter},
		{voice.PipelineRequest{Text: ""}, text.ErrEmptyText},
	} {
		err := p.Synthesize(context.Background(), c.req, func(voice.Chunk) error { return nil })
		if !errors.Is(err, c.target) {
			t.Errorf("%+v: %v, want %v", c.req, err, c.target)
		}
	}
	// A faster rate gives shorter audio.
	slow := joined(say(t, p, voice.PipelineRequest{Text: refC}))
	fast := joined(say(t, p, voice.PipelineRequest{Text: refC, Rate: 2}))
	if r := float64(len(fast)) / float64(len(slow)); r < 0.4 || r > 0.6 {
		t.Errorf("rate 2 gives %.2f of the audio, want about half", r)
	}
	// Cancelling stops synthesis between sentences and inside one.
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	err := p.Synthesize(ctx, voice.PipelineRequest{Text: refA + " " + refB}, func(voice.Chunk) error {
		n++
		cancel()
		return nil
	})
	if !errors.Is(err, context.Canceled) || n != 1 {
		t.Errorf("cancelled after sentence 1: %d sentences, %v", n, err)
	}
}

func TestEmbeddingDigest(t *testing.T) {
	base := voice.Embedding{Vector: []float32{0.6, 0.8, 0}, Prompt: []int64{70, 71}, EncoderDigest: "abc"}
	d := base.Digest()
	if len(d) != 64 || d != base.Clone().Digest() {
		t.Fatalf("digest %q is not a stable sha256", d)
	}
	for _, c := range []struct {
		name string
		edit func(e *voice.Embedding)
		same bool
	}{
		{"negative zero", func(e *voice.Embedding) { e.Vector[2] = float32(math.Copysign(0, -1)) }, true},
		{"one value", func(e *voice.Embedding) { e.Vector[0] = math.Nextafter32(0.6, 1) }, false},
		{"prompt id", func(e *voice.Embedding) { e.Prompt[1] = 72 }, false},
		{"encoder", func(e *voice.Embedding) { e.EncoderDigest = "abd" }, false},
		{"value moved to the prompt", func(e *voice.Embedding) { e.Vector = e.Vector[:2]; e.Prompt = []int64{0, 70, 71} }, false},
		{"empty", func(e *voice.Embedding) { *e = voice.Embedding{} }, false},
	} {
		e := base.Clone()
		c.edit(&e)
		if (e.Digest() == d) != c.same {
			t.Errorf("%s: same digest %v, want %v", c.name, e.Digest() == d, c.same)
		}
	}
}

func TestNeutralReferenceIsSpeechLike(t *testing.T) {
	x := voice.NeutralReference(16000, 3)
	if len(x) != 48000 {
		t.Fatalf("%d samples for 3 s at 16 kHz", len(x))
	}
	peak := 0.0
	for _, v := range x {
		peak = max(peak, math.Abs(float64(v)))
	}
	f0 := acoustic.MedianF0(acoustic.Float64s(x), 16000)
	t.Logf("neutral reference: peak %.3f, median f0 %.1f Hz", peak, f0)
	if math.Abs(peak-0.5) > 1e-6 || math.Abs(f0-140) > 10 {
		t.Errorf("peak %.3f, median f0 %.1f Hz: want 0.5 and 140 ± 10 Hz", peak, f0)
	}
}

// TestPipelinePlays: a cloned voice streams through Play like the others.
func TestPipelinePlays(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	emb := enroll(t, p, referenceClip(t, "wren", refA))
	sink, err := audio.NewNullSink(nil)
	if err != nil {
		t.Fatal(err)
	}
	st, err := voice.Play(context.Background(), p.With(&emb, ""), voice.Request{Text: followA + " " + followB, Rate: 1.5}, sink)
	if err != nil {
		t.Fatal(err)
	}
	want := say(t, p, voice.PipelineRequest{Text: followA + " " + followB, Speaker: &emb, Rate: 1.5})
	audioDur := want[0].PCM.Duration() + want[0].Silence + want[1].PCM.Duration()
	if st.Sentences != 2 || st.Audio != audioDur {
		t.Errorf("played %d sentences, %v of audio; want 2, %v", st.Sentences, st.Audio, audioDur)
	}
}
