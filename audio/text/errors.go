package text

import "errors"

// Errors returned by this package. Callers test for them with errors.Is; the
// returned errors wrap them with the numbers involved.
var (
	// ErrEmptyText means the text had nothing left to say once whitespace,
	// control characters and markup were removed.
	ErrEmptyText = errors.New("text is empty")

	// ErrTextTooLong means a request exceeded a character limit (see
	// SplitOptions.MaxChars, EspeakOptions.MaxChars, PinyinOptions.MaxChars).
	// The wrapping error names the limit and the actual length; send shorter
	// text or raise the limit.
	ErrTextTooLong = errors.New("text too long")

	// ErrInvalidText means the text is not valid UTF-8. It is rejected rather
	// than repaired so that a broken publisher is noticed instead of speaking
	// replacement characters.
	ErrInvalidText = errors.New("text is not valid UTF-8")

	// ErrUnsupported means the binary was built without cgo, so libespeak-ng
	// is not available. Rebuild with CGO_ENABLED=1 and libespeak-ng-dev
	// installed, or use a voice whose phoneme_type is "pinyin" or "text".
	ErrUnsupported = errors.New("espeak-ng phonemizer needs a cgo build")

	// ErrEspeak means libespeak-ng failed to start or rejected a voice.
	ErrEspeak = errors.New("espeak-ng")

	// ErrUnknownPhonemeType means a voice asked for a phoneme_type this
	// package does not implement (known: "espeak", "pinyin", "text").
	ErrUnknownPhonemeType = errors.New("unknown phoneme type")

	// ErrInvalidPhonemeIDMap means a phoneme_id_map lacks a required symbol
	// or holds ids the model cannot accept.
	ErrInvalidPhonemeIDMap = errors.New("invalid phoneme id map")
)
