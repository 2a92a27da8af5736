package voice

import (
	"fmt"
	"maps"
	"slices"

	"github.com/mynah-tts/mynah/audio/text"
)

// Transcript is what a voice's front end makes of one sentence: its
// phonemes, the ids the model is given for them, and the phonemes the
// voice has no id for (skipped when it speaks; each named once, sorted).
// mynah text prints it.
type Transcript struct {
	Phonemes []string
	IDs      []int64
	Unknown  []string
}

// frontFor is the front end a sentence goes to: the pinyin one for a
// sentence mostly in Han when the voice covers pinyin.
func frontFor(front, pinyin text.Phonemizer, sentence string) text.Phonemizer {
	if pinyin != nil && text.MostlyHan(sentence) {
		return pinyin
	}
	return front
}

// transcribe phonemizes sentence with the front end it goes to and maps
// the phonemes with ids, as a Piper-style voice does.
func transcribe(front, pinyin text.Phonemizer, ids text.PhonemeIDMap, sentence string) (Transcript, error) {
	phonemes, err := frontFor(front, pinyin, sentence).Phonemize(sentence)
	if err != nil {
		return Transcript{}, fmt.Errorf("phonemize: %w", err)
	}
	seq, missing := ids.IDs(phonemes)
	return Transcript{Phonemes: phonemes, IDs: seq, Unknown: slices.Sorted(maps.Keys(missing))}, nil
}

// Transcribe returns what the voice makes of one sentence (from Split).
func (p *Piper) Transcribe(sentence string) (Transcript, error) {
	return transcribe(p.front, p.pinyin, p.ids, sentence)
}

// Transcribe returns what the voice makes of one sentence (from Split).
func (p *Pipeline) Transcribe(sentence string) (Transcript, error) {
	return transcribe(p.front, p.pinyin, p.ids, sentence)
}

// Transcribe returns what the voice makes of one sentence (from Split):
// IDs are its tokens, pads not included.
func (s *Style) Transcribe(sentence string) (Transcript, error) {
	phonemes, err := frontFor(s.front, s.pinyin, sentence).Phonemize(sentence)
	if err != nil {
		return Transcript{}, fmt.Errorf("phonemize: %w", err)
	}
	t := Transcript{Phonemes: phonemes}
	for _, ph := range phonemes {
		ids, ok := s.tokens[ph]
		if !ok {
			if !slices.Contains(t.Unknown, ph) {
				t.Unknown = append(t.Unknown, ph)
			}
			continue
		}
		t.IDs = append(t.IDs, ids...)
	}
	slices.Sort(t.Unknown)
	return t, nil
}
