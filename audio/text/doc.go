// Package text turns the text of a say command into what a voice model eats:
// sentences, then phonemes, then Piper phoneme ids.
//
// The stages are separate so that the daemon can look up the phrase cache by
// sentence before paying for phonemization:
//
//   - [Normalize] reads the text as a person would: Markdown removed, emoji
//     dropped or named, and (English, Mandarin) numbers, units, times, dates,
//     money and symbols written out in words.
//   - [Split] cuts a request into sentences (Latin and CJK punctuation,
//     abbreviations, numbers, URLs, newlines) and enforces the request and
//     sentence size limits.
//   - A [Phonemizer] turns one sentence into phoneme strings: [Espeak] (IPA
//     from libespeak-ng through cgo, the way Piper does it), [Pinyin] (Mandarin
//     initials, finals and tones without espeak) or [Codepoints] (the text's own
//     NFD codepoints). [NewPhonemizer] picks one from a Piper voice's
//     phoneme_type.
//   - [PhonemeIDMap.IDs] maps phonemes to the id sequence a Piper model takes.
//
// Everything here is safe for concurrent use; espeak-ng itself is process
// global and is serialized internally.
package text
