package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Markdown, as LLM conversation agents write it, is removed line by line
// rather than parsed as a document: a Wyoming stream hands over one
// sentence at a time, so "**Living room" may arrive without its closing
// "**", and a CommonMark parser would leave such a fragment's markers in
// the text to be read out. What is removed:
//
//   - at the start of a line: headings ("## "), block quotes ("> "), list
//     bullets ("- ", "* ", "+ ", "• ") and numbers ("1. ", "2) "), task
//     boxes ("[ ] ", "[x] "); the line stays a line, so Split gives it its
//     own sentence and the pause that goes with it;
//   - whole lines that are only a thematic break ("---", "***"), a code
//     fence ("```go") or a table's alignment row ("|---|:--:|");
//   - table pipes, which become commas between the cells;
//   - inline: links and images become their text ("[the docs](https://…)"
//     reads "the docs"), code spans their content, and the emphasis
//     markers "**", "__", "~~" and backticks are dropped wherever they
//     are, "*" and "_" only where they open and close an emphasis
//     ("*really*", not "5 * 3" or "living_room").
//
// The lines of a fenced code block are read as any other line (only the
// fences go): a line must read the same wherever it stands, or the
// reading of a reading would differ from the reading.

// stripMarkdownLine removes Markdown from one line.
func stripMarkdownLine(line string) string {
	t := strings.TrimSpace(line)
	if t == "" || strings.HasPrefix(t, "```") || strings.HasPrefix(t, "~~~") || isThematicBreak(t) || isTableRule(t) {
		return ""
	}
	// Until nothing changes: removing one marker can make another ("#~~"
	// is "#", a heading, once the strike-through goes; a table's one cell
	// may be a bullet). Each round removes characters or pipes, so it ends.
	for {
		before := t
		t = stripBlockPrefix(t)
		if strings.HasPrefix(t, "|") || strings.Count(t, "|") >= 2 {
			t = tableCells(t)
		}
		if t = strings.TrimSpace(stripInline(t)); t == before {
			return t
		}
	}
}

// isThematicBreak reports a line of three or more '-', '*' or '_' (and
// spaces) alone.
func isThematicBreak(t string) bool {
	var mark rune
	n := 0
	for _, r := range t {
		switch {
		case r == ' ':
		case (r == '-' || r == '*' || r == '_') && (mark == 0 || r == mark):
			mark = r
			n++
		default:
			return false
		}
	}
	return n >= 3
}

// isTableRule reports a table's alignment row: "|---|:---:|".
func isTableRule(t string) bool {
	if !strings.Contains(t, "|") || !strings.Contains(t, "-") {
		return false
	}
	for _, r := range t {
		if r != '|' && r != '-' && r != ':' && r != ' ' {
			return false
		}
	}
	return true
}

// stripBlockPrefix removes the block markers at the start of a line:
// quotes, headings, bullets, list numbers and task boxes, nested or not.
func stripBlockPrefix(t string) string {
	for {
		before := t
		switch {
		case strings.HasPrefix(t, ">"):
			t = strings.TrimLeft(t, ">")
		case strings.HasPrefix(t, "#"):
			if rest := strings.TrimLeft(t, "#"); len(t)-len(rest) <= 6 && (rest == "" || rest[0] == ' ') {
				t = strings.TrimRight(rest, "#")
			}
		case len(t) >= 2 && strings.ContainsRune("-*+", rune(t[0])) && t[1] == ' ':
			t = t[2:]
		case strings.HasPrefix(t, "• "):
			t = t[len("• "):]
		default:
			if n := listNumber(t); n > 0 {
				t = t[n:]
			}
		}
		if strings.HasPrefix(t, " ") {
			t = strings.TrimLeft(t, " ")
		}
		for _, box := range []string{"[ ] ", "[x] ", "[X] "} {
			if strings.HasPrefix(t, box) {
				t = t[len(box):]
			}
		}
		if t == before {
			return t
		}
	}
}

