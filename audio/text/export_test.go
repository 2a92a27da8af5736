package text

// ReadingCases returns the inputs of the normalization tables, for the
// tests of package text_test (which may import the demo voice): English
// with the Markdown and emoji rows, and Mandarin.
func ReadingCases() (english, mandarin []string) {
	for _, rows := range [][]normCase{englishCasesForFuzz(), markdownCases, emojiCases} {
		for _, c := range rows {
			english = append(english, c.in)
		}
	}
	for _, c := range mandarinCasesForFuzz() {
		mandarin = append(mandarin, c.in)
	}
	return english, mandarin
}
