package render

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Topics. Requests go to RequestTopic; render nodes subscribe ServeFilter,
// a shared subscription, so the broker hands each request to one of them
// in turn. Answers go to the requester's reply topic, ReplyPrefix plus
// one level (its node name).
const (
	RequestTopic = "mynah/render/req"
	ShareGroup   = "mynah-render"
	ServeFilter  = "$share/" + ShareGroup + "/" + RequestTopic
	ReplyPrefix  = "mynah/render/reply/"
)

// Limits of the protocol. Every decoder checks them before it allocates.
const (
	// MaxRequestBytes is the largest request payload.
	MaxRequestBytes = 16 << 10
	// MaxNameBytes bounds an id, voice or speaker name.
	MaxNameBytes = 64
	// MaxLevelBytes bounds the reply topic's last level (a node name).
	MaxLevelBytes = 64
	// MaxTextRunes bounds a request's text: one sentence.
	MaxTextRunes = 5000
	// MinRate and MaxRate bound a request's speaking rate.
	MinRate = 0.25
	MaxRate = 4.0
	// KeyHexLen is the length of a phrase key in hex (SHA-256).
	KeyHexLen = 64
)

// Request asks a render node for one sentence's phrase record. It is the
// JSON payload published on RequestTopic.
type Request struct {
	// ID correlates the answer: 1..MaxNameBytes bytes of letters, digits,
	// space, _ . - (a daemon name). Fetch makes one up when it is empty.
	ID string `json:"id"`
	// Reply is the topic the answer goes to: ReplyPrefix and one level
	// without wildcards. Fetch sets it to the Client's.
	Reply string `json:"reply"`
	// Voice and Speaker (optional) say who speaks.
	Voice   string `json:"voice"`
	Speaker string `json:"speaker,omitempty"`
	// Rate is the speaking rate, MinRate..MaxRate (Fetch takes 0 as 1).
	Rate float64 `json:"rate"`
	// Text is the sentence, 1..MaxTextRunes runes of UTF-8 without NUL.
	Text string `json:"text"`
	// Normalize asks for the text front end's normalization.
	Normalize bool `json:"normalize"`
	// Key, optional, is the phrase key the requester computed (lower-case
	// hex, KeyHexLen digits). A node whose voice gives another key answers
	// key_mismatch, and the Client refuses a record under another key.
	Key string `json:"key,omitempty"`
}

// Validate checks every field against the protocol. Errors wrap
// ErrInvalidRequest and name the field.
func (r *Request) Validate() error {
	if err := validateName(r.ID); err != nil {
		return fmt.Errorf("%w: id: %w", ErrInvalidRequest, err)
	}
	if err := ValidateReply(r.Reply); err != nil {
		return fmt.Errorf("%w: reply: %w", ErrInvalidRequest, err)
	}
	if err := validateName(r.Voice); err != nil {
		return fmt.Errorf("%w: voice: %w", ErrInvalidRequest, err)
	}
	if r.Speaker != "" {
		if err := validateName(r.Speaker); err != nil {
			return fmt.Errorf("%w: speaker: %w", ErrInvalidRequest, err)
		}
	}
	if math.IsNaN(r.Rate) || r.Rate < MinRate || r.Rate > MaxRate {
		return fmt.Errorf("%w: rate %v is outside %v..%v", ErrInvalidRequest, r.Rate, MinRate, MaxRate)
	}
	switch {
	case r.Text == "":
		return fmt.Errorf("%w: text is empty", ErrInvalidRequest)
	case !utf8.ValidString(r.Text):
		return fmt.Errorf("%w: text is not valid UTF-8", ErrInvalidRequest)
	case strings.IndexByte(r.Text, 0) >= 0:
		return fmt.Errorf("%w: text contains NUL", ErrInvalidRequest)
	case len(r.Text) > MaxTextRunes && utf8.RuneCountInString(r.Text) > MaxTextRunes:
		return fmt.Errorf("%w: %w: text of %d runes is over MaxTextRunes (%d)", ErrInvalidRequest, ErrTooLarge, utf8.RuneCountInString(r.Text), MaxTextRunes)
	}
	if r.Key != "" {
		if err := validateKey(r.Key); err != nil {
			return fmt.Errorf("%w: key: %w", ErrInvalidRequest, err)
		}
	}
	return nil
}

// EncodeRequest validates r and returns its payload.
func EncodeRequest(r Request) ([]byte, error) {
	if err := r.Validate(); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // '<' as \u003c would only waste the budget
	if err := enc.Encode(r); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	out := bytes.TrimSuffix(b.Bytes(), []byte{'\n'})
	if len(out) > MaxRequestBytes {
		return nil, fmt.Errorf("%w: %w: %d bytes encoded is over MaxRequestBytes (%d); split the text", ErrInvalidRequest, ErrTooLarge, len(out), MaxRequestBytes)
	}
	return out, nil
}

