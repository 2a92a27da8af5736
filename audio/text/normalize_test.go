package text

import (
	"errors"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

// markdownCases are what LLM conversation agents send over Wyoming and
// Assist; digits are left out so the language rules play no part.
var markdownCases = []normCase{
	{"emphasis", "**Living room** is warm", "Living room is warm"},
	{"emphasis", "The *kitchen* light is on", "The kitchen light is on"},
	{"emphasis", "It is __very__ cold and _windy_", "It is very cold and windy"},
	{"emphasis", "~~Rain~~ Snow is expected", "Rain Snow is expected"},
	{"emphasis", "***Important:*** the door is open", "Important: the door is open"},
	{"emphasis", "**Living room", "Living room"}, // a fragment of a stream
	{"emphasis", "warm today**.", "warm today."},
	{"emphasis", "sensor.living_room_temperature", "sensor.living_room_temperature"},
	{"emphasis", "snake_case_name stays", "snake_case_name stays"},
	{"emphasis", "five * three", "five * three"},
	{"emphasis", "a * b * c", "a * b * c"},
	{"code", "Run `ha core restart` now", "Run ha core restart now"},
	{"code", "```yaml\nalias: Morning\n```", "alias: Morning"},
	{"heading", "## Weather today", "Weather today"},
	{"heading", "# Summary #", "Summary"},
	{"heading", "#hashtag stays", "#hashtag stays"},
	{"list", "- Kitchen: on\n- Hall: off", "Kitchen: on\nHall: off"},
	{"list", "* Milk\n* Eggs\n+ Bread", "Milk\nEggs\nBread"},
	{"list", "1. Close the windows\n2) Lock the door", "Close the windows\nLock the door"},
	{"list", "  - nested item", "nested item"},
	{"list", "• Bullet from a phone", "Bullet from a phone"},
	{"list", "- [ ] Take out the bins\n- [x] Feed the cat", "Take out the bins\nFeed the cat"},
	{"list", "-five is not a bullet", "-five is not a bullet"},
	{"quote", "> Quoted advice", "Quoted advice"},
	{"link", "See [the docs](https://www.home-assistant.io/docs) for more", "See the docs for more"},
	{"link", "![A cat](cat.png) sleeps", "A cat sleeps"},
	{"link", "Read [this][ref] later", "Read this later"},
	{"link", "[not a link] stays", "[not a link] stays"},
	{"rule", "Above\n---\nBelow", "Above\nBelow"},
	{"rule", "***", ""},
	{"table", "| Room | State |\n|---|:---:|\n| Kitchen | on |", "Room, State\nKitchen, on"},
	{"mixed", "**Lights on:**\n- Kitchen\n- *Hall*\n\nAnything else?", "Lights on:\nKitchen\nHall\nAnything else?"},
}

// emojiCases run with EmojiDrop unless the category says name.
var emojiCases = []normCase{
	{"drop", "Done! 🎉", "Done!"},
	{"drop", "Great 👍🏽 thanks", "Great thanks"},
	{"drop", "Weather: ☀️ sunny", "Weather: sunny"},
	{"drop", "👨‍👩‍👧 family", "family"},
	{"drop", "🇩🇪 flag", "flag"},
	{"drop", "→ arrows stay", "→ arrows stay"},
	{"name", "Done 🎉", "Done party popper"},
	{"name", "Great 👍🏽 thanks", "Great thumbs up sign thanks"},
	{"name", "🇩🇪 flag", "flag"},
}

func TestNormalizeMarkdown(t *testing.T) {
	for _, c := range markdownCases {
		got, err := Normalize(c.in, &NormalizeOptions{Language: "de"}) // no English number rules
		if err != nil {
			t.Errorf("%s: %q: %v", c.cat, c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("%s: %q\n got %q\nwant %q", c.cat, c.in, got, c.want)
		}
	}
}

func TestNormalizeEmoji(t *testing.T) {
	for _, c := range emojiCases {
		mode := EmojiDrop
		if c.cat == "name" {
			mode = EmojiName
		}
		got, err := Normalize(c.in, &NormalizeOptions{Emoji: mode})
		if err != nil || got != c.want {
			t.Errorf("%s: %q: got %q, %v; want %q", c.cat, c.in, got, err, c.want)
		}
	}
	// Names are read for English only.
	if got, _ := Normalize("好 🎉", &NormalizeOptions{Language: "zh", Emoji: EmojiName}); got != "好" {
		t.Errorf("Mandarin with a named emoji: %q", got)
	}
}

func TestUngroupDigits(t *testing.T) {
	for _, c := range []struct {
		lang    string
		in, out string
	}{
		{"de", "Es sind 3.400 Watt", "Es sind 3400 Watt"},
		{"de", "12.345.678 Euro", "12345678 Euro"},
		{"de", "Version 1.2.3 und 1,5", "Version 1.2.3 und 1,5"},
		{"de", "am 1.12.2026", "am 1.12.2026"},
		{"de", "3.400,50 €", "3400,50 €"},
		{"de", "1.5.300", "1.5.300"},
		{"fr", "Il fait 3 400 watts", "Il fait 3400 watts"},
		{"fr", "3\u202f400 watts", "3400 watts"},
		{"fr", "de 2 à 3 heures", "de 2 à 3 heures"},
		{"ja", "3.400", "3.400"},
	} {
		got, err := Normalize(c.in, &NormalizeOptions{Language: c.lang})
		if err != nil || got != c.out {
			t.Errorf("%s %q: got %q, %v; want %q", c.lang, c.in, got, err, c.out)
		}
	}
}

func TestLanguageOf(t *testing.T) {
	for tag, want := range map[string]language{
		"": langEnglish, "en-us": langEnglish, "en_GB": langEnglish, "EN": langEnglish,
		"cmn": langMandarin, "zh-CN": langMandarin, "zh_Hans": langMandarin, "cmn-latn-pinyin": langMandarin,
		"de": langDotGroup, "pt-br": langDotGroup, "fr-fr": langSpaceGroup, "ru": langSpaceGroup, "ja": langOther,
	} {
		if got := languageOf(tag); got != want {
			t.Errorf("languageOf(%q) = %d, want %d", tag, got, want)
		}
	}
}

func TestNormalizeErrors(t *testing.T) {
	if _, err := Normalize("bad \xff byte", nil); !errors.Is(err, ErrInvalidText) {
		t.Errorf("invalid UTF-8: %v", err)
	}
	long := strings.Repeat("a", DefaultMaxChars+1)
	if _, err := Normalize(long, nil); !errors.Is(err, ErrTextTooLong) {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := Normalize(long, &NormalizeOptions{MaxChars: -1}); err != nil {
		t.Errorf("limit off: %v", err)
	}
	if _, err := Normalize("abc", &NormalizeOptions{MaxChars: 2}); !errors.Is(err, ErrTextTooLong) {
		t.Errorf("MaxChars 2: %v", err)
	}
}

func TestNormalizeCleansAsSplit(t *testing.T) {
	got, err := Normalize("  Hello\r\n\r\n <break time='1s'/> there &amp; \x00 back  ", &NormalizeOptions{Language: "de"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "Hello\nthere & back"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	kept, _ := Normalize("<b>bold</b>", &NormalizeOptions{Language: "de", KeepMarkup: true})
	if kept != "<b>bold</b>" {
		t.Errorf("KeepMarkup: %q", kept)
	}
}

// TestMixedVoiceReadsHanLinesAsMandarin: a voice that covers pinyin reads
// a Chinese line with the Mandarin rules and an English one with the
// English rules.
func TestMixedVoiceReadsHanLinesAsMandarin(t *testing.T) {
	o := &NormalizeOptions{Language: "en-us", Mandarin: true}
	zh, _ := Normalize("电量15 %", &NormalizeOptions{Language: "zh"})
	en, _ := Normalize("Battery at 15 %", nil)
	got, err := Normalize("电量15 %\nBattery at 15 %", o)
	if err != nil {
		t.Fatal(err)
	}
	if want := zh + "\n" + en; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestMostlyHan(t *testing.T) {
	for s, want := range map[string]bool{
		"今天天气怎么样？": true, "我用 iPhone": true, "Hello 你": false, "Hello": false, "123": false,
	} {
		if MostlyHan(s) != want {
			t.Errorf("MostlyHan(%q) != %v", s, want)
		}
	}
}

// checkNormalized holds Normalize's promises for one input: no panic,
// output within MaxExpansion, idempotent, and no digit for the languages
// it reads in full.
func checkNormalized(t *testing.T, in string, o *NormalizeOptions) {
	t.Helper()
	out, err := Normalize(in, o)
	if err != nil {
		if !errors.Is(err, ErrInvalidText) && !errors.Is(err, ErrTextTooLong) {
			t.Fatalf("%q: unexpected error %v", in, err)
		}
		return
	}
	if n, m := utf8.RuneCountInString(in), utf8.RuneCountInString(out); m > MaxExpansion*n {
		t.Fatalf("%q (%d runes) became %d runes, over MaxExpansion", in, n, m)
	}
	again, err := Normalize(out, &NormalizeOptions{Language: o.Language, Mandarin: o.Mandarin, Emoji: o.Emoji, MaxChars: -1})
	if err != nil || again != out {
		t.Fatalf("%q: not idempotent:\n once  %q\n twice %q (%v)", in, out, again, err)
	}
	if l := languageOf(o.Language); l == langEnglish || l == langMandarin {
		if i := strings.IndexFunc(out, unicode.IsDigit); i >= 0 {
			t.Fatalf("%q (%s): a digit left in %q", in, o.Language, out)
		}
	}
}

// FuzzNormalize holds the promises of checkNormalized for English and
// Mandarin (and a mixed voice) on any text. The corpus seeds are the
// table rows, in testdata/fuzz/FuzzNormalize and added here.
func FuzzNormalize(f *testing.F) {
	for _, rows := range [][]normCase{markdownCases, emojiCases, englishCasesForFuzz(), mandarinCasesForFuzz()} {
		for _, c := range rows {
			f.Add(c.in, uint8(0))
		}
	}
	f.Fuzz(func(t *testing.T, s string, which uint8) {
		if len(s) > 1024 {
			return // the rules are per line and local; long inputs only slow the fuzzer
		}
		opts := []NormalizeOptions{
			{Language: "en-us"},
			{Language: "zh"},
			{Language: "en-us", Mandarin: true, Emoji: EmojiName},
		}
		checkNormalized(t, s, &opts[int(which)%len(opts)])
	})
}
