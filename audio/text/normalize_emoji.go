package text

import (
	"strings"

	"golang.org/x/text/unicode/runenames"
)

// isEmoji reports the pictographs an emoji is made of: the emoticon,
// pictograph, transport, supplemental-symbol and flag blocks, and the
// dingbats and miscellaneous symbols (☀ ✅ ❤) that emoji presentation turns
// into pictures. Arrows, ©, ® and the like are text and are left alone.
func isEmoji(r rune) bool {
	switch {
	case r >= 0x1F000 && r <= 0x1FAFF:
		return true
	case r >= 0x2600 && r <= 0x27BF:
		return true
	case r == 0x231A || r == 0x231B || r == 0x2328 || r == 0x23CF || (r >= 0x23E9 && r <= 0x23F3) || (r >= 0x23F8 && r <= 0x23FA):
		return true
	case (r >= 0x2B05 && r <= 0x2B07) || r == 0x2B1B || r == 0x2B1C || r == 0x2B50 || r == 0x2B55:
		return true
	}
	return false
}

// isEmojiGlue reports the invisible parts of an emoji sequence: the zero
// width joiner, variation selectors, the keycap mark and tag characters.
func isEmojiGlue(r rune) bool {
	return r == 0x200D || r == 0xFE0E || r == 0xFE0F || r == 0x20E3 || (r >= 0xE0020 && r <= 0xE007F)
}

// replaceEmoji drops the emoji of a line, or (EmojiName, English) reads
// each by its Unicode name: "🎉" becomes "party popper". Skin tones, flags
// (regional indicator pairs) and names too long for MaxExpansion are
// dropped in either case. The glue of a sequence always goes; a keycap's
// digit ("1️⃣") stays as the digit.
func replaceEmoji(line string, mode Emoji, english bool) string {
	if !hasEmoji(line) {
		return line
	}
	var b strings.Builder
	b.Grow(len(line))
	for _, r := range line {
		switch {
		case isEmojiGlue(r):
		case isEmoji(r):
			if mode == EmojiName && english {
				if name := emojiName(r); name != "" {
					b.WriteByte(' ')
					b.WriteString(name)
				}
			}
			b.WriteByte(' ')
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func hasEmoji(s string) bool {
	for _, r := range s {
		if isEmoji(r) || isEmojiGlue(r) {
			return true
		}
	}
	return false
}

// emojiName is r's Unicode name in lower case, or "" for a modifier, a
// regional indicator, or a name that does not fit MaxExpansion or holds
// a digit.
func emojiName(r rune) string {
	if (r >= 0x1F3FB && r <= 0x1F3FF) || (r >= 0x1F1E6 && r <= 0x1F1FF) {
		return ""
	}
	name := runenames.Name(r)
	if name == "" || len(name) > MaxExpansion-2 || strings.ContainsAny(name, "0123456789<") {
		return ""
	}
	return strings.ToLower(name)
}

// ungroupDigits removes the thousands separators of languages whose
// numbers espeak-ng reads itself but whose grouping it takes for
// something else: "3.400" (German) or "3 400" (French) become "3400".
// Only groups of exactly three digits after one to three digits count, so
// "1.5" and "1.2.3" stay.
func ungroupDigits(line string, lang language) string {
	var sep byte
	switch lang {
	case langDotGroup:
		sep = '.'
	case langSpaceGroup:
		sep = ' '
	default:
		return line
	}
	if strings.IndexByte(line, sep) < 0 {
		return line
	}
	b := []byte(line)
	out := b[:0:0]
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c == sep && isGroupSeparator(b, i) {
			continue
		}
		out = append(out, c)
	}
	return string(out)
}

// isGroupSeparator reports whether b[i] sits between a run of one to three
// digits (itself after a separator or a non-digit) and exactly three digits.
func isGroupSeparator(b []byte, i int) bool {
	digit := func(j int) bool { return j >= 0 && j < len(b) && b[j] >= '0' && b[j] <= '9' }
	if !digit(i+1) || !digit(i+2) || !digit(i+3) || digit(i+4) {
		return false
	}
	j := i - 1
	for j >= 0 && digit(j) {
		j--
	}
	n := i - 1 - j
	if n < 1 || n > 3 {
		return false
	}
	// "1.5.300" is not a number, but "12.345.678" is: before the run, the
	// line starts, a non-digit, or another separator of a group.
	if j >= 0 && b[j] == b[i] && j > 0 && digit(j-1) {
		return n == 3 && isGroupSeparator(b, j)
	}
	return true
}
