//go:build cgo

package demo

import (
	"math"
	"slices"
	"testing"
)

// kvTolerance is how far two ways of computing the same prosody may
// differ: ONNX Runtime picks different kernels for one token and for many,
// which changes float32 rounding, not results.
const kvTolerance = 1e-4

// scratchPrompt runs the prompt one token at a time with zero previous
// prosody (what a prefill computes), from an empty cache.
func (k *cloneModels) scratchPrompt(t testing.TB, prompt []int64) kvCache {
	t.Helper()
	c := k.emptyKV()
	for _, id := range prompt {
		_, c = k.decode(t, []int64{id}, make([]float32, ProsodyDim), c)
	}
	return c
}

// teacherPrev is the previous-prosody input that makes one run over a
// request equal to its steps: zeros, then each step's output shifted by one.
func teacherPrev(prosody []float32) []float32 {
	prev := make([]float32, len(prosody))
	copy(prev[ProsodyDim:], prosody[:len(prosody)-ProsodyDim])
	return prev
}

func kvDiff(a, b kvCache) float64 {
	if a.seq != b.seq {
		return math.Inf(1)
	}
	var m float64
	for i := range a.keys {
		m = max(m, maxAbsDiff(a.keys[i], b.keys[i]), maxAbsDiff(a.values[i], b.values[i]))
	}
	return m
}

func TestDecoderPrefixReuse(t *testing.T) {
	k := cloneKit(t)
	_, prompt := k.embed(t, referenceClip(t, 0, sentenceA))
	prefix := k.prefill(t, prompt)
	if prefix.seq != k.o.PromptTokens {
		t.Fatalf("prefix holds %d tokens, want %d", prefix.seq, k.o.PromptTokens)
	}
	kept := prefix.clone()
	req := espeakIDs(t, sentenceC)
	n := len(req)

	cached, after := k.steps(t, req, prefix.clone())
	if after.seq != k.o.PromptTokens+n {
		t.Errorf("after %d steps the cache holds %d tokens, want %d", n, after.seq, k.o.PromptTokens+n)
	}
	if kvDiff(prefix, kept) != 0 {
		t.Error("running from a copy changed the cached prefix")
	}

	// The prompt one token at a time equals the prefill.
	scratch := k.scratchPrompt(t, prompt)
	if d := kvDiff(scratch, prefix); d > kvTolerance {
		t.Errorf("prompt step by step vs prefill: KV differs by %g", d)
	}
	fromScratch, afterScratch := k.steps(t, req, scratch)
	d := maxAbsDiff(cached, fromScratch)
	t.Logf("%d steps after a cached prefix vs all from scratch step by step: max |Δprosody| %.2g", n, d)
	if d > kvTolerance {
		t.Errorf("prosody differs by %g, want ≤ %g", d, kvTolerance)
	}
	if d := kvDiff(after, afterScratch); d > kvTolerance {
		t.Errorf("final KV differs by %g", d)
	}

	// One run over prompt and request, fed the steps' own prosody.
	prev := slices.Concat(make([]float32, ProsodyDim*len(prompt)), teacherPrev(cached))
	all, afterAll := k.decode(t, slices.Concat(prompt, req), prev, k.emptyKV())
	d = maxAbsDiff(cached, all[ProsodyDim*len(prompt):])
	t.Logf("steps vs one prefill of prompt+request: max |Δprosody| %.2g", d)
	if d > kvTolerance {
		t.Errorf("prosody differs by %g, want ≤ %g", d, kvTolerance)
	}
	if d := kvDiff(after, afterAll); d > kvTolerance {
		t.Errorf("final KV differs by %g", d)
	}
	// And one run over the request after the cached prefix.
	reqOnly, _ := k.decode(t, req, teacherPrev(cached), prefix.clone())
	if d := maxAbsDiff(cached, reqOnly); d > kvTolerance {
		t.Errorf("steps vs one run over the request after the prefix: prosody differs by %g", d)
	}
}

func TestDecoderSessionContinuation(t *testing.T) {
	k := cloneKit(t)
	_, prompt := k.embed(t, referenceClip(t, 2, sentenceB))
	reqA, reqB := espeakIDs(t, sentenceC), espeakIDs(t, "How are you?")
	prefix := k.prefill(t, prompt)
	pA, afterA := k.steps(t, reqA, prefix.clone())
	pB, afterB := k.steps(t, reqB, afterA)
	if want := len(prompt) + len(reqA) + len(reqB); afterB.seq != want {
		t.Errorf("session holds %d tokens, want %d", afterB.seq, want)
	}
	// From scratch, step by step: prompt, then A, then B.
	c := k.scratchPrompt(t, prompt)
	sA, c := k.steps(t, reqA, c)
	sB, c := k.steps(t, reqB, c)
	dA, dB := maxAbsDiff(pA, sA), maxAbsDiff(pB, sB)
	t.Logf("session continuation vs recomputing A+B from scratch: max |Δprosody| A %.2g, B %.2g", dA, dB)
	if dA > kvTolerance || dB > kvTolerance {
		t.Errorf("prosody differs by %g (A) and %g (B), want ≤ %g", dA, dB, kvTolerance)
	}
	if d := kvDiff(afterB, c); d > kvTolerance {
		t.Errorf("final KV differs by %g", d)
	}
	// One run over everything, each utterance starting from zero prosody.
	prev := slices.Concat(make([]float32, ProsodyDim*len(prompt)), teacherPrev(pA), teacherPrev(pB))
	all, _ := k.decode(t, slices.Concat(prompt, reqA, reqB), prev, k.emptyKV())
	if d := maxAbsDiff(pB, all[ProsodyDim*(len(prompt)+len(reqA)):]); d > kvTolerance {
		t.Errorf("continuation vs one run over prompt+A+B: prosody of B differs by %g", d)
	}
	// The context matters: B after A is not B alone.
	alone, _ := k.steps(t, reqB, prefix.clone())
	if maxAbsDiff(alone, pB) < 1e-3 {
		t.Error("B's prosody is the same with and without A before it")
	}
}

