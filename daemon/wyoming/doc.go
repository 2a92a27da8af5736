// Package wyoming serves mynah's voices over the Wyoming protocol, so that
// Home Assistant's Wyoming integration can use mynah as its local
// text-to-speech engine, the way it uses wyoming-piper.
//
// # Protocol
//
// Every event is a JSON header line ({"type", "data", "data_length",
// "payload_length", "version"} and a newline), then data_length bytes of
// JSON data (merged over the header's "data"), then payload_length bytes
// of payload. ReadEvent accepts data inline and as a block; WriteEvent
// writes it as a block, as the Python wyoming library does.
//
// The server answers:
//
//   - describe with info: one TTS program, "mynah", that supports
//     streaming, with the engine's voices (name, description, languages,
//     speakers).
//   - synthesize {text, voice{name|language, speaker}} (a language alone
//     picks the default voice when it speaks it) with audio-start,
//     audio-chunk events (s16le PCM, SamplesPerChunk frames each), and
//     audio-stop.
//   - synthesize-start {voice}, synthesize-chunk {text} ...,
//     synthesize-stop: the streamed text is spoken as soon as it holds a
//     complete sentence (cut by the engine's own splitter, so in the
//     sentences of the whole text, with the voice's pause between them),
//     each part answered with audio-start, audio-chunk ... audio-stop,
//     and the stream ends with synthesize-stopped. Home
//     Assistant also sends the whole text as a plain synthesize just
//     before synthesize-stop, for servers that do not stream; inside a
//     stream that event is ignored. All audio of one request has the
//     format of its first sentence: a later sentence at another rate (a
//     different voice) is resampled, because Home Assistant writes its
//     WAV header from the first audio-start.
//   - ping with pong. Other events are ignored.
//
// A failed request is answered with an error event {text, code} (the
// Code constants) and the connection is closed, which is how Home
// Assistant notices: it does not read error events. A frame that breaks
// the framing or a limit is answered the same way, and so is a request
// over MaxConnections (code busy), after the server has read it. Before
// closing, the server half-closes and drains what the client still sends
// (at most 1 s, 256 KiB), so that the error event is not lost to a TCP
// reset. Home Assistant opens a new connection for every request and
// every describe.
//
// # Limits
//
// Limits bound each inbound event (header line 64 KiB, data 1 MiB, no
// payload: a TTS client sends none). Options bound:
//
//   - the requests in progress at once (MaxConnections, 16): a
//     synthesize being answered, a stream from synthesize-start to
//     synthesize-stop. One more is told busy. describe and ping take no
//     slot, so Home Assistant's 1 s describe timeout holds while every
//     voice is busy.
//   - the connections without a request in progress (MaxIdle, 64): just
//     connected, done with a request, or being closed after an error.
//     They hold no slot, so sockets left open lock nobody out; each must
//     send its next complete event within IdleTimeout (5 s), and one
//     more than MaxIdle closes the one idle longest.
//   - the Speak calls synthesizing at once (MaxParallel, one per CPU).
//     Events go to a client through a send queue of its own
//     (SendBuffer, 256 KiB, beyond the socket's buffers) written by a
//     goroutine of its own; while it is full the request gives its
//     synthesis slot back, so a client that reads slowly holds up only
//     itself, and one that reads nothing for WriteTimeout (30 s) is
//     dropped.
//   - the time a stream may take to send its next event (ReadTimeout, 60
//     s: Home Assistant waits for its language model between chunks),
//     and the text of one request (MaxTextRunes, 5000 characters, a
//     stream's chunks counted together).
//
// A request's logged first_audio_ms counts from its arrival, its wait for
// a synthesis slot (wait_ms) included.
//
// # Security
//
// Wyoming has no authentication and no encryption: anyone who can reach
// the port can list the voices and make the device speak into a WAV file.
// The default address is loopback (127.0.0.1:10200); listen on a LAN
// address only on a network you trust, and never on the internet.
//
// The server needs only the small Engine interface, so this package has
// no cgo and knows nothing of voice files; mynahd adapts audio/engine to
// it.
package wyoming
