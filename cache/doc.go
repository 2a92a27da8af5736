// Package cache keeps what mynah must never compute twice.
//
// Store is one bbolt file in the state directory holding the phrase audio
// cache (sentence-granular, keyed by PhraseKey, bounded by bytes with LRU
// eviction, a TTL and pins), the queue spool (accepted MQTT requests,
// durable before they are acknowledged) and the speakers (embeddings for
// voice cloning, stored as fp16 or int8 through package quant/vecpack with
// their encoder's digest, the most recent Options.MaxSpeakers kept, all of
// them decoded in memory). A broken file never stops speech: Open moves a
// corrupt file aside and starts a fresh one, and failed writes are
// returned and counted, never panicked.
//
// The warm-voice LRU and its memory-pressure probes never touch the file,
// so they live with the speech engine (package audio/engine), not here.
//
// The package never imports the daemon, MQTT or cgo packages; values are
// opaque bytes (the daemon stores audio encoded by the audio package's
// phrase codec, whose CRC tells it when a record is damaged: it then calls
// DeletePhrase).
package cache
