package text

import "strings"

// Rules that start at a word or a symbol: abbreviations, signs before
// numbers (minus, plus, number, about), ranges, and the symbols that have
// a reading of their own (&, ≈, ±, ×, °, superscripts, vulgar fractions).

// readWord applies the rules that start at word k.
func (r *enReader) readWord(k int) int {
	if r.sym(k-1, '.') && (r.kind(k-2) == tokWord || r.kind(k-2) == tokNum) && r.wordEnd != k && r.qEnd != k {
		return 0 // a part of "x.vs": expanded, it would make "x.es" a host name
	}
	w := r.str(k)
	switch strings.ToLower(w) {
	case "v":
		// "v2.0" is version two point oh; "V" only before a dotted number,
		// since "V2" may be a name and "12 V" is volts (read by the number).
		if r.atStart(k) && r.isNum(k+1) && (w == "v" || r.sym(k+2, '.')) {
			r.write("version ")
			return 1 + r.readVersion(k+1)
		}
	case "e", "i":
		second := map[string]string{"e": "g", "i": "e"}[strings.ToLower(w)]
		if r.kind(k-1) != tokWord && r.sym(k+1, '.') && r.kind(k+2) == tokWord && r.lower(k+2) == second {
			n := 3
			if r.sym(k+3, '.') {
				n = 4
			}
			if strings.ToLower(w) == "e" {
				r.write(matchCase(w, "for example"))
			} else {
				r.write(matchCase(w, "that is"))
			}
			return n
		}
	case "vs":
		r.write(matchCase(w, "versus"))
		return 1 + r.abbrevPeriod(k+1)
	case "approx":
		r.write(matchCase(w, "approximately"))
		return 1 + r.abbrevPeriod(k+1)
	case "no", "nr":
		// "No. 5", "No. #5": only before a number is it an abbreviation.
		if r.sym(k+1, '.') && r.kind(k+2) == tokSpace && (r.isNum(k+3) || r.sym(k+3, '#')) {
			r.write(matchCase(w, "number"))
			if r.sym(k+3, '#') {
				r.write(" ")
				return 4
			}
			return 2
		}
	case "dr", "st":
		if w == "Dr" || w == "St" || w == "DR" || w == "ST" {
			return r.readTitleOrStreet(k)
		}
	}
	if m, ok := monthAbbrev[w]; ok {
		return r.readMonthAbbrev(k, m)
	}
	if d, ok := weekdayAbbrev[w]; ok {
		return r.readWeekdayAbbrev(k, d)
	}
	return 0
}

// abbrevPeriod is 1 when token k is the period of an abbreviation (a
// space or the end of the line follows), which the expansion replaces.
// A period inside a name ("vs..es") stays.
func (r *enReader) abbrevPeriod(k int) int {
	if r.sym(k, '.') && (r.kind(k+1) == tokSpace || r.kind(k+1) == tokNone) {
		return 1
	}
	return 0
}

// readTitleOrStreet reads "Dr" and "St" (with or without their period):
// Drive and Street after a name or a number ("Elm Dr.", "5th St."),
// Doctor and Saint before one ("Dr. Smith", "St. Louis").
func (r *enReader) readTitleOrStreet(k int) int {
	w := r.str(k)
	dot := r.sym(k+1, '.')
	after := k + 1
	if dot {
		after = k + 2
	}
	nextName := r.kind(after) == tokSpace && r.isCapitalized(after+1)
	// The word before, one space back, or a number right before it (read
	// with a space after it: "5St" is "five Street").
	j := k - 1
	if r.kind(j) == tokSpace {
		j--
	}
	// Right after an expanded abbreviation ("Dr.Dr"), that expansion is
	// the capitalized word before, as the second reading will see it.
	prevName := r.isNum(j) || r.kind(j) == tokWord && r.isNum(j-1) && isOrdinalSuffix(r.lower(j)) ||
		j == k-2 && r.isCapitalized(j) && !r.startsSentence(j) ||
		(r.wordEnd == k || r.wordEnd == k-1 && r.kind(k-1) == tokSpace) && r.wordCap && !r.startsSentence(r.wordStart)
	if !dot && !nextName && !prevName {
		return 0
	}
	street := prevName || !nextName && strings.EqualFold(w, "st")
	if !street {
		r.write(map[bool]string{true: "Doctor", false: "Saint"}[strings.EqualFold(w, "dr")])
		return after - k
	}
	r.write(map[bool]string{true: "Drive", false: "Street"}[strings.EqualFold(w, "dr")])
	// The period may also end the sentence: keep it where a sentence could
	// end (the line ends or a capital follows), drop it before a
	// lower-case word or a comma.
	if dot && (r.kind(after) == tokNone || nextName) {
		return 1
	}
	return after - k
}

var monthAbbrev = map[string]int{
	"Jan": 1, "Feb": 2, "Mar": 3, "Apr": 4, "Jun": 6, "Jul": 7, "Aug": 8,
	"Sep": 9, "Sept": 9, "Oct": 10, "Nov": 11, "Dec": 12,
}

