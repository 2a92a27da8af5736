package voice_test

// The pipeline's decoder state: the speaker prefix cache against
// computing from scratch, sessions, their bounds, and concurrent use.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

func TestPipelineCachedPrefixEqualsScratch(t *testing.T) {
	dir := cloneKit(t, nil)
	cached := loadPipeline(t, dir, nil)
	scratch := loadPipeline(t, dir, &voice.PipelineOptions{MaxPrefixes: -1})
	voice.SetStepwisePrefill(scratch, true)
	emb := enroll(t, cached, referenceClip(t, "robin", refA))
	req := voice.PipelineRequest{Text: "Please turn on the kitchen lights. The washing machine has finished.", Speaker: &emb}
	oc, os := observe(cached), observe(scratch)
	first := say(t, cached, req)
	second := say(t, cached, req) // prefix from the cache for every sentence
	fresh := say(t, scratch, req)
	if st := cached.KVStats(); st.Prefixes != 1 || st.PrefixMisses != 1 || st.PrefixHits != 3 {
		t.Errorf("prefix cache after two requests of two sentences: %+v, want 1 entry, 1 miss, 3 hits", st)
	}
	if st := scratch.KVStats(); st.Prefixes != 0 || st.PrefixBytes != 0 {
		t.Errorf("disabled prefix cache holds %+v", st)
	}
	if len(oc.prosody) != 4 || len(os.prosody) != 2 {
		t.Fatalf("observed %d and %d sentences", len(oc.prosody), len(os.prosody))
	}
	for i := range 2 {
		d := maxAbsDiff(oc.prosody[i], os.prosody[i])
		t.Logf("sentence %d (%d ids): cached prefix vs prompt from scratch step by step: max |Δprosody| %.2g", i+1, len(oc.ids[i]), d)
		if d > 1e-4 {
			t.Errorf("sentence %d: prosody differs by %g, want ≤ 1e-4", i+1, d)
		}
		if !slices.Equal(oc.prosody[i], oc.prosody[i+2]) {
			t.Errorf("sentence %d: the cached prefix gives other prosody the second time", i+1)
		}
		if len(first[i].PCM.Samples) != len(fresh[i].PCM.Samples) {
			t.Errorf("sentence %d: %d samples with the cached prefix, %d from scratch", i+1, len(first[i].PCM.Samples), len(fresh[i].PCM.Samples))
		}
		if !slices.Equal(first[i].PCM.Samples, second[i].PCM.Samples) {
			t.Errorf("sentence %d: two cached runs give different audio", i+1)
		}
	}
}

const (
	followA = "What's the weather today?"
	followB = "And tomorrow?"
)

func TestPipelineSessionContinuation(t *testing.T) {
	dir := cloneKit(t, nil)
	p := loadPipeline(t, dir, nil)
	scratch := loadPipeline(t, dir, &voice.PipelineOptions{MaxPrefixes: -1})
	emb := enroll(t, p, referenceClip(t, "wren", refB))
	obs := observe(p)
	say(t, p, voice.PipelineRequest{Text: followA, Speaker: &emb, Session: "kitchen"})
	chunksB := say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb, Session: "kitchen"})
	inSession := obs.last()
	// An engine without session state gets the same by running the
	// decoder over the whole history again (what BenchmarkPrefixCache
	// compares the follow-up with).
	prm, err := p.Resolve(voice.PipelineRequest{Speaker: &emb})
	if err != nil {
		t.Fatal(err)
	}
	again, err := voice.SpeakAfterHistory(context.Background(), p, prm, []string{followA}, followB)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Samples, joined(chunksB)) {
		t.Error("the follow-up differs from recomputing its history")
	}
	idsA, idsB := obs.ids[0], obs.ids[1]

	want, err := voice.ScratchProsody(scratch, emb, []string{followA, followB})
	if err != nil {
		t.Fatal(err)
	}
	dA, dB := maxAbsDiff(obs.prosody[0], want[0]), maxAbsDiff(inSession, want[1])
	t.Logf("session follow-up vs recomputing prompt+A+B from scratch: max |Δprosody| A %.2g, B %.2g", dA, dB)
	if dA > 1e-4 || dB > 1e-4 {
		t.Errorf("prosody differs by %g (A) and %g (B), want ≤ 1e-4", dA, dB)
	}
	// The history matters: B alone is spoken otherwise.
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb})
	if d := maxAbsDiff(obs.last(), inSession); d < 1e-3 {
		t.Errorf("%q with and without the session differ by only %g", followB, d)
	}
	info := p.Info()
	kvBytes := int64(2*demo.DefaultHeads*demo.DefaultHeadDim*4) * int64(demo.DefaultLayers) // keys and values per token
	st := p.KVStats()
	if st.Sessions != 1 || st.SessionBytes != kvBytes*int64(info.PromptTokens+len(idsA)+len(idsB)) {
		t.Errorf("session cache %+v, want 1 session of %d tokens (%d bytes)", st, info.PromptTokens+len(idsA)+len(idsB),
			kvBytes*int64(info.PromptTokens+len(idsA)+len(idsB)))
	}
	if st.PrefixBytes != kvBytes*int64(info.PromptTokens) {
		t.Errorf("prefix bytes %d, want %d", st.PrefixBytes, kvBytes*int64(info.PromptTokens))
	}
	// A dropped session starts over.
	if !p.DropSession("kitchen") || p.DropSession("kitchen") {
		t.Error("DropSession does not report what it dropped")
	}
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb, Session: "kitchen"})
	if d := maxAbsDiff(obs.last(), obs.prosody[2]); d != 0 {
		t.Errorf("after DropSession the follow-up differs from a fresh sentence by %g", d)
	}
}

