package text

import (
	"fmt"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Phonemizer turns one sentence into phonemes, each a key of a voice's
// PhonemeIDMap. Espeak, Pinyin and Codepoints implement it.
type Phonemizer interface {
	Phonemize(sentence string) ([]string, error)
}

var (
	_ Phonemizer = (*Espeak)(nil)
	_ Phonemizer = (*Pinyin)(nil)
	_ Phonemizer = (*Codepoints)(nil)
)

// Values of a Piper config's phoneme_type.
const (
	PhonemeTypeEspeak = "espeak"
	PhonemeTypeText   = "text"
	PhonemeTypePinyin = "pinyin"
)

// NewPhonemizer returns the front end for a Piper config's phoneme_type:
// "espeak" (also when empty) uses espeakVoice (DefaultEspeakVoice when
// empty), "pinyin" the Mandarin front end, "text" the text's own codepoints.
// Other types give an error wrapping ErrUnknownPhonemeType.
func NewPhonemizer(phonemeType, espeakVoice string) (Phonemizer, error) {
	switch phonemeType {
	case PhonemeTypeEspeak, "":
		e, err := NewEspeak(&EspeakOptions{Voice: espeakVoice})
		if err != nil {
			return nil, err
		}
		return e, nil
	case PhonemeTypePinyin:
		return NewPinyin(nil), nil
	case PhonemeTypeText:
		return &Codepoints{}, nil
	}
	return nil, fmt.Errorf("phonemizer: %w %q (want %q, %q or %q)", ErrUnknownPhonemeType, phonemeType, PhonemeTypeEspeak, PhonemeTypePinyin, PhonemeTypeText)
}

// Codepoints is Piper's "text" phoneme type: the sentence case-folded (as
// piper-phonemize does by default), NFD-decomposed and split into single
// codepoints. The zero value is ready to use and safe for concurrent use.
type Codepoints struct {
	// MaxChars bounds the sentence, in runes; 0 (or negative) means DefaultMaxChars.
	MaxChars int
}

// Phonemize returns the codepoints of one sentence. Errors wrap
// ErrInvalidText, ErrTextTooLong or ErrEmptyText.
func (c *Codepoints) Phonemize(sentence string) ([]string, error) {
	limit := c.MaxChars
	if limit <= 0 {
		limit = DefaultMaxChars
	}
	s, err := prepareSentence(sentence, limit)
	if err != nil {
		return nil, fmt.Errorf("codepoints: %w", err)
	}
	s = norm.NFD.String(cases.Fold().String(s))
	out := make([]string, 0, len(s))
	for _, r := range s {
		out = append(out, string(r))
	}
	return out, nil
}
