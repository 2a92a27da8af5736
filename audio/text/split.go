package text

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Limits applied by Split when SplitOptions leaves them at zero.
const (
	// DefaultMaxChars bounds one request, in runes (Unicode code points).
	// A say command is read aloud; 5000 runes is several minutes of speech,
	// and anything larger is more likely a mistake or an attack than a text.
	DefaultMaxChars = 5000

	// DefaultMaxSentenceChars bounds one sentence, in runes. A Piper voice
	// runs one ONNX pass per sentence, and its cost and memory grow with the
	// phoneme count; peers crashed on a megabyte without punctuation.
	DefaultMaxSentenceChars = 400

	// maxTagRunes is the longest "<...>" that is still treated as markup.
	maxTagRunes = 256
)

// SplitOptions tunes Split. The zero value (or nil) gives the defaults.
type SplitOptions struct {
	// MaxChars is the most runes a request may hold, counted before any
	// cleaning. 0 means DefaultMaxChars; a negative value turns the limit
	// off (for trusted input such as files read by the CLI).
	MaxChars int

	// MaxSentenceChars is the most runes one returned sentence may hold.
	// 0 (or a negative value) means DefaultMaxSentenceChars. Longer sentences
	// are broken, never rejected: at the last clause comma in the second half
	// of the window, else at the last space, else at the last clause comma,
	// else (a run with neither, such as Chinese without commas or one huge
	// token) exactly at the limit, keeping combining marks with their base.
	MaxSentenceChars int

	// KeepMarkup keeps tag-like text. By default anything shaped like an XML
	// or SSML tag ("<break time='1s'/>", "</p>") is replaced by a space: the
	// engines here do not interpret SSML, and reading the tag aloud ("less
	// than break time equals...") is never what the sender wanted.
	KeepMarkup bool
}

func (o *SplitOptions) resolved() SplitOptions {
	var r SplitOptions
	if o != nil {
		r = *o
	}
	if r.MaxChars == 0 {
		r.MaxChars = DefaultMaxChars
	}
	if r.MaxSentenceChars <= 0 {
		r.MaxSentenceChars = DefaultMaxSentenceChars
	}
	return r
}

// Split cuts text into sentences for synthesis, one model run each.
//
// Boundaries:
//   - every line break (so lists and blank-line paragraphs never run together);
//   - Latin . ! ? ; … (and runs like "?!" or "...") followed by whitespace, the
//     end of the line, or a CJK character; closing quotes and brackets right
//     after the mark stay with the sentence. Because a following space is
//     required, numbers (3.14, 1,000.50, v2.0, 7.30), URLs and e-mail
//     addresses are never split;
//   - CJK 。！？；｡ anywhere, with no space needed. The CJK commas ，and 、
//     do not end a sentence: splitting at every comma would cost a sentence
//     pause each time and break the prosody of the clause. They are the
//     preferred break points when a sentence exceeds MaxSentenceChars.
//
// A period does not end a sentence after a title or Latin abbreviation
// ("Mr.", "Dr.", "St.", "e.g.", "vs."), after a single capital initial
// ("J. R. R. Tolkien"), after a dotted acronym ("U.S."), or after "No."/"Vol."
// when a number follows. "etc.", "a.m.", "p.m.", "Inc." and "Ltd." end a
// sentence only when the next word is capitalized. Where a case is
// ambiguous ("Plan B. Then") the rules keep the sentence whole: a missed
// break only makes one model run longer, a wrong one cuts a phrase in two.
//
// Cleaning: control characters (NUL included) and byte-order marks are
// removed, all other whitespace becomes single spaces, tags are removed and
// the entities &amp; &lt; &gt; &quot; &apos; &nbsp; &#N; &#xH; decoded
// unless KeepMarkup is set, and sentences are trimmed. A sentence made only
// of punctuation is joined to its neighbour when the result fits.
//
// Errors: ErrInvalidText for invalid UTF-8, ErrTextTooLong when the text has
// more than MaxChars runes, ErrEmptyText when nothing is left to say.
// Apart from whitespace, the returned sentences hold exactly the characters
// of the cleaned text, in order: nothing is dropped at a break.
func Split(text string, opts *SplitOptions) ([]string, error) {
	o := opts.resolved()
	if !utf8.ValidString(text) {
		return nil, fmt.Errorf("split: %w: bad byte at offset %d", ErrInvalidText, invalidOffset(text))
	}
	if o.MaxChars > 0 {
		if n := utf8.RuneCountInString(text); n > o.MaxChars {
			return nil, fmt.Errorf("split: %w: %d characters, limit is %d (MaxChars)", ErrTextTooLong, n, o.MaxChars)
		}
	}
	clean := cleanText(text, o.KeepMarkup)

	var out []string
	for len(clean) > 0 {
		nl := indexRune(clean, '\n')
		line := clean
		if nl >= 0 {
			line, clean = clean[:nl], clean[nl+1:]
		} else {
			clean = nil
		}
		out = splitLine(line, o.MaxSentenceChars, out)
	}
	out = mergePunctuationOnly(out, o.MaxSentenceChars)
	if len(out) == 0 {
		return nil, fmt.Errorf("split: %w", ErrEmptyText)
	}
	return out, nil
}