// listNumber returns the length of an ordered list marker ("1. ", "12) ")
// at the start of t, or 0. One or two digits only: "2026. " is a year.
func listNumber(t string) int {
	i := 0
	for i < len(t) && i < 3 && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 || i > 2 || i+1 >= len(t) {
		return 0
	}
	if (t[i] == '.' || t[i] == ')') && t[i+1] == ' ' {
		return i + 2
	}
	return 0
}

// tableCells turns "| Kitchen | 21 °C |" into "Kitchen, 21 °C".
func tableCells(t string) string {
	var cells []string
	for _, c := range strings.Split(t, "|") {
		if c = strings.TrimSpace(c); c != "" {
			cells = append(cells, c)
		}
	}
	return strings.Join(cells, ", ")
}

// stripInline removes links, code spans and emphasis markers.
func stripInline(t string) string {
	if !strings.ContainsAny(t, "*_~`[]") {
		return t
	}
	rs := []rune(t)
	out := make([]rune, 0, len(rs))
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		switch {
		case r == '!' && i+1 < len(rs) && rs[i+1] == '[':
			if text, end, ok := link(rs, i+1); ok {
				out = append(out, text...)
				i = end - 1
				continue
			}
			out = append(out, r)
		case r == '[':
			if text, end, ok := link(rs, i); ok {
				out = append(out, text...)
				i = end - 1
				continue
			}
			out = append(out, r)
		case r == '`':
			// A code span's content is read; the backticks never are.
		case (r == '*' || r == '_' || r == '~') && i+1 < len(rs) && rs[i+1] == r:
			for i+1 < len(rs) && rs[i+1] == r {
				i++
			}
		case r == '*' || r == '_':
			if opens(rs, i) && closes(rs, i, r) || closesOpen(rs, i, r) {
				continue
			}
			out = append(out, r)
		default:
			out = append(out, r)
		}
	}
	return string(out)
}

// link reads "[text](target)" or "[text][ref]" starting at rs[i] == '['
// and returns the text and the index just past the link.
func link(rs []rune, i int) (text []rune, end int, ok bool) {
	close := -1
	for j := i + 1; j < len(rs) && j-i <= maxTagRunes; j++ {
		if rs[j] == ']' {
			close = j
			break
		}
		if rs[j] == '[' {
			return nil, 0, false
		}
	}
	if close < 0 || close+1 >= len(rs) {
		return nil, 0, false
	}
	var want rune
	switch rs[close+1] {
	case '(':
		want = ')'
	case '[':
		want = ']'
	default:
		return nil, 0, false
	}
	for j := close + 2; j < len(rs) && j-close <= maxTagRunes; j++ {
		if rs[j] == want {
			return rs[i+1 : close], j + 1, true
		}
		if rs[j] == ' ' && want == ')' && !strings.HasPrefix(string(rs[j:min(j+2, len(rs))]), " \"") {
			return nil, 0, false
		}
	}
	return nil, 0, false
}

// opens reports whether the '*' or '_' at rs[i] can open an emphasis: not
// inside a word (for '_'), and followed by a non-space.
func opens(rs []rune, i int) bool {
	if i+1 >= len(rs) || rs[i+1] == ' ' {
		return false
	}
	if i > 0 && isWordRune(rs[i-1]) {
		return false
	}
	return true
}

// closes reports whether a matching closer for the opener at rs[i] follows
// on the line: the same mark after a non-space, not followed by a word
// character.
func closes(rs []rune, i int, mark rune) bool {
	for j := i + 2; j < len(rs); j++ {
		if rs[j] == mark && rs[j-1] != ' ' && (j+1 == len(rs) || !isWordRune(rs[j+1])) {
			return true
		}
	}
	return false
}

// closesOpen reports whether the mark at rs[i] closes an emphasis opened
// earlier on the line (and so already dropped).
func closesOpen(rs []rune, i int, mark rune) bool {
	if i == 0 || rs[i-1] == ' ' || (i+1 < len(rs) && isWordRune(rs[i+1])) {
		return false
	}
	for j := i - 1; j >= 0; j-- {
		if rs[j] == mark && opens(rs, j) {
			return true
		}
	}
	return false
}

func isWordRune(r rune) bool {
	return r < utf8.RuneSelf && (r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') ||
		r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r))
}
