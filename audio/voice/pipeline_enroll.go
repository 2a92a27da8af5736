package voice

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"
	"math/cmplx"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Embedding is an enrolled speaker: what the encoder made of a reference
// recording. The recording itself is not kept.
type Embedding struct {
	// Vector is the speaker embedding [D], L2-normalized by the encoder.
	Vector []float32
	// Prompt is the speaker's prompt tokens [K]: speech-token ids in the
	// decoder's vocabulary, run through the decoder once per speaker to
	// make its prefix.
	Prompt []int64
	// EncoderDigest is the sha256 of the encoder that made it: an
	// embedding only means something to that encoder's voice.
	EncoderDigest string
}

// embeddingTag starts the canonical form, so that a digest of another
// kind of data never equals an embedding's.
const embeddingTag = "mynah embedding v1\x00"

// Digest is the sha256 (hex) of the embedding's canonical bytes: the tag,
// the encoder digest, D and the vector's float32 bits (negative zero as
// zero), K and the prompt ids, all little-endian with lengths first. It
// keys the speaker's prefix cache and a phrase cache's speaker: two
// embeddings with one digest make the same audio.
func (e Embedding) Digest() string {
	h := sha256.New()
	var b [8]byte
	put := func(v uint64) {
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	h.Write([]byte(embeddingTag))
	put(uint64(len(e.EncoderDigest)))
	h.Write([]byte(e.EncoderDigest))
	put(uint64(len(e.Vector)))
	buf := make([]byte, 0, 4*len(e.Vector))
	for _, v := range e.Vector {
		if v == 0 {
			v = 0 // -0 and 0 speak alike
		}
		buf = binary.LittleEndian.AppendUint32(buf, math.Float32bits(v))
	}
	h.Write(buf)
	put(uint64(len(e.Prompt)))
	buf = buf[:0]
	for _, id := range e.Prompt {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(id))
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil))
}

// Clone returns a copy that shares no memory with e.
func (e Embedding) Clone() Embedding {
	return Embedding{
		Vector:        append([]float32(nil), e.Vector...),
		Prompt:        append([]int64(nil), e.Prompt...),
		EncoderDigest: e.EncoderDigest,
	}
}

// minEmbeddingNorm is the length under which an embedding counts as zero:
// the encoder found no voice (it gives exactly zero for silence).
const minEmbeddingNorm = 1e-6

// CheckEmbedding tells whether e can speak with this voice: made by this
// voice's encoder (else ErrReenroll), of the encoder's length, finite and
// not zero, with prompt ids that leave room in the decoder's context
// (else ErrInvalidEmbedding). A store of enrolled speakers calls it when
// it loads one, so a speaker made before an encoder update is enrolled
// again rather than heard in the wrong voice.
func (p *Pipeline) CheckEmbedding(e Embedding) error {
	if e.EncoderDigest != p.info.EncoderDigest {
		return fmt.Errorf("%w: it was made by encoder %s, voice %s has encoder %s; enroll the speaker again from a recording",
			ErrReenroll, shortDigest(e.EncoderDigest), p.info.Name, shortDigest(p.info.EncoderDigest))
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidEmbedding, fmt.Sprintf(format, args...))
	}
	if d := p.info.EmbeddingDim; (d > 0 && len(e.Vector) != d) || len(e.Vector) == 0 {
		return bad("vector has %d values, the encoder makes %d", len(e.Vector), d)
	}
	var norm float64
	for i, v := range e.Vector {
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return bad("vector[%d] is %v", i, v)
		}
		norm += float64(v) * float64(v)
	}
	if math.Sqrt(norm) < minEmbeddingNorm {
		return bad("vector is zero (no voice)")
	}
	k := len(e.Prompt)
	switch {
	case k == 0:
		return bad("no prompt tokens")
	case p.info.PromptTokens > 0 && k != p.info.PromptTokens:
		return bad("%d prompt tokens, the encoder makes %d", k, p.info.PromptTokens)
	case k >= p.dec.maxContext:
		return bad("%d prompt tokens leave no room in decoder.kv.max_context (%d)", k, p.dec.maxContext)
	}
	for i, id := range e.Prompt {
		if id < 0 || id >= bundle.MaxTokenID {
			return bad("prompt[%d] = %d, outside 0..MaxTokenID-1 (%d)", i, id, bundle.MaxTokenID-1)
		}
	}
	return nil
}

// Enroll makes a speaker from a reference recording: mixed down to mono,
// resampled to the encoder's rate, and between the manifest's
// encoder.min_seconds and encoder.max_seconds long (limits checked before
// any work, errors wrapping ErrReference name them). A recording in which
// the encoder finds no voice is refused as well. Enroll only reads the
// voice: calls may run concurrently with each other and with synthesis.
func (p *Pipeline) Enroll(ctx context.Context, pcm audio.PCM) (Embedding, error) {
	if err := pcm.Validate(); err != nil {
		return Embedding{}, fmt.Errorf("enroll: %w: %w", ErrReference, err)
	}
	enc := p.bundle.Manifest.Encoder
	secs := float64(pcm.Frames()) / float64(pcm.Rate)
	switch {
	case secs < enc.MinSeconds:
		return Embedding{}, fmt.Errorf("enroll: %w: the recording is %.2f s, shorter than the voice's encoder.min_seconds (%g s); record at least %g s of speech",
			ErrReference, secs, enc.MinSeconds, enc.MinSeconds)
	case secs > enc.MaxSeconds:
		return Embedding{}, fmt.Errorf("enroll: %w: the recording is %.1f s, longer than the voice's encoder.max_seconds (%g s); trim it",
			ErrReference, secs, enc.MaxSeconds)
	}
	mono, err := audio.Convert(pcm, enc.SampleRate, 1)
	if err != nil {
		return Embedding{}, fmt.Errorf("enroll: %w: %w", ErrReference, err)
	}
	clip := make([]float32, len(mono.Samples))
	for i, s := range mono.Samples {
		clip[i] = float32(s) / 32768
	}
	if err := ctx.Err(); err != nil {
		return Embedding{}, err
	}
	e, err := p.encode(clip)
	if err != nil {
		return Embedding{}, fmt.Errorf("enroll: %w", err)
	}
	return e, nil
}

