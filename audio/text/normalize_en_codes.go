package text

import "strings"

// Numbers read digit by digit or part by part: phone numbers, IPv4
// addresses and versions.

// readPhone reads digit groups joined by hyphens or dots in the shapes of
// phone numbers: 555-123-4567, 1-800-555-1234, 555.123.4567, 555-1234.
func (r *enReader) readPhone(k int) int {
	var groups []string
	sep := r.first(k + 1)
	if sep != '-' && sep != '.' {
		return 0
	}
	j := k
	groups = append(groups, r.str(j))
	for r.sym(j+1, sep) && r.isNum(j+2) && len(groups) < 5 {
		j += 2
		groups = append(groups, r.str(j))
	}
	end := j + 1
	if r.sym(end, sep) && r.isNum(end+1) || r.kind(end) == tokWord {
		return 0
	}
	shape := ""
	for _, g := range groups {
		shape += string(rune('0' + len(g)))
	}
	switch {
	case shape == "334", shape == "1334" && sep == '-':
	case shape == "34" && sep == '-' && groups[0][0] >= '2':
		if _, _, ok := r.unitAfter(end); ok {
			return 0
		}
		if p := end + 1; r.kind(end) == tokSpace && r.sym(p, '%') || r.sym(end, '%') {
			return 0
		}
	default:
		return 0
	}
	r.write(spellGroups(groups))
	return end - k
}

// readParenPhone reads "(555) 123-4567".
func (r *enReader) readParenPhone(k int) int {
	if r.numLen(k+1) == 3 && r.sym(k+2, ')') && r.kind(k+3) == tokSpace && r.numLen(k+4) == 3 &&
		r.sym(k+5, '-') && r.numLen(k+6) == 4 && !r.isNum(k+8) {
		r.write(spellGroups([]string{r.str(k + 1), r.str(k + 4), r.str(k + 6)}))
		r.qEnd = k + 7
		return 7
	}
	return 0
}

// phoneGroups collects the digit groups of a phone number after a "+":
// digits separated by single spaces, hyphens, dots or parentheses.
func (r *enReader) phoneGroups(k int) ([]string, int) {
	groups := []string{r.str(k)}
	j := k + 1
	for len(groups) < 8 {
		t := j
		for n := 0; n < 3 && (r.kind(t) == tokSpace || r.sym(t, '-') || r.sym(t, '.') || r.sym(t, '(') || r.sym(t, ')')); n++ {
			t++
		}
		if t == j || !r.isNum(t) || r.numLen(t) > 4 {
			break
		}
		groups = append(groups, r.str(t))
		j = t + 1
	}
	if r.sym(j, ')') {
		j++
	}
	return groups, j
}

func enDigitCount(groups []string) int {
	n := 0
	for _, g := range groups {
		n += len(g)
	}
	return n
}

// spellGroups reads digit groups one digit at a time, a comma (a short
// pause) between groups.
func spellGroups(groups []string) string {
	words := make([]string, len(groups))
	for i, g := range groups {
		words[i] = spellDigits(g, "zero")
	}
	return strings.Join(words, ", ")
}

// readDotted reads numbers with two or more dots: IPv4 addresses
// ("192.168.1.10", digit by digit) and versions ("1.2.3"); and a number
// with one dot after a word that names software ("Zigbee 3.0").
func (r *enReader) readDotted(k int) int {
	j, n := k, 1
	for r.sym(j+1, '.') && r.isNum(j+2) && n < 16 {
		j += 2
		n++
	}
	switch {
	case n == 4 && r.isIPv4(k):
		parts := make([]string, 0, 4)
		for t := k; t <= j; t += 2 {
			parts = append(parts, spellDigits(r.str(t), "zero"))
		}
		r.write(strings.Join(parts, " dot "))
		return j + 1 - k
	case n >= 3, n == 2 && versionContext[r.prevWord(k)]:
		return r.readVersion(k)
	}
	return 0
}

func (r *enReader) isIPv4(k int) bool {
	for t := k; t <= k+6; t += 2 {
		if r.numLen(t) > 3 || enAtoi(r.str(t)) > 255 {
			return false
		}
	}
	return true
}

// versionContext are words after which "3.0" is a version, read "three
// point oh".
var versionContext = map[string]bool{
	"version": true, "firmware": true, "release": true, "zigbee": true, "bluetooth": true,
	"android": true, "ios": true, "matter": true, "python": true, "usb": true, "thread": true,
	"assistant": true, "esphome": true, "os": true, "core": true, "http": true, "tls": true,
	"ipv": true, "update": true, "build": true, "fi": true,
}

// readVersion reads "1.2.3" or "2.0" as a version: "one point two point
// three", "two point oh". The first part of a calendar version is a year
// ("2026.4.1").
func (r *enReader) readVersion(k int) int {
	j := k
	var parts []string
	for {
		c := r.str(j)
		switch {
		case c == "0":
			parts = append(parts, "oh")
		case c[0] == '0', len(c) > enMaxCardinalDigits:
			parts = append(parts, spellDigits(c, "oh"))
		case j == k && len(c) == 4 && enAtoi(c) >= 1100 && enAtoi(c) <= 2099:
			parts = append(parts, yearWords(c))
		default:
			parts = append(parts, cardinalWords(c))
		}
		if !(r.sym(j+1, '.') && r.isNum(j+2)) || len(parts) >= 16 {
			break
		}
		j += 2
	}
	r.write(strings.Join(parts, " point "))
	if r.kind(j+1) == tokWord {
		r.write(" ")
	}
	return j + 1 - k
}
