package text

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// NormalizeVersion names the reading rules of Normalize. It is part of
// every phrase cache key, so raise it with any change to what Normalize
// returns: audio made under the old rules is then never replayed for a
// text the new rules read differently.
const NormalizeVersion = 1

// MaxExpansion bounds Normalize's output: it has at most MaxExpansion
// runes for every rune of its input ("℃" becomes " degrees Celsius", 16
// for 1). The request limit (SplitOptions.MaxChars) is applied to the
// normalized text, the text that is spoken; Normalize itself refuses input
// over its own MaxChars before doing any work.
const MaxExpansion = 24

// Emoji says what Normalize does with emoji.
type Emoji string

// Emoji settings. The zero value is EmojiDrop.
const (
	// EmojiDrop removes emoji: an LLM's "Done! 🎉" is read "Done!".
	EmojiDrop Emoji = "drop"
	// EmojiName reads an emoji by its Unicode name ("party popper"), for
	// English; other languages drop them.
	EmojiName Emoji = "name"
)

// NormalizeOptions tunes Normalize. The zero value (or nil) reads English
// and drops emoji.
type NormalizeOptions struct {
	// Language is the voice's language, an espeak-ng voice name or a BCP 47
	// tag ("en-us", "en_GB", "cmn", "zh-CN", "de"). English and Mandarin
	// are read in full (numbers, units, times, dates, money, symbols);
	// other languages get the markup and emoji rules and digit grouping
	// undone ("3.400" → "3400" in German), and espeak-ng reads their
	// numbers. Empty means English.
	Language string

	// Mandarin says that the voice also reads Han text, with the pinyin
	// front end (an espeak voice whose phoneme_id_map covers pinyin): a
	// line mostly in Han characters is then read with the Mandarin rules.
	Mandarin bool

	// Emoji is EmojiDrop (also when empty) or EmojiName.
	Emoji Emoji

	// KeepMarkup keeps tag-like text, as SplitOptions.KeepMarkup does.
	KeepMarkup bool

	// MaxChars bounds the input, in runes; 0 means DefaultMaxChars, a
	// negative value turns the limit off.
	MaxChars int
}

// Normalize rewrites a request's text into what a person would read aloud,
// before Split cuts it into sentences: Markdown from LLM agents is removed
// (emphasis, code spans, headings, list bullets, links become their text;
// each list item and heading is a line of its own, so it gets a pause), emoji
// are dropped or named, and for English and Mandarin every number, unit,
// time, date, amount of money and common symbol is written out in words, so
// that the output holds no digits. See NormalizeOptions.Language for other
// languages.
//
// Whitespace and markup are cleaned as Split cleans them; line breaks are
// kept. Normalize is idempotent: its output comes back unchanged. Errors:
// ErrInvalidText for invalid UTF-8, ErrTextTooLong for more than MaxChars
// runes.
func Normalize(s string, opts *NormalizeOptions) (string, error) {
	var o NormalizeOptions
	if opts != nil {
		o = *opts
	}
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("normalize: %w: bad byte at offset %d", ErrInvalidText, invalidOffset(s))
	}
	limit := o.MaxChars
	if limit == 0 {
		limit = DefaultMaxChars
	}
	if limit > 0 {
		if n := utf8.RuneCountInString(s); n > limit {
			return "", fmt.Errorf("normalize: %w: %d characters, limit is %d (MaxChars)", ErrTextTooLong, n, limit)
		}
	}
	lang := languageOf(o.Language)
	clean := string(cleanText(s, o.KeepMarkup))
	var b strings.Builder
	b.Grow(len(clean) + len(clean)/2)
	for _, line := range strings.Split(clean, "\n") {
		limit := MaxExpansion * utf8.RuneCountInString(line)
		// The rules read their own output unchanged nearly always; where
		// one rule's reading makes text another rule reads ("0.io" read
		// "zero.io" is a host name then), the reading is read again, so
		// that reading a reading never changes it. A pass that changed
		// nothing ends it (the rules are deterministic), so a line with
		// nothing to read is read once. Each pass stays within
		// MaxExpansion of the line as sent.
		for pass := 0; pass < maxReadPasses; pass++ {
			again := readLine(line, &o, lang)
			if again == line || (pass > 0 && utf8.RuneCountInString(again) > limit) {
				break
			}
			line = again
		}
		if line == "" {
			continue // a rule or fence line, or only emoji: no empty sentence
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(line)
	}
	return b.String(), nil
}

// maxReadPasses bounds how often Normalize reads a line (see there).
const maxReadPasses = 3

// readLine is one pass of Normalize's rules over one line of cleaned text.
func readLine(line string, o *NormalizeOptions, lang language) string {
	line = stripMarkdownLine(line)
	line = replaceEmoji(line, o.Emoji, lang == langEnglish)
	switch {
	case lang == langMandarin || (o.Mandarin && MostlyHan(line)):
		line = normalizeMandarin(line)
	case lang == langEnglish:
		line = normalizeEnglish(line)
	default:
		line = ungroupDigits(line, lang)
	}
	// A rule may leave what reads as Markdown now ("##5" is "# number
	// five", a heading).
	return stripMarkdownLine(tidySpaces(line))
}

// language is the rule set Normalize reads a text with.
type language int

const (
	langEnglish    language = iota
	langMandarin            // 汉语
	langDotGroup            // 3.400 is three thousand four hundred: de, es, it, nl, pt, ...
	langSpaceGroup          // 3 400 is three thousand four hundred: fr, ru, pl, sv, ...
	langOther               // digits left as they are
)

// languageOf maps an espeak-ng voice name or BCP 47 tag to its rules.
func languageOf(tag string) language {
	t := strings.ToLower(strings.TrimSpace(tag))
	if i := strings.IndexAny(t, "-_"); i >= 0 {
		t = t[:i]
	}
	switch t {
	case "", "en":
		return langEnglish
	case "zh", "cmn", "yue":
		return langMandarin
	case "de", "es", "it", "nl", "pt", "da", "id", "tr", "el", "ro", "hr", "sl", "sr", "vi", "ca":
		return langDotGroup
	case "fr", "ru", "pl", "sv", "nb", "no", "fi", "cs", "sk", "uk", "hu", "bg", "et", "lv", "lt", "kk":
		return langSpaceGroup
	}
	return langOther
}

// MostlyHan reports whether s has more Han characters than words in other
// scripts: a sentence a voice that covers pinyin should read as Mandarin.
func MostlyHan(s string) bool {
	han, words := 0, 0
	inWord := false
	for _, r := range s {
		switch {
		case unicode.Is(unicode.Han, r):
			han++
			inWord = false
		case unicode.IsLetter(r):
			if !inWord {
				words++
			}
			inWord = true
		default:
			inWord = false
		}
	}
	return han > words
}

// tidySpaces collapses runs of spaces and trims the line.
func tidySpaces(s string) string {
	if !strings.Contains(s, "  ") && strings.TrimSpace(s) == s {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
