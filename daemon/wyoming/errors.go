package wyoming

import "errors"

// Sentinel errors. Callers test them with errors.Is; the wrapped message
// says which limit or field was at fault.
var (
	// ErrInvalidOptions: an Options field is wrong; the message names it.
	ErrInvalidOptions = errors.New("invalid wyoming options")
	// ErrHeaderTooLong: an event's header line is over Limits.MaxHeaderBytes.
	ErrHeaderTooLong = errors.New("wyoming header line too long")
	// ErrDataTooLarge: an event's data_length is over Limits.MaxDataBytes.
	ErrDataTooLarge = errors.New("wyoming data too large")
	// ErrPayloadTooLarge: an event's payload_length is over
	// Limits.MaxPayloadBytes.
	ErrPayloadTooLarge = errors.New("wyoming payload too large")
	// ErrMalformed: a header or data block that is not a JSON object, a
	// missing type, or a length that is not a non-negative integer.
	ErrMalformed = errors.New("malformed wyoming event")
	// ErrTruncated: the stream ended inside an event. It comes together
	// with io.ErrUnexpectedEOF.
	ErrTruncated = errors.New("truncated wyoming event")
	// ErrVoiceDownloading is what a VoiceInstaller wraps when the voice
	// is not installed yet but on its way.
	ErrVoiceDownloading = errors.New("voice still downloading")
)