var weekdayAbbrev = map[string]string{
	"Mon": "Monday", "Tue": "Tuesday", "Tues": "Tuesday", "Wed": "Wednesday", "Thu": "Thursday",
	"Thur": "Thursday", "Thurs": "Thursday", "Fri": "Friday", "Sat": "Saturday", "Sun": "Sunday",
}

// readMonthAbbrev expands "Dec" next to a day or a year: "Dec 1", "Dec.
// 1st", "1 Dec". Elsewhere ("Jan said") it is left alone.
func (r *enReader) readMonthAbbrev(k, m int) int {
	n := 1
	if r.sym(k+1, '.') {
		n = 2
	}
	switch {
	case r.kind(k+n) == tokSpace && r.isNum(k+n+1) && r.numLen(k+n+1) <= 4:
		r.write(enMonthNames[m])
		return n
	case r.kind(k-1) == tokSpace && (r.isNum(k-2) || r.kind(k-2) == tokWord && isOrdinalSuffix(r.lower(k-2)) && r.isNum(k-3)):
		r.write(enMonthNames[m])
		return 1
	}
	return 0
}

// readWeekdayAbbrev expands "Mon" before a comma or a date: "Mon, Dec 1",
// "Sat 6 Dec".
func (r *enReader) readWeekdayAbbrev(k int, day string) int {
	n := 1
	if r.sym(k+1, '.') {
		n = 2
	}
	if r.sym(k+n, ',') || r.kind(k+n) == tokSpace && (r.isNum(k+n+1) && r.numLen(k+n+1) <= 2 || r.kind(k+n+1) == tokWord && isMonthWord(r.str(k+n+1))) {
		r.write(day)
		return n
	}
	return 0
}

func isOrdinalSuffix(w string) bool {
	return w == "st" || w == "nd" || w == "rd" || w == "th"
}

// readSymbol applies the rules that start at symbol k.
func (r *enReader) readSymbol(k int) int {
	c := r.first(k)
	switch c {
	case '$', '€', '£', '¥', '￥', '₹', '₩', '₽':
		return r.readMoney(k)
	case '-', '‐', '−':
		return r.readMinus(k, c)
	case '–', '—':
		if r.afterQuantity(k) && (r.isNum(k+1) || r.kind(k+1) == tokSpace && r.isNum(k+2)) {
			r.write(" to ")
			return 1
		}
	case '+':
		return r.readPlus(k)
	case '(':
		return r.readParenPhone(k)
	case '#':
		if r.isNum(k + 1) {
			r.write(" number ")
			return 1
		}
	case '~':
		if r.isNum(k+1) || r.kind(k+1) == tokSpace && r.isNum(k+2) || isEnCurrency(r.first(k+1)) {
			r.write("about ")
			return 1
		}
	case '≈':
		r.write(" approximately ")
		return 1
	case '±':
		r.write(" plus or minus ")
		return 1
	case '×':
		r.write(" times ")
		return 1
	case '&':
		r.write(" and ")
		return 1
	case '°':
		r.write(" degrees ")
		return 1
	case '℃':
		r.write(" degrees Celsius ")
		return 1
	case '℉':
		r.write(" degrees Fahrenheit ")
		return 1
	case '@':
		if r.qEnd == k || r.spaceLike(k-1) && (r.spaceLike(k+1) || r.isNum(k+1) || isEnCurrency(r.first(k+1)) && r.isNum(k+2)) {
			r.write(" at ")
			return 1 + r.readChunk(k+1) // read a second time, it starts a chunk
		}
	case '=':
		if r.spaceLike(k-1) && r.spaceLike(k+1) {
			r.write(" equals ")
			return 1
		}
	case '*':
		if r.kind(k-1) == tokSpace && r.kind(k+1) == tokSpace && r.qEnd == k-1 && r.isNum(k+2) {
			r.write("times")
			return 1
		}
	case '.':
		// ".5" is point five.
		if r.atStart(k) && r.isNum(k+1) {
			r.write("point " + spellDigits(r.str(k+1), "zero"))
			r.qEnd = k + 2
			return 2
		}
		// A reading that ends in letters, a period and a top-level domain
		// ("5$.com"): the second reading would see "dollars.com".
		if r.qEnd == k && r.kind(k+1) == tokWord {
			if rest, end := r.addressAt(k + 1); end > k+1 && isDomain("x."+rest) {
				r.write(" dot " + urlWords(rest))
				return end - k
			}
		}
	}
	switch {
	case isEnSuperscript(c) || c == '⁻' && isEnSuperscript(r.first(k+1)):
		return r.readSuperscript(k)
	case isEnSubscript(c):
		j := k
		var digits []byte
		for isEnSubscript(r.first(j)) {
			digits = append(digits, byte('0'+r.first(j)-'₀'))
			j++
		}
		r.write(" " + cardinalWords(string(digits)) + " ")
		return j - k
	}
	if f, ok := enVulgarFractions[c]; ok {
		r.write(" " + f + " ")
		return 1
	}
	return 0
}