// Break cuts one sentence from Split into pieces of at most maxRunes
// runes, for a voice whose model run must stay short (its audio, and so
// its memory, grows with the text). Each piece ends where Split breaks an
// over-long sentence: at a clause comma, else at a space, else (no space
// in reach) inside the word, never between a letter and its combining
// mark. The pieces are balanced: a sentence that needs k pieces is cut
// near every len/k runes (with a quarter of slack, so that a clause comma
// a little past the even point is taken), so the last piece is not a
// stub. A sentence within maxRunes, or a maxRunes below 1, comes back
// whole. Apart from the spaces at the breaks, the pieces hold exactly the
// runes of s.
func Break(s string, maxRunes int) []string {
	rs := trimSpaces([]rune(s))
	if len(rs) == 0 {
		return nil
	}
	if maxRunes < 1 || len(rs) <= maxRunes {
		return []string{string(rs)}
	}
	k := (len(rs) + maxRunes - 1) / maxRunes
	even := (len(rs) + k - 1) / k
	return appendSentence(nil, rs, min(maxRunes, even+even/4))
}

// IsEmpty reports whether Split would find nothing to say in s (its
// ErrEmptyText): blank text, control characters and byte-order marks, or
// markup alone, such as "<speak><break time='1s'/></speak>". Only
// opts.KeepMarkup matters; no length limit applies. A front end that must
// answer before a voice is loaded (mynahd decoding a say command) rejects
// such a text with it at once.
func IsEmpty(s string, opts *SplitOptions) bool {
	return len(cleanText(s, opts != nil && opts.KeepMarkup)) == 0
}

func invalidOffset(s string) int {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 {
			return i
		}
		i += size
	}
	return len(s)
}

func indexRune(rs []rune, r rune) int {
	for i, c := range rs {
		if c == r {
			return i
		}
	}
	return -1
}

// cleanText returns the text as runes with line breaks normalized to '\n',
// every other kind of whitespace to a single ' ', no spaces at line ends,
// and control characters and (unless keepMarkup) tags removed.
func cleanText(s string, keepMarkup bool) []rune {
	out, _ := cleanTextAt(s, keepMarkup, false)
	return out
}