// DecodeRequest decodes and validates a request payload: one JSON object
// of at most MaxRequestBytes (unknown fields are ignored, so a later
// version may add some). Errors wrap ErrInvalidRequest. On a field error
// the returned Request holds what was decoded, so that a server can still
// answer on a valid Reply with a valid ID (ReplyTo).
func DecodeRequest(payload []byte) (Request, error) {
	if len(payload) > MaxRequestBytes {
		return Request{}, fmt.Errorf("%w: %w: %d bytes is over MaxRequestBytes (%d)", ErrInvalidRequest, ErrTooLarge, len(payload), MaxRequestBytes)
	}
	if !utf8.Valid(payload) {
		// encoding/json would replace the bad bytes, each by three.
		return Request{}, fmt.Errorf("%w: not UTF-8", ErrInvalidRequest)
	}
	var r Request
	if err := json.Unmarshal(payload, &r); err != nil {
		// A type error leaves the other fields decoded; a syntax error
		// may leave a partial object, which must not be answered.
		var typeErr *json.UnmarshalTypeError
		if !errors.As(err, &typeErr) {
			return Request{}, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
		}
		return r, fmt.Errorf("%w: %w", ErrInvalidRequest, err)
	}
	if err := r.Validate(); err != nil {
		return r, err
	}
	return r, nil
}

// answerable reports whether an error answer can go back for r: its id
// and reply topic are valid.
func (r *Request) answerable() bool {
	return validateName(r.ID) == nil && ValidateReply(r.Reply) == nil
}

// ReplyTopic returns the reply topic of node: ReplyPrefix + node.
func ReplyTopic(node string) (string, error) {
	t := ReplyPrefix + node
	if err := ValidateReply(t); err != nil {
		return "", err
	}
	return t, nil
}

// ValidateReply checks a reply topic: ReplyPrefix and one level of
// 1..MaxLevelBytes bytes of ASCII letters, digits, '-', '_' and '.'
// (so no wildcard, no further level, nothing odd in a log line).
func ValidateReply(topic string) error {
	level, ok := strings.CutPrefix(topic, ReplyPrefix)
	switch {
	case !ok:
		return fmt.Errorf("%s is not under %s", quoteShort(topic), ReplyPrefix)
	case level == "":
		return fmt.Errorf("%s has no level after %s", quoteShort(topic), ReplyPrefix)
	case len(level) > MaxLevelBytes:
		return fmt.Errorf("reply level of %d bytes is over MaxLevelBytes (%d)", len(level), MaxLevelBytes)
	}
	for i := 0; i < len(level); i++ {
		c := level[i]
		if !isAlnum(c) && c != '-' && c != '_' && c != '.' {
			return fmt.Errorf("reply topic %s: level contains %q (letters, digits, - _ . only)", quoteShort(topic), c)
		}
	}
	return nil
}

// validateName is daemon.ValidateName's rule (this package imports
// nothing of the daemon): 1..MaxNameBytes bytes of ASCII letters,
// digits, space, '_', '.' and '-', starting with a letter, digit or '_',
// not ending in a space, never "..".
func validateName(s string) error {
	switch {
	case s == "":
		return fmt.Errorf("empty name")
	case len(s) > MaxNameBytes:
		return fmt.Errorf("name of %d bytes is over MaxNameBytes (%d)", len(s), MaxNameBytes)
	case strings.Contains(s, ".."):
		return fmt.Errorf("name %s contains \"..\"", quoteShort(s))
	case !isAlnum(s[0]) && s[0] != '_':
		return fmt.Errorf("name %s must start with a letter, digit or _", quoteShort(s))
	case s[len(s)-1] == ' ':
		return fmt.Errorf("name %s ends with a space", quoteShort(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isAlnum(c) && c != '_' && c != ' ' && c != '.' && c != '-' {
			return fmt.Errorf("name %s contains %q (letters, digits, space, _ . - only)", quoteShort(s), c)
		}
	}
	return nil
}

// validateKey checks a phrase key: KeyHexLen lower-case hex digits.
func validateKey(k string) error {
	if len(k) != KeyHexLen {
		return fmt.Errorf("phrase key of %d bytes, want %d hex digits", len(k), KeyHexLen)
	}
	for i := 0; i < len(k); i++ {
		if c := k[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return fmt.Errorf("phrase key %s: %q is not a lower-case hex digit", quoteShort(k), c)
		}
	}
	return nil
}

// validReason reports whether s is a reason word: 1..32 bytes of
// lower-case letters, digits and '_'.
func validReason(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func isAlnum(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// quoteShort quotes outside input for an error message, cut to 40 bytes.
func quoteShort(s string) string {
	const limit = 40
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "..."
}
