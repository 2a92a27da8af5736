//go:build cgo

package quant

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/gate"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// BenchmarkPrecision is the size and speed table of the quantization
// modes on the three models the project has: the demo voice, the cloning
// kit's decoder and benchmodel's Piper-medium-shaped voice.
//
// Each sub-benchmark builds its model, quantizes it once per variant,
// opens every variant in ONNX Runtime (CPU, one intra-op thread) and then
// times the same workload on all of them in interleaved rounds (A B C D,
// B C D A, ...), so that drift in the machine's speed (frequency scaling,
// a neighbour's load) hits every variant alike, and takes each variant's
// median. One warm-up run per variant precedes the rounds and is not
// counted. Variants that leave a model unchanged (int8 and nbits on the
// demo voice, which has no MatMul) show the noise floor of the ratios.
//
// The interleaved measurement is what one b.Loop iteration does; it takes
// seconds, so b.Loop stops after one iteration and -benchtime=1x changes
// nothing. ns/op is therefore the time of the whole measurement, which
// says little; read the custom metrics instead:
//
//   - fp32-ms: median time of one workload on the float32 model;
//   - fp32-MB: the float32 file in MB (10^6 bytes);
//   - <variant>-size-x: the variant's file size / the float32 file size;
//   - <variant>-time-x: the variant's median time / the float32 median
//     time (below 1 is faster).
//
// Run it with
//
//	go test -run='^$' -bench=BenchmarkPrecision -benchtime=1x ./quant/
func BenchmarkPrecision(b *testing.B) {
	rt := openORT(b)
	for _, c := range precisionCases {
		b.Run(c.name, func(b *testing.B) {
			fp32, w := c.setup(b)
			variants := append([]precisionVariant{{name: "fp32"}}, c.variants...)
			sessions := openVariants(b, rt, fp32, variants)

			// The warm-up also checks that every variant runs the
			// workload and gives as much output as float32 does, so that
			// no variant is timed doing less work.
			want := -1
			for i, s := range sessions {
				n, err := w(s)
				if err != nil {
					b.Fatalf("%s: %v", variants[i].name, err)
				}
				if want < 0 {
					want = n
				} else if n != want {
					b.Fatalf("%s: %d output values, float32 gives %d", variants[i].name, n, want)
				}
			}

			b.ReportAllocs()
			var med []time.Duration
			for b.Loop() {
				var err error
				if med, err = interleave(sessions, w, c.rounds); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(med[0])/float64(time.Millisecond), "fp32-ms")
			b.ReportMetric(float64(len(fp32))/1e6, "fp32-MB")
			for i, v := range variants[1:] {
				b.ReportMetric(float64(v.size)/float64(len(fp32)), v.name+"-size-x")
				b.ReportMetric(float64(med[i+1])/float64(med[0]), v.name+"-time-x")
			}
		})
	}
}

// precisionVariant is one quantized form of a model; size is filled in
// by openVariants.
type precisionVariant struct {
	name string
	opts *Options // nil: the float32 original
	size int
}

// precisionWorkload runs one unit of work on a session and returns how
// many output values it produced.
type precisionWorkload func(s *ort.Session) (int, error)

