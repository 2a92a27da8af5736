package voice_test

import (
	"context"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
)

// sinkEmbedding keeps the compiler from dropping timed lookups.
var sinkEmbedding voice.Embedding

func speakSentence(b *testing.B, p *voice.Pipeline, req voice.PipelineRequest) audio.PCM {
	b.Helper()
	prm, err := p.Resolve(req)
	if err != nil {
		b.Fatal(err)
	}
	pcm, _, err := p.SynthesizeSentence(context.Background(), req.Text, prm)
	if err != nil {
		b.Fatal(err)
	}
	return pcm
}

func ms(d time.Duration, n int) float64 { return d.Seconds() * 1000 / float64(n) }

// BenchmarkSpeakerSwitch compares, in one run, switching to a speaker
// whose embedding is stored (a map lookup, then one short sentence) with
// extracting the embedding again from a 10 s reference first. The
// sentence dominates both, so the lookup alone is also set against the
// extraction: that is the cost the embedding cache saves.
func BenchmarkSpeakerSwitch(b *testing.B) {
	p := loadPipeline(b, cloneKit(b, nil), nil)
	ref := longClip(b, "wren", 10)
	stored := map[string]voice.Embedding{"heron": enroll(b, p, referenceClip(b, "heron", refA)), "wren": enroll(b, p, ref)}
	const sentence = "Turn on the lights."
	for _, e := range stored { // both prefixes cached, as after earlier use
		speakSentence(b, p, voice.PipelineRequest{Text: sentence, Speaker: &e})
	}
	var lookup, cached, encode, extracted time.Duration
	const lookups = 1000
	b.ReportAllocs()
	for b.Loop() {
		start := time.Now()
		for range lookups {
			sinkEmbedding = stored["wren"]
		}
		lookup += time.Since(start)

		start = time.Now()
		e := stored["wren"]
		speakSentence(b, p, voice.PipelineRequest{Text: sentence, Speaker: &e})
		cached += time.Since(start)

		start = time.Now()
		e, err := p.Enroll(context.Background(), ref)
		if err != nil {
			b.Fatal(err)
		}
		encode += time.Since(start)
		speakSentence(b, p, voice.PipelineRequest{Text: sentence, Speaker: &e})
		extracted += time.Since(start)
	}
	n := b.N
	lookupNS := float64(lookup.Nanoseconds()) / float64(n*lookups)
	b.ReportMetric(ms(cached, n), "cached-ms")
	b.ReportMetric(ms(extracted, n), "extract-ms")
	b.ReportMetric(extracted.Seconds()/cached.Seconds(), "switch-x")
	b.ReportMetric(lookupNS, "lookup-ns")
	b.ReportMetric(ms(encode, n), "encode-10s-ms")
	b.ReportMetric(float64(encode.Nanoseconds())/float64(n)/lookupNS, "lookup-vs-encode-x")
}

// BenchmarkPrefixCache compares, in one run, a request (one sentence of
// 69 phoneme ids after a 64-token speaker prompt) with the speaker prefix
// cached against the same request with the prompt run from scratch one
// token at a time (a cold cache on a decoder stepped like an AR prompt)
// and in one prefill run; and a session's follow-up against a request
// that must recompute the history (prompt cached, previous sentence and
// follow-up stepped again) to speak it the same. It reports whole
// sentences (decoder and vocoder) and the decoder alone, and the KV
// memory of one speaker prefix and of the session.
func BenchmarkPrefixCache(b *testing.B) {
	dir := cloneKit(b, nil)
	cached := loadPipeline(b, dir, nil)
	steps := loadPipeline(b, dir, &voice.PipelineOptions{MaxPrefixes: -1})
	voice.SetStepwisePrefill(steps, true)
	prefill := loadPipeline(b, dir, &voice.PipelineOptions{MaxPrefixes: -1})
	emb := enroll(b, cached, referenceClip(b, "robin", refA))
	req := voice.PipelineRequest{Text: refC, Speaker: &emb}
	speakSentence(b, cached, req) // the prefix is cached from here on
	prm, err := cached.Resolve(req)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	timeIt := func(acc *time.Duration, f func()) {
		start := time.Now()
		f()
		*acc += time.Since(start)
	}
	decode := func(p *voice.Pipeline, prm voice.PipelineParams, s string) func() {
		return func() {
			if _, err := voice.DecodeSentence(ctx, p, s, prm); err != nil {
				b.Fatal(err)
			}
		}
	}
	var tCached, tSteps, tPrefill, dCached, dSteps, tFollow, tHistory time.Duration
	var sessionBytes int64
	b.ReportAllocs()
	for b.Loop() {
		timeIt(&tCached, func() { speakSentence(b, cached, req) })
		timeIt(&tSteps, func() { speakSentence(b, steps, req) })
		timeIt(&tPrefill, func() { speakSentence(b, prefill, req) })
		timeIt(&dCached, decode(cached, prm, refC))
		timeIt(&dSteps, decode(steps, prm, refC))

		cached.DropSession("b")
		sess := voice.PipelineRequest{Text: followA, Speaker: &emb, Session: "b"}
		speakSentence(b, cached, sess)
		sess.Text = followB
		timeIt(&tFollow, func() { speakSentence(b, cached, sess) })
		sessionBytes = cached.KVStats().SessionBytes
		timeIt(&tHistory, func() {
			if _, err := voice.SpeakAfterHistory(ctx, cached, prm, []string{followA}, followB); err != nil {
				b.Fatal(err)
			}
		})
	}
	n := b.N
	b.ReportMetric(ms(tCached, n), "cached-ms")
	b.ReportMetric(ms(tSteps, n), "prompt-steps-ms")
	b.ReportMetric(tSteps.Seconds()/tCached.Seconds(), "steps-vs-cached-x")
	b.ReportMetric(tPrefill.Seconds()/tCached.Seconds(), "prefill-vs-cached-x")
	b.ReportMetric(dSteps.Seconds()/dCached.Seconds(), "decoder-steps-vs-cached-x")
	b.ReportMetric(ms(tFollow, n), "follow-up-ms")
	b.ReportMetric(tHistory.Seconds()/tFollow.Seconds(), "history-vs-follow-up-x")
	st := cached.KVStats()
	b.ReportMetric(float64(st.PrefixBytes)/float64(max(st.Prefixes, 1)), "prefix-B")
	b.ReportMetric(float64(sessionBytes), "session-B")
}
