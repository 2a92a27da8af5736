package gate

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"golang.org/x/text/unicode/norm"

	"github.com/mynah-tts/mynah/quant/ort"
)

// MaxSentenceIDs bounds the length of one phoneme-id sentence a voice
// check runs.
const MaxSentenceIDs = 4096

// Piper's reserved symbols: every id sequence is ^ _ (phoneme _)* $.
const (
	piperPad   = "_"
	piperStart = "^"
	piperEnd   = "$"
)

// defaultSentences are the fixed phoneme strings (espeak-ng en-us IPA, as
// Piper's front end makes them) CheckVoice speaks when no sentences are
// given: a statement, a question, a list with pauses and a long one, so
// vowels, fricatives, stops, nasals and silences all occur.
var defaultSentences = []string{
	"həlˈoʊ wˈɜːld, ðɪs ɪz ɐ tˈɛst.",
	"ɪz ðə fɹˈʌnt dˈɔːɹ lˈɑːkt?",
	"tˈɜːn ˈɑːn ðə kˈɪtʃən lˈaɪts, ðə hˈɔːl lˈæmp ænd ðə pˈoːɹtʃ.",
	"ðə kwˈɪk bɹˈaʊn fˈɑːks dʒˈʌmps ˌoʊvɚ ðə lˈeɪzi dˈɑːɡ wˌaɪl ʃˈiː sˈɪŋz ɐ sˈɔft sˈɑːŋ.",
}

// PiperIDs maps a phoneme string to a Piper id sequence with idMap (the
// voice's phoneme_id_map): the string is NFD-decomposed into codepoints,
// each known one contributes its ids followed by the pad's, between the
// start (then a pad) and the end symbol. Unknown codepoints are skipped, as
// Piper does. It returns nil when the map lacks "^", "_" or "$".
func PiperIDs(idMap map[string][]int64, phonemes string) []int64 {
	pad, start, end := idMap[piperPad], idMap[piperStart], idMap[piperEnd]
	if len(pad) == 0 || len(start) == 0 || len(end) == 0 {
		return nil
	}
	ids := slices.Concat(start, pad)
	for _, r := range norm.NFD.String(phonemes) {
		if p, ok := idMap[string(r)]; ok {
			ids = append(ids, p...)
			ids = append(ids, pad...)
		}
	}
	return append(ids, end...)
}

// DefaultSentences returns the gate's fixed sentences as id sequences for
// idMap. A map that leaves more than half of a sentence's phonemes unknown
// is refused: the check would hear mostly silence.
func DefaultSentences(idMap map[string][]int64) ([][]int64, error) {
	out := make([][]int64, 0, len(defaultSentences))
	for i, s := range defaultSentences {
		ids := PiperIDs(idMap, s)
		if ids == nil {
			return nil, fmt.Errorf("%w: phoneme_id_map lacks %q, %q or %q", ErrInvalidOptions, piperStart, piperPad, piperEnd)
		}
		phonemes := len([]rune(norm.NFD.String(s)))
		if known := (len(ids) - 3) / 2; known*2 < phonemes {
			return nil, fmt.Errorf("%w: phoneme_id_map knows %d of %d phonemes of default sentence %d; give Sentences instead",
				ErrInvalidOptions, known, phonemes, i)
		}
		out = append(out, ids)
	}
	return out, nil
}

// VoiceOptions configure CheckVoice. A nil *VoiceOptions is refused: the
// check needs a phoneme_id_map or sentences.
type VoiceOptions struct {
	Options
	// Sentences are phoneme-id sequences (at most MaxRuns, each at most
	// MaxSentenceIDs ids). Nil means DefaultSentences(PhonemeIDMap).
	Sentences [][]int64
	// PhonemeIDMap is the voice's phoneme_id_map (from its .onnx.json).
	PhonemeIDMap map[string][]int64
	// SampleRate of the voice in Hz, 8000..192000; 0 means 22050.
	SampleRate int
	// SpeakerID is the sid for a multi-speaker voice (ignored when the
	// model has no sid input).
	SpeakerID int64
	// LengthScale is passed in scales; 0 means 1. noise_scale and noise_w
	// are always 0, which makes Piper voices deterministic.
	LengthScale float32
}

// Piper's tensor names.
const (
	piperInput   = "input"
	piperLengths = "input_lengths"
	piperScales  = "scales"
	piperSID     = "sid"
	piperOutput  = "output"
)

