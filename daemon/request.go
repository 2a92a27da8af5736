package daemon

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Priority orders the queue: every alert plays before any normal request,
// every normal one before any low one.
type Priority int

// The priorities, lowest first so that they compare with < and >.
const (
	PriorityLow Priority = iota
	PriorityNormal
	PriorityAlert
)

// String returns the name used in payloads: low, normal or alert.
func (p Priority) String() string {
	switch p {
	case PriorityLow:
		return "low"
	case PriorityNormal:
		return "normal"
	case PriorityAlert:
		return "alert"
	}
	return "priority(" + strconv.Itoa(int(p)) + ")"
}

// Request is one validated "say" command.
type Request struct {
	// ID names the request in events. A payload without one gets a random
	// 16-hex-digit id.
	ID       string
	Text     string
	Voice    string // "" is the daemon's current default voice
	Speaker  string
	Priority Priority
	// Interrupt makes the request play next, before any other, and cut
	// what is playing.
	Interrupt bool
	// Volume overrides the daemon's volume for this request (0..1); nil
	// uses the daemon's volume, which volume/set can change while it plays.
	Volume *float64
	Rate   float64 // speaking rate, 0.25..4; 1 is the voice's own
	// TTL is how long after Received the request may still start; 0 means
	// the daemon's default (Options.DefaultTTL).
	TTL     time.Duration
	Session string
	// NoCache asks not to read or write the phrase cache ("cache": false).
	NoCache bool
	// NoNormalize speaks Text as written ("normalize": false): numbers,
	// units, times and Markdown are not read into words first.
	NoNormalize bool
	// Chime is the chime played before the speech: "" the one
	// Options.PriorityChimes gives the priority, ChimeNone none
	// ("chime": false), ChimeDefault the priority's or else DefaultChime
	// ("chime": true), else a chime's name.
	Chime string
	// Owner is the household member from the topic mynah/<node>/u/<owner>/say;
	// "" for mynah/<node>/say. DecodeSay never sets it.
	Owner string
	// Group is the group of a group announcement (from the topic
	// mynah/group/<group>/say); "" for a node's own. DecodeSay never sets
	// it.
	Group string
	// PlayAt is when the first sample is to reach the DAC ("play_at",
	// Unix milliseconds): every member of a group starts at this instant.
	// Zero means as soon as possible (a group announcement's members then
	// agree on one; see group.go).
	PlayAt   time.Time
	Received time.Time

	// idGenerated marks ids the daemon made up: they cannot repeat, so the
	// duplicate filter does not spend a slot on them.
	idGenerated bool
	// textKey is the agreement id of a group say without an id (group.go).
	textKey string
	// agreedAt: PlayAt is the group's agreement, not the request's own.
	agreedAt bool
	// redelivered is the message's DUP flag (Message.Redelivered).
	redelivered bool
	// spool follows the request's spool record; nil without a spool.
	spool *spoolState
}

// Expires returns when the request may no longer start.
func (r *Request) Expires() time.Time { return r.Received.Add(r.TTL) }

// Limits DecodeSay applies unless DecodeOptions says otherwise.
const (
	DefaultMaxPayloadBytes = 64 << 10
	DefaultMaxTextRunes    = 5000
	DefaultMaxDepth        = 8
	DefaultMaxTTL          = 24 * time.Hour
	// MaxPlayAhead bounds how far ahead a play_at may lie.
	MaxPlayAhead = 5 * time.Minute
	// MaxNameBytes bounds voice, speaker, id, session and owner names.
	MaxNameBytes = 64
	// MinRate and MaxRate bound the speaking rate.
	MinRate = 0.25
	MaxRate = 4.0
)

// DecodeOptions sets the limits of DecodeSay; nil or zero fields mean the
// defaults above.
type DecodeOptions struct {
	// MaxPayloadBytes rejects larger payloads before looking at them
	// (default 64 KiB).
	MaxPayloadBytes int
	// MaxTextRunes bounds the text in characters (default 5000): a voice
	// needs seconds per hundred characters, and peers have run out of
	// memory on megabytes of text.
	MaxTextRunes int
	// MaxDepth bounds JSON nesting (default 8; the request object itself
	// is depth 1). It is checked before unmarshalling.
	MaxDepth int
	// MaxTTL bounds the ttl field (default 24 h).
	MaxTTL time.Duration
	// Speakable, when set, says whether a text holds anything to say once
	// the voices' front end has cleaned it; a text it refuses fails at
	// once with reason empty instead of being queued. mynahd passes
	// audio/text's rule, under which markup alone ("<speak><break
	// time='1s'/></speak>") says nothing. nil takes any text that is not
	// blank.
	Speakable func(text string) bool
}

