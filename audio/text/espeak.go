package text

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// DefaultEspeakVoice is the espeak-ng voice used when EspeakOptions.Voice is
// empty; it is also the voice of most Piper English models.
const DefaultEspeakVoice = "en-us"

// maxVoiceNameLen bounds espeak voice names; real ones are a few bytes long.
const maxVoiceNameLen = 40

// EspeakOptions configures NewEspeak. The zero value (or nil) gives the defaults.
type EspeakOptions struct {
	// DataPath is the directory that holds espeak-ng-data (or that directory
	// itself). Empty lets libespeak-ng use its built-in location, which is
	// right for distribution packages. espeak-ng is process global, so every
	// Espeak in a process must agree on it; the first one wins.
	DataPath string

	// Voice is the espeak-ng voice name, as in a Piper config's espeak.voice
	// ("en-us", "de", "fr-fr"). Empty means DefaultEspeakVoice. Names are
	// limited to 40 bytes of letters, digits, '-', '_' and '+', which keeps a
	// voice file name from reaching outside espeak-ng-data.
	Voice string

	// MaxChars bounds the sentence given to Phonemize, in runes. 0 (or a
	// negative value) means DefaultMaxChars. Split already keeps sentences far
	// shorter; this guards callers that skip it.
	MaxChars int
}

// Espeak turns sentences into IPA phoneme codepoints with libespeak-ng, the
// way Piper's espeak phoneme_type does. Many Espeak values may exist with
// different voices; calls are serialized on one process-wide lock because
// libespeak-ng keeps global state, and the library's voice is switched only
// when the caller's voice differs from the last one used.
type Espeak struct {
	voice    string
	maxChars int
}

// NewEspeak initializes libespeak-ng (once per process) and checks that the
// voice exists. It returns an error wrapping ErrUnsupported in builds without
// cgo and ErrEspeak when the data or the voice cannot be loaded.
func NewEspeak(opts *EspeakOptions) (*Espeak, error) {
	var o EspeakOptions
	if opts != nil {
		o = *opts
	}
	if o.Voice == "" {
		o.Voice = DefaultEspeakVoice
	}
	if o.MaxChars <= 0 {
		o.MaxChars = DefaultMaxChars
	}
	if !validVoiceName(o.Voice) {
		return nil, fmt.Errorf("espeak: %w: invalid voice name %q (letters, digits, '-', '_', '+'; at most %d bytes)", ErrEspeak, o.Voice, maxVoiceNameLen)
	}
	if err := espeakOpen(o.DataPath, o.Voice); err != nil {
		return nil, err
	}
	return &Espeak{voice: o.Voice, maxChars: o.MaxChars}, nil
}

// Voice returns the espeak-ng voice name this phonemizer uses.
func (e *Espeak) Voice() string { return e.voice }

// Phonemize returns the IPA of one sentence as single NFD codepoints, ready
// for a Piper phoneme_id_map. Like piper-phonemize it phonemizes clause by
// clause, removes language-switch flags such as "(en)", and after each clause
// appends the clause's punctuation: "." "?" "!" and ", " ": " "; " (an em or
// en dash counts as ";"). Clauses are joined by a space. The terminator is
// read from the text each clause consumed, because Debian's libespeak-ng 1.51
// lacks espeak_TextToPhonemesWithTerminator; as in piper-phonemize, the
// ellipsis and fullwidth CJK marks add nothing.
//
// Errors wrap ErrInvalidText, ErrTextTooLong (over EspeakOptions.MaxChars),
// ErrEmptyText (nothing but whitespace and control characters) or ErrEspeak.
func (e *Espeak) Phonemize(sentence string) ([]string, error) {
	s, err := prepareSentence(sentence, e.maxChars)
	if err != nil {
		return nil, fmt.Errorf("espeak: %w", err)
	}
	clauses, err := espeakClauses(e.voice, s)
	if err != nil {
		return nil, err
	}
	return assembleClauses(clauses), nil
}

