package text

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestNormalizeMandarin(t *testing.T) {
	counts := map[string]int{}
	for _, c := range mandarinCases {
		counts[c.cat]++
		got, err := Normalize(c.in, &NormalizeOptions{Language: "zh"})
		if err != nil {
			t.Errorf("%s: %q: %v", c.cat, c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: %q\n got %q\nwant %q", c.cat, c.in, got, c.want)
		}
		if c.cat == "unchanged" && c.in != c.want {
			t.Errorf("unchanged row %q has a different want", c.in)
		}
	}
	if len(mandarinCases) < 90 {
		t.Errorf("%d rows, want at least 90", len(mandarinCases))
	}
	t.Logf("%d rows: %v", len(mandarinCases), counts)
}

// TestNormalizeMandarinPromises: no output of the table or of garbage
// holds a digit or a superscript, every output is a fixed point, and
// none grows past MaxExpansion.
func TestNormalizeMandarinPromises(t *testing.T) {
	inputs := []string{
		strings.Repeat("9", 5000), strings.Repeat("%", 300), strings.Repeat("1%", 300),
		strings.Repeat("-", 40) + "5", strings.Repeat("1,", 200) + "000", strings.Repeat("1.", 300),
		strings.Repeat("1:", 300), strings.Repeat("1/", 300), strings.Repeat("¥", 20) + "1",
		strings.Repeat("²", 50), strings.Repeat("⁹", 3), "1" + strings.Repeat("½", 20), "#1#2#3",
		strings.Repeat("2026-", 50), "2026-13-40", "99:99:99", "24:00", "0:00:00", "1e10",
		strings.Repeat("1K", 100), "1≤2≥3≈4", "剩余99:59:59", "+-5", "--5", "5--3", "١٢٣ درجة",
		"ＡＢＣ１２３", "1\u00a0kg", "0<&È>", "</½>", "CO₂浓度", "第0", "周0", "星期8", "1,23", "12,345,67",
	}
	for _, c := range mandarinCases {
		inputs = append(inputs, c.in)
	}
	for _, in := range inputs {
		checkNormalized(t, in, &NormalizeOptions{Language: "zh", MaxChars: -1})
		out := normalizeMandarin(in)
		if n, m := utf8.RuneCountInString(in), utf8.RuneCountInString(out); m > MaxExpansion*n {
			t.Errorf("%.40q: %d runes became %d", in, n, m)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return unicode.IsDigit(r) || superscriptValue(r) >= 0 }); i >= 0 {
			t.Errorf("%.40q: a digit left in %.80q", in, out)
		}
		if again := normalizeMandarin(out); again != out {
			t.Errorf("%.40q: not a fixed point:\n once  %.80q\n twice %.80q", in, out, again)
		}
	}
}

// TestNormalizeMandarinUntouched: a line without a rule comes back as
// the same string.
func TestNormalizeMandarinUntouched(t *testing.T) {
	for _, c := range mandarinCases {
		if c.cat != "unchanged" {
			continue
		}
		if got := normalizeMandarin(c.in); got != c.in {
			t.Errorf("%q came back as %q", c.in, got)
		}
	}
}

func TestAppendCardinal(t *testing.T) {
	for n, want := range map[int]string{
		0: "零", 2: "二", 10: "十", 15: "十五", 20: "二十", 105: "一百零五", 200: "两百", 1010: "一千零一十",
		2000: "两千", 10000: "一万", 10010: "一万零一十", 12000: "一万二千", 20000: "两万", 100001: "十万零一",
		110000: "十一万", 12345678: "一千二百三十四万五千六百七十八", 100000000: "一亿",
		100000001: "一亿零一", 100100000: "一亿零一十万", 200000000: "两亿", 1000000000000: "一万亿",
		maxHanCardinal: "九千九百九十九万九千九百九十九亿九千九百九十九万九千九百九十九",
	} {
		if got := string(appendCardinal(nil, n)); got != want {
			t.Errorf("appendCardinal(%d) = %q, want %q", n, got, want)
		}
	}
	if got := string(appendHanCardinal(nil, 200, false)); got != "二百" {
		t.Errorf("appendHanCardinal(200, no 两) = %q", got)
	}
}

// FuzzNormalizeMandarin holds the promises of the Mandarin rules on any
// line, by themselves and inside Normalize (checkNormalized).
func FuzzNormalizeMandarin(f *testing.F) {
	for _, c := range mandarinCases {
		f.Add(c.in)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if !utf8.ValidString(s) || strings.ContainsRune(s, '\n') || len(s) > 1024 {
			return
		}
		out := normalizeMandarin(s)
		if n, m := utf8.RuneCountInString(s), utf8.RuneCountInString(out); m > MaxExpansion*n {
			t.Fatalf("%q: %d runes became %d", s, n, m)
		}
		if i := strings.IndexFunc(out, func(r rune) bool { return unicode.IsDigit(r) || superscriptValue(r) >= 0 }); i >= 0 {
			t.Fatalf("%q: a digit left in %q", s, out)
		}
		if again := normalizeMandarin(out); again != out {
			t.Fatalf("%q: not a fixed point:\n once  %q\n twice %q", s, out, again)
		}
		if hasMandarinRule(s) && markupIsFixed(s) {
			checkNormalized(t, s, &NormalizeOptions{Language: "zh"})
		}
	})
}

// markupIsFixed reports whether Normalize without number rules (a
// language whose digits it leaves alone) is idempotent on s: where it is
// not, that is the Markdown and emoji rules' failure, FuzzNormalize's to
// find, not the Mandarin rules'.
func markupIsFixed(s string) bool {
	o := &NormalizeOptions{Language: "x-none", MaxChars: -1}
	once, err := Normalize(s, o)
	if err != nil {
		return true
	}
	twice, err := Normalize(once, o)
	return err == nil && twice == once
}

// BenchmarkNormalizeMandarin reads every row of the table once per
// iteration and reports the time per row.
func BenchmarkNormalizeMandarin(b *testing.B) {
	o := &NormalizeOptions{Language: "zh"}
	b.ReportAllocs()
	for b.Loop() {
		for _, c := range mandarinCases {
			if _, err := Normalize(c.in, o); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(mandarinCases)), "ns/row")
}
