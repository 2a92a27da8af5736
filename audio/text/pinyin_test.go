package text

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	pinyin "github.com/mozillazg/go-pinyin"
)

func TestPinyinPhonemize(t *testing.T) {
	tests := []struct {
		in   string
		want string // tokens joined by "|"
	}{
		{"你好", "n|i|3| |h|ao|3"},
		{"绿", "l|v|4"},
		{"女", "n|v|3"},
		{"一", "y|i|1"},
		{"的", "d|e|5"},
		{"去", "q|v|4"},
		{"学", "x|ve|2"},
		{"远", "y|van|3"},
		{"云", "y|vn|2"},
		{"我", "w|o|3"},
		{"爱", "ai|4"},
		{"儿", "er|2"},
		{"中国", "zh|ong|1| |g|uo|2"},
		{"嗯", "n|2"},
		{"你好，世界。", "n|i|3| |h|ao|3|,| |sh|i|4| |j|ie|4|."},
		{"今天天气怎么样？", "j|in|1| |t|ian|1| |t|ian|1| |q|i|4| |z|en|3| |m|e|5| |y|ang|4|?"},
		{"好！！", "h|ao|3|!"},
		{"，好", "h|ao|3"},
		{"我有3个", "w|o|3| |y|ou|3| |s|an|1| |g|e|4"},
		{"15", "sh|i|2| |w|u|3"},
		{"2024年", "l|iang|3| |q|ian|1| |l|ing|2| |er|4| |sh|i|2| |s|i|4| |n|ian|2"},
		{"3.5", "s|an|1| |d|ian|3| |w|u|3"},
		{"50%", "b|ai|3| |f|en|1| |zh|i|1| |w|u|3| |sh|i|2"},
		{"007", "l|ing|2| |l|ing|2| |q|i|1"},
		{"ＯＫ１２", "sh|i|2| |er|4"},
		{"Go语言", "y|v|3| |y|an|2"},
		{"hello", ""},
	}
	p := NewPinyin(nil)
	for _, tt := range tests {
		got, err := p.Phonemize(tt.in)
		if err != nil {
			t.Errorf("Phonemize(%q): %v", tt.in, err)
			continue
		}
		if g := strings.Join(got, "|"); g != tt.want {
			t.Errorf("Phonemize(%q)\n got %s\nwant %s", tt.in, g, tt.want)
		}
	}
}