func (o *DecodeOptions) withDefaults() DecodeOptions {
	var out DecodeOptions
	if o != nil {
		out = *o
	}
	if out.MaxPayloadBytes <= 0 {
		out.MaxPayloadBytes = DefaultMaxPayloadBytes
	}
	if out.MaxTextRunes <= 0 {
		out.MaxTextRunes = DefaultMaxTextRunes
	}
	if out.MaxDepth <= 0 {
		out.MaxDepth = DefaultMaxDepth
	}
	if out.MaxTTL <= 0 {
		out.MaxTTL = DefaultMaxTTL
	}
	return out
}

// Reasons are the machine-readable codes in failed and dropped events.
// DecodeError carries the first group; the daemon adds the rest.
const (
	ReasonEmpty          = "empty"           // no text, or nothing to say in it (markup alone)
	ReasonTooLarge       = "too_large"       // payload over MaxPayloadBytes
	ReasonInvalidUTF8    = "invalid_utf8"    // payload is not UTF-8
	ReasonNULByte        = "nul_byte"        // NUL in the payload or a string
	ReasonInvalidJSON    = "invalid_json"    // a command that must be JSON (speaker/enroll) is not one JSON object
	ReasonTooDeep        = "too_deep"        // JSON nested deeper than MaxDepth
	ReasonBadField       = "bad_field"       // a known field has the wrong JSON type
	ReasonTextTooLong    = "text_too_long"   // text over MaxTextRunes
	ReasonBadName        = "bad_name"        // voice, speaker, id, session or owner
	ReasonBadRate        = "bad_rate"        // rate outside MinRate..MaxRate
	ReasonBadVolume      = "bad_volume"      // volume outside 0..1 (or 0..100 %)
	ReasonBadPriority    = "bad_priority"    // not low, normal or alert
	ReasonBadTTL         = "bad_ttl"         // ttl not in (0, MaxTTL]
	ReasonUnknownVoice   = "unknown_voice"   // not one of Engine.Voices, or (voice/set) its files are gone
	ReasonSynthesis      = "synthesis"       // the engine failed
	ReasonAudio          = "audio"           // the sink failed
	ReasonExpired        = "expired"         // ttl passed before it could start
	ReasonQueueFull      = "queue_full"      // pushed out of the full queue
	ReasonInterrupted    = "interrupted"     // cut by an interrupt request
	ReasonStopped        = "stopped"         // cut or dropped by the stop topic
	ReasonShutdown       = "shutdown"        // the daemon is stopping
	ReasonNotSupported   = "not_supported"   // command needs what this daemon lacks (cache/purge without a cache)
	ReasonBadScope       = "bad_scope"       // cache/purge scope not understood
	ReasonCache          = "cache"           // the phrase cache failed (purge)
	ReasonSpool          = "spool"           // a spooled request could not be read back
	ReasonUnknownSpeaker = "unknown_speaker" // no such speaker for this owner, nor shared
	ReasonReenroll       = "reenroll"        // enrolled with another speaker encoder: enroll again
	ReasonBadAudio       = "bad_audio"       // reference audio not base64, not a valid WAV, or unusable
	ReasonBusy           = "busy"            // too many enrollments waiting
	ReasonBadPlayAt      = "bad_play_at"     // play_at not a number of Unix milliseconds, or over MaxPlayAhead ahead
	ReasonLate           = "late"            // could not start within Options.MaxLate of its play_at
	// ReasonRender: a voice only the render nodes have (render.mode
	// remote), and none gave the sentence.
	ReasonRender = "render"
	// ReasonVoiceDownloading: the voice is a catalog voice being installed
	// on demand (Options.Installer) and was not there within
	// Options.DownloadTimeout; the install goes on, and a request after it
	// speaks. ReasonDownload: installing a voice failed (no network, a
	// 404, a checksum mismatch, a full disk, a voice that does not check).
	ReasonVoiceDownloading = "voice_downloading"
	ReasonDownload         = "download"
	// Reasons of warning events. ReasonCacheCorrupt: the cache file was
	// damaged at start, moved aside and replaced by an empty one.
	// ReasonSpoolCorrupt: the same of the spool file (what could be read of
	// its requests was carried over). ReasonCacheUnavailable: the phrase
	// cache is configured but cannot be used (a read-only disk, locked by
	// another process); speech goes on uncached. ReasonSpoolUnavailable:
	// the spool cannot be written; commands are still spoken and
	// acknowledged, but a crash loses those waiting.
	// ReasonAudioUnavailable: the audio device is gone (or was not there
	// at start); requests fail with reason audio until it is back.
	// ReasonClockUnsynced: the system clock is not synchronized to a time
	// server (or the check failed), so this speaker plays its groups'
	// announcements out of step with the others; once per outage
	// (ClockChanged). ReasonClockOffset: the clock probe found this
	// clock further from its groups' other members than
	// clockOffsetLimit; once until a round finds it back
	// (ClockOffsetChanged).
	ReasonCacheCorrupt     = "cache_corrupt"
	ReasonSpoolCorrupt     = "spool_corrupt"
	ReasonCacheUnavailable = "cache_unavailable"
	ReasonSpoolUnavailable = "spool_unavailable"
	ReasonAudioUnavailable = "audio_unavailable"
	ReasonClockUnsynced    = "clock_unsynced"
	ReasonClockOffset      = "clock_offset"
)

