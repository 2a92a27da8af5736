package catalog

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// How a request was resolved.
const (
	ByKey      = "key"
	ByAlias    = "alias"
	ByName     = "name"     // a voice name ("lessac") and a quality
	ByLanguage = "language" // a language code ("en_US") or family ("en")
)

// Resolution is the voice a request resolved to.
type Resolution struct {
	Voice *Voice
	By    string // ByKey, ByAlias, ByName or ByLanguage
	// Candidates are the voices the choice was made among, chosen first
	// (ByName and ByLanguage; one for the others).
	Candidates []*Voice
	// Preferred: ByLanguage, and Voice is the language's preferred voice
	// (see Resolve), not only the first by quality, speakers and key.
	Preferred bool
}

// preferredVoices are the voice names a language code resolves to first:
// the voices people are pointed to for the language, so that
// "mynah voice install en_US" installs the voice a Home Assistant guide
// would. en_US-lessac-medium is the default of Home Assistant's Piper
// add-on and of most Piper guides; the others are the voices the guides
// commonly name for their language. Every entry is in the collection at
// v1.0.0 (DefaultCatalogURL). A language without an entry, a catalog
// (a mirror, a later release) without the voice, or a voice without the
// quality the rule would choose, resolves by the rule alone.
var preferredVoices = map[string]string{
	"en_US": "lessac",
	"en_GB": "alan",
	"de_DE": "thorsten",
	"fr_FR": "siwis",
	"es_ES": "davefx",
	"zh_CN": "huayan",
}

// preferredVoice is the voice name a language code ("en_US", "en-us")
// resolves to first, "" for none.
func preferredVoice(code string) string {
	code = strings.ReplaceAll(code, "-", "_")
	for _, c := range sortedKeys(preferredVoices) {
		if strings.EqualFold(c, code) {
			return preferredVoices[c]
		}
	}
	return ""
}

// maxRequestLen bounds a request; nothing longer can match, and the
// nearest-names search is quadratic in it.
const maxRequestLen = 128

// Resolve finds the voice a person asked for: a key
// ("en_US-lessac-medium"), an alias the catalog lists, a voice name
// ("lessac"), or a language ("en_US", "en-us", "en"). For a name or a
// language, quality ("" is DefaultQuality) picks among the voices, and
// the choice is deterministic: the quality nearest the one asked for
// (the higher of two as near), then, for a language code, the language's
// preferred voice (preferredVoices: lessac for en_US), then voices of one
// speaker before multi-speaker ones (which need a speaker named on every
// request), then the key in byte order. A preference never outranks
// quality (en_US at low is lessac-low where the catalog has it, else the
// first low voice by the rest of the rule), and never a key, an alias or
// a voice name. A family ("en") takes its voices of every region by the
// rule, no region's preference first. Keys and aliases match exactly
// first, then without regard to case. No match is ErrNotFound with the
// nearest names; a voice name that two languages have is ErrAmbiguous.
func (c *Catalog) Resolve(request, quality string) (*Resolution, error) {
	if quality == "" {
		quality = DefaultQuality
	}
	if !slices.Contains(qualities, quality) {
		return nil, fmt.Errorf("quality %q: want one of %s", quality, strings.Join(qualities, ", "))
	}
	req := strings.TrimSpace(request)
	if req == "" || len(req) > maxRequestLen {
		return nil, fmt.Errorf("%w: %.40q (a key like en_US-lessac-medium, an alias, a voice name or a language like en_US)", ErrNotFound, req)
	}
	one := func(v *Voice, by string) *Resolution { return &Resolution{Voice: v, By: by, Candidates: []*Voice{v}} }
	if v, ok := c.voices[req]; ok {
		return one(v, ByKey), nil
	}
	if k, ok := c.aliases[req]; ok {
		return one(c.voices[k], ByAlias), nil
	}
	voices := c.Voices()
	for _, v := range voices {
		if strings.EqualFold(v.Key, req) {
			return one(v, ByKey), nil
		}
	}
	for _, a := range sortedKeys(c.aliases) {
		if strings.EqualFold(a, req) {
			return one(c.voices[c.aliases[a]], ByAlias), nil
		}
	}
	lang := strings.ReplaceAll(req, "-", "_")
	var byCode, byFamily, byName []*Voice
	for _, v := range voices {
		switch {
		case v.Language.Code != "" && strings.EqualFold(v.Language.Code, lang):
			byCode = append(byCode, v)
		case familyOf(v) != "" && strings.EqualFold(familyOf(v), lang):
			byFamily = append(byFamily, v)
		}
		if v.Name != "" && strings.EqualFold(v.Name, req) {
			byName = append(byName, v)
		}
	}
	switch {
	case len(byCode) > 0:
		return choose(byCode, quality, ByLanguage, preferredVoice(lang)), nil
	case len(byFamily) > 0:
		return choose(byFamily, quality, ByLanguage, ""), nil
	case len(byName) > 0:
		var langs []string
		for _, v := range byName {
			if !slices.Contains(langs, v.Language.Code) {
				langs = append(langs, v.Language.Code)
			}
		}
		if len(langs) > 1 {
			keys := make([]string, len(byName))
			for i, v := range byName {
				keys[i] = v.Key
			}
			return nil, fmt.Errorf("%w: %q is a voice of %s; name one of %s", ErrAmbiguous, req, strings.Join(langs, ", "), strings.Join(keys, ", "))
		}
		return choose(byName, quality, ByName, ""), nil
	}
	return nil, fmt.Errorf("%w: %q; nearest: %s (mynah voice list --available shows all)", ErrNotFound, req, strings.Join(c.Nearest(req, 5), ", "))
}

