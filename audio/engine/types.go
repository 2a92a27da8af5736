package engine

import "github.com/mynah-tts/mynah/audio/speech"

// Request, Chunk, Enrollment and SpeakerInfo are the words front ends
// and the engine speak in
// (package speech, which the cgo-free daemon imports too).
type (
	Request     = speech.Request
	Chunk       = speech.Chunk
	Enrollment  = speech.Enrollment
	SpeakerInfo = speech.SpeakerInfo
	// VoiceChanges is what ReloadVoices found.
	VoiceChanges = speech.VoiceChanges
)

// Errors of the engine. They carry the reason mynahd's events report them
// with (Reason), which front ends without those words can ignore; the
// voice engines' own errors (voice.ErrUnknownSpeaker, ...) do the same.
var (
	// ErrUnknownVoice: no voice of that name is installed (or its files
	// are gone).
	ErrUnknownVoice = reasoned("unknown voice", "unknown_voice")
	// ErrNothingToSay: the text holds nothing to speak (markup alone).
	ErrNothingToSay = reasoned("nothing to say", "empty")
	// ErrNoCloning: no voice here (or not the one named) has a speaker
	// encoder, or there is no cache file to keep speakers in.
	ErrNoCloning = reasoned("voice cannot clone speakers", "not_supported")
)

// reasonedError is a sentinel error with the event reason it stands for.
type reasonedError struct{ msg, reason string }

func reasoned(msg, reason string) *reasonedError { return &reasonedError{msg, reason} }

func (e *reasonedError) Error() string { return e.msg }

// Reason is the event reason (daemon.Reasoner).
func (e *reasonedError) Reason() string { return e.reason }
