package text

// normCase is one row of the normalization tables: the text as Home
// Assistant (or an agent) sends it, and what Normalize must return.
// cat groups rows for the counts reported per category.
type normCase struct {
	cat, in, want string
}

// englishCasesForFuzz and mandarinCasesForFuzz seed FuzzNormalize with the
// language tables.
func englishCasesForFuzz() []normCase  { return englishCases }
func mandarinCasesForFuzz() []normCase { return mandarinCases }
