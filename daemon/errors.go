package daemon

import "errors"

// Errors of this package, in one place. Those the daemon reports as event
// reasons are reasoned errors: they carry their reason (Reasoner), and so
// may errors of the engine, the speaker store and the phrase cache, which
// the daemon then reports with that reason without knowing the error.
// Errors without a reason are reported as the command's default
// (synthesis for speech, for instance). DecodeError carries the reason of
// a refused payload in its own field.
var (
	// ErrInvalidOptions is wrapped by New's errors; the message names the
	// Options field.
	ErrInvalidOptions = errors.New("invalid daemon options")
	// ErrInvalidRequest is matched (errors.Is) by every DecodeError.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrNotSent is what a Transport wraps when a publish certainly did
	// not reach the broker (Transport.Publish).
	ErrNotSent = errors.New("not sent")

	// ErrUnknownVoice is what an Engine wraps when Speech.Voice names no
	// voice it has, or (CheckVoice) a voice whose files are gone.
	ErrUnknownVoice = reasoned("unknown voice", ReasonUnknownVoice)
	// ErrNothingToSay is what an Engine wraps when the text holds nothing
	// its front end can speak (markup alone, say): reason empty, not a
	// synthesis failure.
	ErrNothingToSay = reasoned("nothing to say", ReasonEmpty)
	// ErrUnknownSpeaker: no such speaker for this owner, nor shared (the
	// daemon's own speaker/forget; an engine's errors carry their reason).
	ErrUnknownSpeaker = reasoned("unknown speaker", ReasonUnknownSpeaker)
	// ErrNoCloning: no voice here has a speaker encoder.
	ErrNoCloning = reasoned("voice cannot clone speakers", ReasonNotSupported)
	// ErrInvalidScope is what PhraseCache.Purge wraps for a scope it does
	// not understand.
	ErrInvalidScope = reasoned("invalid purge scope", ReasonBadScope)
	// ErrVoiceDownloading: a request's voice is still being installed
	// when its Options.DownloadTimeout ends.
	ErrVoiceDownloading = reasoned("voice still downloading", ReasonVoiceDownloading)
	// ErrSpoolFull is what a Spool's Put wraps when the spool holds all
	// the records it may. Unlike a failing disk it ends by itself: the
	// state reports the spool available again once the queue has drained
	// (spool.go).
	ErrSpoolFull = errors.New("spool is full")
)

// A Reasoner is an error that knows the event reason it is reported with
// (one of the Reason constants). The daemon finds it anywhere in an
// error's chain (errors.As), so an engine's sentinel errors need not be
// translated into the daemon's.
type Reasoner interface {
	error
	Reason() string
}

// ReasonOf returns the reason of the first Reasoner in err's chain, or
// fallback.
func ReasonOf(err error, fallback string) string {
	if r := Reasoner(nil); errors.As(err, &r) {
		return r.Reason()
	}
	return fallback
}

// reasonedError is a sentinel error with its reason.
type reasonedError struct{ msg, reason string }

func reasoned(msg, reason string) *reasonedError { return &reasonedError{msg, reason} }

func (e *reasonedError) Error() string  { return e.msg }
func (e *reasonedError) Reason() string { return e.reason }
