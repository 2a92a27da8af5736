package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Chunks read as a whole: URLs, e-mail addresses, bare domain names and
// Home Assistant entity ids. A chunk runs from a space (or the start of
// the line, or an opening bracket or quote) to the next space, less the
// punctuation at its end.

// readChunk reads the chunk that starts at token k, if it is one of the
// above, and returns the tokens it consumed. A URL with its scheme (or
// "www.") runs to the next space; the other kinds end at the first
// character they cannot hold, so that "x.es#5" reads "x dot es number
// five" on the first reading as on the second.
func (r *enReader) readChunk(k int) int {
	p := r.runeAt(k)
	e := r.addressEnd(p)
	chunk := string(r.rs[p:e])
	if !strings.ContainsAny(chunk, ".@:") && !strings.ContainsAny(string(r.rs[e:min(e+1, len(r.rs))]), ".:") {
		return 0
	}
	var words string
	head := string(r.rs[p:min(p+8, len(r.rs))])
	if enHasPrefixFold(head, "http://") || enHasPrefixFold(head, "https://") || enHasPrefixFold(head, "www.") {
		e = p
		for e < len(r.rs) && r.rs[e] != ' ' {
			e++
		}
		for e > p && strings.ContainsRune(".,;:!?)]}>'\"”’", r.rs[e-1]) {
			e--
		}
		words = urlWords(string(r.rs[p:e]))
	} else {
		for e > p && strings.ContainsRune(".:/-_@%+", r.rs[e-1]) {
			e--
		}
		chunk = string(r.rs[p:e])
		// An entity id ends where its characters end: "sensor.a1B".
		ee := p
		for ee < e && (r.rs[ee] >= 'a' && r.rs[ee] <= 'z' || r.rs[ee] >= '0' && r.rs[ee] <= '9' || r.rs[ee] == '_' || r.rs[ee] == '.') {
			ee++
		}
		if ee < len(r.rs) && (unicode.IsLetter(r.rs[ee]) || unicode.IsMark(r.rs[ee])) {
			for ee > p && unicode.IsLetter(r.rs[ee-1]) {
				ee-- // "sensor.a1aA": the id ends before the word it ran into
			}
		}
		for ee > p && (r.rs[ee-1] == '.' || r.rs[ee-1] == '_') {
			ee--
		}
		switch id := string(r.rs[p:ee]); {
		case len(chunk) < 3:
			return 0
		case isEmail(r.emailAt(p, e)):
			mail := r.emailAt(p, e)
			at := strings.IndexByte(mail, '@')
			words, e = addressWords(mail[:at])+" at "+addressWords(mail[at+1:]), p+len([]rune(mail))
		case isEntityID(id):
			words, e = entityWords(id), ee
		case isDomain(r.hostAt(p, e)):
			host := r.hostAt(p, e)
			words, e = urlWords(host), p+len([]rune(host))
		default:
			return 0
		}
	}
	end := r.tokAt(k, e)
	if end <= k {
		return 0
	}
	r.write(words)
	if r.kind(end) == tokWord || r.kind(end) == tokNum {
		r.write(" ")
	}
	r.qEnd = end // an "@" right after it is read "at"
	return end - k
}

// addressAt is the host name (with port and path) at token k and the
// token past it (k when there is none).
func (r *enReader) addressAt(k int) (string, int) {
	p := r.runeAt(k)
	host := r.hostAt(p, r.addressEnd(p))
	end := r.tokAt(k, p+len([]rune(host)))
	if end < k {
		return "", k
	}
	return host, end
}

// emailAt is the part of rs[p:e] an e-mail address can hold: the name,
// "@" and a domain of letters, digits, "-" and ".".
func (r *enReader) emailAt(p, e int) string {
	at := p
	for at < e && r.rs[at] != '@' {
		at++
	}
	if at >= e {
		return ""
	}
	h := at + 1
	for h < e && (isEnAlnum(r.rs[h]) || r.rs[h] == '-' || r.rs[h] == '.') {
		h++
	}
	for h > at+1 && (r.rs[h-1] == '.' || r.rs[h-1] == '-') {
		h--
	}
	return string(r.rs[p:h])
}

