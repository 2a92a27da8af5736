package text

import (
	"strings"
	"unicode"
)

// Chunks read as a whole: URLs, e-mail addresses, bare domain names and
// Home Assistant entity ids. A chunk runs from a space (or the start of
// the line, or an opening bracket or quote) to the next space, less the
// punctuation at its end.

// readChunk reads the chunk that starts at token k, if it is one of the
// above, and returns the tokens it consumed.
func (r *enReader) readChunk(k int) int {
	p := r.runeAt(k)
	e := p
	marks := false
	for e < len(r.rs) && r.rs[e] != ' ' {
		if c := r.rs[e]; c == '.' || c == '@' || c == ':' {
			marks = true
		}
		e++
	}
	if !marks {
		return 0
	}
	for e > p && strings.ContainsRune(".,;:!?)]}>'\"”’", r.rs[e-1]) {
		e--
	}
	if e-p < 3 {
		return 0
	}
	chunk := string(r.rs[p:e])
	var words string
	switch {
	case enHasPrefixFold(chunk, "http://"), enHasPrefixFold(chunk, "https://"), enHasPrefixFold(chunk, "www."):
		words = urlWords(chunk)
	case isEmail(chunk):
		at := strings.IndexByte(chunk, '@')
		words = addressWords(chunk[:at]) + " at " + addressWords(chunk[at+1:])
	case isEntityID(chunk):
		words = entityWords(chunk)
	case isDomain(chunk):
		words = urlWords(chunk)
	default:
		return 0
	}
	end := r.tokAt(k, e)
	if end <= k {
		return 0
	}
	r.write(words)
	return end - k
}

func enHasPrefixFold(s, prefix string) bool {
	return len(s) > len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
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
		default:
			b.WriteByte(c)
		}
	}
	return strings.Join(strings.Fields(b.String()), " ")
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
	dot := strings.LastIndexByte(domain, '.')
	if dot <= 0 || dot == len(domain)-1 {
		return false
	}
	for _, c := range domain {
		if !(isEnAlnum(c) || c == '-' || c == '.') {
			return false
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
	if len(labels) < 2 || !topLevelDomains[strings.ToLower(labels[len(labels)-1])] {
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
	return strings.IndexFunc(labels[0], unicode.IsLetter) >= 0
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
	for _, c := range object {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
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
			words = append(words, piece)
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
