package text

// normalizeMandarin rewrites one line for a Mandarin voice.
func normalizeMandarin(line string) string { return line }