// cleanTextAt is cleanText that also returns, when withOffsets, the byte
// offset in s of what each returned rune was made from (for a collapsed
// run of spaces, its first space).
func cleanTextAt(s string, keepMarkup, withOffsets bool) (out []rune, at []int) {
	in := []rune(s)
	out = make([]rune, 0, len(in))
	var offs []int // byte offset of in[i]; len(in)+1 entries
	if withOffsets {
		offs = make([]int, 0, len(in)+1)
		for i := range s {
			offs = append(offs, i)
		}
		offs = append(offs, len(s))
		at = make([]int, 0, len(in))
	}
	i := 0 // the rune of in being cleaned
	// pendingSpace defers writing a space so runs collapse and spaces before
	// a line break or at the start of a line vanish.
	pendingSpace, spaceAt := false, 0
	emit := func(r rune, from int) {
		out = append(out, r)
		if withOffsets {
			at = append(at, offs[from])
		}
	}
	put := func(r rune) {
		switch r {
		case '\n':
			pendingSpace = false
			if n := len(out); n > 0 && out[n-1] != '\n' {
				emit('\n', i)
			}
		case ' ':
			if n := len(out); n > 0 && out[n-1] != '\n' && !pendingSpace {
				pendingSpace, spaceAt = true, i
			}
		default:
			if pendingSpace {
				emit(' ', spaceAt)
				pendingSpace = false
			}
			emit(r, i)
		}
	}
	for ; i < len(in); i++ {
		r := in[i]
		switch {
		case r == '\r':
			put('\n')
			if i+1 < len(in) && in[i+1] == '\n' {
				i++
			}
		case r == '\n' || r == '\v' || r == '\f' || r == 0x85 || r == 0x2028 || r == 0x2029:
			put('\n')
		case r == 0x200B: // zero-width space separates words in Thai and Khmer
			put(' ')
		case unicode.IsSpace(r):
			put(' ')
		case unicode.IsControl(r) || r == 0xFEFF:
			// dropped: NUL and friends confuse C libraries and mean nothing spoken
		case r == '<' && !keepMarkup:
			if end := tagEnd(in, i); end > 0 {
				put(' ')
				i = end
				continue
			}
			put(r)
		case r == '&' && !keepMarkup:
			// Text that carried tags usually carries entities too; "&amp;"
			// read aloud is as wrong as a tag, and its ';' would end a sentence.
			if dec, end := decodeEntity(in, i); end > 0 {
				switch {
				case unicode.IsSpace(dec):
					put(' ')
				case dec != 0:
					put(dec)
				}
				i = end
				continue
			}
			put(r)
		default:
			put(r)
		}
	}
	if n := len(out); n > 0 && out[n-1] == '\n' {
		out = out[:n-1]
		if withOffsets {
			at = at[:n-1]
		}
	}
	return out, at
}

// tagEnd returns the index of the '>' closing a tag that starts at in[i],
// or -1 when the '<' is just a less-than sign ("a < b", "x <3").
func tagEnd(in []rune, i int) int {
	j := i + 1
	if j < len(in) && (in[j] == '/' || in[j] == '!' || in[j] == '?') {
		j++
	}
	if j >= len(in) || !unicode.IsLetter(in[j]) {
		return -1
	}
	for k := j + 1; k < len(in) && k-i < maxTagRunes; k++ {
		switch in[k] {
		case '>':
			return k
		case '<', '\n', '\r':
			return -1
		}
	}
	return -1
}

var namedEntities = map[string]rune{
	"amp": '&', "lt": '<', "gt": '>', "quot": '"', "apos": '\'', "nbsp": ' ',
}

// decodeEntity decodes "&name;" or "&#NNN;"/"&#xHHH;" starting at in[i].
// It returns the index of the ';' (or -1 when this is no entity) and the
// rune, which is 0 for a numeric entity naming something unspeakable.
func decodeEntity(in []rune, i int) (rune, int) {
	const maxEntity = 12
	end := -1
	for k := i + 1; k < len(in) && k-i <= maxEntity; k++ {
		if in[k] == ';' {
			end = k
			break
		}
	}
	if end < 0 {
		return 0, -1
	}
	name := string(in[i+1 : end])
	if r, ok := namedEntities[name]; ok {
		return r, end
	}
	if len(name) < 2 || name[0] != '#' {
		return 0, -1
	}
	var v int64
	var err error
	if name[1] == 'x' || name[1] == 'X' {
		v, err = strconv.ParseInt(name[2:], 16, 32)
	} else {
		v, err = strconv.ParseInt(name[1:], 10, 32)
	}
	if err != nil || v < 0 {
		return 0, -1
	}
	r := rune(v)
	if !utf8.ValidRune(r) || unicode.IsControl(r) || r == 0xFEFF {
		return 0, end
	}
	return r, end
}

