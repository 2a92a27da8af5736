package text

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// piperMap is the start of the standard Piper espeak phoneme_id_map.
func piperMap(t testing.TB) PhonemeIDMap {
	t.Helper()
	m, err := NewPhonemeIDMap(map[string][]int64{
		"_": {0}, "^": {1}, "$": {2}, " ": {3}, "!": {4}, ",": {8}, ".": {10},
		"?": {13}, "a": {14}, "h": {20}, "l": {24}, "o": {27}, "ə": {59},
		"ʊ": {100}, "ˈ": {120},
	}, 256)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestPhonemeIDs(t *testing.T) {
	m := piperMap(t)
	tests := []struct {
		name        string
		phonemes    []string
		want        []int64
		wantUnknown map[string]int
	}{
		{"empty sentence", nil, []int64{1, 0, 2}, nil},
		{"one phoneme", []string{"a"}, []int64{1, 0, 14, 0, 2}, nil},
		{"hello", strings.Split("həlˈoʊ.", ""), []int64{1, 0, 20, 0, 59, 0, 24, 0, 120, 0, 27, 0, 100, 0, 10, 0, 2}, nil},
		{"space and punctuation", []string{"a", ",", " ", "a", "?"}, []int64{1, 0, 14, 0, 8, 0, 3, 0, 14, 0, 13, 0, 2}, nil},
		{"unknown skipped and counted", []string{"a", "ʒ", "a", "ʒ", "ç"}, []int64{1, 0, 14, 0, 14, 0, 2}, map[string]int{"ʒ": 2, "ç": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, unknown := m.IDs(tt.phonemes)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ids %v, want %v", got, tt.want)
			}
			if !reflect.DeepEqual(unknown, tt.wantUnknown) {
				t.Errorf("unknown %v, want %v", unknown, tt.wantUnknown)
			}
		})
	}
}

func TestPhonemeIDsMultipleIDs(t *testing.T) {
	// Some maps give a phoneme (or the pad) more than one id; all are used.
	m, err := NewPhonemeIDMap(map[string][]int64{"_": {0, 5}, "^": {1}, "$": {2}, "a": {7, 8}}, 0)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := m.IDs([]string{"a"})
	if want := []int64{1, 0, 5, 7, 8, 0, 5, 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("ids %v, want %v", got, want)
	}
}

func TestNewPhonemeIDMapErrors(t *testing.T) {
	base := func() map[string][]int64 {
		return map[string][]int64{"_": {0}, "^": {1}, "$": {2}, "a": {3}}
	}
	tests := []struct {
		name    string
		edit    func(map[string][]int64)
		symbols int
		mention string
	}{
		{"no pad", func(m map[string][]int64) { delete(m, "_") }, 0, `"_"`},
		{"no bos", func(m map[string][]int64) { delete(m, "^") }, 0, `"^"`},
		{"empty eos", func(m map[string][]int64) { m["$"] = nil }, 0, `"$"`},
		{"negative id", func(m map[string][]int64) { m["a"] = []int64{-1} }, 0, "-1"},
		{"id past num_symbols", func(m map[string][]int64) { m["a"] = []int64{10} }, 10, "[0, 10)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base()
			tt.edit(m)
			_, err := NewPhonemeIDMap(m, tt.symbols)
			if !errors.Is(err, ErrInvalidPhonemeIDMap) {
				t.Fatalf("error %v, want ErrInvalidPhonemeIDMap", err)
			}
			if !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("error %q does not mention %s", err, tt.mention)
			}
		})
	}
	// The map is copied: later edits to the source do not leak in.
	src := base()
	m, err := NewPhonemeIDMap(src, 4)
	if err != nil {
		t.Fatal(err)
	}
	src["a"][0] = 99
	if m["a"][0] != 3 {
		t.Error("NewPhonemeIDMap kept a reference to the caller's slice")
	}
}

func TestPinyinThroughIDMap(t *testing.T) {
	// A map built from PinyinTokens covers every token Pinyin emits.
	raw := map[string][]int64{"_": {0}, "^": {1}, "$": {2}}
	for i, tok := range PinyinTokens() {
		raw[tok] = []int64{int64(3 + i)}
	}
	m, err := NewPhonemeIDMap(raw, 3+len(PinyinTokens()))
	if err != nil {
		t.Fatal(err)
	}
	toks, err := NewPinyin(nil).Phonemize("你好，世界！")
	if err != nil {
		t.Fatal(err)
	}
	ids, unknown := m.IDs(toks)
	if unknown != nil {
		t.Errorf("unknown tokens %v", unknown)
	}
	if want := 2 + 2*len(toks) + 1; len(ids) != want {
		t.Errorf("%d ids for %d tokens, want %d", len(ids), len(toks), want)
	}
}
