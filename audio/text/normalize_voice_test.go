//go:build cgo

package text_test

import (
	"testing"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// TestNormalizedCasesPhonemize: every reading of the tables, split as the
// engine splits it, phonemizes (espeak-ng en-us for English, the pinyin
// front end for Mandarin) to phonemes the demo voice has ids for: nothing
// a household hears is skipped.
func TestNormalizedCasesPhonemize(t *testing.T) {
	ids, err := text.NewPhonemeIDMap(demo.PhonemeIDMap(), 0)
	if err != nil {
		t.Fatal(err)
	}
	espeak, err := text.NewEspeak(&text.EspeakOptions{Voice: "en-us"})
	if err != nil {
		t.Fatal(err)
	}
	english, mandarin := text.ReadingCases()
	if len(english) < 200 || len(mandarin) < 80 {
		t.Errorf("%d English and %d Mandarin rows: the tables are too small", len(english), len(mandarin))
	}
	for _, set := range []struct {
		lang  string
		front text.Phonemizer
		rows  []string
	}{
		{"en-us", espeak, english},
		{"zh", text.NewPinyin(nil), mandarin},
	} {
		for _, in := range set.rows {
			out, err := text.Normalize(in, &text.NormalizeOptions{Language: set.lang, Emoji: text.EmojiName})
			if err != nil {
				t.Errorf("%s %q: %v", set.lang, in, err)
				continue
			}
			sentences, err := text.Split(out, nil)
			if err != nil {
				continue // nothing to say (a rule line alone)
			}
			for _, s := range sentences {
				ph, err := set.front.Phonemize(s)
				if err != nil {
					t.Errorf("%s %q: phonemize %q: %v", set.lang, in, s, err)
					continue
				}
				if _, unknown := ids.IDs(ph); len(unknown) > 0 {
					t.Errorf("%s %q: %q has phonemes the demo voice lacks: %v", set.lang, in, s, unknown)
				}
			}
		}
	}
}