// hostAt is the part of rs[p:e] a host name with its port and path can
// hold: labels of letters, digits and "-", a port of digits, a path,
// less the punctuation at its end.
func (r *enReader) hostAt(p, e int) string {
	h := p
	for h < e && (isEnAlnum(r.rs[h]) || r.rs[h] == '-' || r.rs[h] == '.') {
		h++
	}
	if h < e && r.rs[h] == ':' { // a port: digits alone
		d := h + 1
		for d < e && r.rs[d] >= '0' && r.rs[d] <= '9' {
			d++
		}
		if d > h+1 && (d == e || !isEnAlnum(r.rs[d])) {
			h = d
		}
	}
	if h < e && r.rs[h] == '/' {
		for h < e && (isEnAlnum(r.rs[h]) || strings.ContainsRune("-._/", r.rs[h])) {
			h++
		}
	}
	for h > p && strings.ContainsRune(".:/-_", r.rs[h-1]) {
		h--
	}
	return string(r.rs[p:h])
}

// addressEnd is the end of the run of address characters from rune p. A
// period before a digit ends it: the digits are read as a number, with a
// space after the period ("x.dk.0" is "x dot dk. zero"), so a second
// reading must not take them for part of the address either.
func (r *enReader) addressEnd(p int) int {
	e := p
	for e < len(r.rs) && isAddressRune(r.rs[e]) {
		if r.rs[e] == '.' && e+1 < len(r.rs) && r.rs[e+1] >= '0' && r.rs[e+1] <= '9' && e > p {
			break
		}
		e++
	}
	return e
}

// isAddressRune reports the characters of e-mail addresses, host names
// with their port and path, and entity ids.
func isAddressRune(c rune) bool {
	return isEnAlnum(c) || strings.ContainsRune(".:/-_@%+", c)
}

func enHasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// urlWords reads a URL as a person says it: no scheme, no "www.", no
// query or fragment; "home-assistant dot io slash docs".
func urlWords(u string) string {
	if i := strings.Index(u, "://"); i >= 0 && i <= 8 {
		u = u[i+3:]
	}
	if enHasPrefixFold(u, "www.") {
		u = u[4:]
	}
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	return addressWords(strings.TrimRight(u, "/"))
}

// addressWords reads the parts of an address: its punctuation by name,
// its digits one by one.
func addressWords(s string) string {
	var b strings.Builder
	b.Grow(len(s) * 2)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString(" " + spellDigits(s[i:j], "zero") + " ")
			i = j - 1
		case addressMarks[c] != "":
			b.WriteString(" " + addressMarks[c] + " ")
		case c >= utf8.RuneSelf:
			// Digits of other forms are read too: no digit is left.
			r, size := utf8.DecodeRuneInString(s[i:])
			switch {
			case isEnSuperscript(r):
				b.WriteString(" " + enOnes[enSuperscriptValue(r)-'0'] + " ")
			case isEnSubscript(r):
				b.WriteString(" " + enOnes[r-'₀'] + " ")
			case isEnVulgar(r):
				b.WriteString(" " + enVulgarFractions[r] + " ")
			default:
				b.WriteString(s[i : i+size])
			}
			i += size - 1
		default:
			b.WriteByte(c)
		}
	}
	words := strings.Fields(b.String())
	for i, w := range words {
		words[i] = addressWord(w)
	}
	return strings.Join(words, " ")
}

// addressWord expands the words of an address that the word rules would
// expand on a second reading ("vs", "approx", "Dr", "St"), so that the
// reading of an address is read the same way again.
func addressWord(w string) string {
	switch w {
	case "Dr", "DR":
		return "Doctor"
	case "St", "ST":
		return "Street"
	}
	switch strings.ToLower(w) {
	case "vs":
		return matchCase(w, "versus")
	case "approx":
		return matchCase(w, "approximately")
	}
	return w
}

var addressMarks = [256]string{
	'.': "dot", '/': "slash", ':': "colon", '_': "underscore", '@': "at", '=': "equals",
	'~': "tilde", '%': "percent", '&': "and", '+': "plus",
}

// isEmail reports "name@example.com": one '@', a dotted domain.
func isEmail(s string) bool {
	at := strings.IndexByte(s, '@')
	if at <= 0 || strings.Count(s, "@") != 1 {
		return false
	}
	local, domain := s[:at], s[at+1:]
	for _, c := range local {
		if !(isEnAlnum(c) || strings.ContainsRune("._%+-", c)) {
			return false
		}
	}
	if strings.IndexFunc(local, isEnAlnum) < 0 {
		return false
	}
	labels := strings.Split(domain, ".")
	if len(labels) < 2 {
		return false
	}
	for _, l := range labels {
		if strings.IndexFunc(l, isEnAlnum) < 0 {
			return false
		}
		for _, c := range l {
			if !isEnAlnum(c) && c != '-' {
				return false
			}
		}
	}
	return true
}

