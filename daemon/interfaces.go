// Package daemon is mynahd's core: it turns MQTT messages into speech. It
// decodes and validates commands, queues them by priority, synthesizes and
// plays them sentence by sentence, and reports what happened as events, a
// state sensor and Home Assistant discovery.
//
// The daemon sees the outside world only through the small interfaces in
// this file; cmd/mynahd wires in paho (daemon/mqtt), the voice engines and
// the PortAudio sink. That keeps this package free of cgo and of MQTT
// client details, and lets its tests use hand-written fakes.
package daemon

import (
	"context"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/speech"
)

// Message is one MQTT message as the daemon sees it.
type Message struct {
	Topic    string
	Payload  []byte
	Retained bool
	// Redelivered is the broker's DUP flag: a QoS 1 message sent again
	// because its acknowledgement was not seen (a reconnect, a broker
	// restart). The duplicate filter uses it to tell the broker's copy of
	// a request from a publisher's new try with the same id.
	Redelivered bool
	// Ack acknowledges the message to the broker. The handler calls it
	// exactly once, possibly later and from another goroutine, when the
	// message is safe: a say command once it is in the spool. Until then
	// the broker keeps the message and sends it again after a reconnect.
	// nil means the transport acknowledges by itself.
	Ack func()
}

// Transport is the MQTT connection. The implementation owns connecting,
// the last will (offline, retained, on the status topic), publishing
// "online" once subscribed after every connect, and re-subscribing after
// every reconnect.
type Transport interface {
	// Subscribe subscribes to filters at QoS 1. handle is called for every
	// message on the client's goroutine: it must return quickly and never
	// publish synchronously. connected, if not nil, is called after every
	// later (re)connect, once these filters are subscribed again, so the
	// subscriber can re-announce itself (a broker that lost its state lost
	// the retained discovery too) and retry what waited for the broker; it
	// may publish, but should return soon. A connection already up when
	// Subscribe is called is not reported.
	Subscribe(filters []string, handle func(Message), connected func()) error
	// Publish sends at QoS 1 and returns nil once the broker has
	// acknowledged the message; it waits at most until ctx ends. An error
	// that wraps ErrNotSent says the message certainly did not leave (the
	// connection was down); any other error leaves it open whether the
	// broker got it, so the daemon marks a retried terminal event
	// redelivered.
	Publish(ctx context.Context, topic string, payload []byte, retained bool) error
}

// Speech is what the daemon asks an engine to say, and Chunk one
// sentence that comes back: package speech's types, which the engine
// (audio/engine) speaks too. The engine resolves Speech.Speaker among the
// owner's and the shared cloned speakers.
type (
	Speech = speech.Request
	Chunk  = speech.Chunk
)

// Engine synthesizes speech. Speak calls emit once per sentence, in order,
// and emits sentence n before it synthesizes sentence n+1. It should wrap
// ErrUnknownVoice for a voice it does not have, so that the failure event
// says unknown_voice rather than synthesis, and ErrNothingToSay for a text
// with nothing to speak in it (reason empty). Voices is called at start
// and on every discovery publish; the daemon takes the list as the truth
// for validating voice names. CheckVoice makes sure a voice of that list
// can speak now (its files are there and load), for voice/set: it may
// take as long as loading the voice, and wraps ErrUnknownVoice when the
// voice is gone.
type Engine interface {
	Voices() []string
	Speak(ctx context.Context, s Speech, emit func(Chunk) error) error
	CheckVoice(ctx context.Context, name string) error
}

// VoiceChanges is what a reread of the engine's voices found.
type VoiceChanges = speech.VoiceChanges

// VoiceReloader is an Engine whose voices can change while the daemon
// runs (a voice copied into its directory, replaced or removed):
// ReloadVoices rereads them, offers the new ones and lets go of the
// changed and removed ones. The daemon calls it on voices/reload and on
// ReloadVoices; an Engine without it only has its Voices asked again.
type VoiceReloader interface {
	ReloadVoices() (VoiceChanges, error)
}

// Sink plays audio. Abort must make a blocked Write return at once.
type Sink interface {
	Write(ctx context.Context, p audio.PCM) error
	Drain(ctx context.Context) error
	Abort() error
}

// Spool keeps accepted requests on disk until they are done, so that a
// crash or a restart loses none. Keys are request ids; records are opaque.
// Put returns once the record is durable (the daemon acknowledges the MQTT
// message after it); Delete of a missing key is not an error.
type Spool interface {
	Put(key string, record []byte, received, expires time.Time) error
	Delete(key string) error
	// List returns what is spooled, in arrival order.
	List() ([]SpoolRecord, error)
}

// SpoolRecord is one spooled request as Spool.List returns it.
type SpoolRecord struct {
	Key      string
	Record   []byte
	Received time.Time
	Expires  time.Time
}

// PhraseCache is the engine's cache of spoken sentences as the daemon sees
// it: figures for the state sensor, and purge for the cache/purge command.
type PhraseCache interface {
	CacheStats() CacheStats
	// Purge removes what scope names ("phrases", "voice=NAME",
	// "older=AGE", "expired"; see the README) and says how many phrases
	// went. A scope it does not understand wraps ErrInvalidScope.
	Purge(scope string) (int, error)
}
