//go:build cgo

// The tests in this file and in encoder_cgo_test.go, decoder_cgo_test.go
// and vocoder_cgo_test.go run the cloning kit in the real ONNX Runtime and
// drive its three models the way the pipeline engine will: enrollment,
// prefill, one decoder step per phoneme id, vocoder.

package demo

import (
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// cloneModels is the cloning kit in three ONNX Runtime sessions.
type cloneModels struct {
	o             CloningOptions
	rate          int // the vocoder's
	enc, dec, voc *ort.Session
}

var (
	defaultKitOnce sync.Once
	defaultKit     *cloneModels
	defaultKitErr  error
)

// cloneKit returns sessions of the default kit, shared by tests.
func cloneKit(t testing.TB) *cloneModels {
	t.Helper()
	defaultKitOnce.Do(func() { defaultKit, defaultKitErr = openCloneModels(nil) })
	if defaultKitErr != nil {
		t.Fatal(defaultKitErr)
	}
	return defaultKit
}

func openCloneModels(opts *CloningOptions) (*cloneModels, error) {
	runtime.once.Do(func() { runtime.rt, runtime.err = ort.Open(nil) })
	if runtime.err != nil {
		return nil, runtime.err
	}
	files, err := BuildCloning(opts)
	if err != nil {
		return nil, err
	}
	o, vo, _ := opts.resolve()
	k := &cloneModels{o: o, rate: vo.SampleRate}
	so := &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1}
	for _, s := range []struct {
		file string
		dst  **ort.Session
	}{{EncoderFile, &k.enc}, {DecoderFile, &k.dec}, {VocoderFile, &k.voc}} {
		if *s.dst, err = runtime.rt.NewSession(files[s.file], so); err != nil {
			k.close()
			return nil, err
		}
	}
	return k, nil
}

func (k *cloneModels) close() {
	for _, s := range []*ort.Session{k.enc, k.dec, k.voc} {
		if s != nil {
			s.Close()
		}
	}
}

// embed runs the encoder on audio at EncoderSampleRate and checks its
// contract: a finite embedding of EmbeddingDim that has unit length (or is
// all zero, for a clip without sound), and K prompt ids among the codes.
func (k *cloneModels) embed(t testing.TB, clip []float32) (emb []float32, prompt []int64) {
	t.Helper()
	out, err := k.enc.Run([]ort.Tensor{{Name: encAudio, Shape: []int64{1, int64(len(clip))}, Float32: clip}})
	if err != nil {
		t.Fatalf("encode %d samples: %v", len(clip), err)
	}
	emb, prompt = out[0].Float32, out[1].Int64
	if out[0].Name != encEmbedding || !slices.Equal(out[0].Shape, []int64{1, EmbeddingDim}) {
		t.Fatalf("encoder output 0: %s %v, want %s [1 %d]", out[0].Name, out[0].Shape, encEmbedding, EmbeddingDim)
	}
	if out[1].Name != encPrompt || !slices.Equal(out[1].Shape, []int64{1, int64(k.o.PromptTokens)}) {
		t.Fatalf("encoder output 1: %s %v, want %s [1 %d]", out[1].Name, out[1].Shape, encPrompt, k.o.PromptTokens)
	}
	var n float64
	for i, v := range emb {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			t.Fatalf("embedding[%d] = %v", i, v)
		}
		n += float64(v) * float64(v)
	}
	if n = math.Sqrt(n); n != 0 && math.Abs(n-1) > 1e-4 {
		t.Fatalf("embedding norm %v, want 1 (or 0 for silence)", n)
	}
	lo, hi := int64(len(inventory)), int64(k.o.vocab())
	for i, id := range prompt {
		if id < lo || id >= hi {
			t.Fatalf("prompt id %d = %d outside the codes %d..%d", i, id, lo, hi-1)
		}
	}
	return emb, prompt
}

// kvCache is the decoder's cache: each layer's keys and values
// [1, heads, seq, head_dim].
type kvCache struct {
	keys, values [][]float32
	seq          int
}