func TestParseSyllable(t *testing.T) {
	tests := map[string][]string{
		"èr":    {"er", "4"},
		"zhōng": {"zh", "ong", "1"},
		"lǖ":    {"l", "v", "1"}, // go-pinyin's Tone3 style loses this tone
		"nüè":   {"n", "ve", "4"},
		"jū":    {"j", "v", "1"},
		"yuè":   {"y", "ve", "4"},
		"wǔ":    {"w", "u", "3"},
		"ma":    {"m", "a", "5"},
		"ḿ":     {"m", "2"},
		"hm":    {"h", "m", "5"},
		"hng":   {"h", "ng", "5"},
		"ê̄":    {"e", "1"},
	}
	for in, want := range tests {
		got, err := parseSyllable(in)
		if err != nil {
			t.Errorf("parseSyllable(%q): %v", in, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("parseSyllable(%q) = %q, want %q", in, got, want)
		}
	}
	for _, bad := range []string{"xyz", "a1", "bü̃"} {
		if got, err := parseSyllable(bad); err == nil {
			t.Errorf("parseSyllable(%q) = %q, want error", bad, got)
		}
	}
}

func TestPinyinSkipped(t *testing.T) {
	p := NewPinyin(nil)
	if _, err := p.Phonemize("我用Go和カナ写。"); err != nil {
		t.Fatal(err)
	}
	if got := p.Skipped(); got != 4 { // G, o, カ, ナ
		t.Errorf("Skipped = %d, want 4", got)
	}
}

func TestPinyinErrors(t *testing.T) {
	p := NewPinyin(&PinyinOptions{MaxChars: 3})
	for _, tt := range []struct {
		in   string
		want error
	}{
		{"", ErrEmptyText},
		{" \x00 ", ErrEmptyText},
		{"你\xff", ErrInvalidText},
		{"你好你好", ErrTextTooLong},
	} {
		if _, err := p.Phonemize(tt.in); !errors.Is(err, tt.want) {
			t.Errorf("Phonemize(%q) error %v, want %v", tt.in, err, tt.want)
		}
	}
}

func TestSpellNumbers(t *testing.T) {
	tests := map[string]string{
		"0":     "零",
		"7":     "七",
		"10":    "十",
		"12":    "十二",
		"20":    "二十",
		"110":   "一百一十",
		"105":   "一百零五",
		"200":   "两百",
		"1001":  "一千零一",
		"1010":  "一千零一十",
		"2000":  "两千",
		"9999":  "九千九百九十九",
		"12345": "一二三四五",
		"0110":  "零一一零",
		"3.14":  "三点一四",
		"0.5":   "零点五",
		"v2.0":  "v二点零",
		"5.":    "五.",
		"1%":    "百分之一",
		"2.5%":  "百分之二点五",
		"３．５":   "三点五",
		"a1b":   "a一b",
	}
	for in, want := range tests {
		if got := string(spellNumbers([]rune(in))); got != want {
			t.Errorf("spellNumbers(%q) = %q, want %q", in, got, want)
		}
	}
}

// Every character in go-pinyin's dictionary must produce tokens from the
// published inventory, so a voice whose map covers PinyinTokens never meets
// an unknown token.
func TestPinyinDictionaryCoveredByInventory(t *testing.T) {
	inventory := setOf(PinyinTokens())
	n := 0
	for r := range pinyin.PinyinDict {
		toks, ok := hanSyllable(rune(r))
		if !ok {
			t.Errorf("U+%04X %q: reading %q does not parse", r, rune(r), pinyin.PinyinDict[r])
			continue
		}
		for _, tok := range toks {
			if !inventory[tok] {
				t.Errorf("U+%04X %q: token %q not in PinyinTokens", r, rune(r), tok)
			}
		}
		n++
	}
	if n < 20000 {
		t.Errorf("only %d dictionary characters checked", n)
	}
}

func TestPinyinTokens(t *testing.T) {
	toks := PinyinTokens()
	seen := map[string]bool{}
	for _, tok := range toks {
		if seen[tok] {
			t.Errorf("duplicate token %q", tok)
		}
		seen[tok] = true
	}
	for _, must := range []string{PinyinSeparator, ",", ".", "?", "1", "5", "zh", "y", "w", "v", "ve", "van", "vn", "er"} {
		if !seen[must] {
			t.Errorf("inventory lacks %q", must)
		}
	}
	toks[0] = "changed"
	if PinyinTokens()[0] == "changed" {
		t.Error("PinyinTokens returns shared storage")
	}
}

func FuzzPinyin(f *testing.F) {
	for _, s := range []string{"你好，世界。", "今天天气怎么样？明天呢？", "绿女一", "2024年3.5%", "Go语言 ok", "０１２３４５６７８９", "\x00", "\xff", "嗯呣哼欸"} {
		f.Add(s)
	}
	inventory := setOf(PinyinTokens())
	p := NewPinyin(nil)
	f.Fuzz(func(t *testing.T, in string) {
		got, err := p.Phonemize(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidText) && !errors.Is(err, ErrEmptyText) && !errors.Is(err, ErrTextTooLong) {
				t.Fatalf("unexpected error: %v", err)
			}
			if errors.Is(err, ErrInvalidText) == utf8.ValidString(in) {
				t.Fatalf("ErrInvalidText mismatch for %q: %v", in, err)
			}
			return
		}
		for i, tok := range got {
			if !inventory[tok] {
				t.Fatalf("token %d %q not in inventory", i, tok)
			}
			if tok == PinyinSeparator && (i == 0 || i == len(got)-1 || got[i-1] == PinyinSeparator) {
				t.Fatalf("separator misplaced at %d in %q", i, got)
			}
		}
		if len(got) > 0 && isPinyinMark(got[0]) {
			t.Fatalf("starts with punctuation: %q", got)
		}
	})
}

func BenchmarkPinyinPhonemize(b *testing.B) {
	p := NewPinyin(nil)
	sentence := "今天天气怎么样？我们下午3点去公园散步，好吗？"
	b.ReportAllocs()
	var n int
	for b.Loop() {
		got, err := p.Phonemize(sentence)
		if err != nil {
			b.Fatal(err)
		}
		n = len(got)
	}
	b.ReportMetric(float64(n), "tokens/op")
}
