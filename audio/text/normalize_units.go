package text

import (
	"slices"
	"strings"
)

// indexUnits indexes a language's unit table by the symbols' first rune,
// the longest symbol first so that a scanner takes "kWh" before "kW" and
// "kW" before "k". A symbol with the micro sign U+00B5 (const.py's "µg")
// is also entered with U+03BC (its "μs" and "μg/ft³"): both are in use.
func indexUnits[N, E any](units map[string]N, entry func(sym []rune, name N) E, symOf func(E) []rune) map[rune][]E {
	idx := make(map[rune][]E)
	add := func(sym string, name N) {
		rs := []rune(sym)
		idx[rs[0]] = append(idx[rs[0]], entry(rs, name))
	}
	for sym, name := range units {
		add(sym, name)
		if strings.ContainsRune(sym, 'µ') {
			add(strings.ReplaceAll(sym, "µ", "μ"), name)
		}
	}
	for _, list := range idx {
		slices.SortFunc(list, func(a, b E) int {
			sa, sb := symOf(a), symOf(b)
			if len(sa) != len(sb) {
				return len(sb) - len(sa)
			}
			return strings.Compare(string(sa), string(sb))
		})
	}
	return idx
}