// precisionCases are the models of the table. rounds is the number of
// interleaved rounds, the N of the medians: chosen so that the three
// together stay well under a minute on the 2-core CI box.
var precisionCases = []struct {
	name     string
	rounds   int
	setup    func(b *testing.B) ([]byte, precisionWorkload)
	variants []precisionVariant
}{
	{
		name:   "demo-voice",
		rounds: 21,
		setup: func(b *testing.B) ([]byte, precisionWorkload) {
			data, _, err := demo.Build(nil)
			if err != nil {
				b.Fatal(err)
			}
			return data, piperWorkload(b, demo.PhonemeIDMap())
		},
		variants: []precisionVariant{
			{name: "fp16-store", opts: &Options{Mode: ModeFP16Store}},
			{name: "int8", opts: &Options{Mode: ModeInt8}},
			{name: "nbits", opts: &Options{Mode: ModeNBits}},
		},
	},
	{
		name:   "cloning-decoder",
		rounds: 21,
		setup: func(b *testing.B) ([]byte, precisionWorkload) {
			kit, err := demo.BuildCloning(nil)
			if err != nil {
				b.Fatal(err)
			}
			return kit[demo.DecoderFile], decoderWorkload
		},
		// int8 in each weight format: cpuclass.Int8FormatFor says which
		// one this CPU's class gets; all are timed on every CPU.
		variants: []precisionVariant{
			{name: "fp16-store", opts: &Options{Mode: ModeFP16Store}},
			{name: "int8-s8", opts: &Options{Mode: ModeInt8, Int8Format: cpuclass.FullRange}},
			{name: "int8-s8-7bit", opts: &Options{Mode: ModeInt8, Int8Format: cpuclass.ReducedRange}},
			{name: "int8-u8", opts: &Options{Mode: ModeInt8, Int8Format: cpuclass.Unsigned}},
			{name: "int8-rest16-emb8", opts: &Options{Mode: ModeInt8, RestFP16: true, EmbeddingsInt8: true}},
			{name: "nbits", opts: &Options{Mode: ModeNBits}},
			{name: "nbits-rest16", opts: &Options{Mode: ModeNBits, RestFP16: true}},
		},
	},
	{
		name:   "piper-medium",
		rounds: 5,
		setup: func(b *testing.B) ([]byte, precisionWorkload) {
			data, err := benchmodel.PiperMedium(nil)
			if err != nil {
				b.Fatal(err)
			}
			return data, piperWorkload(b, benchmodel.PhonemeIDMap())
		},
		variants: []precisionVariant{
			{name: "fp16-store", opts: &Options{Mode: ModeFP16Store}},
			{name: "int8", opts: &Options{Mode: ModeInt8}},
			{name: "nbits", opts: &Options{Mode: ModeNBits}},
			// Conv made integer shows where int8 loses.
			{name: "int8-conv", opts: &Options{Mode: ModeInt8, IncludeConv: true}},
		},
	},
}