// CheckVoice runs a Piper-contract voice and its candidate on the same
// sentences and compares the audio: the worst sentence's SNR, spectral
// correlation, log-mel distance and length difference are checked.
func CheckVoice(rt *ort.Runtime, original, candidate []byte, opts *VoiceOptions) (*Verdict, error) {
	if opts == nil {
		return nil, fmt.Errorf("check voice: %w: nil VoiceOptions (set PhonemeIDMap or Sentences)", ErrInvalidOptions)
	}
	o, err := opts.Options.resolve()
	if err != nil {
		return nil, fmt.Errorf("check voice: %w", err)
	}
	rate := opts.SampleRate
	if rate == 0 {
		rate = 22050
	}
	if rate < minRate || rate > maxRate {
		return nil, fmt.Errorf("check voice: %w: SampleRate %d: want %d..%d", ErrInvalidOptions, opts.SampleRate, minRate, maxRate)
	}
	ls := opts.LengthScale
	if ls == 0 {
		ls = 1
	}
	if !(ls > 0 && ls <= 10) {
		return nil, fmt.Errorf("check voice: %w: LengthScale %v: want (0, 10]", ErrInvalidOptions, opts.LengthScale)
	}
	sentences := opts.Sentences
	if sentences == nil {
		if sentences, err = DefaultSentences(opts.PhonemeIDMap); err != nil {
			return nil, fmt.Errorf("check voice: %w", err)
		}
	}
	switch {
	case len(sentences) == 0:
		return nil, fmt.Errorf("check voice: %w: no sentences", ErrInvalidOptions)
	case len(sentences) > MaxRuns:
		return nil, fmt.Errorf("check voice: %w: %d sentences, limit %d (MaxRuns)", ErrInvalidOptions, len(sentences), MaxRuns)
	}
	for i, s := range sentences {
		if len(s) == 0 || len(s) > MaxSentenceIDs {
			return nil, fmt.Errorf("check voice: %w: sentence %d has %d ids, want 1..%d (MaxSentenceIDs)", ErrInvalidOptions, i, len(s), MaxSentenceIDs)
		}
	}
	w := func(s *ort.Session) ([]record, error) {
		hasSID, err := piperContract(s)
		if err != nil {
			return nil, err
		}
		recs := make([]record, len(sentences))
		for i, ids := range sentences {
			in := []ort.Tensor{
				{Name: piperInput, Shape: []int64{1, int64(len(ids))}, Int64: ids},
				{Name: piperLengths, Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
				{Name: piperScales, Shape: []int64{3}, Float32: []float32{0, ls, 0}},
			}
			if hasSID {
				in = append(in, ort.Tensor{Name: piperSID, Shape: []int64{1}, Int64: []int64{opts.SpeakerID}})
			}
			out, err := s.Run(in)
			if err != nil {
				return nil, fmt.Errorf("sentence %d: %w", i, err)
			}
			var audio ort.Tensor
			for _, t := range out {
				if t.Name == piperOutput {
					audio = t
				}
			}
			recs[i] = record{where: fmt.Sprintf("sentence %d", i), outputs: []ort.Tensor{audio}}
		}
		return recs, nil
	}
	v, err := check(rt, original, candidate, o, w, audioJudge(o.th, rate, false))
	if err != nil {
		return nil, fmt.Errorf("check voice: %w", err)
	}
	return v, nil
}

// piperContract checks the session's inputs and output against Piper's
// and reports whether it takes a speaker id.
func piperContract(s *ort.Session) (hasSID bool, err error) {
	want := map[string]ort.ElementType{piperInput: ort.Int64, piperLengths: ort.Int64, piperScales: ort.Float32}
	for _, in := range s.Inputs() {
		if in.Name == piperSID && in.Type == ort.Int64 {
			hasSID = true
			continue
		}
		t, ok := want[in.Name]
		if !ok || t != in.Type {
			return false, fmt.Errorf("%w: input %s is not part of the Piper contract (input, input_lengths, scales, sid)", ErrIncompatible, in)
		}
		delete(want, in.Name)
	}
	if len(want) > 0 {
		return false, fmt.Errorf("%w: model lacks Piper inputs %v", ErrIncompatible, slices.Sorted(maps.Keys(want)))
	}
	for _, out := range s.Outputs() {
		if out.Name == piperOutput && out.Type == ort.Float32 {
			return hasSID, nil
		}
	}
	return false, fmt.Errorf("%w: model has no float32 output %q", ErrIncompatible, piperOutput)
}

// audioJudge compares each record's first output as audio and adds the
// worst sentence's value of every enabled audio check; with warp, the
// spectral checks take the time-warped measures, on subject "warped
// audio".
func audioJudge(th Thresholds, rate int, warp bool) func(v *Verdict, a, b []record) error {
	return func(v *Verdict, a, b []record) error {
		snr, asnr, corr := math.Inf(1), math.Inf(1), math.Inf(1)
		mel, length := math.Inf(-1), math.Inf(-1)
		var snrAt, asnrAt, corrAt, melAt, lenAt string
		spectral := "audio"
		if warp {
			spectral = "warped audio"
		}
		for i := range a {
			m := compareAudio(a[i].outputs[0].Float32, b[i].outputs[0].Float32, rate, warp)
			if warp {
				m.SpectralCorrelation, m.LogMelDistance = m.WarpedSpectralCorrelation, m.WarpedLogMelDistance
			}
			where := a[i].where
			if i == 0 || worse(m.SNR, snr, true) {
				snr, snrAt = m.SNR, where
			}
			if i == 0 || worse(m.AlignedSNR, asnr, true) {
				asnr, asnrAt = m.AlignedSNR, where
			}
			if i == 0 || worse(m.SpectralCorrelation, corr, true) {
				corr, corrAt = m.SpectralCorrelation, where
			}
			if i == 0 || worse(m.LogMelDistance, mel, false) {
				mel, melAt = m.LogMelDistance, where
			}
			if d := m.LengthDiffFraction(); i == 0 || worse(d, length, false) {
				length, lenAt = d, where
			}
		}
		if th.MinSNR != 0 {
			v.add(newCheck(CheckSNR, "audio", "dB", snr, th.MinSNR, true, snrAt))
		}
		if th.MinAlignedSNR != 0 {
			v.add(newCheck(CheckAlignedSNR, "audio", "dB", asnr, th.MinAlignedSNR, true, asnrAt))
		}
		if th.MinSpectralCorrelation != 0 {
			v.add(newCheck(CheckSpectralCorrelation, spectral, "", corr, th.MinSpectralCorrelation, true, corrAt))
		}
		if th.MaxLogMelDistance != 0 {
			v.add(newCheck(CheckLogMelDistance, spectral, "dB", mel, th.MaxLogMelDistance, false, melAt))
		}
		if th.MaxLengthDiff != 0 {
			v.add(newCheck(CheckLength, "audio", "", length, th.MaxLengthDiff, false, lenAt))
		}
		return nil
	}
}
