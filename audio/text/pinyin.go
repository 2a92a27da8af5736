package text

import (
	"fmt"
	"strings"
	"sync/atomic"
	"unicode"

	pinyin "github.com/mozillazg/go-pinyin"
	"golang.org/x/text/unicode/norm"
)

// PinyinSeparator is the token between syllables (and after a punctuation
// token that is followed by more speech).
const PinyinSeparator = " "

// Pinyin token inventory. A syllable becomes [initial] final tone; y and w
// count as initials, and ü is written "v" (lü → "l" "v", jue → "j" "ve").
var (
	pinyinInitials = []string{
		"b", "p", "m", "f", "d", "t", "n", "l", "g", "k", "h", "j", "q", "x",
		"zh", "ch", "sh", "r", "z", "c", "s", "y", "w",
	}
	pinyinFinals = []string{
		"a", "ai", "an", "ang", "ao", "e", "ei", "en", "eng", "er",
		"i", "ia", "ian", "iang", "iao", "ie", "in", "ing", "iong", "iu",
		"o", "ong", "ou", "u", "ua", "uai", "uan", "uang", "ui", "un", "uo",
		"v", "van", "ve", "vn",
		"m", "n", "ng", // syllabic nasals: 呣 m, 嗯 n / ng
	}
	pinyinTones       = []string{"1", "2", "3", "4", "5"}
	pinyinPunctuation = []string{",", ".", "?", "!", ";", ":"}

	pinyinInitialSet = setOf(pinyinInitials)
	pinyinFinalSet   = setOf(pinyinFinals)
)

func setOf(list []string) map[string]bool {
	m := make(map[string]bool, len(list))
	for _, s := range list {
		m[s] = true
	}
	return m
}

// PinyinTokens returns every token Pinyin.Phonemize can produce, without
// duplicates, so that a voice's phoneme_id_map can be checked or built to
// cover it: the separator " ", the punctuation , . ? ! ; :, the tones 1-5
// (5 is the neutral tone), the initials (y and w included) and the finals
// (ü written v; syllabic m, n, ng). The slice is a fresh copy.
func PinyinTokens() []string {
	var out []string
	seen := map[string]bool{}
	for _, group := range [][]string{{PinyinSeparator}, pinyinPunctuation, pinyinTones, pinyinInitials, pinyinFinals} {
		for _, t := range group {
			if !seen[t] {
				seen[t] = true
				out = append(out, t)
			}
		}
	}
	return out
}

// PinyinOptions configures NewPinyin. The zero value (or nil) gives the defaults.
type PinyinOptions struct {
	// MaxChars bounds the sentence given to Phonemize, in runes. 0 (or a
	// negative value) means DefaultMaxChars.
	MaxChars int
}

// Pinyin is the Mandarin front end. It does not use espeak-ng, whose
// Mandarin in Debian 12 reads Han characters with English rules.
//
// Each Han character gets its most common reading from go-pinyin's
// dictionary, with the dictionary's lexical tone (no tone sandhi: 你好 is
// n i 3 h ao 3, and the voice is expected to have learned the sandhi). The
// dictionary is read directly rather than through go-pinyin's Tone3 style,
// which loses the tone of ǖ and costs regular expressions per character.
//
// Numbers are read as Chinese numerals: whole numbers of up to four digits
// as cardinals (2024 → 两千零二十四, 15 → 十五), longer digit runs and
// runs with a leading zero digit by digit (110 is a cardinal, 0110 and
// 13800138000 are read digit by digit), a decimal point as 点 followed by the
// digits, and a number followed by % as 百分之…. Latin letters, kana, hangul
// and symbols are skipped and counted (see Skipped). A Pinyin is safe for
// concurrent use.
type Pinyin struct {
	maxChars int
	skipped  atomic.Uint64
}

// NewPinyin returns a Mandarin phonemizer.
func NewPinyin(opts *PinyinOptions) *Pinyin {
	p := &Pinyin{maxChars: DefaultMaxChars}
	if opts != nil && opts.MaxChars > 0 {
		p.maxChars = opts.MaxChars
	}
	return p
}

// Skipped returns how many characters Phonemize has skipped so far because
// they have no Mandarin reading (Latin letters, kana, symbols). Callers log
// it, so that a voice fed the wrong language is noticed.
func (p *Pinyin) Skipped() uint64 { return p.skipped.Load() }