// TestDecoderUsesItsInputs: the prosody depends on the speaker prompt and
// on the phonemes, and uses the range it has without sitting at its ends.
func TestDecoderUsesItsInputs(t *testing.T) {
	k := cloneKit(t)
	req := espeakIDs(t, sentenceA)
	_, low := k.embed(t, referenceClip(t, 0, sentenceB))
	_, high := k.embed(t, referenceClip(t, 2, sentenceB))
	pLow, _ := k.steps(t, req, k.prefill(t, low))
	pHigh, _ := k.steps(t, req, k.prefill(t, high))
	if d := maxAbsDiff(pLow, pHigh); d < 0.01 {
		t.Errorf("heron's and wren's prompts give prosody within %g", d)
	}
	for c := range ProsodyDim {
		var sum, sq, peak float64
		n := 0
		for i := c; i < len(pLow); i += ProsodyDim {
			v := float64(pLow[i])
			sum += v
			sq += v * v
			peak = max(peak, math.Abs(v))
			n++
		}
		sd := math.Sqrt(sq/float64(n) - (sum/float64(n))*(sum/float64(n)))
		t.Logf("prosody %d: mean %.3f, sd %.3f, peak |%.3f|", c, sum/float64(n), sd, peak)
		if sd < 0.05 || peak > 0.999 {
			t.Errorf("prosody %d: sd %.3f, peak %.3f: want it to vary (sd ≥ 0.05) and not saturate", c, sd, peak)
		}
	}
}

func TestDecoderHostileInputs(t *testing.T) {
	k := cloneKit(t)
	prefix := k.prefill(t, slices.Repeat([]int64{int64(len(inventory))}, 4))
	vocab := int64(k.o.vocab())
	ids := []int64{-1, math.MinInt64, vocab, math.MaxInt64, 5}
	clamped := []int64{0, 0, vocab - 1, vocab - 1, 5}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	prev := []float32{nan, inf, -inf, 1e30, -2, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	sane := []float32{0, 1, -1, 1, -1, 0.5, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	got, _ := k.decode(t, ids, prev, prefix.clone())
	want, _ := k.decode(t, clamped, sane, prefix.clone())
	if !slices.Equal(got, want) {
		t.Error("ids outside the vocabulary or prosody outside [-1, 1] are not clamped")
	}
}

// FuzzDecoder runs arbitrary ids and previous prosody after a prefix: the
// decoder must never fail and must keep its contract (checked by decode).
func FuzzDecoder(f *testing.F) {
	k := cloneKit(f)
	prefix := k.prefill(f, slices.Repeat([]int64{int64(len(inventory)) + 3}, k.o.PromptTokens))
	f.Add([]byte{1, 0, 40, 0, 2}, []byte{})
	f.Add([]byte{255, 0, 128}, []byte{0xff, 0xff, 0xc0, 0x7f})
	f.Fuzz(func(t *testing.T, rawIDs, rawPrev []byte) {
		if len(rawIDs) == 0 || len(rawIDs) > 256 {
			return
		}
		ids := make([]int64, len(rawIDs))
		for i, v := range rawIDs {
			ids[i] = int64(int8(v)) * 3 // some negative, some past the vocabulary
		}
		prev := make([]float32, ProsodyDim*len(ids))
		for i := range prev {
			if 4*i+4 <= len(rawPrev) {
				prev[i] = math.Float32frombits(uint32(rawPrev[4*i]) | uint32(rawPrev[4*i+1])<<8 | uint32(rawPrev[4*i+2])<<16 | uint32(rawPrev[4*i+3])<<24)
			}
		}
		k.decode(t, ids, prev, prefix.clone())
	})
}

// BenchmarkRequest times one sentence's decoder steps after the speaker
// prefix three ways: from a cached prefix (a copy), after prefilling the
// prompt in one run, and after running the prompt token by token (what a
// decoder without prefill support costs). Compare their ms/request.
func BenchmarkRequest(b *testing.B) {
	k := cloneKit(b)
	_, prompt := k.embed(b, referenceClip(b, 0, sentenceA))
	prefix := k.prefill(b, prompt)
	req := espeakIDs(b, sentenceC)
	for _, bb := range []struct {
		name  string
		start func() kvCache
	}{
		{"cached-prefix", prefix.clone},
		{"prefill", func() kvCache { return k.prefill(b, prompt) }},
		{"prompt-steps", func() kvCache { return k.scratchPrompt(b, prompt) }},
	} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				k.steps(b, req, bb.start())
			}
			b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/request")
			b.ReportMetric(b.Elapsed().Seconds()*1e6/float64(b.N*len(req)), "µs/id")
		})
	}
}