// DecodeError reports a payload DecodeSay or a control topic rejected.
type DecodeError struct {
	Reason string // one of the Reason constants
	Field  string // the JSON field at fault, if any
	Err    error
}

func (e *DecodeError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("invalid request: field %s: %v", e.Field, e.Err)
	}
	return fmt.Sprintf("invalid request: %v", e.Err)
}

func (e *DecodeError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrInvalidRequest) true.
func (e *DecodeError) Is(target error) bool { return target == ErrInvalidRequest }

func decodeErr(reason, field, format string, args ...any) *DecodeError {
	return &DecodeError{Reason: reason, Field: field, Err: fmt.Errorf(format, args...)}
}

// DecodeSay turns a say payload into a Request. The payload is plain UTF-8
// text, or a JSON object with the fields text (alias message), voice,
// speaker, id, priority, interrupt, volume (0..1), rate, ttl (seconds),
// session and cache (bool). A leading byte-order mark is ignored. Only a
// payload that is one valid JSON object with a text or message field is
// read as JSON: a text that merely starts with '{' ("{name} is at the
// door", a template that did not render) or a JSON object without either
// field ({"temperature": 21}) is spoken like any other. Field names are case-sensitive;
// unknown fields are ignored, known fields with the wrong type are
// errors. Every error is a *DecodeError; when the payload has a valid id,
// the returned Request carries it even if the payload was refused before
// its fields were read (else a generated one), so a failed event can name
// the request.
func DecodeSay(payload []byte, now time.Time, opts *DecodeOptions) (Request, error) {
	o := opts.withDefaults()
	r := Request{Priority: PriorityNormal, Rate: 1, Received: now}
	err := decodeSay(&r, payload, &o)
	if r.ID == "" {
		r.ID, r.idGenerated = newID(), true
	}
	if err != nil {
		return r, err
	}
	return r, nil
}

