package text

import (
	"unicode"
	"unicode/utf8"
)

// Complete cuts text that is still arriving (a language model's answer
// streamed chunk by chunk) into the sentences at its front that are
// complete, done, and the rest, which waits for more text. The cut is one
// Split makes, by the same rules, so Split(done) gives the sentences that
// Split would give for them in the whole text: "to Mr. Jones today."
// stays one sentence whichever chunk "Jones" comes in.
//
// A boundary counts only once the character after it has arrived, since
// what follows can undo it: "3." may go on as "3.14", "5 p.m. " as "5
// p.m. on Sunday", "No. " as "No. 5". A line break always ends a
// sentence. Where a rule looks past the space after a period, Complete
// assumes what keeps the sentence whole and waits for the next word.
//
// done+rest == text: nothing is cleaned away here (Split cleans done
// later), so that a space at a chunk's end survives until the next chunk
// arrives. Text that is not valid UTF-8 is all rest, for Split to refuse
// once it is spoken.
func Complete(text string, opts *SplitOptions) (done, rest string) {
	if !utf8.ValidString(text) {
		return "", text
	}
	// The sentinel stands for the text still to come: a digit keeps every
	// rule that looks at the next word from ending a sentence ("No. 5",
	// "p.m. on", "U.S. and"), and no boundary right before it is taken.
	const sentinel = "0"
	keepMarkup := opts != nil && opts.KeepMarkup
	clean, at := cleanTextAt(text+sentinel, keepMarkup, true)
	limit := len(text) // no cut after this: a tag may be open there
	if !keepMarkup {
		limit = openTag(clean, at, len(text))
	}
	cut := -1 // byte offset in text of the last complete sentence's end
	for start := 0; start < len(clean); {
		end := start
		for end < len(clean) && clean[end] != '\n' {
			end++
		}
		line := clean[start:end]
		for b := 0; ; {
			b = nextBoundary(line, b)
			if b < 0 || b >= len(line) || at[start+b] >= limit {
				break
			}
			cut = at[start+b]
		}
		if end < len(clean) && at[end] < limit {
			cut = at[end] // the line break ends the sentence
		}
		start = end + 1
	}
	if cut < 0 {
		return "", text
	}
	return text[:cut], text[cut:]
}

// openTag returns where, in text of n bytes, a tag begins that the chunks
// to come may still close ("<break time='1s'" awaiting its "/>"), or n
// when there is none. Its marks are not a sentence's end: cleanText drops
// the whole tag once it is closed. clean and at are cleanText's runes,
// with the sentinel, and their offsets.
func openTag(clean []rune, at []int, n int) int {
	for i := len(clean) - 2; i >= 0; i-- { // the last rune is the sentinel
		switch clean[i] {
		case '>', '\n':
			return n
		case '<':
			if len(clean)-1-i >= maxTagRunes {
				return n
			}
			next := i + 1
			if next < len(clean)-1 && (clean[next] == '/' || clean[next] == '!' || clean[next] == '?') {
				next++
			}
			if next == len(clean)-1 || unicode.IsLetter(clean[next]) {
				return at[i]
			}
			return n
		}
	}
	return n
}
