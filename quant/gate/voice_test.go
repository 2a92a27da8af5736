package gate

import (
	"errors"
	"slices"
	"testing"
)

var testIDMap = map[string][]int64{"_": {0}, "^": {1}, "$": {2}, "a": {5}, "b": {6, 7}, "e": {8}, "\u0301": {9}}

func TestPiperIDs(t *testing.T) {
	tests := []struct {
		phonemes string
		want     []int64
	}{
		{"", []int64{1, 0, 2}},
		{"a", []int64{1, 0, 5, 0, 2}},
		{"ab", []int64{1, 0, 5, 0, 6, 7, 0, 2}},
		{"axa", []int64{1, 0, 5, 0, 5, 0, 2}}, // unknown x skipped
		{"é", []int64{1, 0, 8, 0, 9, 0, 2}},   // NFD: e + combining acute
	}
	for _, tt := range tests {
		if got := PiperIDs(testIDMap, tt.phonemes); !slices.Equal(got, tt.want) {
			t.Errorf("PiperIDs(%q) = %v, want %v", tt.phonemes, got, tt.want)
		}
	}
	if got := PiperIDs(map[string][]int64{"a": {1}}, "a"); got != nil {
		t.Errorf("a map without ^ _ $ gave %v, want nil", got)
	}
}

func TestDefaultSentencesRefusesForeignMap(t *testing.T) {
	if _, err := DefaultSentences(testIDMap); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("a map knowing almost no phoneme: %v, want ErrInvalidOptions", err)
	}
	if _, err := DefaultSentences(nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("nil map: %v, want ErrInvalidOptions", err)
	}
}

func FuzzPiperIDs(f *testing.F) {
	f.Add("həlˈoʊ wˈɜːld")
	f.Add("é\x00\xff")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		ids := PiperIDs(testIDMap, s)
		if len(ids) < 3 || ids[0] != 1 || ids[1] != 0 || ids[len(ids)-1] != 2 {
			t.Fatalf("PiperIDs(%q) = %v: not ^ _ … $", s, ids)
		}
		for _, id := range ids {
			if id < 0 || id > 9 {
				t.Fatalf("id %d not in the map", id)
			}
		}
	})
}