// isDomain reports a bare host name with a known top-level domain
// ("home-assistant.io", "homeassistant.local:8123/lovelace").
func isDomain(s string) bool {
	host := s
	if i := strings.IndexByte(host, '/'); i >= 0 {
		host = host[:i]
	}
	if i := strings.IndexByte(host, ':'); i >= 0 {
		for _, c := range host[i+1:] {
			if c < '0' || c > '9' {
				return false
			}
		}
		host = host[:i]
	}
	labels := strings.Split(host, ".")
	// Digits after the top-level label do not hide it: once read,
	// "0.es0" is "zero.es zero". (Digits before it are read apart from
	// the period, see gluedToAddress.)
	tld := labels[len(labels)-1]
	if i := strings.IndexAny(tld, "0123456789"); i >= 0 {
		tld = tld[:i]
	}
	if len(labels) < 2 || !topLevelDomains[strings.ToLower(tld)] {
		return false
	}
	for _, l := range labels {
		if l == "" {
			return false
		}
		for _, c := range l {
			if !isEnAlnum(c) && c != '-' {
				return false
			}
		}
	}
	// A label may be all digits: once read, "0.ie" is "zero.ie", which
	// would be a domain the second time.
	return true
}

// topLevelDomains that mark a bare host name. Words that end sentences
// without a space ("in", "it", "me") are left out.
var topLevelDomains = map[string]bool{
	"com": true, "org": true, "net": true, "io": true, "dev": true, "app": true, "ai": true,
	"local": true, "lan": true, "de": true, "uk": true, "eu": true, "info": true, "tv": true,
	"fr": true, "nl": true, "ca": true, "au": true, "ch": true, "se": true, "dk": true, "fi": true,
	"es": true, "pl": true, "cz": true, "jp": true, "cn": true, "ru": true, "br": true, "nz": true,
	"ie": true, "gov": true, "edu": true, "cloud": true, "tech": true, "xyz": true, "arpa": true,
}

// isEntityID reports a Home Assistant entity id: a known domain, a
// period, an object id of lower-case letters, digits and underscores.
func isEntityID(s string) bool {
	domain, object, ok := strings.Cut(s, ".")
	if !ok || !haDomains[domain] || object == "" {
		return false
	}
	// Further periods are allowed: "light.light.a" is read "light light
	// a", not "light light" and a "light.a" for the second reading.
	for _, c := range object {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// entityWords reads "sensor.living_room_temperature" as "sensor living
// room temperature"; numbers in it are cardinals ("light.bedroom_2").
func entityWords(s string) string {
	var words []string
	for _, part := range strings.FieldsFunc(s, func(c rune) bool { return c == '.' || c == '_' }) {
		for part != "" {
			i := strings.IndexFunc(part, func(c rune) bool { return (c >= '0' && c <= '9') != (part[0] >= '0' && part[0] <= '9') })
			if i < 0 {
				i = len(part)
			}
			piece := part[:i]
			if piece[0] >= '0' && piece[0] <= '9' {
				if len(piece) > 4 {
					piece = spellDigits(piece, "zero")
				} else {
					piece = cardinalWords(piece)
				}
			}
			words = append(words, addressWord(piece))
			part = part[i:]
		}
	}
	return strings.Join(words, " ")
}

// haDomains are Home Assistant's entity domains.
var haDomains = map[string]bool{
	"air_quality": true, "alarm_control_panel": true, "assist_satellite": true, "automation": true,
	"binary_sensor": true, "button": true, "calendar": true, "camera": true, "climate": true,
	"conversation": true, "counter": true, "cover": true, "date": true, "datetime": true,
	"device_tracker": true, "event": true, "fan": true, "group": true, "humidifier": true, "image": true,
	"input_boolean": true, "input_button": true, "input_datetime": true, "input_number": true,
	"input_select": true, "input_text": true, "lawn_mower": true, "light": true, "lock": true,
	"media_player": true, "notify": true, "number": true, "person": true, "remote": true, "scene": true,
	"schedule": true, "script": true, "select": true, "sensor": true, "siren": true, "stt": true,
	"sun": true, "switch": true, "text": true, "time": true, "timer": true, "todo": true, "tts": true,
	"update": true, "vacuum": true, "valve": true, "wake_word": true, "water_heater": true,
	"weather": true, "zone": true,
}

func isEnAlnum(c rune) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}