// encode runs the encoder on mono audio at its rate and checks what it
// made.
func (p *Pipeline) encode(clip []float32) (Embedding, error) {
	outs, err := p.enc.Run([]ort.Tensor{{Name: p.names.encAudio, Shape: []int64{1, int64(len(clip))}, Float32: clip}})
	if err != nil {
		return Embedding{}, fmt.Errorf("run encoder: %w", err)
	}
	e := Embedding{EncoderDigest: p.info.EncoderDigest}
	for _, o := range outs {
		switch o.Name {
		case p.names.encEmbedding:
			e.Vector = o.Float32
		case p.names.encPrompt:
			e.Prompt = o.Int64
		}
	}
	var norm float64
	for _, v := range e.Vector {
		norm += float64(v) * float64(v)
	}
	// NaN fails the comparison and lands here too.
	if !(math.Sqrt(norm) >= minEmbeddingNorm) {
		return Embedding{}, fmt.Errorf("%w: no voice found in the reference (silence, noise or whispering?); record a few seconds of clear speech", ErrReference)
	}
	if err := p.CheckEmbedding(e); err != nil {
		return Embedding{}, fmt.Errorf("encoder output: %w", err)
	}
	return e, nil
}

// DefaultSpeaker is the speaker of requests that name none: the
// embedding of PipelineOptions.DefaultReference, or else of a synthetic
// neutral voice (neutralReference), made by this voice's own encoder on
// first use and kept. Being the encoder's own output, it lies in the
// encoder's space and carries real prompt tokens whatever the model; a
// fixed vector could not promise either.
func (p *Pipeline) DefaultSpeaker() (Embedding, error) {
	e, err := p.defaultSpeaker()
	if err != nil {
		return Embedding{}, fmt.Errorf("default speaker: %w", err)
	}
	return e, nil
}

func (p *Pipeline) enrollDefault() (Embedding, error) {
	if p.defaultRef != nil {
		return p.Enroll(context.Background(), *p.defaultRef)
	}
	enc := p.bundle.Manifest.Encoder
	secs := min(max(neutralSeconds, 1.1*enc.MinSeconds), enc.MaxSeconds)
	e, err := p.encode(neutralReference(enc.SampleRate, secs))
	if err != nil {
		return Embedding{}, fmt.Errorf("synthetic neutral voice: %w; set a default reference recording", err)
	}
	return e, nil
}

// The neutral voice: an adult voice at a pitch between typical male and
// female voices, gently rising and falling, saying five vowels in turn.
const (
	neutralSeconds = 3.0
	neutralF0      = 140.0 // Hz
	neutralBandHz  = 5000  // harmonics above this are left out
)

// neutralVowels are F1..F3 (Hz) of /a/, /i/, /e/, /u/, /o/ for an average
// adult vocal tract.
var neutralVowels = [][3]float64{{730, 1090, 2440}, {300, 2200, 2950}, {530, 1840, 2480}, {320, 900, 2240}, {570, 850, 2410}}

var neutralBandwidths = [3]float64{90, 110, 160}

// neutralReference synthesizes seconds of the neutral voice at rate Hz,
// peak 0.5: a harmonic source with a −12 dB/octave slope (a glottal pulse
// train) shaped by three formant resonances that glide from vowel to
// vowel. It is generated, not recorded, so every build has it and it
// needs no file.
func neutralReference(rate int, seconds float64) []float32 {
	n := int(seconds * float64(rate))
	out := make([]float32, n)
	seg := float64(n) / float64(len(neutralVowels))
	fade := int(0.02 * float64(rate))
	phase := 0.0
	peak := 0.0
	wave := make([]float64, n)
	for i := range n {
		t := float64(i) / float64(rate)
		f0 := neutralF0 * (1 + 0.06*math.Sin(2*math.Pi*0.6*t))
		phase += 2 * math.Pi * f0 / float64(rate)
		// The formants glide over the last fifth of each vowel.
		pos := float64(i) / seg
		v := min(int(pos), len(neutralVowels)-1)
		w := min(max((pos-float64(v)-0.8)/0.2, 0), 1)
		next := min(v+1, len(neutralVowels)-1)
		var formants [3]float64
		for j := range formants {
			formants[j] = neutralVowels[v][j]*(1-w) + neutralVowels[next][j]*w
		}
		// Harmonic k is e^{ik·phase}; one complex rotation per harmonic.
		step := cmplx.Exp(complex(0, math.Mod(phase, 2*math.Pi)))
		h := step
		var s float64
		for k := 1; float64(k)*f0 < min(neutralBandHz, 0.45*float64(rate)); k++ {
			f := float64(k) * f0
			a := 1 / float64(k*k)
			for j, fj := range formants {
				r := f / fj
				a /= math.Sqrt((1-r*r)*(1-r*r) + (f*neutralBandwidths[j]/(fj*fj))*(f*neutralBandwidths[j]/(fj*fj)))
			}
			s += a * imag(h)
			h *= step
		}
		if env := min(i, n-1-i); env < fade {
			s *= float64(env) / float64(fade)
		}
		wave[i] = s
		peak = max(peak, math.Abs(s))
	}
	for i, s := range wave {
		out[i] = float32(0.5 * s / peak)
	}
	return out
}