func (k *cloneModels) emptyKV() kvCache {
	return kvCache{keys: make([][]float32, k.o.Layers), values: make([][]float32, k.o.Layers)}
}

func (c kvCache) clone() kvCache {
	d := kvCache{seq: c.seq}
	for i := range c.keys {
		d.keys = append(d.keys, slices.Clone(c.keys[i]))
		d.values = append(d.values, slices.Clone(c.values[i]))
	}
	return d
}

// decode runs the decoder once on S ids with their previous prosody
// ([S·3]) after past, and checks the contract: prosody [1, S, 3] inside
// (-1, 1); present [1, heads, past+S, head_dim] starting with the past
// unchanged.
func (k *cloneModels) decode(t testing.TB, ids []int64, prev []float32, past kvCache) ([]float32, kvCache) {
	t.Helper()
	s := int64(len(ids))
	h, hd := int64(k.o.Heads), int64(k.o.HeadDim)
	in := []ort.Tensor{
		{Name: decIDs, Shape: []int64{1, s}, Int64: ids},
		{Name: decPrev, Shape: []int64{1, s, ProsodyDim}, Float32: prev},
	}
	pastShape := []int64{1, h, int64(past.seq), hd}
	for i := range k.o.Layers {
		in = append(in,
			ort.Tensor{Name: kvName(kvPastKey, i), Type: ort.Float32, Shape: pastShape, Float32: past.keys[i]},
			ort.Tensor{Name: kvName(kvPastValue, i), Type: ort.Float32, Shape: pastShape, Float32: past.values[i]})
	}
	out, err := k.dec.Run(in)
	if err != nil {
		t.Fatalf("decode %d ids after %d: %v", s, past.seq, err)
	}
	if out[0].Name != decProsody || !slices.Equal(out[0].Shape, []int64{1, s, ProsodyDim}) {
		t.Fatalf("decoder output 0: %s %v, want %s [1 %d %d]", out[0].Name, out[0].Shape, decProsody, s, ProsodyDim)
	}
	for i, v := range out[0].Float32 {
		if !(v > -1 && v < 1) {
			t.Fatalf("prosody[%d] = %v, want inside (-1, 1)", i, v)
		}
	}
	present := kvCache{seq: past.seq + int(s)}
	want := []int64{1, h, int64(present.seq), hd}
	for i := range k.o.Layers {
		for j, name := range []string{kvName(kvPresentKey, i), kvName(kvPresentVal, i)} {
			o := out[1+2*i+j]
			if o.Name != name || !slices.Equal(o.Shape, want) {
				t.Fatalf("decoder output %d: %s %v, want %s %v", 1+2*i+j, o.Name, o.Shape, name, want)
			}
			old := past.keys[i]
			if j == 1 {
				old = past.values[i]
			}
			// Per head, the first past.seq rows are the past, bit for bit.
			rows := int(hd) * past.seq
			for hh := range int(h) {
				if !slices.Equal(o.Float32[hh*int(hd)*present.seq:][:rows], old[hh*rows:][:rows]) {
					t.Fatalf("%s head %d does not start with the past", name, hh)
				}
			}
		}
		present.keys = append(present.keys, out[1+2*i].Float32)
		present.values = append(present.values, out[2+2*i].Float32)
	}
	return out[0].Float32, present
}

// prefill runs the decoder over the speaker prompt from an empty cache.
func (k *cloneModels) prefill(t testing.TB, prompt []int64) kvCache {
	t.Helper()
	_, c := k.decode(t, prompt, make([]float32, ProsodyDim*len(prompt)), k.emptyKV())
	return c
}

// steps runs one decoder step per id after past, each fed the previous
// step's prosody (zeros first), as the engine does, and returns the
// stacked prosody [len(ids)·3] and the cache after the last step.
func (k *cloneModels) steps(t testing.TB, ids []int64, past kvCache) ([]float32, kvCache) {
	t.Helper()
	prev := make([]float32, ProsodyDim)
	out := make([]float32, 0, ProsodyDim*len(ids))
	for _, id := range ids {
		var p []float32
		p, past = k.decode(t, []int64{id}, prev, past)
		out = append(out, p...)
		prev = p
	}
	return out, past
}

