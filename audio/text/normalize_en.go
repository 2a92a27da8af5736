package text

import (
	"strings"
	"unicode"
)

// The English reading rules: what normalizeEnglish makes of one line so
// that espeak-ng (en-us) reads it as a person would, with no digit left.
//
// The line is cut into tokens (runs of letters, runs of ASCII digits,
// single spaces, single other characters) and read left to right; each
// rule looks at the tokens around it and either writes a reading and
// consumes tokens or leaves the token as it is. Text no rule matches is
// copied byte for byte. Every rule that reads a number turns all of its
// digits into words, so a second pass finds nothing to read again
// (idempotence), and every rule writes a bounded number of runes per rune
// it consumes (well under MaxExpansion).
//
// Choices where the issue left one:
//   - Clock times are read the way an American listener hears them. A
//     24-hour time past noon moves to the 12-hour clock with "p.m."
//     ("14:05" is "two oh five p.m.", "20:00" "eight p.m."), because
//     "fourteen oh five" is rarely said aloud in en-us; a morning time is
//     read as written ("07:30" is "seven thirty", "07:00" "seven
//     o'clock"), as it reads the same on both clocks; hour zero takes
//     "a.m." ("00:15" is "twelve fifteen a.m."); "00:00" is "midnight" and
//     "12:00" "noon". An explicit AM/PM is kept ("8:05PM" is "eight oh
//     five p.m."). Seconds of a time of day are dropped; microseconds and
//     UTC offsets are never read.
//   - "a.m."/"p.m." keep their periods (espeak says "ay em"); before a
//     capitalized word a comma follows ("8 pm Monday" becomes "eight p.m.,
//     Monday"), so Split does not end the sentence there.
//   - An H:MM:SS with a zero hour, or after "timer" or before "left" or
//     "remaining", is a duration: "0:03:12" is "three minutes and twelve
//     seconds".
//   - Money is read in full: "$4.99" is "four dollars and ninety-nine
//     cents", "$0.50" "fifty cents", "$1.2M" "one point two million
//     dollars".
//   - Zero is "zero" in decimals, codes and phone numbers and "oh" inside
//     times, years, versions and room numbers ("one oh one").
//   - Codes are read digit by digit: a leading zero, six or more digits
//     without separators, phone formats, "911", and numbers after "code",
//     "PIN", "ID" and the like; numbers after "room", "flight", "gate" and
//     the like are read in pairs ("Room 1204" is "Room twelve oh four").
//   - "3 400" (the space may have been a no-break space before cleaning)
//     is three thousand four hundred: one to three digits and groups of
//     exactly three.
//   - "m" after a number is meters, or minutes after an hour ("1 h 30 m")
//     and before "ago"; UnitOfTime.MONTHS shares the symbol but is rare.
//   - "Dr." is Drive and "St." Street after a capitalized word that does
//     not start the sentence, or after a number ("5th St."); otherwise
//     Doctor and Saint before a capitalized name. Expanded abbreviations
//     keep the case of their first letter ("No. 5" is "Number five").
//   - URLs lose their scheme, "www.", query and fragment: a person says
//     "home-assistant dot io slash docs".

// enTokKind is the kind of one token of a line.
type enTokKind uint8

const (
	tokNone  enTokKind = iota // past either end of the line
	tokSpace                  // one ' '
	tokWord                   // letters (and their combining marks)
	tokNum                    // ASCII digits
	tokSym                    // any other single rune
)

type enTok struct {
	kind       enTokKind
	start, end int // runes of the line
}

// enReader reads one line. qEnd is the token just past the last number
// read with its unit (for ranges: "5–10 °C"); timeUnit says that unit was
// a unit of time (for "1 h 30 m").
type enReader struct {
	rs       []rune
	toks     []enTok
	out      strings.Builder
	qEnd     int
	timeUnit bool
	glued    bool // see write
	// The last abbreviation expanded: its tokens, and whether its
	// expansion is capitalized (Doctor, Street, Monday).
	wordStart, wordEnd int
	wordCap            bool
	// spacedEnd is the token past the last rule whose reading ended in
	// a space ("@" read " at "), for spaceLike.
	spacedEnd int
}

