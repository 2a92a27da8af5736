package text

import (
	"slices"
	"strings"
	"testing"
)

func TestComplete(t *testing.T) {
	tests := []struct {
		in, done string
	}{
		{"", ""},
		{"The bed ", ""},
		{"The bed light is off.", ""}, // what follows may go on: "off.x"
		{"The bed light is off. The kit", "The bed light is off."},
		{"The bed light is off. ", "The bed light is off."},
		{"One. Two! Three? Fo", "One. Two! Three?"},
		{"He said \"stop.\" Then", "He said \"stop.\""},
		// Abbreviations wait for the next word, as Split's rules need it.
		{"I spoke to Mr. ", ""},
		{"I spoke to Mr. Jones today. I", "I spoke to Mr. Jones today."},
		{"Pick No. ", ""},
		{"Pick No. 5 now. And", "Pick No. 5 now."},
		{"at 5 p.m. ", ""},
		{"at 5 p.m. Then", "at 5 p.m."},
		{"made in the U.S. ", ""},
		{"J. R. R. Tolkien wrote. It", "J. R. R. Tolkien wrote."},
		// Numbers and addresses are never cut.
		{"Pi is 3.", ""},
		{"Pi is 3.14 today", ""},
		{"see example.com now", ""},
		// Line breaks end a sentence at once.
		{"- milk\n- eggs", "- milk"},
		{"- milk\r\n", "- milk"},
		{"a\n\nb\nc", "a\n\nb"},
		// CJK marks need no space, but a character after them.
		{"你好。", ""},
		{"你好。今天", "你好。"},
		{"他说：“你好。”", ""}, // a closing quote could still come
		{"他说：“你好。”然后", "他说：“你好。”"},
		// Markup and entities, cleaned by Split later, are cut around.
		{"Hi<break time='1s'/>. There. And", "Hi<break time='1s'/>. There."},
		{"Tom &amp; Jerry. Then", "Tom &amp; Jerry."},
		{"Hi. <break time='1.5s'! x", "Hi."}, // the tag may still close
		{"Hi. <b! x> Then. And", "Hi. <b! x> Then."},
		{"a < b. c", "a < b."},
		{"Hi. <", "Hi."},
		{"Bad \xff. Text. More", ""},
	}
	for _, tt := range tests {
		done, rest := Complete(tt.in, nil)
		if done != tt.done || done+rest != tt.in {
			t.Errorf("Complete(%q) = %q + %q, want %q first", tt.in, done, rest, tt.done)
		}
	}
}

// streamed feeds text to Complete in pieces of the given sizes, as a
// stream does, and returns the sentences Split makes of each part.
func streamed(t testing.TB, text string, sizes []int) []string {
	var out []string
	speak := func(s string) {
		if IsEmpty(s, nil) {
			return
		}
		got, err := Split(s, &SplitOptions{MaxChars: -1})
		if err != nil {
			t.Fatalf("Split(%q): %v", s, err)
		}
		out = append(out, got...)
	}
	pending := ""
	for i := 0; len(text) > 0; i++ {
		n := min(sizes[i%len(sizes)], len(text))
		pending += text[:n]
		text = text[n:]
		var done string
		done, pending = Complete(pending, nil)
		speak(done)
	}
	speak(pending)
	return out
}

// However the text is cut into chunks, the sentences spoken are those of
// the whole text.
func TestCompleteChunkedLikeWhole(t *testing.T) {
	texts := []string{
		"The bed light is off. The kitchen lights are on. Anything else?",
		"I spoke to Mr. Jones today. He says No. 5 is at 5 p.m. on Sunday. Fine!",
		"It is 21.5 °C outside.\nThe door is open.\n\nBattery at 15 %.",
		"今天天气很好。温度是二十一度！你要出门吗？好的。",
		"He said \"stop.\" Then he left... Really? Yes.",
		"**Living room**: 21 °C\n- Kitchen: 20 °C\n- Hall: 19 °C",
	}
	for _, text := range texts {
		whole, err := Split(text, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, sizes := range [][]int{{1}, {2}, {3}, {5, 1}, {7}, {13, 2}, {len(text)}} {
			if got := streamed(t, text, sizes); !slices.Equal(got, whole) {
				t.Errorf("%q in chunks of %v:\n got %q\nwant %q", text, sizes, got, whole)
			}
		}
	}
}

func FuzzComplete(f *testing.F) {
	for _, s := range []string{
		"The bed light is off. The kit", "Mr. Jones. No. 5. 3.14. p.m. Then",
		"你好。今天", "a\r\nb\nc", "<b>Hi.</b> There", "&amp;. &#39;. x", "\xff. a. b",
	} {
		f.Add(s, uint8(3))
	}
	f.Fuzz(func(t *testing.T, text string, size uint8) {
		if len(text) > 1024 {
			// A stream is bounded (wyoming's MaxTextRunes); chunked one
			// byte at a time, Complete rescans what is pending each time.
			return
		}
		done, rest := Complete(text, nil)
		if done+rest != text {
			t.Fatalf("Complete(%q) = %q + %q: not the text", text, done, rest)
		}
		// What is done stays done when more text comes.
		if again, _ := Complete(text+" and more.", nil); !strings.HasPrefix(again, done) {
			t.Fatalf("Complete(%q) took %q, with more text %q", text, done, again)
		}
		// Chunked, nothing is lost or reordered, apart from white space.
		if _, err := Split(text, &SplitOptions{MaxChars: -1}); err != nil {
			return
		}
		whole, _ := Split(text, &SplitOptions{MaxChars: -1})
		got := streamed(t, text, []int{int(size%16) + 1})
		if a, b := strings.Join(strings.Fields(strings.Join(got, "")), ""), strings.Join(strings.Fields(strings.Join(whole, "")), ""); a != b {
			t.Fatalf("%q chunked by %d: %q, whole %q", text, size%16+1, got, whole)
		}
	})
}