// openVariants quantizes fp32 into every variant, records each file's
// size and opens it with one intra-op thread on the CPU provider. The
// sessions are closed when the benchmark ends.
func openVariants(b *testing.B, rt *ort.Runtime, fp32 []byte, variants []precisionVariant) []*ort.Session {
	b.Helper()
	m, err := onnx.Decode(fp32, nil)
	if err != nil {
		b.Fatal(err)
	}
	sessions := make([]*ort.Session, len(variants))
	for i := range variants {
		v := &variants[i]
		data := fp32
		if v.opts != nil {
			if data, err = onnx.Encode(quantize(b, m, v.opts)); err != nil {
				b.Fatalf("%s: %v", v.name, err)
			}
		}
		v.size = len(data)
		s, err := rt.NewSession(data, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
		if err != nil {
			b.Fatalf("%s: onnx runtime refused the model: %v", v.name, err)
		}
		b.Cleanup(func() { s.Close() })
		sessions[i] = s
	}
	return sessions
}

// interleave runs w on every session in turn, rounds times, and returns
// each session's median time. Each round starts one variant later than
// the one before (A B C D, B C D A, ...): a variant's time can depend on
// what ran just before it (caches, a core's frequency after heavy
// integer code), and the rotation shares that effect out too.
func interleave(sessions []*ort.Session, w precisionWorkload, rounds int) ([]time.Duration, error) {
	times := make([][]time.Duration, len(sessions))
	for r := range rounds {
		for j := range sessions {
			i := (r + j) % len(sessions)
			start := time.Now()
			if _, err := w(sessions[i]); err != nil {
				return nil, fmt.Errorf("variant %d: %w", i, err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	med := make([]time.Duration, len(sessions))
	for i, t := range times {
		slices.Sort(t)
		// An even count takes the upper middle: rounds are odd anyway.
		med[i] = t[len(t)/2]
	}
	return med, nil
}

// precisionSentence is the voices' fixed sentence: espeak-ng en-us IPA
// that makes 59 phoneme ids with either voice's phoneme_id_map.
const precisionSentence = "tˈɜːn ˈɑːn ðə kˈɪtʃən lˈaɪts"

// piperWorkload synthesizes precisionSentence once with noise scales 0
// (deterministic output) and speaker 0 when the model has a sid input.
func piperWorkload(b *testing.B, idMap map[string][]int64) precisionWorkload {
	b.Helper()
	ids := gate.PiperIDs(idMap, precisionSentence)
	if len(ids) < 50 || len(ids) > 70 {
		b.Fatalf("the sentence makes %d phoneme ids, want about 60", len(ids))
	}
	return func(s *ort.Session) (int, error) {
		in := []ort.Tensor{
			{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
			{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
			{Name: "scales", Shape: []int64{3}, Float32: []float32{0, 1, 0}},
		}
		for _, t := range s.Inputs() {
			if t.Name == "sid" {
				in = append(in, ort.Tensor{Name: "sid", Shape: []int64{1}, Int64: []int64{0}})
			}
		}
		out, err := s.Run(in)
		if err != nil {
			return 0, err
		}
		return len(out[0].Float32), nil
	}
}

// Sizes of the decoder workload: a speaker prompt prefilled in one run,
// then single-token steps carrying the KV cache, as the engine decodes.
const (
	precisionPromptTokens = 64
	precisionSteps        = 48
)

// decoderWorkload prefills a fixed prompt from an empty cache and then
// decodes precisionSteps tokens one run each, feeding each run's present
// KV tensors and prosody output into the next, under the gate's default
// tensor names (which the cloning kit uses).
func decoderWorkload(s *ort.Session) (int, error) {
	prosody, err := decodeProsody(s)
	return len(prosody), err
}

// decodeProsody is decoderWorkload, returning every run's prosody output
// in order.
func decodeProsody(s *ort.Session) ([]float32, error) {
	vocab, err := strconv.Atoi(s.Metadata()[gate.VocabMetadataKey])
	if err != nil || vocab < 2 {
		return nil, fmt.Errorf("decoder metadata %q: want the vocabulary size", gate.VocabMetadataKey)
	}
	var prevDim int64
	past := map[string]ort.Tensor{}
	for _, t := range s.Inputs() {
		switch {
		case t.Name == gate.DefaultDecoderPrev:
			prevDim = t.Dims[2]
		case strings.HasPrefix(t.Name, "past_key_values."):
			past[t.Name] = ort.Tensor{Name: t.Name, Shape: []int64{1, t.Dims[1], 0, t.Dims[3]}, Float32: []float32{}}
		}
	}
	if prevDim < 1 || len(past) == 0 {
		return nil, fmt.Errorf("decoder lacks %q or past_key_values inputs", gate.DefaultDecoderPrev)
	}
	// Fixed tokens: the same for every variant and every round.
	tokens := make([]int64, precisionPromptTokens+precisionSteps)
	for i := range tokens {
		tokens[i] = int64((i*7919 + 13) % vocab)
	}
	var prosody []float32
	prev := make([]float32, precisionPromptTokens*prevDim)
	run := tokens[:precisionPromptTokens]
	for step := -1; step < precisionSteps; step++ {
		if step >= 0 {
			run = tokens[precisionPromptTokens+step : precisionPromptTokens+step+1]
		}
		in := []ort.Tensor{
			{Name: gate.DefaultDecoderIDs, Shape: []int64{1, int64(len(run))}, Int64: run},
			{Name: gate.DefaultDecoderPrev, Shape: []int64{1, int64(len(run)), prevDim}, Float32: prev},
		}
		for _, t := range past {
			in = append(in, t)
		}
		out, err := s.Run(in)
		if err != nil {
			return nil, fmt.Errorf("decoder step %d: %w", step, err)
		}
		var fed bool
		for _, t := range out {
			switch {
			case t.Name == gate.DefaultDecoderFeedback:
				if int64(len(t.Float32)) < prevDim {
					return nil, fmt.Errorf("decoder step %d: prosody output has %d values", step, len(t.Float32))
				}
				prev = append(prev[:0], t.Float32[int64(len(t.Float32))-prevDim:]...)
				prosody = append(prosody, t.Float32...)
				fed = true
			case strings.HasPrefix(t.Name, "present."):
				t.Name = "past_key_values." + strings.TrimPrefix(t.Name, "present.")
				if _, ok := past[t.Name]; !ok {
					return nil, fmt.Errorf("decoder step %d: output %q has no matching past input", step, t.Name)
				}
				past[t.Name] = t
			}
		}
		if !fed || math.IsNaN(float64(prev[0])) {
			return nil, fmt.Errorf("decoder step %d: no finite %q output", step, gate.DefaultDecoderFeedback)
		}
	}
	return prosody, nil
}
