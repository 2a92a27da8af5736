package text

import "strings"

// Rules that start at a number: dates and times (normalize_en_time.go),
// phone numbers, versions and IP addresses, and quantities: a number with
// its grouping, decimals, fraction, ordinal or decade suffix, percent
// sign, currency or unit.

// amount is a number as written: its integer digits (grouping removed)
// and the digits after its decimal point, over tokens [start, end).
type enAmount struct {
	start, end int
	digits     string
	frac       string
	point      bool
	grouped    bool
}

// one reports an amount that takes a singular unit: exactly 1.
func (a enAmount) one() bool { return a.digits == "1" && !a.point }

// words reads the amount as a cardinal or decimal number.
func (a enAmount) words() string {
	if a.point {
		return decimalWords(a.digits, a.frac)
	}
	return cardinalWords(a.digits)
}

// readNumber applies the rules that start at number k. It always
// consumes the number: no digit is ever copied.
func (r *enReader) readNumber(k int) int {
	mixed := r.kind(k-1) == tokWord // "MP3", "B2B", "PM2.5"
	if mixed {
		r.write(" ")
	}
	unit := r.timeUnit && r.afterQuantity(k)
	r.timeUnit = false
	var n int
	switch {
	case mixed:
		n = r.readMixed(k)
	default:
		n = r.readDate(k)
		if n == 0 {
			n = r.readPhone(k)
		}
		if n == 0 {
			n = r.readClock(k)
		}
		if n == 0 {
			n = r.readDotted(k)
		}
		if n == 0 {
			n = r.readQuantity(k, unit)
		}
	}
	r.qEnd = k + n
	if r.kind(k+n) == tokWord || r.kind(k+n) == tokNum || r.sym(k+n, '@') {
		r.write(" ") // "3D", "0:10ie": letters after a reading start a word
	}
	return n
}

// readMixed reads the number inside a word such as "MP3" or "PM2.5":
// its digits as a number, a space before the letters that follow.
func (r *enReader) readMixed(k int) int {
	a := r.parseAmount(k, false)
	if len(a.digits) >= 6 && !a.point {
		r.write(spellDigits(a.digits, "zero"))
	} else {
		r.write(a.words())
	}
	if r.kind(a.end) == tokWord {
		r.write(" ")
	}
	return a.end - k
}

// parseAmount reads the number at token k: "3,400", "3 400" (when
// spaceGroups; the space was a no-break space before cleaning), "21.5".
func (r *enReader) parseAmount(k int, spaceGroups bool) enAmount {
	a := enAmount{start: k, end: k + 1, digits: r.str(k)}
	if len(a.digits) <= 3 {
		switch {
		case r.sym(a.end, ',') && r.numLen(a.end+1) == 3:
			var b strings.Builder
			b.WriteString(a.digits)
			for r.sym(a.end, ',') && r.numLen(a.end+1) == 3 && len(a.digits) < 40 {
				b.WriteString(r.str(a.end + 1))
				a.end += 2
			}
			a.digits, a.grouped = b.String(), true
		case spaceGroups && a.digits[0] != '0' && r.kind(a.end) == tokSpace && r.spaceGroup(a.end+1) && !r.isNum(k-2):
			var b strings.Builder
			b.WriteString(a.digits)
			for r.kind(a.end) == tokSpace && r.spaceGroup(a.end+1) {
				b.WriteString(r.str(a.end + 1))
				a.end += 2
			}
			a.digits, a.grouped = b.String(), true
		}
	}
	if r.sym(a.end, '.') && r.isNum(a.end+1) {
		a.frac, a.point = r.str(a.end+1), true
		a.end += 2
	}
	return a
}

// spaceGroup reports whether token k is a group of three digits that
// continues a number after a space, and not the start of a time, date or
// fraction of its own ("at 5 10:30").
func (r *enReader) spaceGroup(k int) bool {
	if r.numLen(k) != 3 {
		return false
	}
	switch {
	case r.sym(k+1, ':'), r.sym(k+1, '/'), r.sym(k+1, '-') && r.isNum(k+2), r.sym(k+1, ',') && r.isNum(k+2):
		return false
	}
	return true
}

