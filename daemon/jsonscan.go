package daemon

import (
	"bytes"
	"encoding/json"
)

// Scanning payloads without decoding them: what the daemon must know about
// a payload before, or instead of, handing it to encoding/json.

// bom is the UTF-8 byte-order mark. Notepad, PowerShell and some HTTP
// bridges put it before a text; left in place it hides the '{' of a JSON
// say, which was then read aloud as text.
var bom = []byte("\xef\xbb\xbf")

// trimPayload removes surrounding white space and leading byte-order marks.
func trimPayload(b []byte) []byte {
	b = bytes.TrimSpace(b)
	for bytes.HasPrefix(b, bom) {
		b = bytes.TrimSpace(b[len(bom):])
	}
	return b
}

// isJSONObject reports whether a trimmed payload is one JSON object, the
// only thing read as the JSON form of a command.
func isJSONObject(b []byte) bool {
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// jsonTooDeep reports whether b nests objects and arrays deeper than limit.
// It runs before encoding/json so that a hostile payload is rejected in
// one linear pass without building anything.
func jsonTooDeep(b []byte, limit int) bool {
	depth, inString, escaped := 0, false, false
	for _, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > limit {
				return true
			}
		case '}', ']':
			depth--
		}
	}
	return false
}

// peekID returns the top-level "id" of a payload refused before its fields
// were read (too large, not UTF-8, a NUL byte, nested too deep), so that
// the failed event still names the request. It steps over the members
// before "id" without decoding them, stops there and allocates only the
// id, so a payload of megabytes costs one pass over its bytes at most. It
// returns "" when the payload is not an object, has no "id" string that is
// a valid name, or breaks before it. The first "id" wins; encoding/json
// would take the last of several, but a payload with two ids is no
// request to name.
func peekID(payload []byte) string {
	b := trimPayload(payload)
	if len(b) == 0 || b[0] != '{' {
		return ""
	}
	for i := 1; ; i++ { // i is just past '{' or ','
		i = skipJSONSpace(b, i)
		if i >= len(b) || b[i] != '"' {
			return ""
		}
		keyEnd := jsonValueEnd(b, i)
		if keyEnd < 0 {
			return ""
		}
		key := b[i:keyEnd]
		if i = skipJSONSpace(b, keyEnd); i >= len(b) || b[i] != ':' {
			return ""
		}
		i = skipJSONSpace(b, i+1)
		end := jsonValueEnd(b, i)
		if end < 0 {
			return ""
		}
		if isIDKey(key) {
			var id string
			if json.Unmarshal(b[i:end], &id) != nil || ValidateName(id) != nil {
				return ""
			}
			return id
		}
		if i = skipJSONSpace(b, end); i >= len(b) || b[i] != ',' {
			return ""
		}
	}
}

// isIDKey reports whether a JSON string (quotes included) is "id", also
// when written with escapes ("\u0069d"), as encoding/json would read it.
func isIDKey(key []byte) bool {
	if string(key) == `"id"` {
		return true
	}
	if bytes.IndexByte(key, '\\') < 0 {
		return false
	}
	var s string
	return json.Unmarshal(key, &s) == nil && s == "id"
}

func skipJSONSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// jsonValueEnd returns the index just past the JSON value that starts at
// b[i], or -1 when b ends first. It checks no more than it needs to find
// the end: peekID validates the one value it keeps.
func jsonValueEnd(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return -1
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := jsonValueEnd(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	// A number, true, false or null: up to the next delimiter.
	j := i
	for j < len(b) && !isJSONDelim(b[j]) {
		j++
	}
	if j == i {
		return -1
	}
	return j
}

func isJSONDelim(c byte) bool {
	switch c {
	case ',', '}', ']', ' ', '\t', '\n', '\r':
		return true
	}
	return false
}
