package text

import (
	"strings"
	"unicode"
)

// The rules Split uses to decide where a sentence ends: which marks end
// one, which abbreviations do not, and which characters close or break one.

// endsEntity reports whether the ';' at line[semi] closes "&name" or "&#123".
func endsEntity(line []rune, start, semi int) bool {
	k := semi
	for k > start && semi-k <= 12 && (unicode.IsLetter(line[k-1]) || unicode.IsDigit(line[k-1]) || line[k-1] == '#') {
		k--
	}
	return k < semi && k > start && line[k-1] == '&'
}

// Abbreviations (lower case, without the final period) after which a period
// never ends a sentence: they are followed by a name or a phrase.
var neverFinalAbbrev = map[string]bool{
	"mr": true, "mrs": true, "ms": true, "mx": true, "dr": true, "prof": true,
	"st": true, "sr": true, "jr": true, "mt": true, "ft": true, "vs": true,
	"e.g": true, "i.e": true, "cf": true, "approx": true, "ca": true,
	"gen": true, "gov": true, "rev": true, "sgt": true, "capt": true,
	"col": true, "lt": true, "hon": true, "messrs": true, "fig": true,
}

// Abbreviations after which a period ends a sentence only when the next word
// is capitalized: "at 5 p.m. Then" splits, "at 5 p.m. on Sunday" does not.
var sometimesFinalAbbrev = map[string]bool{
	"etc": true, "a.m": true, "p.m": true, "inc": true, "ltd": true,
	"co": true, "corp": true, "al": true,
}

// Abbreviations that are abbreviations only before a number ("No. 5").
var numberAbbrev = map[string]bool{
	"no": true, "nr": true, "vol": true, "pp": true, "art": true, "ch": true,
}

// periodEndsSentence decides whether the single period at line[dot], which
// is followed by a space or the end of the line, ends a sentence.
func periodEndsSentence(line []rune, start, dot int) bool {
	w := dot
	for w > start && (unicode.IsLetter(line[w-1]) || line[w-1] == '.') {
		w--
	}
	word := line[w:dot]
	if len(word) == 0 {
		return true
	}
	next := dot + 1
	for next < len(line) && line[next] == ' ' {
		next++
	}
	var nextRune rune
	if next < len(line) {
		nextRune = line[next]
	}
	if len(word) == 1 && unicode.IsUpper(word[0]) {
		return false // an initial: "J. R. R. Tolkien"
	}
	lower := strings.ToLower(string(word))
	switch {
	case neverFinalAbbrev[lower]:
		return false
	case sometimesFinalAbbrev[lower]:
		return nextRune == 0 || unicode.IsUpper(nextRune) || isCJK(nextRune)
	case numberAbbrev[lower]:
		return !(unicode.IsDigit(nextRune) || nextRune == '#')
	case isDottedAcronym(word):
		return nextRune == 0
	}
	return true
}

// isDottedAcronym reports words like "U.S" or "a.b.c": single letters
// separated by periods.
func isDottedAcronym(word []rune) bool {
	if len(word) < 3 {
		return false
	}
	for i, r := range word {
		if i%2 == 0 && !unicode.IsLetter(r) {
			return false
		}
		if i%2 == 1 && r != '.' {
			return false
		}
	}
	return len(word)%2 == 1
}

// isLatinTerminator reports marks that end a sentence when followed by a space.
// The fullwidth full stop is here, not with the CJK marks, because it also
// appears inside fullwidth numbers ("３．１４").
func isLatinTerminator(r rune) bool {
	switch r {
	case '.', '!', '?', ';', '…', '‼', '⁇', '⁈', '⁉', '．':
		return true
	}
	return false
}

// isCJKTerminator reports marks that end a sentence with no space after them.
func isCJKTerminator(r rune) bool {
	switch r {
	case '。', '！', '？', '；', '｡':
		return true
	}
	return false
}

// isCloser reports closing quotes and brackets that belong to the sentence
// they follow. Straight quotes count: right after a terminator they close.
func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '’', '”', '»', '›', '」', '』', '）', '］', '｝', '】', '〉', '》', '〕', '〗', '〙', '〛', '＂', '＇':
		return true
	}
	return false
}

// isCJK reports characters of scripts written without spaces between sentences.
func isCJK(r rune) bool {
	return unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) ||
		(r >= 0x3000 && r <= 0x303F) || (r >= 0xFF00 && r <= 0xFFEF && !unicode.IsDigit(r))
}

// isClauseBreak reports where an over-long sentence is best broken: after a
// comma-like mark. A Latin comma counts only when a space follows, so that
// 1,000 stays whole.
func isClauseBreak(s []rune, i int) bool {
	switch s[i] {
	case '，', '、', '：', '；', '﹐', '､':
		return true
	case ',', ':', ';':
		return i+1 < len(s) && s[i+1] == ' '
	}
	return false
}