func TestPipelineSessionOverflowRestarts(t *testing.T) {
	// Measure the two sentences, then make a decoder whose context holds
	// the speaker prompt and one of them but not both.
	const prompt = 16
	probe := loadPipeline(t, cloneKit(t, &demo.CloningOptions{PromptTokens: prompt}), nil)
	obs := observe(probe)
	say(t, probe, voice.PipelineRequest{Text: followA + " " + followB})
	nA, nB := len(obs.ids[0]), len(obs.ids[1])
	ctxLen := prompt + nA + nB - 1
	split := &text.SplitOptions{MaxSentenceChars: 400}
	p := loadPipeline(t, cloneKit(t, &demo.CloningOptions{PromptTokens: prompt, MaxContext: ctxLen}), &voice.PipelineOptions{Split: split})
	obs = observe(p)
	emb := enroll(t, p, referenceClip(t, "heron", refC))
	say(t, p, voice.PipelineRequest{Text: followA, Speaker: &emb, Session: "s"})
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb, Session: "s"})
	restarted := obs.last()
	if st := p.KVStats(); st.SessionRestarts != 1 || st.Sessions != 1 {
		t.Fatalf("after overflowing %d tokens of context: %+v, want one restart", ctxLen, st)
	}
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb})
	if d := maxAbsDiff(restarted, obs.last()); d != 0 {
		t.Errorf("the restarted sentence differs from one spoken from the prefix by %g", d)
	}
	// After the restart the session holds prompt + B: B fits once more.
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb, Session: "s"})
	if st := p.KVStats(); st.SessionRestarts != 1 {
		t.Errorf("the session restarted again although prompt+B+B (%d) fits in %d", prompt+2*nB, ctxLen)
	}
	if d := maxAbsDiff(obs.last(), restarted); d < 1e-3 {
		t.Errorf("the sentence after the restart ignores the session (differs by %g)", d)
	}
	// A sentence that cannot fit at all is refused, naming the limit.
	long := strings.Repeat("The quick brown fox jumps over the lazy dog and ", 3) + "runs."
	err := p.Synthesize(context.Background(), voice.PipelineRequest{Text: long, Speaker: &emb, Session: "s"}, func(voice.Chunk) error { return nil })
	if !errors.Is(err, voice.ErrTooManySteps) || !strings.Contains(err.Error(), "decoder.max_steps") {
		t.Errorf("overlong sentence: %v, want ErrTooManySteps naming decoder.max_steps", err)
	}
}

// TestPipelineCacheBounds: prefixes by count, least recently used out, and
// EvictKV dropping sessions before prefixes.
func TestPipelineCacheBounds(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), &voice.PipelineOptions{MaxPrefixes: 2})
	var emb []voice.Embedding
	for _, s := range []string{"heron", "robin", "wren"} {
		e := enroll(t, p, referenceClip(t, s, refA))
		emb = append(emb, e)
		say(t, p, voice.PipelineRequest{Text: followB, Speaker: &e})
	}
	st := p.KVStats()
	if st.Prefixes != 2 || st.PrefixMisses != 3 || st.Evicted != 1 {
		t.Fatalf("three speakers in a cache of two: %+v", st)
	}
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb[2]}) // a hit
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb[0]}) // evicted: a miss
	if st := p.KVStats(); st.PrefixHits != 1 || st.PrefixMisses != 4 {
		t.Errorf("after using the newest and the evicted speaker: %+v, want 1 hit and 4 misses", st)
	}
	say(t, p, voice.PipelineRequest{Text: followB, Speaker: &emb[0], Session: "a"})
	before := p.KVStats()
	freed := p.EvictKV(1)
	after := p.KVStats()
	if freed != before.SessionBytes || after.Sessions != 0 || after.Prefixes != before.Prefixes {
		t.Errorf("EvictKV(1) freed %d: %+v → %+v, want the session (%d bytes) and no prefix", freed, before, after, before.SessionBytes)
	}
	freed = p.EvictKV(math.MaxInt64)
	if st := p.KVStats(); freed != after.PrefixBytes || st.Prefixes != 0 || st.PrefixBytes != 0 {
		t.Errorf("EvictKV(all) freed %d: %+v", freed, st)
	}
}

// TestPipelineConcurrentUse: enrollments while sentences are synthesized
// give what they give alone (run with -race).
func TestPipelineConcurrentUse(t *testing.T) {
	p := loadPipeline(t, cloneKit(t, nil), nil)
	clips := map[string]audio.PCM{}
	want := map[string]string{}
	for _, s := range []string{"heron", "robin", "wren"} {
		clips[s] = referenceClip(t, s, refA)
		want[s] = enroll(t, p, clips[s]).Digest()
	}
	alone := joined(say(t, p, voice.PipelineRequest{Text: refC, Session: "x"}))
	p.DropSession("x")
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for s, clip := range clips {
		wg.Go(func() {
			e, err := p.Enroll(context.Background(), clip)
			if err == nil && e.Digest() != want[s] {
				err = fmt.Errorf("%s: concurrent enrollment gives another embedding", s)
			}
			errs <- err
		})
	}
	for _, session := range []string{"x", "y"} {
		wg.Go(func() {
			var got []int16
			err := p.Synthesize(context.Background(), voice.PipelineRequest{Text: refC, Session: session}, func(c voice.Chunk) error {
				got = append(got, c.PCM.Samples...)
				return nil
			})
			if err == nil && !slices.Equal(got, alone) {
				err = fmt.Errorf("session %s: concurrent synthesis gives other audio", session)
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Error(err)
		}
	}
}