// readQuantity reads a number with what follows it. timeBefore says that
// the number before it was an amount of time ("1 h 30 m").
func (r *enReader) readQuantity(k int, timeBefore bool) int {
	a := r.parseAmount(k, true)
	end := a.end
	if r.kind(end) == tokWord {
		if n := r.readSuffix(k, a); n > 0 {
			return n
		}
	}

	// Fractions: "1/2", "2 1/2", "2½", "24/7".
	words, one := "", a.one()
	switch {
	case !a.point && !a.grouped && r.sym(end, '/') && r.isNum(end+1) && !r.sym(end+2, '/'):
		words, one = fractionWords(a.digits, r.str(end+1))
		end += 2
	case !a.point && r.kind(end) == tokSpace && r.isNum(end+1) && r.sym(end+2, '/') && r.isNum(end+3) &&
		!r.sym(end+4, '/') && properFraction(r.str(end+1), r.str(end+3)):
		f, _ := fractionWords(r.str(end+1), r.str(end+3))
		words, one = cardinalWords(a.digits)+" and "+enMixedFraction(f), false
		end += 4
	case !a.point && isEnVulgar(r.first(end)) && r.kind(end) == tokSym:
		words, one = cardinalWords(a.digits)+" and "+enMixedFraction(enVulgarFractions[r.first(end)]), false
		end++
	case !a.point && r.kind(end) == tokSpace && isEnVulgar(r.first(end+1)) && r.kind(end+1) == tokSym:
		words, one = cardinalWords(a.digits)+" and "+enMixedFraction(enVulgarFractions[r.first(end+1)]), false
		end += 2
	}
	if words != "" {
		r.write(words)
		return r.readUnitAfter(k, end, one, false)
	}

	// Money written after the amount: "4.99 €", "4,99 €", "50¢", "100 USD".
	if !a.point && !a.grouped && r.sym(end, ',') && r.numLen(end+1) == 2 {
		if _, t := r.currencyAfter(end + 2); t > 0 {
			a.frac, a.point = r.str(end+1), true
			end += 2
			a.end = end
		}
	}
	if cur, t := r.currencyAfter(end); t > 0 {
		r.write(moneyWords(a, cur, ""))
		return r.perUnit(t) - k
	}

	// Percent: "15%", "15 %" (Home Assistant puts a space before it).
	p := end
	if r.kind(p) == tokSpace {
		p++
	}
	switch r.first(p) {
	case '%':
		if r.kind(p) == tokSym {
			r.write(a.words() + " percent")
			return p + 1 - k
		}
	case '‰':
		if r.kind(p) == tokSym {
			r.write(a.words() + " per mille")
			return p + 1 - k
		}
	}

	if u, t, ok := r.unitAfter(end); ok {
		name := u.name
		if string(u.sym) == "m" && (timeBefore || r.nextWord(t-1) == "ago") {
			name = unitName{"minute", "minutes"}
		}
		r.write(a.words() + " ")
		if a.one() {
			r.write(name.one)
		} else {
			r.write(name.many)
		}
		r.timeUnit = isTimeUnit(name)
		return t - k
	}

	if r.kind(end) == tokWord {
		if n := r.readScale(k, a); n > 0 {
			return n
		}
		if r.str(end) == "x" {
			return r.readTimes(k, a)
		}
	}
	r.write(r.plainWords(k, a))
	if r.kind(end) == tokWord {
		r.write(" ") // "3D" is three D, "5G" five G
	}
	return end - k
}

// readSuffix reads a number with letters attached that make one word with
// it: ordinals ("21st"), decades ("1990s"), video modes ("4K", "1080p").
func (r *enReader) readSuffix(k int, a enAmount) int {
	end := a.end
	w := r.str(end)
	lw := strings.ToLower(w)
	if a.point {
		return 0
	}
	switch {
	case isOrdinalSuffix(lw):
		r.write(r.dayPrefix(k, end+1) + ordinalWords(a.digits) + r.dayOf(end+1))
		return end + 1 - k
	case lw == "s" && isDecade(a.digits) && (len(a.digits) == 4 || r.sym(k-1, '\'') || r.sym(k-1, '’') || r.prevWord(k) == "the"):
		if len(a.digits) == 4 {
			r.write(pluralOf(yearWords(a.digits)))
		} else {
			r.write(pluralOf(cardinalWords(a.digits)))
		}
		return end + 1 - k
	case w == "K" && (a.digits == "2" || a.digits == "4" || a.digits == "5" || a.digits == "8"):
		r.write(cardinalWords(a.digits) + " K")
		return end + 1 - k
	case (w == "p" || w == "i") && isVideoMode(a.digits):
		r.write(pairWords(a.digits) + " " + w)
		return end + 1 - k
	}
	return 0
}

// readScale reads "1.2k", "3K", "5M", "2bn": a thousand, million or
// billion of what follows.
func (r *enReader) readScale(k int, a enAmount) int {
	scale := scaleWord(r.str(a.end), false)
	if scale == "" {
		return 0
	}
	r.write(a.words() + " " + scale)
	return a.end + 1 - k
}