// normalizeEnglish rewrites one line for an English voice: numbers, units,
// times, dates, money, symbols and abbreviations become words. See the
// comment at the top of this file.
func normalizeEnglish(line string) string {
	rs := englishDigits([]rune(line))
	r := enReader{rs: rs, toks: tokenizeEnglish(rs), qEnd: -1, wordEnd: -1, spacedEnd: -1}
	r.out.Grow(len(line) + len(line)/2)
	for k := 0; k < len(r.toks); {
		n := r.rule(k)
		if n == 0 {
			r.copy(k, k+1)
			n = 1
		} else if o := r.out.String(); o != "" && o[len(o)-1] == ' ' {
			r.spacedEnd = k + n
		}
		k += n
	}
	out := r.out.String()
	if out == line {
		return line
	}
	return tidySpaces(out)
}

// englishDigits maps the decimal digits of other scripts (fullwidth ones
// included) to ASCII, and a fullwidth full stop or fraction slash between
// digits to '.' or '/', so that the rules below see one kind of number.
func englishDigits(rs []rune) []rune {
	for i, r := range rs {
		switch {
		case r > unicode.MaxASCII && unicode.IsDigit(r):
			rs[i] = '0' + rune(enDigitValue(r))
		case (r == '．' || r == '⁄' || r == '∕') && i > 0 && i+1 < len(rs) && unicode.IsDigit(rs[i-1]) && unicode.IsDigit(rs[i+1]):
			if r == '．' {
				rs[i] = '.'
			} else {
				rs[i] = '/'
			}
		}
	}
	return rs
}

// enDigitValue is the value of a decimal digit of any script: Unicode
// allocates each script's digits as runs of ten from zero (the
// mathematical digits as five such runs back to back).
func enDigitValue(r rune) int {
	z := r
	for unicode.IsDigit(z - 1) {
		z--
	}
	return int(r-z) % 10
}

func tokenizeEnglish(rs []rune) []enTok {
	toks := make([]enTok, 0, len(rs)/3+4)
	for i := 0; i < len(rs); {
		j := i + 1
		kind := tokSym
		switch r := rs[i]; {
		case r == ' ':
			kind = tokSpace
		case r >= '0' && r <= '9':
			kind = tokNum
			for j < len(rs) && rs[j] >= '0' && rs[j] <= '9' {
				j++
			}
		case unicode.IsLetter(r):
			kind = tokWord
			for j < len(rs) && (unicode.IsLetter(rs[j]) || unicode.IsMark(rs[j])) {
				j++
			}
		}
		toks = append(toks, enTok{kind, i, j})
		i = j
	}
	return toks
}

// Token helpers. Each answers harmlessly for an index past either end.

func (r *enReader) kind(k int) enTokKind {
	if k < 0 || k >= len(r.toks) {
		return tokNone
	}
	return r.toks[k].kind
}

func (r *enReader) str(k int) string {
	if k < 0 || k >= len(r.toks) {
		return ""
	}
	return string(r.rs[r.toks[k].start:r.toks[k].end])
}

func (r *enReader) first(k int) rune {
	if k < 0 || k >= len(r.toks) {
		return 0
	}
	return r.rs[r.toks[k].start]
}

// sym reports whether token k is the single character c.
func (r *enReader) sym(k int, c rune) bool {
	return r.kind(k) == tokSym && r.first(k) == c
}

func (r *enReader) isNum(k int) bool { return r.kind(k) == tokNum }

// numLen is the number of digits of token k, 0 if it is no number.
func (r *enReader) numLen(k int) int {
	if !r.isNum(k) {
		return 0
	}
	return r.toks[k].end - r.toks[k].start
}

func (r *enReader) isWord(k int, words ...string) bool {
	if r.kind(k) != tokWord {
		return false
	}
	w := r.str(k)
	for _, x := range words {
		if w == x {
			return true
		}
	}
	return false
}

// lower is token k in lower case.
func (r *enReader) lower(k int) string { return strings.ToLower(r.str(k)) }

// prevWord is the word before token k, one space back, in lower case.
func (r *enReader) prevWord(k int) string {
	if r.kind(k-1) == tokSpace && r.kind(k-2) == tokWord {
		return r.lower(k - 2)
	}
	return ""
}

