package main

import (
	"fmt"

	"github.com/mynah-tts/mynah/audio/voice/catalog"
)

// choiceLine says which voice a LANGUAGE or voice name resolved to, and
// why: the language's preferred voice, or the rule (catalog.Resolve) that
// ordered the candidates, so that a person who wanted another knows it
// was a choice and how to make their own.
func choiceLine(req, quality string, r *catalog.Resolution) string {
	v := r.Voice
	what := fmt.Sprintf("%s (%s, %s, %s)", v.Key, v.Quality, plural(v.Speakers(), "speaker"), sizeString(v.Size()))
	if quality == "" {
		quality = catalog.DefaultQuality
	}
	why := fmt.Sprintf(" of %d voices, by quality nearest %s, one speaker first, then key", len(r.Candidates), quality)
	if r.Preferred {
		why = fmt.Sprintf(", the preferred voice for %s, of %d voices", v.Language.Code, len(r.Candidates))
	}
	return fmt.Sprintf("%s: choosing %s%s; name another to choose it (mynah voice list --available --language %s)",
		req, what, why, v.Language.Code)
}