// espeakClause is what one espeak_TextToPhonemes call produced.
type espeakClause struct {
	phonemes string // IPA as espeak returned it
	// source is the input espeak consumed for this clause. espeak reads one
	// rune ahead, so unless last is set it ends with the first rune of the
	// next clause (which espeak keeps internally and still phonemizes).
	source string
	last   bool
}

// assembleClauses turns espeak's clauses into codepoints the way
// piper-phonemize does.
func assembleClauses(clauses []espeakClause) []string {
	var out []string
	for i, c := range clauses {
		ph := norm.NFD.String(stripLanguageFlags(c.phonemes))
		for _, r := range ph {
			out = append(out, string(r))
		}
		if p := clauseTerminator(c.source, c.last); p != "" {
			out = append(out, p)
		}
		if i < len(clauses)-1 && len(out) > 0 && out[len(out)-1] != " " {
			out = append(out, " ")
		}
	}
	for len(out) > 0 && out[len(out)-1] == " " {
		out = out[:len(out)-1]
	}
	return out
}

// stripLanguageFlags removes espeak's "(en)" / "(fr)" markers, which surround
// words it read with another language's rules. Like piper-phonemize it drops
// everything from '(' to ')', or to the end when there is no ')'.
func stripLanguageFlags(s string) string {
	if !strings.Contains(s, "(") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		switch {
		case in:
			in = r != ')'
		case r == '(':
			in = true
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clauseTerminator returns the punctuation phoneme piper-phonemize appends
// for a clause that consumed source, or "".
func clauseTerminator(source string, last bool) string {
	s := source
	if !last {
		// Drop the rune espeak read ahead, unless it is itself the mark.
		if r, size := utf8.DecodeLastRuneInString(s); size > 0 && clausePunctuation(r) == "" {
			s = s[:len(s)-size]
		}
	}
	s = strings.TrimRightFunc(s, func(r rune) bool { return r == ' ' || isCloser(r) })
	r, size := utf8.DecodeLastRuneInString(s)
	if size == 0 {
		return ""
	}
	p := clausePunctuation(r)
	if r == '.' && strings.HasSuffix(s[:len(s)-size], "..") {
		return "" // espeak reads three or more dots as an ellipsis
	}
	return p
}

// clausePunctuation maps a clause-ending mark to the phoneme Piper appends.
// Marks that espeak-ng tags "optional space after" (the ellipsis, fullwidth
// CJK marks) map to "" because piper-phonemize compares the masked
// terminator with the plain clause types and so never matches them.
func clausePunctuation(r rune) string {
	switch r {
	case '.':
		return "."
	case '?':
		return "?"
	case '!':
		return "!"
	case ',':
		return ","
	case ':':
		return ":"
	case ';', '—', '–':
		return ";"
	}
	return ""
}

// validVoiceName reports whether name is safe to hand to espeak_SetVoiceByName.
func validVoiceName(name string) bool {
	if name == "" || len(name) > maxVoiceNameLen {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '+'
		if !ok {
			return false
		}
	}
	return true
}

// prepareSentence validates one sentence for a phonemizer and returns it on
// a single line with control characters removed and whitespace collapsed.
func prepareSentence(s string, maxRunes int) (string, error) {
	if !utf8.ValidString(s) {
		return "", fmt.Errorf("%w: bad byte at offset %d", ErrInvalidText, invalidOffset(s))
	}
	if n := utf8.RuneCountInString(s); n > maxRunes {
		return "", fmt.Errorf("%w: %d characters, limit is %d (MaxChars)", ErrTextTooLong, n, maxRunes)
	}
	rs := cleanText(s, true)
	for i, r := range rs {
		if r == '\n' {
			rs[i] = ' '
		}
	}
	if len(rs) == 0 {
		return "", ErrEmptyText
	}
	return string(rs), nil
}