// readTimes reads "2x" as "two times" and "1920x1080" as "nineteen
// twenty by ten eighty" (sizes of three or four digits in pairs).
func (r *enReader) readTimes(k int, a enAmount) int {
	x := a.end
	if !r.isNum(x + 1) {
		r.write(a.words() + " times")
		return x + 1 - k
	}
	b := r.parseAmount(x+1, false)
	if !a.point && !b.point && len(a.digits) >= 3 && len(a.digits) <= 4 && len(b.digits) >= 3 && len(b.digits) <= 4 {
		r.write(pairWords(a.digits) + " by " + pairWords(b.digits))
	} else {
		r.write(a.words() + " by " + b.words())
	}
	if r.kind(b.end) == tokWord {
		r.write(" ")
	}
	return b.end - k
}

// scaleWord is the number word an attached letter stands for. "B" is a
// billion only with money; alone it is bytes.
func scaleWord(w string, money bool) string {
	switch w {
	case "k", "K":
		return "thousand"
	case "M", "mn", "MM":
		return "million"
	case "bn", "Bn":
		return "billion"
	case "B", "b":
		if money {
			return "billion"
		}
	case "T", "tn":
		if money {
			return "trillion"
		}
	}
	return ""
}

// dayPrefix and dayOf turn a day before a month into "the first of
// December" (from "1 December" or "1st December").
func (r *enReader) dayPrefix(k, next int) string {
	if r.kind(next) == tokSpace && r.kind(next+1) == tokWord && isMonthWord(r.str(next+1)) && r.prevWord(k) != "the" {
		return "the "
	}
	return ""
}

func (r *enReader) dayOf(next int) string {
	if r.kind(next) == tokSpace && r.kind(next+1) == tokWord && isMonthWord(r.str(next+1)) {
		return " of"
	}
	return ""
}

// plainWords reads a number that has no unit, by its context: a code, a
// room, a day of the month, a year or a cardinal.
func (r *enReader) plainWords(k int, a enAmount) string {
	if a.point || a.grouped {
		return a.words()
	}
	d := a.digits
	prev := r.prevWord(k)
	if prev == "" && r.sym(k-1, ':') && r.kind(k-2) == tokWord {
		prev = r.lower(k - 2) // "PIN:1234"
	}
	if prev == "" && r.kind(k-1) == tokSpace && r.sym(k-2, ':') && r.kind(k-3) == tokWord {
		prev = r.lower(k - 3) // "Code: 1234"
	}
	if (prev == "is" || prev == "was") && r.kind(k-3) == tokSpace && digitContext[r.lower(k-4)] {
		prev = r.lower(k - 4) // "The PIN is 1234"
	}
	n := 0
	if len(d) <= 4 {
		n = enAtoi(d)
	}
	month := r.afterMonth(k)
	switch {
	case digitContext[prev]:
		return spellDigits(d, "zero")
	case pairContext[prev] && len(d) >= 3 && len(d) <= 4:
		return pairWords(d)
	case len(d) > 1 && d[0] == '0', len(d) >= 6:
		return spellDigits(d, "zero")
	case d == "911":
		return "nine one one"
	case month && len(d) <= 2 && n >= 1 && n <= 31:
		return ordinalWords(d)
	case len(d) == 4 && (month || yearContext[prev]) && n >= 1000:
		return yearWords(d)
	case len(d) == 4 && n >= 1100 && n <= 2099:
		return yearWords(d)
	case len(d) <= 2 && n >= 1 && n <= 31 && r.dayOf(k+1) != "":
		return r.dayPrefix(k, k+1) + ordinalWords(d) + " of"
	}
	return cardinalWords(d)
}

// afterMonth reports a number right after a month name: "December 1",
// "Dec. 1", "December 2026".
func (r *enReader) afterMonth(k int) bool {
	if r.kind(k-1) != tokSpace {
		return false
	}
	if r.kind(k-2) == tokWord {
		return isMonthWord(r.str(k - 2))
	}
	return r.sym(k-2, '.') && r.kind(k-3) == tokWord && monthAbbrev[r.str(k-3)] > 0
}

// Words before a number that make it a code (read digit by digit), a room
// (read in pairs: "Room 101" is "Room one oh one") or a year.
var (
	digitContext = map[string]bool{
		"code": true, "pin": true, "passcode": true, "password": true, "zip": true, "id": true,
		"extension": true, "ext": true, "serial": true, "account": true, "order": true, "ticket": true,
		"otp": true, "imei": true, "phone": true, "tel": true, "number:": true,
	}
	pairContext = map[string]bool{
		"room": true, "suite": true, "apartment": true, "apt": true, "flight": true, "gate": true,
		"platform": true, "route": true, "highway": true, "bus": true, "train": true, "channel": true,
	}
	yearContext = map[string]bool{
		"in": true, "since": true, "of": true, "from": true, "until": true, "till": true, "year": true,
		"by": true, "before": true, "after": true, "circa": true,
	}
)

