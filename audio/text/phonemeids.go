package text

import (
	"fmt"
	"sort"
)

// Piper's special phonemes: every id sequence starts with PhonemeBOS, ends
// with PhonemeEOS, and has PhonemePad after the start and after each phoneme.
const (
	PhonemePad = "_"
	PhonemeBOS = "^"
	PhonemeEOS = "$"
)

// PhonemeIDMap is a Piper voice's phoneme_id_map: phoneme → model input ids.
type PhonemeIDMap map[string][]int64

// NewPhonemeIDMap validates and copies a phoneme_id_map. It must map "^",
// "_" and "$" to at least one id each, and no id may be negative. When
// numSymbols > 0 (a Piper config's num_symbols, the size of the model's
// embedding table) every id must also be below it: a larger id makes ONNX
// Runtime's Gather read out of bounds. Errors wrap ErrInvalidPhonemeIDMap.
func NewPhonemeIDMap(m map[string][]int64, numSymbols int) (PhonemeIDMap, error) {
	for _, sym := range []string{PhonemeBOS, PhonemePad, PhonemeEOS} {
		if len(m[sym]) == 0 {
			return nil, fmt.Errorf("phoneme id map: %w: no ids for required symbol %q", ErrInvalidPhonemeIDMap, sym)
		}
	}
	// Sorted so that the error names the same phoneme every time.
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make(PhonemeIDMap, len(m))
	for _, k := range keys {
		for _, id := range m[k] {
			if id < 0 || (numSymbols > 0 && id >= int64(numSymbols)) {
				return nil, fmt.Errorf("phoneme id map: %w: phoneme %q has id %d, outside [0, %d)", ErrInvalidPhonemeIDMap, k, id, numSymbols)
			}
		}
		out[k] = append([]int64(nil), m[k]...)
	}
	return out, nil
}

// IDs returns the id sequence Piper feeds its model for one sentence:
// ids("^"), ids("_"), then for each phoneme its ids followed by ids("_"),
// then ids("$"). Phonemes missing from the map are skipped, as Piper does,
// and counted in unknown (nil when every phoneme was known) so that the
// caller can log them once per sentence instead of once per occurrence.
func (m PhonemeIDMap) IDs(phonemes []string) (ids []int64, unknown map[string]int) {
	bos, pad, eos := m[PhonemeBOS], m[PhonemePad], m[PhonemeEOS]
	ids = make([]int64, 0, len(bos)+len(eos)+(len(phonemes)+1)*(1+len(pad)))
	ids = append(ids, bos...)
	ids = append(ids, pad...)
	for _, p := range phonemes {
		v, ok := m[p]
		if !ok {
			if unknown == nil {
				unknown = make(map[string]int)
			}
			unknown[p]++
			continue
		}
		ids = append(ids, v...)
		ids = append(ids, pad...)
	}
	ids = append(ids, eos...)
	return ids, unknown
}
