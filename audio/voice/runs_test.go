package voice_test

import (
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
)

// TestSplitForCapsRunAudio speaks a long sentence without punctuation at
// the slowest rate: SplitFor cuts it at spaces into runs, each of which
// the model renders within the cap (the estimate has room to spare on the
// demo voice), with every word kept; at the normal rate a short sentence
// stays whole.
func TestSplitForCapsRunAudio(t *testing.T) {
	v := loadDemo(t, &voice.PiperOptions{MaxRunAudio: 6 * time.Second})
	words := strings.Fields("the quick brown fox jumps over a lazy dog while the kitchen light stays on and the washing machine hums")
	var b strings.Builder
	for i := range 60 {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	long := b.String()

	slow, err := v.Resolve(voice.Request{Rate: voice.MinRate})
	if err != nil {
		t.Fatal(err)
	}
	runs, err := v.SplitFor(long, slow)
	if err != nil {
		t.Fatal(err)
	}
	if len(runs) < 10 {
		t.Fatalf("%d runs for %d words at rate %v, want the sentence cut", len(runs), 60, voice.MinRate)
	}
	if got := strings.Join(runs, " "); got != long {
		t.Fatalf("runs do not rejoin to the sentence:\n%q\n%q", got, long)
	}
	for i, r := range runs {
		pcm, _, err := v.SynthesizeSentence(r, slow)
		if err != nil {
			t.Fatal(err)
		}
		if d := pcm.Duration(); d > 6*time.Second {
			t.Errorf("run %d (%q): %v of audio, cap 6s", i, r, d)
		}
	}

	normal, err := v.Resolve(voice.Request{})
	if err != nil {
		t.Fatal(err)
	}
	short := "The washing machine has finished, and the dryer is next."
	if runs, err := v.SplitFor(short, normal); err != nil || len(runs) != 1 {
		t.Errorf("SplitFor(%q) = %q, %v; want it whole", short, runs, err)
	}
	// A negative cap turns the cut off.
	off := loadDemo(t, &voice.PiperOptions{MaxRunAudio: -1})
	if runs, err := off.SplitFor(long, slow); err != nil || len(runs) != 1 {
		t.Errorf("MaxRunAudio -1: %d runs, %v; want the sentence whole", len(runs), err)
	}
}

// TestPiperNoSentenceSilence: a negative SentenceSilence means none, also
// through LoadPiper (which applies the defaults before newPiper does).
func TestPiperNoSentenceSilence(t *testing.T) {
	if d := loadDemo(t, &voice.PiperOptions{SentenceSilence: -1}).SilenceAfter(); d != 0 {
		t.Errorf("SentenceSilence -1: pause %v, want none", d)
	}
	if d := loadDemo(t, nil).SilenceAfter(); d != voice.DefaultSentenceSilence {
		t.Errorf("default pause %v, want %v", d, voice.DefaultSentenceSilence)
	}
}

// TestBundleEnginesNoSentenceSilence: the same for the style-vector and
// cloning engines, which share PiperOptions' defaults.
func TestBundleEnginesNoSentenceSilence(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	st, err := voice.LoadStyle(rt, styleKit(t, ""), &voice.StyleOptions{SentenceSilence: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if d := st.SilenceAfter(); d != 0 {
		t.Errorf("style: SentenceSilence -1: pause %v, want none", d)
	}
	p, err := voice.LoadPipeline(rt, cloneKit(t, nil), &voice.PipelineOptions{SentenceSilence: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if d := p.SilenceAfter(); d != 0 {
		t.Errorf("pipeline: SentenceSilence -1: pause %v, want none", d)
	}
}
