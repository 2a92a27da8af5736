package voice

import (
	"math"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/text"
)

// The audio of one model run is capped before the run: a VITS-style model
// holds its intermediate tensors for the whole utterance at once, so its
// memory grows with the audio it makes (the demo voice about 2.8 MB per
// second, a 60 s sentence 170 MB; Piper's HiFi-GAN decoder more), and the
// C allocator keeps much of that peak after the run. A sentence whose
// estimated audio is over the cap is cut at clause, then word boundaries
// (text.Break) into runs that each fit, and every run is a sentence of its
// own to the caller: it streams, and the phrase cache keys it.
const (
	// DefaultMaxRunAudio is PiperOptions.MaxRunAudio's default: 10 s is a
	// long sentence at the normal rate (25–30 words), so only run-on text
	// or a slow rate is cut, and the demo voice's run stays near 30 MB.
	DefaultMaxRunAudio = 8 * time.Second

	// PiperSecondsPerID estimates the audio of one phoneme id at
	// length_scale 1. Piper's id sequence puts a pad after every phoneme,
	// so an id is half a phoneme: measured 0.028–0.035 s on the demo voice
	// for English; 0.04 leaves room for slower voices. The estimate only
	// decides where to cut: a run that comes out longer is still bounded
	// by MaxSentenceAudio.
	PiperSecondsPerID = 0.04

	// minRunRunes is the shortest piece a sentence is cut into: below a
	// few words, cutting further hurts the prosody more than the memory
	// it saves.
	minRunRunes = 12
)

// capRuns cuts every sentence whose estimated audio is over maxAudio into
// pieces that fit. estimate returns a sentence's audio, or an error; a
// sentence that cannot be estimated is kept whole (its run fails or
// succeeds as it would have). maxAudio ≤ 0 returns sentences as they are.
func capRuns(sentences []string, maxAudio time.Duration, estimate func(string) (time.Duration, error)) []string {
	if maxAudio <= 0 {
		return sentences
	}
	var out []string
	for _, s := range sentences {
		out = appendRuns(out, s, maxAudio, estimate, 0)
	}
	return out
}

// appendRuns appends s, cut as capRuns says, to out. A piece that is
// still over (phonemes are not spread evenly over the runes: numbers,
// abbreviations) is cut again, a few times at most.
func appendRuns(out []string, s string, maxAudio time.Duration, estimate func(string) (time.Duration, error), depth int) []string {
	est, err := estimate(s)
	runes := utf8.RuneCountInString(s)
	if err != nil || est <= maxAudio || runes <= minRunRunes || depth >= 4 {
		return append(out, s)
	}
	// Aim under the cap: Break's pieces are balanced, not equal.
	budget := int(math.Floor(float64(runes) * 0.9 * float64(maxAudio) / float64(est)))
	for _, piece := range text.Break(s, max(budget, minRunRunes)) {
		out = appendRuns(out, piece, maxAudio, estimate, depth+1)
	}
	return out
}

// SplitFor splits text into the sentences Synthesize would speak for prm:
// the sentences of Split, with each one whose audio at prm's length scale
// is estimated over MaxRunAudio cut at clause, then word boundaries into
// runs that fit. Speak the result with SynthesizeSentence, one run each.
func (p *Piper) SplitFor(s string, prm Params) ([]string, error) {
	sentences, err := p.Split(s)
	if err != nil {
		return nil, err
	}
	return capRuns(sentences, p.maxRun, p.estimator(prm)), nil
}

// RunsFor cuts one sentence of Split into the runs SplitFor makes of it,
// so that a caller speaking a long text phonemizes each sentence only
// when it comes to it: SplitFor(s) is RunsFor of each of Split(s)'s
// sentences, in order.
//
// The answer is remembered for the last runsMemoSize sentences: a phrase
// that comes back (a burst of satellites announcing the same thing, an
// automation's daily line) is a phrase-cache hit whose only other cost
// would be running the front end to find its runs again (espeak-ng
// through cgo, 40–50 µs of a 240 µs Wyoming hit).
func (p *Piper) RunsFor(sentence string, prm Params) []string {
	key := runsKey{sentence, prm.LengthScale}
	if runs, ok := p.runs.get(key); ok {
		return runs
	}
	runs := capRuns([]string{sentence}, p.maxRun, p.estimator(prm))
	p.runs.put(key, runs)
	return runs
}

// runsMemoSize is how many sentences' runs a voice remembers.
const runsMemoSize = 64

// runsKey is what a sentence's runs depend on besides the voice.
type runsKey struct {
	sentence    string
	lengthScale float32
}

// runsMemo remembers RunsFor's answers, the oldest forgotten first. The
// runs it hands out are shared: callers only read them.
type runsMemo struct {
	mu    sync.Mutex
	m     map[runsKey][]string
	order [runsMemoSize]runsKey // a ring of m's keys, next the oldest
	next  int
}

func (m *runsMemo) get(k runsKey) ([]string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	runs, ok := m.m[k]
	return runs, ok
}

func (m *runsMemo) put(k runsKey, runs []string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = make(map[runsKey][]string, runsMemoSize)
	}
	if _, ok := m.m[k]; ok {
		return
	}
	if len(m.m) == runsMemoSize {
		delete(m.m, m.order[m.next])
	}
	m.m[k] = runs
	m.order[m.next] = k
	m.next = (m.next + 1) % runsMemoSize
}

// estimator estimates a sentence's audio at prm's length scale from its
// phoneme ids, which it keeps for the synthesis that follows.
func (p *Piper) estimator(prm Params) func(string) (time.Duration, error) {
	scale := float64(prm.LengthScale)
	if scale <= 0 {
		scale = 1
	}
	return func(sentence string) (time.Duration, error) {
		ids, unknown, err := p.phonemeIDs(sentence)
		if err != nil {
			return 0, err
		}
		p.splitIDs.put(sentence, ids, unknown)
		return time.Duration(float64(len(ids)) * PiperSecondsPerID * scale * float64(time.Second)), nil
	}
}