// splitLine appends the sentences of one cleaned line to out.
func splitLine(line []rune, maxRunes int, out []string) []string {
	start := 0
	for {
		end := nextBoundary(line, start)
		if end < 0 {
			return appendSentence(out, line[start:], maxRunes)
		}
		out = appendSentence(out, line[start:end], maxRunes)
		start = end
	}
}

// nextBoundary returns where the first sentence of line[start:] ends (past
// its marks and closing quotes), or -1 when the line ends it.
func nextBoundary(line []rune, start int) int {
	for i := start; i < len(line); i++ {
		r := line[i]
		if !isCJKTerminator(r) && !isLatinTerminator(r) {
			continue
		}
		j := i + 1
		for j < len(line) && (isLatinTerminator(line[j]) || isCJKTerminator(line[j])) {
			j++
		}
		closed := j
		for closed < len(line) && isCloser(line[closed]) {
			closed++
		}
		if !isCJKTerminator(r) {
			if closed < len(line) && line[closed] != ' ' && !isCJK(line[closed]) {
				i = j - 1 // 3.14, example.com, "Hi!x": not a boundary
				continue
			}
			if (r == '.' || r == '．') && j == i+1 && closed == j && !periodEndsSentence(line, start, i) {
				continue
			}
			if r == ';' && j == i+1 && endsEntity(line, start, i) {
				continue // "&amp;" kept by KeepMarkup
			}
		}
		return closed
	}
	return -1
}

// appendSentence trims s and appends it to out, broken into pieces of at most
// maxRunes runes.
func appendSentence(out []string, s []rune, maxRunes int) []string {
	s = trimSpaces(s)
	for len(s) > maxRunes {
		cut := findCut(s, maxRunes)
		if piece := trimSpaces(s[:cut]); len(piece) > 0 {
			out = append(out, string(piece))
		}
		s = trimSpaces(s[cut:])
	}
	if len(s) > 0 {
		out = append(out, string(s))
	}
	return out
}

// findCut returns where to end the first piece of s (len(s) > maxRunes):
// s[:cut] holds at most maxRunes runes and cut > 0.
func findCut(s []rune, maxRunes int) int {
	lastClause, lastSpace := -1, -1
	for k := maxRunes; k > 0; k-- {
		if lastSpace < 0 && s[k] == ' ' {
			lastSpace = k
		}
		if lastClause < 0 && k < maxRunes && isClauseBreak(s, k) {
			lastClause = k + 1
		}
		if lastSpace >= 0 && lastClause >= 0 {
			break
		}
	}
	switch {
	case lastClause >= maxRunes/2:
		return lastClause
	case lastSpace > 0:
		return lastSpace
	case lastClause > 0:
		return lastClause
	}
	cut := maxRunes
	for cut > 1 && isMark(s[cut]) {
		cut--
	}
	if isMark(s[cut]) {
		return maxRunes
	}
	return cut
}

func isMark(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Mc) || r == 0x200D // ZWJ joins emoji
}

func trimSpaces(s []rune) []rune {
	for len(s) > 0 && s[0] == ' ' {
		s = s[1:]
	}
	for len(s) > 0 && s[len(s)-1] == ' ' {
		s = s[:len(s)-1]
	}
	return s
}

// speakable reports whether s holds anything but punctuation and spaces.
func speakable(s string) bool {
	for _, r := range s {
		if r != ' ' && !unicode.IsPunct(r) {
			return true
		}
	}
	return false
}

// mergePunctuationOnly joins sentences such as "..." or "!!" to the previous
// sentence (or, for the first, to the next) when the result fits, so that a
// voice is never asked to speak a lone mark.
func mergePunctuationOnly(in []string, maxRunes int) []string {
	out := in[:0]
	for i := 0; i < len(in); i++ {
		s := in[i]
		if speakable(s) {
			out = append(out, s)
			continue
		}
		n := utf8.RuneCountInString(s)
		if len(out) > 0 && utf8.RuneCountInString(out[len(out)-1])+1+n <= maxRunes {
			out[len(out)-1] += " " + s
			continue
		}
		if i+1 < len(in) && utf8.RuneCountInString(in[i+1])+1+n <= maxRunes {
			in[i+1] = s + " " + in[i+1]
			continue
		}
		out = append(out, s)
	}
	return out
}
