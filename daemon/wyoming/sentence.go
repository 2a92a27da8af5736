package wyoming

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// cutSentences splits streamed text into the complete sentences at its
// front, which can be spoken now, and the rest, which waits for more
// chunks. A sentence ends after a run of . ! ? (and any closing quotes or
// brackets) that is followed by white space, after a run of the
// full-width 。！？ that is followed by anything (those languages put no
// space after them), and at a line break. Text at the very end never ends
// a sentence: the next chunk may continue it ("3." then "14").
//
// This is deliberately simple: the engine splits what it is given into
// sentences again, properly; all this decides is when enough text has
// arrived to start.
func cutSentences(text string) (done, rest string) {
	cut := 0
	for i := 0; i < len(text); {
		r, n := utf8.DecodeRuneInString(text[i:])
		switch {
		case r == '\n':
			i += n
			cut = i
			continue
		case isTerminator(r):
			j := i
			wide := false
			for j < len(text) {
				r2, n2 := utf8.DecodeRuneInString(text[j:])
				if !isTerminator(r2) && !isCloser(r2) {
					break
				}
				wide = wide || isWideTerminator(r2)
				j += n2
			}
			if j < len(text) {
				next, _ := utf8.DecodeRuneInString(text[j:])
				if wide || unicode.IsSpace(next) {
					cut = j
				}
			}
			i = j
			continue
		}
		i += n
	}
	return text[:cut], text[cut:]
}

func isTerminator(r rune) bool {
	return r == '.' || r == '!' || r == '?' || isWideTerminator(r)
}

func isWideTerminator(r rune) bool { return r == '。' || r == '！' || r == '？' }

func isCloser(r rune) bool { return strings.ContainsRune(`"')]}»”’」』）`, r) }