// nextWord is the word after token k (the last token of something), one
// space on, in lower case.
func (r *enReader) nextWord(k int) string {
	if r.kind(k+1) == tokSpace && r.kind(k+2) == tokWord {
		return r.lower(k + 2)
	}
	return ""
}

// atStart reports whether token k starts a chunk: the line, a space or a
// symbol that cannot be part of an address is before it. (A rule that
// turns that symbol into words must not make a chunk where there was
// none: "&0.ie" reads the same twice.)
func (r *enReader) atStart(k int) bool {
	switch r.kind(k - 1) {
	case tokNone, tokSpace, tokNum:
		return true // after a number too: "5light.x" is read as "5 light.x" is
	case tokSym:
		return !strings.ContainsRune(".-_@:/+%=~'’", r.first(k-1))
	}
	return false
}

// runeAt is the index of the first rune of token k (len(rs) past the end).
func (r *enReader) runeAt(k int) int {
	if k >= len(r.toks) {
		return len(r.rs)
	}
	return r.toks[k].start
}

// tokAt is the token starting at rune p, or -1 when p is inside a token.
func (r *enReader) tokAt(from, p int) int {
	for k := from; k <= len(r.toks); k++ {
		switch s := r.runeAt(k); {
		case s == p:
			return k
		case s > p:
			return -1
		}
	}
	return -1
}

// write writes a reading. The first one a rule writes after an address
// mark (".", ":", "/", "_") copied as it was gets a space before
// it: read without one, its words would join the mark into an address
// the second time that was none the first ("A@A.+0" would become
// "A@A.plus zero", an e-mail address).
func (r *enReader) write(s string) {
	if r.glued {
		r.glued = false
		if s != "" && s[0] != ' ' {
			r.out.WriteByte(' ')
		}
	}
	r.out.WriteString(s)
}

// copy writes tokens [from, to) as they are.
func (r *enReader) copy(from, to int) {
	if from >= to {
		return
	}
	for _, c := range r.rs[r.runeAt(from):r.runeAt(to)] {
		r.out.WriteRune(c)
	}
}

// rule applies the first rule that matches at token k and returns the
// number of tokens it consumed, 0 when none matched.
func (r *enReader) rule(k int) int {
	r.glued = r.kind(k-1) == tokSym && strings.ContainsRune(".:/_", r.first(k-1))
	defer func() { r.glued = false }()
	if (r.atStart(k) || r.qEnd == k) && r.kind(k) != tokSpace {
		if n := r.readChunk(k); n > 0 {
			return n
		}
	}
	switch r.kind(k) {
	case tokNum:
		return r.readNumber(k)
	case tokWord:
		n := r.readWord(k)
		if n > 0 && (r.kind(k+n) == tokWord || r.kind(k+n) == tokNum) {
			r.write(" ") // "Dr.5" is "Doctor five"
		}
		if n > 0 {
			r.wordStart, r.wordEnd, r.wordCap = k, k+n, r.isCapitalized(k)
		}
		return n
	case tokSym:
		return r.readSymbol(k)
	}
	return 0
}

// matchCase gives an expansion the case of the first letter of what it
// replaces: "E.g." becomes "For example".
func matchCase(src, words string) string {
	if src != "" && unicode.IsUpper([]rune(src)[0]) && words != "" {
		return strings.ToUpper(words[:1]) + words[1:]
	}
	return words
}

// isCapitalized reports a word that starts with an upper-case letter.
func (r *enReader) isCapitalized(k int) bool {
	return r.kind(k) == tokWord && unicode.IsUpper(r.first(k))
}

// startsSentence reports whether word k opens its sentence: it starts the
// line or follows ". ", "! ", "? " (or a quote or bracket at the start).
func (r *enReader) startsSentence(k int) bool {
	j := k - 1
	for r.kind(j) == tokSym && strings.ContainsRune("\"'“‘(", r.first(j)) {
		j--
	}
	if r.kind(j) == tokNone {
		return true
	}
	if r.kind(j) != tokSpace {
		return false
	}
	if r.sym(j-1, '.') {
		// Split's own judgement, so that "St. A" (not a sentence end)
		// reads as "Saint A" does once the period is gone.
		return periodEndsSentence(r.rs, 0, r.runeAt(j-1))
	}
	return r.kind(j-1) == tokSym && strings.ContainsRune("!?…:", r.first(j-1))
}