// spaceLike reports whether token k reads as a space: a space, either
// end of the line, or a symbol that is always read with spaces around it
// ("&" is " and "). Rules that look for spaces around an operator use it,
// so that their second reading sees what the first one saw.
func (r *enReader) spaceLike(k int) bool {
	if r.spacedEnd == k+1 && k >= 0 {
		return true
	}
	switch r.kind(k) {
	case tokNone, tokSpace:
		return true
	case tokSym:
		c := r.first(k)
		return strings.ContainsRune("&≈±×°℃℉−", c) || isEnVulgar(c) || isEnSuperscript(c) || isEnSubscript(c) ||
			c == '#' && r.isNum(k+1)
	}
	return false
}

// afterQuantity reports whether a number was read just before token k,
// directly or one space back.
func (r *enReader) afterQuantity(k int) bool {
	return r.qEnd == k || r.qEnd == k-1 && r.kind(k-1) == tokSpace
}

// readMinus reads a hyphen or minus sign next to a number: a range
// between two numbers ("5-10"), a sign before one ("-5", "−5"), a space
// between a word and a number ("COVID-19"). A hyphen between a number and
// a word stays ("7-Eleven", "3-way").
func (r *enReader) readMinus(k int, c rune) int {
	nextNum := r.isNum(k+1) || r.sym(k+1, '.') && r.isNum(k+2) || isEnCurrency(r.first(k+1)) && r.isNum(k+2)
	switch {
	case r.isNum(k-1) && r.isNum(k+1) && r.qEnd == k && c != '−':
		r.write(" to ")
		return 1
	case c == '−' && (nextNum || r.kind(k+1) == tokSpace && r.isNum(k+2)):
		r.write(" minus ")
		return 1
	case nextNum && (r.kind(k-1) == tokNone || r.kind(k-1) == tokSpace || r.kind(k-1) == tokSym && !r.sym(k-1, '%')):
		r.write("minus ")
		return 1
	case r.kind(k-1) == tokWord && r.isNum(k+1):
		r.write(" ")
		return 1
	}
	return 0
}

// readPlus reads "+": a country code with the phone number after it
// ("+1 555-123-4567", digit by digit), a sign ("+5 °C"), or an operator
// between spaces ("2 + 2").
func (r *enReader) readPlus(k int) int {
	if r.isNum(k+1) && r.kind(k-1) != tokWord && r.kind(k-1) != tokNum {
		if groups, end := r.phoneGroups(k + 1); len(groups) >= 2 && enDigitCount(groups) >= 7 {
			r.write("plus " + spellGroups(groups))
			r.qEnd = end
			return end - k
		}
		r.write("plus ")
		return 1
	}
	if r.spaceLike(k-1) && r.spaceLike(k+1) {
		r.write(" plus ")
		return 1
	}
	return 0
}

// readSuperscript reads a run of superscript digits (with an optional
// superscript minus) as a power: "x²" is "x squared", "10⁶" "ten to the
// power of six".
func (r *enReader) readSuperscript(k int) int {
	j := k
	minus := false
	if r.first(j) == '⁻' {
		minus = true
		j++
	}
	var digits []byte
	for isEnSuperscript(r.first(j)) {
		digits = append(digits, enSuperscriptValue(r.first(j)))
		j++
	}
	d := string(digits)
	switch {
	case !minus && d == "2":
		r.write(" squared ")
	case !minus && d == "3":
		r.write(" cubed ")
	case minus:
		r.write(" to the power of minus " + cardinalWords(d) + " ")
	default:
		r.write(" to the power of " + cardinalWords(d) + " ")
	}
	return j - k
}

func isEnSuperscript(c rune) bool {
	return c == '⁰' || c == '¹' || c == '²' || c == '³' || c >= '⁴' && c <= '⁹'
}

func enSuperscriptValue(c rune) byte {
	switch c {
	case '¹':
		return '1'
	case '²':
		return '2'
	case '³':
		return '3'
	}
	return byte('0' + c - '⁰')
}

func isEnSubscript(c rune) bool { return c >= '₀' && c <= '₉' }

// enVulgarFractions are the precomposed fractions of Unicode.
var enVulgarFractions = map[rune]string{
	'½': "one half", '⅓': "one third", '⅔': "two thirds", '¼': "one quarter", '¾': "three quarters",
	'⅕': "one fifth", '⅖': "two fifths", '⅗': "three fifths", '⅘': "four fifths", '⅙': "one sixth",
	'⅚': "five sixths", '⅐': "one seventh", '⅛': "one eighth", '⅜': "three eighths", '⅝': "five eighths",
	'⅞': "seven eighths", '⅑': "one ninth", '⅒': "one tenth", '↉': "zero thirds", '⅟': "one over",
}

// enMixedFraction is the fraction after "and" in a mixed number: "two and a
// half", "two and three quarters".
func enMixedFraction(f string) string {
	if rest, ok := strings.CutPrefix(f, "one "); ok && rest != "over" {
		return "a " + rest
	}
	return f
}
