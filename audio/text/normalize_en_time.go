package text

import "strings"

// Dates, clock times and durations. See the top of normalize_en.go for
// how a clock time is read and why.

var enMonthNames = [...]string{"", "January", "February", "March", "April", "May", "June",
	"July", "August", "September", "October", "November", "December"}

// isMonthWord reports a month's name or its abbreviation, capitalized.
func isMonthWord(w string) bool {
	if monthAbbrev[w] > 0 {
		return true
	}
	for _, m := range enMonthNames[1:] {
		if w == m {
			return true
		}
	}
	return false
}

// clock is a time as written: "14:30:05.123" or "8 PM".
type enClock struct {
	h, m, s int
	hasSec  bool
}

// parseClock reads H:MM, HH:MM or H:MM:SS (with fractional seconds) at
// token k. Hours are not checked: a duration may have more than 23.
func (r *enReader) parseClock(k int) (enClock, int, bool) {
	if n := r.numLen(k); n < 1 || n > 2 || !r.sym(k+1, ':') || r.numLen(k+2) != 2 {
		return enClock{}, 0, false
	}
	c := enClock{h: enAtoi(r.str(k)), m: enAtoi(r.str(k + 2))}
	end := k + 3
	if r.sym(end, ':') && r.numLen(end+1) == 2 {
		c.s, c.hasSec = enAtoi(r.str(end+1)), true
		end += 2
		if r.sym(end, '.') && r.isNum(end+1) {
			end += 2 // microseconds are never read
		}
	}
	if c.m > 59 || c.s > 59 || r.isNum(end) || r.sym(end, ':') && r.isNum(end+1) {
		return enClock{}, 0, false
	}
	return c, end, true
}

// readClock reads a time of day ("07:30", "8:05 PM", "8pm") or a duration
// ("0:03:12", "timer 1:30:00").
func (r *enReader) readClock(k int) int {
	c, end, ok := r.parseClock(k)
	if !ok {
		// An hour alone needs its AM or PM: "8 PM", "8pm".
		if r.numLen(k) > 2 {
			return 0
		}
		suffix, sEnd, dotEnd := r.meridiem(k + 1)
		h := enAtoi(r.str(k))
		if suffix == "" || h < 1 || h > 12 {
			return 0
		}
		return r.writeClock(clockWords(enClock{h: h}, suffix), sEnd, dotEnd, suffix) - k
	}
	if c.hasSec && (c.h == 0 && r.numLen(k) == 1 || r.durationContext(k, end)) {
		r.write(durationWords(c))
		return end - k
	}
	if c.h > 23 {
		return 0
	}
	suffix, sEnd, dotEnd := r.meridiem(end)
	if suffix == "" {
		sEnd, dotEnd = end, end
	}
	return r.writeClock(clockWords(c, suffix), sEnd, dotEnd, suffix) - k
}

// writeClock writes a time's words and returns the token after what it
// consumed. The input's period after "PM" serves as the period of "p.m."
// (at the end of a sentence too); a capitalized word right after "p.m."
// gets a comma first, so that Split does not end the sentence there.
func (r *enReader) writeClock(words string, end, dotEnd int, suffix string) int {
	r.write(words)
	if !strings.HasSuffix(words, ".") {
		// "noon", "seven o'clock": a period after a dotted "p.m." stays
		// only where it may end the sentence.
		if strings.Contains(suffix, ".") && dotEnd > end && r.kind(dotEnd) != tokNone &&
			!(r.kind(dotEnd) == tokSpace && r.isCapitalized(dotEnd+1)) {
			return dotEnd
		}
		return end
	}
	if r.sym(dotEnd, '.') {
		dotEnd++
	}
	if dotEnd == end && r.kind(end) == tokSpace && r.isCapitalized(end+1) {
		r.write(",")
	}
	return dotEnd
}

// meridiem finds "AM", "pm", "a.m." or "P.M." at token t (attached or
// after one space). It returns "a.m." or "p.m." and the tokens past it
// without and with a period that follows (or ends "p.m.").
func (r *enReader) meridiem(t int) (string, int, int) {
	j := t
	if r.kind(j) == tokSpace {
		j++
	}
	if r.kind(j) != tokWord {
		return "", 0, 0
	}
	var suffix string
	end := j + 1
	switch w := r.lower(j); {
	case w == "am":
		suffix = "a.m."
	case w == "pm":
		suffix = "p.m."
	case (w == "a" || w == "p") && r.sym(j+1, '.') && r.lower(j+2) == "m" && r.kind(j+2) == tokWord:
		suffix = w + ".m."
		end = j + 3
	default:
		return "", 0, 0
	}
	dotEnd := end
	if r.sym(end, '.') {
		dotEnd = end + 1
	}
	return suffix, end, dotEnd
}