func decodeSay(r *Request, payload []byte, o *DecodeOptions) error {
	if err := checkPayload(payload, o); err != nil {
		r.ID = peekID(payload)
		return err
	}
	trimmed := trimPayload(payload)
	if len(trimmed) == 0 {
		return decodeErr(ReasonEmpty, "", "payload is empty: send the text to speak")
	}
	if !isJSONObject(trimmed) {
		return setText(r, string(trimmed), "", o)
	}
	if jsonTooDeep(trimmed, o.MaxDepth) {
		r.ID = peekID(trimmed)
		return decodeErr(ReasonTooDeep, "", "JSON nests deeper than %d levels (MaxDepth)", o.MaxDepth)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(trimmed, &fields); err != nil {
		return decodeErr(ReasonInvalidJSON, "", "%v", err)
	}
	_, hasText := fields["text"]
	_, hasMessage := fields["message"]
	if !hasText && !hasMessage {
		// {"temperature": 21} from a notify message is something to say,
		// not a command: a say command always names its text.
		return setText(r, string(trimmed), "", o)
	}
	return decodeFields(r, fields, o)
}

// checkPayload refuses what no say may be, before anything is parsed.
func checkPayload(payload []byte, o *DecodeOptions) error {
	switch {
	case len(payload) > o.MaxPayloadBytes:
		return decodeErr(ReasonTooLarge, "", "payload is %d bytes, over the limit of %d (MaxPayloadBytes)", len(payload), o.MaxPayloadBytes)
	case !utf8.Valid(payload):
		return decodeErr(ReasonInvalidUTF8, "", "payload is not valid UTF-8")
	case bytes.IndexByte(payload, 0) >= 0:
		return decodeErr(ReasonNULByte, "", "payload contains a NUL byte")
	}
	return nil
}

// decodeFields reads the id first so that later errors can name the request.
func decodeFields(r *Request, f map[string]json.RawMessage, o *DecodeOptions) error {
	var err error
	if r.ID, err = nameField(f, "id"); err != nil {
		return err
	}
	text, err := stringField(f, "text")
	if err != nil {
		return err
	}
	field := "text"
	if strings.TrimSpace(text) == "" {
		// Home Assistant's notify action and some scripts say "message".
		msg, err := stringField(f, "message")
		if err != nil {
			return err
		}
		if strings.TrimSpace(msg) != "" {
			text, field = msg, "message"
		}
	}
	if err := setText(r, strings.TrimSpace(text), field, o); err != nil {
		return err
	}
	for _, n := range []struct {
		key string
		dst *string
	}{{"voice", &r.Voice}, {"speaker", &r.Speaker}, {"session", &r.Session}} {
		if *n.dst, err = nameField(f, n.key); err != nil {
			return err
		}
	}
	if p, err := stringField(f, "priority"); err != nil {
		return err
	} else if p != "" {
		if r.Priority, err = ParsePriority(p); err != nil {
			return err
		}
	}
	if b, ok, err := boolField(f, "interrupt"); err != nil {
		return err
	} else if ok {
		r.Interrupt = b
	}
	if b, ok, err := boolField(f, "cache"); err != nil {
		return err
	} else if ok {
		r.NoCache = !b
	}
	if b, ok, err := boolField(f, "normalize"); err != nil {
		return err
	} else if ok {
		r.NoNormalize = !b
	}
	if r.Chime, err = chimeField(f); err != nil {
		return err
	}
	if v, ok, err := numberField(f, "volume", ReasonBadVolume); err != nil {
		return err
	} else if ok {
		if v < 0 || v > 1 {
			return decodeErr(ReasonBadVolume, "volume", "%g is outside 0..1", v)
		}
		r.Volume = &v
	}
	if v, ok, err := numberField(f, "rate", ReasonBadRate); err != nil {
		return err
	} else if ok {
		if v < MinRate || v > MaxRate {
			return decodeErr(ReasonBadRate, "rate", "%g is outside %g..%g", v, MinRate, MaxRate)
		}
		r.Rate = v
	}
	if v, ok, err := numberField(f, "play_at", ReasonBadPlayAt); err != nil {
		return err
	} else if ok {
		at := time.UnixMicro(int64(math.Round(v * 1000)))
		switch {
		case v > 0 && v < 1e11:
			return decodeErr(ReasonBadPlayAt, "play_at", "%s is too small for Unix milliseconds (seconds? multiply by 1000)", strconv.FormatFloat(v, 'f', -1, 64))
		case v <= 0 || v >= 1e15:
			return decodeErr(ReasonBadPlayAt, "play_at", "%s is not an instant in Unix milliseconds", strconv.FormatFloat(v, 'f', -1, 64))
		case at.Sub(r.Received) > MaxPlayAhead:
			return decodeErr(ReasonBadPlayAt, "play_at", "is %.1f s ahead, over the limit of %v (MaxPlayAhead): is the sender's clock right?", at.Sub(r.Received).Seconds(), MaxPlayAhead)
		}
		r.PlayAt = at
	}
	if v, ok, err := numberField(f, "ttl", ReasonBadTTL); err != nil {
		return err
	} else if ok {
		if v <= 0 || v > o.MaxTTL.Seconds() {
			return decodeErr(ReasonBadTTL, "ttl", "%g s is outside (0, %g] seconds (MaxTTL)", v, o.MaxTTL.Seconds())
		}
		r.TTL = max(time.Duration(v*float64(time.Second)), time.Millisecond)
	}
	return nil
}

func setText(r *Request, text, field string, o *DecodeOptions) error {
	switch {
	case text == "":
		return decodeErr(ReasonEmpty, field, "no text to speak: set \"text\"")
	case strings.IndexByte(text, 0) >= 0:
		return decodeErr(ReasonNULByte, field, "text contains a NUL character")
	}
	if n := utf8.RuneCountInString(text); n > o.MaxTextRunes {
		return decodeErr(ReasonTextTooLong, field, "text is %d characters, over the limit of %d (MaxTextRunes)", n, o.MaxTextRunes)
	}
	if o.Speakable != nil && !o.Speakable(text) {
		return decodeErr(ReasonEmpty, field, "nothing to say in %s once markup is removed: send words", quoteShort(text))
	}
	r.Text = text
	return nil
}

// ParsePriority parses low, normal or alert (any case).
func ParsePriority(s string) (Priority, error) {
	switch strings.ToLower(s) {
	case "low":
		return PriorityLow, nil
	case "normal":
		return PriorityNormal, nil
	case "alert":
		return PriorityAlert, nil
	}
	return PriorityNormal, decodeErr(ReasonBadPriority, "priority", "%s is not low, normal or alert", quoteShort(s))
}

// raw returns the field's JSON, treating null as absent.
func raw(f map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	v, ok := f[key]
	if !ok || string(v) == "null" {
		return nil, false
	}
	return v, true
}

func stringField(f map[string]json.RawMessage, key string) (string, error) {
	v, ok := raw(f, key)
	if !ok {
		return "", nil
	}
	if v[0] != '"' {
		return "", decodeErr(ReasonBadField, key, "must be a string, not %s", jsonKind(v))
	}
	var s string
	if err := json.Unmarshal(v, &s); err != nil {
		return "", decodeErr(ReasonBadField, key, "%v", err)
	}
	return s, nil
}

func nameField(f map[string]json.RawMessage, key string) (string, error) {
	s, err := stringField(f, key)
	if err != nil || s == "" {
		return "", err
	}
	if err := ValidateName(s); err != nil {
		return "", &DecodeError{Reason: ReasonBadName, Field: key, Err: err}
	}
	return s, nil
}

// chimeField reads "chime": false (none), true (the default chime), or
// a chime's name.
func chimeField(f map[string]json.RawMessage) (string, error) {
	v, ok := raw(f, "chime")
	if !ok {
		return "", nil
	}
	switch string(v) {
	case "true":
		return ChimeDefault, nil
	case "false":
		return ChimeNone, nil
	}
	if v[0] != '"' {
		return "", decodeErr(ReasonBadField, "chime", "must be true, false or a chime's name, not %s", jsonKind(v))
	}
	name, err := nameField(f, "chime")
	if name == "" && err == nil {
		return "", decodeErr(ReasonBadField, "chime", "an empty name: use false for no chime")
	}
	return name, err
}

func boolField(f map[string]json.RawMessage, key string) (val, ok bool, err error) {
	v, ok := raw(f, key)
	if !ok {
		return false, false, nil
	}
	switch string(v) {
	case "true":
		return true, true, nil
	case "false":
		return false, true, nil
	}
	return false, false, decodeErr(ReasonBadField, key, "must be true or false, not %s", jsonKind(v))
}

// numberField parses a JSON number. Values beyond float64 (1e309) get
// rangeReason: the type is right, the value is not.
func numberField(f map[string]json.RawMessage, key, rangeReason string) (float64, bool, error) {
	v, ok := raw(f, key)
	if !ok {
		return 0, false, nil
	}
	if c := v[0]; c != '-' && (c < '0' || c > '9') {
		return 0, false, decodeErr(ReasonBadField, key, "must be a number, not %s", jsonKind(v))
	}
	x, err := strconv.ParseFloat(string(v), 64)
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, false, decodeErr(rangeReason, key, "%s is not a finite number", quoteShort(string(v)))
	}
	return x, true, nil
}