func isDecade(d string) bool {
	return (len(d) == 2 || len(d) == 4) && d[len(d)-1] == '0' && d[0] != '0'
}

func isVideoMode(d string) bool {
	switch d {
	case "240", "360", "480", "576", "720", "1080", "1440", "2160", "4320":
		return true
	}
	return false
}

func isEnVulgar(c rune) bool {
	_, ok := enVulgarFractions[c]
	return ok
}

func isTimeUnit(u unitName) bool {
	switch u.one {
	case "second", "minute", "hour", "day", "week", "year", "millisecond", "microsecond":
		return true
	}
	return false
}

// fractionWords reads num/den: "one half", "three quarters" for small
// denominators, "eight out of ten" for ratings, "sixteen over nine"
// otherwise. one says whether a unit after it is singular.
func fractionWords(num, den string) (string, bool) {
	if num == "24" && den == "7" {
		return "twenty-four seven", false
	}
	if len(num) > 6 || len(den) > 6 {
		return cardinalWords(num) + " over " + cardinalWords(den), false
	}
	n, d := enAtoi(num), enAtoi(den)
	switch {
	case n >= 1 && properFraction(num, den):
		word := denominatorWord(d, n != 1)
		return cardinalWords(num) + " " + word, n <= d
	case n <= d && d > 0:
		return cardinalWords(num) + " out of " + cardinalWords(den), false
	}
	return cardinalWords(num) + " over " + cardinalWords(den), false
}

// properFraction reports a fraction read with a fraction word: a
// numerator below a denominator of 2 to 9.
func properFraction(num, den string) bool {
	n, d := enAtoi(num), enAtoi(den)
	return len(num) <= 2 && len(den) == 1 && d >= 2 && n < d
}

func denominatorWord(d int, plural bool) string {
	var w string
	switch d {
	case 2:
		w = "half"
		if plural {
			return "halves"
		}
	case 4:
		w = "quarter"
	default:
		w = ordinalWords(string(rune('0' + d)))
	}
	if plural {
		return w + "s"
	}
	return w
}

// readUnitAfter reads the unit after a fraction that ends before token
// end ("1/2 in", "2½ cups" has none) and returns what was consumed.
func (r *enReader) readUnitAfter(k, end int, one, _ bool) int {
	if u, t, ok := r.unitAfter(end); ok {
		if one {
			r.write(" " + u.name.one)
		} else {
			r.write(" " + u.name.many)
		}
		return t - k
	}
	if cur, t := r.currencyAfter(end); t > 0 {
		r.write(" " + cur.many)
		return t - k
	}
	if r.kind(end) == tokWord {
		r.write(" ")
	}
	return end - k
}

// unitAfter finds a unit after a number that ends before token end,
// attached ("5kW") or after one space ("5 kW"), and returns it with the
// token just past it.
func (r *enReader) unitAfter(end int) (unitEntry, int, bool) {
	switch r.kind(end) {
	case tokWord, tokSym:
		u, e, ok := matchUnit(r.rs, r.runeAt(end))
		if !ok || string(u.sym) == "K" {
			return unitEntry{}, 0, false // "3K" is three thousand
		}
		if t := r.tokAt(end, e); t > 0 {
			return u, t, true
		}
	case tokSpace:
		u, e, ok := matchUnit(r.rs, r.runeAt(end+1))
		if !ok {
			return unitEntry{}, 0, false
		}
		t := r.tokAt(end+1, e)
		if t < 0 || u.ambiguous && !r.unitMayEndHere(t) || string(u.sym) == "in" && r.kind(t) == tokSpace && r.isNum(t+1) {
			return unitEntry{}, 0, false
		}
		return u, t, true
	}
	return unitEntry{}, 0, false
}

// unitMayEndHere reports whether an ambiguous unit symbol that ends
// before token t is a unit: nothing, punctuation, a number or one of
// followingUnitWords comes next, not an ordinary word ("5 in the
// kitchen").
func (r *enReader) unitMayEndHere(t int) bool {
	switch r.kind(t) {
	case tokNone:
		return true
	case tokSym:
		return !strings.ContainsRune("-‐'’&/", r.first(t))
	case tokSpace:
		switch r.kind(t + 1) {
		case tokNum, tokSym:
			return true
		case tokWord:
			return followingUnitWords[r.lower(t+1)]
		}
	}
	return false
}