// Phonemize returns the tokens of one sentence: for each syllable its
// initial (if any), final and tone digit, syllables separated by " ", and
// the clause marks ，。！？；：、… mapped to , . ! ? ; : , , (half-width ones
// too) where they follow speech. A sentence with nothing Mandarin in it gives
// no tokens and no error.
//
// Errors wrap ErrInvalidText, ErrTextTooLong (over PinyinOptions.MaxChars)
// or ErrEmptyText.
func (p *Pinyin) Phonemize(sentence string) ([]string, error) {
	s, err := prepareSentence(sentence, p.maxChars)
	if err != nil {
		return nil, fmt.Errorf("pinyin: %w", err)
	}
	rs := spellNumbers([]rune(s))
	out := make([]string, 0, 4*len(rs))
	var skipped uint64
	for _, r := range rs {
		if syl, ok := hanSyllable(r); ok {
			if len(out) > 0 {
				out = append(out, PinyinSeparator)
			}
			out = append(out, syl...)
			continue
		}
		if mark := pinyinMark(r); mark != "" {
			if len(out) > 0 && !isPinyinMark(out[len(out)-1]) {
				out = append(out, mark)
			}
			continue
		}
		if !unicode.IsSpace(r) && !unicode.IsPunct(r) {
			skipped++
		}
	}
	if skipped > 0 {
		p.skipped.Add(skipped)
	}
	return out, nil
}

func pinyinMark(r rune) string {
	switch r {
	case '，', ',', '、', '､', '…':
		return ","
	case '。', '.', '｡', '．':
		return "."
	case '？', '?':
		return "?"
	case '！', '!':
		return "!"
	case '；', ';':
		return ";"
	case '：', ':':
		return ":"
	}
	return ""
}

func isPinyinMark(tok string) bool {
	for _, m := range pinyinPunctuation {
		if tok == m {
			return true
		}
	}
	return false
}

// hanSyllable returns the tokens of r's first dictionary reading.
func hanSyllable(r rune) ([]string, bool) {
	readings, ok := pinyin.PinyinDict[int(r)]
	if !ok {
		return nil, false
	}
	reading, _, _ := strings.Cut(readings, ",")
	toks, err := parseSyllable(reading)
	if err != nil {
		return nil, false
	}
	return toks, true
}

// parseSyllable splits a tone-marked pinyin syllable ("zhōng", "lǜ", "de",
// "ń") into initial, final and tone tokens.
func parseSyllable(syl string) ([]string, error) {
	var letters []byte
	tone := "5"
	for _, r := range norm.NFD.String(syl) {
		switch {
		case r >= 'a' && r <= 'z':
			letters = append(letters, byte(r))
		case r == 0x0304: // macron
			tone = "1"
		case r == 0x0301: // acute
			tone = "2"
		case r == 0x030C: // caron
			tone = "3"
		case r == 0x0300: // grave
			tone = "4"
		case r == 0x0308: // diaeresis: ü
			if n := len(letters); n > 0 && letters[n-1] == 'u' {
				letters[n-1] = 'v'
			}
		case r == 0x0302: // circumflex: ê, spoken close to e here
		default:
			return nil, fmt.Errorf("pinyin: unexpected %q in syllable %q", r, syl)
		}
	}
	s := string(letters)
	initial, final := "", s
	switch s {
	case "m", "n", "ng":
		// syllabic nasal, no initial
	case "hm", "hng":
		initial, final = "h", s[1:]
	default:
		if len(s) >= 2 && (s[:2] == "zh" || s[:2] == "ch" || s[:2] == "sh") {
			initial, final = s[:2], s[2:]
		} else if len(s) >= 1 && pinyinInitialSet[s[:1]] {
			initial, final = s[:1], s[1:]
		}
	}
	// After j, q, x and y a written u is ü.
	if strings.HasPrefix(final, "u") && (initial == "j" || initial == "q" || initial == "x" || initial == "y") {
		final = "v" + final[1:]
	}
	if !pinyinFinalSet[final] {
		return nil, fmt.Errorf("pinyin: unknown final %q in syllable %q", final, syl)
	}
	if initial == "" {
		return []string{final, tone}, nil
	}
	return []string{initial, final, tone}, nil
}
