package text

import (
	"errors"
	"strings"
	"testing"
)

func TestNewPhonemizerTypes(t *testing.T) {
	p, err := NewPhonemizer(PhonemeTypePinyin, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Pinyin); !ok {
		t.Errorf("pinyin gave %T", p)
	}
	p, err = NewPhonemizer(PhonemeTypeText, "ignored")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := p.(*Codepoints); !ok {
		t.Errorf("text gave %T", p)
	}
	_, err = NewPhonemizer("arpabet", "")
	if !errors.Is(err, ErrUnknownPhonemeType) || !strings.Contains(err.Error(), `"arpabet"`) {
		t.Errorf("unknown type error %v", err)
	}
}

func TestCodepoints(t *testing.T) {
	tests := []struct {
		in   string
		want []string
	}{
		// Case folded like piper-phonemize, then NFD: "ç" becomes c + U+0327.
		{"Ça va", []string{"c", "\u0327", "a", " ", "v", "a"}},
		{"  a\tb\nC ", []string{"a", " ", "b", " ", "c"}},
		{"Straße", []string{"s", "t", "r", "a", "s", "s", "e"}},
		{"你好", []string{"你", "好"}},
	}
	var c Codepoints
	for _, tt := range tests {
		got, err := c.Phonemize(tt.in)
		if err != nil {
			t.Fatalf("Phonemize(%q): %v", tt.in, err)
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("Phonemize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if _, err := (&Codepoints{MaxChars: 2}).Phonemize("abc"); !errors.Is(err, ErrTextTooLong) {
		t.Errorf("over limit: %v", err)
	}
	if _, err := c.Phonemize("\x00\x01"); !errors.Is(err, ErrEmptyText) {
		t.Errorf("controls only: %v", err)
	}
}