// clockWords reads a time of day. suffix is "a.m.", "p.m." or "" (a
// 24-hour or unmarked time).
func clockWords(c enClock, suffix string) string {
	if suffix != "" && c.h >= 1 && c.h <= 12 {
		switch {
		case c.h == 12 && c.m == 0 && suffix == "a.m.":
			return "midnight"
		case c.h == 12 && c.m == 0:
			return "noon"
		}
		return hourMinute(c.h, c.m, false) + " " + suffix
	}
	switch {
	case c.h == 0 && c.m == 0:
		return "midnight"
	case c.h == 12 && c.m == 0:
		return "noon"
	case c.h == 0:
		return hourMinute(12, c.m, false) + " a.m."
	case c.h > 12:
		return hourMinute(c.h-12, c.m, false) + " p.m."
	}
	return hourMinute(c.h, c.m, true)
}

// hourMinute reads "8:05" as "eight oh five"; a full hour is "eight" (or
// "eight o'clock" without a.m. or p.m.).
func hourMinute(h, m int, oclock bool) string {
	hour := enOnes[0]
	if h < 20 {
		hour = enOnes[h]
	}
	switch {
	case m == 0 && oclock:
		return hour + " o'clock"
	case m == 0:
		return hour
	case m < 10:
		return hour + " oh " + enOnes[m]
	}
	return hour + " " + under100Words(m)
}

// durationContext reports a word before or after an H:MM:SS that makes it
// a duration: "timer 0:05:00", "1:30:00 left".
func (r *enReader) durationContext(k, end int) bool {
	prev := r.prevWord(k)
	if prev == "" && r.kind(k-1) == tokSpace && r.sym(k-2, ':') && r.kind(k-3) == tokWord {
		prev = r.lower(k - 3)
	}
	switch prev {
	case "timer", "remaining", "left", "duration", "elapsed", "for", "runtime", "uptime", "countdown", "takes", "took":
		return true
	}
	switch r.nextWord(end - 1) {
	case "left", "remaining", "elapsed", "to":
		return true
	}
	return false
}

// durationWords reads a duration: "three minutes and twelve seconds".
func durationWords(c enClock) string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "one "+one)
		case n > 1:
			parts = append(parts, cardinalWords(enItoa(n))+" "+many)
		}
	}
	add(c.h, "hour", "hours")
	add(c.m, "minute", "minutes")
	add(c.s, "second", "seconds")
	switch len(parts) {
	case 0:
		return "zero seconds"
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

func enItoa(n int) string {
	if n == 0 {
		return "0"
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// readDate reads ISO dates and datetimes as Home Assistant writes them
// ("2026-12-01", "2026-04-04 14:30:00.123456+02:00", "2026-04-04T14:30:00Z"),
// US dates ("12/01/2026", or 25/12/2026 when the first part cannot be a
// month) and dotted European ones ("01.12.2026").
func (r *enReader) readDate(k int) int {
	var y string
	var m, d, end int
	switch {
	case r.numLen(k) == 4 && r.sym(k+1, '-') && r.numLen(k+2) == 2 && r.sym(k+3, '-') && r.numLen(k+4) == 2 && !r.isNum(k+5):
		y, m, d, end = r.str(k), enAtoi(r.str(k+2)), enAtoi(r.str(k+4)), k+5
	case r.numLen(k) <= 2 && r.sym(k+1, '/') && r.numLen(k+2) <= 2 && r.sym(k+3, '/') && r.numLen(k+4) == 4:
		m, d, y, end = enAtoi(r.str(k)), enAtoi(r.str(k+2)), r.str(k+4), k+5
		if m > 12 {
			m, d = d, m
		}
	case r.numLen(k) <= 2 && r.sym(k+1, '.') && r.numLen(k+2) <= 2 && r.sym(k+3, '.') && r.numLen(k+4) == 4 && !r.sym(k+5, '.'):
		d, m, y, end = enAtoi(r.str(k)), enAtoi(r.str(k+2)), r.str(k+4), k+5
	default:
		return 0
	}
	if m < 1 || m > 12 || d < 1 || d > 31 {
		return 0
	}
	words := enMonthNames[m] + " " + ordinalWords(enItoa(d)) + ", " + yearWords(y)
	t := end
	if r.isWord(t, "T") || r.kind(t) == tokSpace && r.numLen(t+1) == 2 && r.sym(t+2, ':') {
		if c, ce, ok := r.parseClock(t + 1); ok && c.h <= 23 {
			r.write(words + " at ")
			return r.writeClock(clockWords(c, ""), r.skipZone(ce), r.skipZone(ce), "") - k
		}
	}
	r.write(words)
	return end - k
}

// skipZone passes a UTC offset or zone letter after a time: "Z",
// "+02:00", "-0500".
func (r *enReader) skipZone(t int) int {
	switch {
	case r.isWord(t, "Z"):
		return t + 1
	case (r.sym(t, '+') || r.sym(t, '-')) && r.numLen(t+1) == 2 && r.sym(t+2, ':') && r.numLen(t+3) == 2:
		return t + 4
	case (r.sym(t, '+') || r.sym(t, '-')) && r.numLen(t+1) == 4:
		return t + 2
	}
	return t
}