// vocode runs the vocoder and checks the output contract like model.run.
func (k *cloneModels) vocode(t testing.TB, ids []int64, prosody, emb []float32, p params) []float32 {
	t.Helper()
	n := p.inputLength
	if n == -1 {
		n = int64(len(ids))
	}
	out, err := k.voc.Run([]ort.Tensor{
		{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
		{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{n}},
		{Name: "scales", Shape: []int64{3}, Float32: []float32{p.noiseScale, p.lengthScale, p.noiseW}},
		{Name: vocProsody, Type: ort.Float32, Shape: []int64{1, int64(len(prosody) / ProsodyDim), ProsodyDim}, Float32: prosody},
		{Name: vocEmbedding, Shape: []int64{1, EmbeddingDim}, Float32: emb},
	})
	if err != nil {
		t.Fatalf("vocode %d ids: %v", len(ids), err)
	}
	y := out[0].Float32
	if sh := out[0].Shape; out[0].Name != "output" || len(sh) != 4 || sh[0] != 1 || sh[1] != 1 || sh[2] != 1 || sh[3] != int64(len(y)) {
		t.Fatalf("vocoder output %s %v for %d samples, want output [1 1 1 T]", out[0].Name, out[0].Shape, len(y))
	}
	for i, v := range y {
		if math.IsNaN(float64(v)) || v < -1 || v > 1 {
			t.Fatalf("sample %d is %v", i, v)
		}
	}
	return y
}

// TestCloningBundleChecks loads the written kit with the bundle package
// and checks each role's declared tensors against what ONNX Runtime
// reports for the model, as the engine does at load.
func TestCloningBundleChecks(t *testing.T) {
	k := cloneKit(t)
	dir := t.TempDir()
	if err := WriteCloning(dir, nil); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	for role, s := range map[string]*ort.Session{bundle.RoleEncoder: k.enc, bundle.RoleDecoder: k.dec, bundle.RoleVocoder: k.voc} {
		if err := b.CheckModel(role, s); err != nil {
			t.Errorf("%s: %v", role, err)
		}
	}
}

// Sentences for reference clips and requests.
const (
	sentenceA = "The quick brown fox jumps over the lazy dog. Is it true?"
	sentenceB = "She sells sea shells by the shore, and the weather was rough today."
	sentenceC = "Please turn on the kitchen lights."
)

var espeakOnce = sync.OnceValues(func() (*text.Espeak, error) {
	return text.NewEspeak(&text.EspeakOptions{Voice: "en-us"})
})

// espeakIDs runs s through the espeak front end and the voice's map.
func espeakIDs(t testing.TB, s string) []int64 {
	t.Helper()
	es, err := espeakOnce()
	if err != nil {
		t.Fatal(err)
	}
	ph, err := es.Phonemize(s)
	if err != nil {
		t.Fatal(err)
	}
	m, err := text.NewPhonemeIDMap(PhonemeIDMap(), len(inventory))
	if err != nil {
		t.Fatal(err)
	}
	ids, unknown := m.IDs(ph)
	if unknown != nil {
		t.Fatalf("%q: phonemes missing from the map: %v", s, unknown)
	}
	return ids
}

// reference is demo speaker sid saying s, as a 16-bit clip resampled to
// the encoder's rate: what an enrolled WAV turns into.
func referenceClip(t testing.TB, sid int64, s string) []float32 {
	t.Helper()
	m := voiceModel(t)
	y := m.run(t, espeakIDs(t, s), params{noiseScale: 0.667, lengthScale: 1, noiseW: 0.8, sid: sid, inputLength: -1})
	pcm := audio.PCM{Rate: m.rate, Channels: 1, Samples: make([]int16, len(y))}
	for i, v := range y {
		pcm.Samples[i] = int16(math.Round(float64(v) * 32767))
	}
	r, err := audio.Resample(pcm, EncoderSampleRate)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float32, len(r.Samples))
	for i, v := range r.Samples {
		out[i] = float32(v) / 32768
	}
	return out
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