func familyOf(v *Voice) string {
	if v.Language.Family != "" {
		return v.Language.Family
	}
	f, _, _ := strings.Cut(v.Language.Code, "_")
	return f
}

// choose orders candidates as Resolve documents and takes the first;
// preferred ("" for none) is the voice name taken first of those of the
// nearest quality.
func choose(candidates []*Voice, quality, by, preferred string) *Resolution {
	want := slices.Index(qualities, quality)
	distance := func(v *Voice) int {
		q := slices.Index(qualities, v.Quality)
		if q < 0 {
			return len(qualities) * 2 // unknown qualities last
		}
		d := 2 * (q - want)
		if d < 0 {
			return -d + 1 // below the wish: after the one as far above
		}
		return d
	}
	isPreferred := func(v *Voice) bool { return preferred != "" && strings.EqualFold(v.Name, preferred) }
	notPreferred := func(v *Voice) int {
		if isPreferred(v) {
			return 0
		}
		return 1
	}
	sorted := slices.Clone(candidates)
	slices.SortStableFunc(sorted, func(a, b *Voice) int {
		return cmp.Or(
			cmp.Compare(distance(a), distance(b)),
			cmp.Compare(notPreferred(a), notPreferred(b)),
			cmp.Compare(min(a.Speakers(), 2), min(b.Speakers(), 2)),
			strings.Compare(a.Key, b.Key))
	})
	return &Resolution{Voice: sorted[0], By: by, Candidates: sorted, Preferred: isPreferred(sorted[0])}
}

// Nearest returns up to n of the catalog's keys, aliases and language
// codes nearest to s by edit distance (case-insensitive), nearest first,
// ties in byte order.
func (c *Catalog) Nearest(s string, n int) []string {
	s = strings.ToLower(s)
	if len(s) > maxRequestLen {
		s = s[:maxRequestLen]
	}
	seen := map[string]bool{}
	type scored struct {
		name string
		d    int
	}
	var all []scored
	add := func(name string) {
		if name == "" || seen[name] {
			return
		}
		seen[name] = true
		all = append(all, scored{name, editDistance(s, strings.ToLower(name))})
	}
	for _, v := range c.Voices() {
		add(v.Key)
		add(v.Language.Code)
	}
	for _, a := range sortedKeys(c.aliases) {
		add(a)
	}
	slices.SortFunc(all, func(a, b scored) int { return cmp.Or(cmp.Compare(a.d, b.d), strings.Compare(a.name, b.name)) })
	out := make([]string, 0, n)
	for _, sc := range all[:min(n, len(all))] {
		out = append(out, sc.name)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
