package text

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"one sentence", "Hello world.", []string{"Hello world."}},
		{"no final mark", "Hello world", []string{"Hello world"}},
		{"three marks", "Hi there. How are you? Great!", []string{"Hi there.", "How are you?", "Great!"}},
		{"semicolon", "First part; second part.", []string{"First part;", "second part."}},
		{"colon and comma stay", "Note: one, two, three.", []string{"Note: one, two, three."}},
		{"titles", "Mr. Smith met Mrs. Jones and Dr. Who on St. Patrick's day.", []string{"Mr. Smith met Mrs. Jones and Dr. Who on St. Patrick's day."}},
		{"title lower case", "ask the dr. about it.", []string{"ask the dr. about it."}},
		{"e.g. and i.e.", "Fruit, e.g. apples, i.e. red ones. Next.", []string{"Fruit, e.g. apples, i.e. red ones.", "Next."}},
		{"vs", "Cats vs. dogs. Fight!", []string{"Cats vs. dogs.", "Fight!"}},
		{"etc then capital", "Apples, pears, etc. Then we left.", []string{"Apples, pears, etc.", "Then we left."}},
		{"etc then lower", "apples, pears, etc. and more.", []string{"apples, pears, etc. and more."}},
		{"etc at end", "apples, pears, etc.", []string{"apples, pears, etc."}},
		{"p.m. capital", "We meet at 5 p.m. Bring food.", []string{"We meet at 5 p.m.", "Bring food."}},
		{"a.m. lower", "At 7 a.m. on Monday we go.", []string{"At 7 a.m. on Monday we go."}},
		{"number abbreviation", "Track No. 5 is next. No. I said no. Really.", []string{"Track No. 5 is next.", "No.", "I said no.", "Really."}},
		{"initials", "J. R. R. Tolkien wrote it. Read it.", []string{"J. R. R. Tolkien wrote it.", "Read it."}},
		{"dotted acronym", "The U.S. Army marched. Then rest.", []string{"The U.S. Army marched.", "Then rest."}},
		{"decimal", "Pi is 3.14 roughly. Yes.", []string{"Pi is 3.14 roughly.", "Yes."}},
		{"thousands", "It costs 1,000.50 dollars. Ok.", []string{"It costs 1,000.50 dollars.", "Ok."}},
		{"version", "Update to v2.0 now. Done.", []string{"Update to v2.0 now.", "Done."}},
		{"time", "Dinner at 7.30 sharp. Go.", []string{"Dinner at 7.30 sharp.", "Go."}},
		{"number at end", "I have 3. You have 4.", []string{"I have 3.", "You have 4."}},
		{"url", "Visit https://example.com/a.b?c=d!e now. Thanks.", []string{"Visit https://example.com/a.b?c=d!e now.", "Thanks."}},
		{"url at end", "Go to www.example.org. Then stop.", []string{"Go to www.example.org.", "Then stop."}},
		{"email", "Mail john.doe@example.co.uk today! Bye.", []string{"Mail john.doe@example.co.uk today!", "Bye."}},
		{"ellipsis char", "Wait… what? Oh.", []string{"Wait…", "what?", "Oh."}},
		{"three dots", "Well... maybe. Sure.", []string{"Well...", "maybe.", "Sure."}},
		{"mark run", "Really?! Yes!!! Ok.", []string{"Really?!", "Yes!!!", "Ok."}},
		{"closing quote", `He said "Stop." Then he left.`, []string{`He said "Stop."`, "Then he left."}},
		{"closing curly quote", "She asked “why?” and smiled. Fine.", []string{"She asked “why?”", "and smiled.", "Fine."}},
		{"closing bracket", "(See above.) Next one.", []string{"(See above.)", "Next one."}},
		{"mandarin two questions", "今天天气怎么样？明天呢？", []string{"今天天气怎么样？", "明天呢？"}},
		{"mandarin full stop", "你好。我很好！你呢？", []string{"你好。", "我很好！", "你呢？"}},
		{"mandarin comma does not split", "你好，世界。", []string{"你好，世界。"}},
		{"mandarin semicolon", "一；二。", []string{"一；", "二。"}},
		{"cjk closing quote", "他说：「好。」然后走了。", []string{"他说：「好。」", "然后走了。"}},
		{"cjk ellipsis run", "他想了想……然后走了。", []string{"他想了想……", "然后走了。"}},
		{"japanese", "こんにちは。元気ですか？", []string{"こんにちは。", "元気ですか？"}},
		{"mixed scripts", "我喜欢Go语言。It is fast. 对吧？OK!", []string{"我喜欢Go语言。", "It is fast.", "对吧？", "OK!"}},
		{"latin then cjk without space", "Hello.你好。", []string{"Hello.", "你好。"}},
		{"fullwidth decimal", "３．１４是圆周率。", []string{"３．１４是圆周率。"}},
		{"newline boundary", "Shopping list\nmilk\neggs", []string{"Shopping list", "milk", "eggs"}},
		{"blank lines and crlf", "Para one\r\n\r\n\r\nPara two\rthree", []string{"Para one", "Para two", "three"}},
		{"whitespace collapsed", "  lots \t of\u00a0\u3000 space   here  ", []string{"lots of space here"}},
		{"control characters dropped", "he\x00llo\x07 wor\x1bld\ufeff.", []string{"hello world."}},
		{"tag removed", "Wait <break time='100000s'/> now.", []string{"Wait now."}},
		{"ssml document", "<speak><p>Hi.</p><p>Bye.</p></speak>", []string{"Hi.", "Bye."}},
		{"less than kept", "a < b and x<3 ok.", []string{"a < b and x<3 ok."}},
		{"unclosed tag kept", "<b bold", []string{"<b bold"}},
		{"entities", "Tom &amp; Jerry &lt;3 &#x4F60;&#22909;.", []string{"Tom & Jerry <3 你好."}},
		{"punctuation only merged back", "Hello. ...", []string{"Hello. ..."}},
		{"punctuation only merged forward", "!!!\nHello.", []string{"!!! Hello."}},
		{"punctuation only alone", "?!", []string{"?!"}},
		{"spanish", "¿Qué tal? Bien.", []string{"¿Qué tal?", "Bien."}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.in, nil)
			if err != nil {
				t.Fatalf("Split(%q): %v", tt.in, err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Split(%q)\n got %q\nwant %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestSplitKeepMarkup(t *testing.T) {
	got, err := Split("Hi <b>there</b> &amp; you.", &SplitOptions{KeepMarkup: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"Hi <b>there</b> &amp; you."}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestSplitErrors(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		opts    *SplitOptions
		want    error
		wantMsg []string
	}{
		{"empty", "", nil, ErrEmptyText, nil},
		{"whitespace", " \n\t\r\n \u3000", nil, ErrEmptyText, nil},
		{"controls only", "\x00\x01\x02", nil, ErrEmptyText, nil},
		{"tag only", "<break time='100000s'/>", nil, ErrEmptyText, nil},
		{"invalid utf8", "ok \xff\xfe bad", nil, ErrInvalidText, []string{"offset 3"}},
		{"truncated rune", "你\xe5\xa5", nil, ErrInvalidText, []string{"offset 3"}},
		{"over default limit", strings.Repeat("a", DefaultMaxChars+1), nil, ErrTextTooLong, []string{"5001 characters", "limit is 5000"}},
		{"over custom limit in runes", strings.Repeat("你", 11), &SplitOptions{MaxChars: 10}, ErrTextTooLong, []string{"11 characters", "limit is 10"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.in, tt.opts)
			if !errors.Is(err, tt.want) {
				t.Fatalf("Split = %q, %v; want %v", got, err, tt.want)
			}
			for _, m := range tt.wantMsg {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
		})
	}
}

func TestIsEmpty(t *testing.T) {
	tests := []struct {
		in   string
		keep bool
		want bool
	}{
		{"", false, true},
		{" \n\t\u3000", false, true},
		{"\ufeff", false, true},
		{"\x00\x01", false, true},
		{"<break time='100000s'/>", false, true},
		{"<speak><break time='100000s'/></speak>", false, true},
		{"<p></p>\n<br/>\r\n", false, true},
		{"&nbsp; &#32; &#0;", false, true},
		{"<speak><break time='1s'/></speak>", true, false},
		{"a", false, false},
		{"<b>hi</b>", false, false},
		{"a < b", false, false},
		{"x <3", false, false},
		{"&amp;", false, false},
		{"…", false, false},
		{"{", false, false},
		{"\xff", false, false}, // invalid UTF-8 is Split's ErrInvalidText, not empty
	}
	for _, tt := range tests {
		if got := IsEmpty(tt.in, &SplitOptions{KeepMarkup: tt.keep}); got != tt.want {
			t.Errorf("IsEmpty(%q, keep markup %v) = %v, want %v", tt.in, tt.keep, got, tt.want)
		}
		if !tt.keep && utf8.ValidString(tt.in) {
			_, err := Split(tt.in, nil)
			if errors.Is(err, ErrEmptyText) != tt.want {
				t.Errorf("Split(%q) = %v, but IsEmpty says %v", tt.in, err, tt.want)
			}
		}
	}
	if !IsEmpty("<break/>", nil) {
		t.Error("nil options must remove markup")
	}
}

func TestSplitLimitBoundaries(t *testing.T) {
	// Exactly at the request limit is fine, counted in runes, not bytes.
	if _, err := Split(strings.Repeat("你", 10), &SplitOptions{MaxChars: 10}); err != nil {
		t.Errorf("10 runes with MaxChars 10: %v", err)
	}
	// A negative limit disables the check.
	if _, err := Split(strings.Repeat("a ", DefaultMaxChars), &SplitOptions{MaxChars: -1}); err != nil {
		t.Errorf("MaxChars -1: %v", err)
	}
}

func TestSplitLongSentences(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"at space", "aaa bbb ccc ddd", 8, []string{"aaa bbb", "ccc ddd"}},
		{"exact fit", "aaaa bbbb", 4, []string{"aaaa", "bbbb"}},
		{"comma in second half wins", "one two three, four five", 16, []string{"one two three,", "four five"}},
		{"space beats early comma", "a, bbbbbbbb cccc dddd", 16, []string{"a, bbbbbbbb cccc", "dddd"}},
		{"thousands comma is no clause", "pay 1,000,000 now", 8, []string{"pay", "1,000,00", "0 now"}},
		{"hard break without spaces", "abcdefghij", 4, []string{"abcd", "efgh", "ij"}},
		{"cjk comma", "一二三四五，六七八九十", 8, []string{"一二三四五，", "六七八九十"}},
		{"cjk without commas", "一二三四五六七八九十", 4, []string{"一二三四", "五六七八", "九十"}},
		{"combining mark kept with base", "abce\u0301fg", 4, []string{"abc", "e\u0301fg"}},
		{"one rune limit", "ab c", 1, []string{"a", "b", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Split(tt.in, &SplitOptions{MaxSentenceChars: tt.max})
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestSplitMegabyteWithoutPunctuation(t *testing.T) {
	words := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	var b strings.Builder
	for i := 0; b.Len() < 1<<20; i++ {
		b.WriteString(words[i%len(words)])
		b.WriteByte(' ')
	}
	in := b.String()
	got, err := Split(in, &SplitOptions{MaxChars: -1})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) < len(in)/DefaultMaxSentenceChars {
		t.Errorf("%d sentences from %d bytes; want at least %d", len(got), len(in), len(in)/DefaultMaxSentenceChars)
	}
	for i, s := range got {
		if n := utf8.RuneCountInString(s); n > DefaultMaxSentenceChars {
			t.Fatalf("sentence %d has %d runes, limit %d", i, n, DefaultMaxSentenceChars)
		}
		// Never mid-word: every piece starts and ends with a whole word.
		first, last := strings.Fields(s)[0], strings.Fields(s)[len(strings.Fields(s))-1]
		if !contains(words, first) || !contains(words, last) {
			t.Fatalf("sentence %d cut mid-word: %q ... %q", i, first, last)
		}
	}
	checkPreserved(t, in, got, false)

	// A megabyte with no spaces at all is hard-broken at the limit.
	solid := strings.Repeat("x", 1<<20)
	got, err = Split(solid, &SplitOptions{MaxChars: -1})
	if err != nil {
		t.Fatal(err)
	}
	if want := (1<<20 + DefaultMaxSentenceChars - 1) / DefaultMaxSentenceChars; len(got) != want {
		t.Errorf("%d pieces, want %d", len(got), want)
	}
	checkPreserved(t, solid, got, false)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// checkPreserved asserts the invariant Split documents: the sentences hold
// the non-space characters of the cleaned text, in order, and each is
// non-empty, trimmed, single-spaced, on one line and within the limit.
func checkPreserved(t testing.TB, in string, got []string, keepMarkup bool) {
	t.Helper()
	maxRunes := DefaultMaxSentenceChars
	for i, s := range got {
		if s == "" {
			t.Fatalf("sentence %d is empty", i)
		}
		if strings.TrimSpace(s) != s || strings.Contains(s, "  ") || strings.ContainsAny(s, "\n\r\t") {
			t.Fatalf("sentence %d not normalized: %q", i, s)
		}
		if n := utf8.RuneCountInString(s); n > maxRunes {
			t.Fatalf("sentence %d has %d runes, limit %d", i, n, maxRunes)
		}
		if !utf8.ValidString(s) {
			t.Fatalf("sentence %d is not UTF-8: %q", i, s)
		}
	}
	want := stripSpace(string(cleanText(in, keepMarkup)))
	if have := stripSpace(strings.Join(got, "")); have != want {
		t.Fatalf("characters changed:\n got %q\nwant %q", shorten(have), shorten(want))
	}
}

func stripSpace(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsSpace(r) {
			return -1
		}
		return r
	}, s)
}

func shorten(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{
		"Hello world. How are you?",
		"Mr. Smith paid $1,000.50 at 7.30 p.m. Then left!",
		"J. R. R. Tolkien… wrote; e.g. this.",
		"今天天气怎么样？明天呢？",
		"你好，世界。Hello.你好",
		"<break time='100000s'/> &amp; &#0; &#x110000; <",
		"<speak><break time='100000s'/></speak>",
		"\ufeff<p>&nbsp;</p>",
		"a\x00b\r\n\r\nc\u2028d\ufeff",
		"3.14 v2.0 https://x.y/z?a=b!c",
		"abce\u0301\u0301\u0301fg",
		"...!?;…",
		"\xff",
		"",
	} {
		f.Add(s, 0, false)
	}
	f.Add("aaa bbb ccc ddd", 3, false)
	f.Add("<b>x</b>", 1, true)
	f.Fuzz(func(t *testing.T, in string, maxSentence int, keepMarkup bool) {
		if maxSentence < 0 || maxSentence > 1000 {
			maxSentence = 0
		}
		opts := &SplitOptions{MaxSentenceChars: maxSentence, KeepMarkup: keepMarkup}
		got, err := Split(in, opts)
		if (err == nil || errors.Is(err, ErrEmptyText)) && IsEmpty(in, opts) != (err != nil) {
			t.Fatalf("IsEmpty = %v, but Split: %v", err == nil, err)
		}
		if err != nil {
			switch {
			case errors.Is(err, ErrInvalidText):
				if utf8.ValidString(in) {
					t.Fatalf("valid UTF-8 rejected: %v", err)
				}
			case errors.Is(err, ErrTextTooLong):
				if utf8.RuneCountInString(in) <= DefaultMaxChars {
					t.Fatalf("short text rejected: %v", err)
				}
			case errors.Is(err, ErrEmptyText):
				if stripSpace(string(cleanText(in, keepMarkup))) != "" {
					t.Fatalf("non-empty text called empty")
				}
			default:
				t.Fatalf("unexpected error: %v", err)
			}
			return
		}
		if len(got) == 0 {
			t.Fatal("no sentences and no error")
		}
		limit := opts.resolved().MaxSentenceChars
		for i, s := range got {
			if s == "" || strings.TrimSpace(s) != s {
				t.Fatalf("sentence %d not trimmed or empty: %q", i, s)
			}
			if n := utf8.RuneCountInString(s); n > limit {
				t.Fatalf("sentence %d has %d runes, limit %d", i, n, limit)
			}
		}
		want := stripSpace(string(cleanText(in, keepMarkup)))
		if have := stripSpace(strings.Join(got, "")); have != want {
			t.Fatalf("characters changed:\n got %q\nwant %q", have, want)
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	para := "Mr. Smith arrived at 7.30 p.m. and said: \"Hello, world!\" Then he paid $1,000.50, e.g. in cash. " +
		"今天天气怎么样？明天呢？我们去公园，好吗？ "
	in := strings.Repeat(para, DefaultMaxChars/utf8.RuneCountInString(para))
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	var n int
	for b.Loop() {
		got, err := Split(in, nil)
		if err != nil {
			b.Fatal(err)
		}
		n = len(got)
	}
	b.ReportMetric(float64(n), "sentences/op")
}

func BenchmarkSplitMegabyteUnpunctuated(b *testing.B) {
	in := strings.Repeat("word ", 1<<20/5)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(in, &SplitOptions{MaxChars: -1}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSplitNotification(b *testing.B) {
	// The size of a typical Home Assistant notification.
	in := "The front door has been open for 10 minutes. Please close it, or say stop!"
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Split(in, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestBreak(t *testing.T) {
	tests := []struct {
		name string
		in   string
		max  int
		want []string
	}{
		{"within the limit", "one two three", 13, []string{"one two three"}},
		{"no limit", "one two three", 0, []string{"one two three"}},
		{"empty", "  ", 3, nil},
		{"two at a space", "aaa bbb ccc ddd", 8, []string{"aaa bbb", "ccc ddd"}},
		{"clause comma past the middle", "one two three, four five", 16, []string{"one two three,", "four five"}},
		{"balanced, no stub at the end", "a b c d e f g h i j k", 10, []string{"a b c d", "e f g h", "i j k"}},
		{"without spaces", "abcdefghijkl", 5, []string{"abcde", "fghij", "kl"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Break(tt.in, tt.max)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Break(%q, %d) = %q, want %q", tt.in, tt.max, got, tt.want)
			}
		})
	}
}

// TestBreakKeepsEveryRune breaks long unpunctuated text into many pieces:
// each within the limit and none a stub, and the runes are all there.
func TestBreakKeepsEveryRune(t *testing.T) {
	words := strings.Fields("the quick brown fox jumps over a lazy dog while kitchen lights hum")
	var b strings.Builder
	for i := 0; b.Len() < 2000; i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	in := b.String()
	for _, max := range []int{30, 57, 100, 333, 1000} {
		got := Break(in, max)
		// The spaces at the breaks are dropped, so one piece fewer than
		// len/max can hold it all.
		k := (len(in) + max - 1) / max
		if len(got) < k-1 || len(got) > k+k/10+1 {
			t.Errorf("max %d: %d pieces, want about %d", max, len(got), k)
		}
		for i, p := range got {
			if n := utf8.RuneCountInString(p); n == 0 || n > max || (i < len(got)-1 && n < max/3) {
				t.Errorf("max %d: piece %d has %d runes", max, i, n)
			}
		}
		if strings.Join(got, " ") != in {
			t.Errorf("max %d: pieces do not rejoin to the input", max)
		}
	}
}