func jsonKind(v json.RawMessage) string {
	switch v[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// ValidateName checks a voice, speaker, id, session or owner name:
// 1..MaxNameBytes bytes of ASCII letters, digits, space, '_', '.' and '-',
// starting with a letter, digit or '_', not ending in a space, and never
// containing "..". Names end up in file names, cache keys and topics, so
// nothing that could climb a directory or act as an MQTT wildcard passes.
func ValidateName(s string) error {
	const rule = "names are 1-64 bytes of letters, digits, space, _ . -"
	switch {
	case s == "":
		return fmt.Errorf("empty name: %s", rule)
	case len(s) > MaxNameBytes:
		return fmt.Errorf("name of %d bytes is over the limit of %d (MaxNameBytes)", len(s), MaxNameBytes)
	case strings.Contains(s, ".."):
		return fmt.Errorf("name %s contains \"..\": %s", quoteShort(s), rule)
	case !isNameStart(s[0]):
		return fmt.Errorf("name %s must start with a letter, digit or _", quoteShort(s))
	case s[len(s)-1] == ' ':
		return fmt.Errorf("name %s ends with a space", quoteShort(s))
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !isNameStart(c) && c != ' ' && c != '.' && c != '-' {
			return fmt.Errorf("name %s contains %q: %s", quoteShort(s), c, rule)
		}
	}
	return nil
}

func isNameStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// quoteShort quotes outside input for an error message, cut to 40 bytes so
// that a 4 KB name does not become a 4 KB log line.
func quoteShort(s string) string {
	const limit = 40
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	cut := limit
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// newID returns 16 random hex digits.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go ≥ 1.24)
	return hex.EncodeToString(b[:])
}

// ParseVolume parses a volume/set payload. Accepted: a fraction 0..1
// ("0.5"), a percentage with a sign ("50%", what the Home Assistant number
// entity sends), or a bare number above 1 up to 100, read as a percentage
// ("50"). A bare "1" is full volume, not 1 %: send "1%" for that. Numbers
// are plain decimals with an optional sign. The result is 0..1. Errors
// are *DecodeError with ReasonBadVolume and say what was wrong: a number
// out of range (-1, 101%, Inf) is told apart from what is no number
// (NaN, "loud") and from a number in a form not taken (1e2, hex).
func ParseVolume(payload []byte) (float64, error) {
	const want = "send 0..1 or 0..100%"
	s := string(trimPayload(payload))
	if s == "" {
		return 0, decodeErr(ReasonBadVolume, "", "empty volume: %s", want)
	}
	if len(s) > 32 {
		return 0, decodeErr(ReasonBadVolume, "", "volume of %d bytes is over the limit of 32", len(s))
	}
	num, percent := strings.CutSuffix(s, "%")
	num = strings.TrimSpace(num)
	v, err := strconv.ParseFloat(num, 64)
	isNumber := (err == nil || errors.Is(err, strconv.ErrRange)) && !math.IsNaN(v)
	switch {
	case !isNumber:
		return 0, decodeErr(ReasonBadVolume, "", "%s is not a number: %s", quoteShort(s), want)
	case strings.Trim(num, "+-0123456789.") != "" && !math.IsInf(v, 0) || err != nil:
		// 1e2, 0x1p-2, 1e400: numbers, but not as anyone sends a volume.
		return 0, decodeErr(ReasonBadVolume, "", "%s is not a plain decimal number: %s", quoteShort(s), want)
	}
	if percent || v > 1 {
		v /= 100
	}
	if !(v >= 0 && v <= 1) {
		// num is a number (digits, sign, point, or Inf): safe to show
		// as it is.
		if percent {
			num += "%"
		}
		return 0, decodeErr(ReasonBadVolume, "", "%s is out of range: %s", num, want)
	}
	return v + 0, nil // -0 becomes 0
}
