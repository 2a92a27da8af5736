// Package render is mynah's "render once" protocol: a node that cannot
// or should not synthesize (mode remote) asks the render nodes (mode
// serve) for one sentence's phrase record, the compressed audio record
// mynah's phrase cache stores, and plays what comes back. The record is
// opaque here; audio.DecodePhrase checks its own CRC when it is played.
//
// The package has no MQTT client of its own: it speaks through the small
// Transport interface, which daemon/mqtt's Client provides
// (Client.RenderTransport). It imports nothing of the daemon either, so
// the engine and mynahd can both use it.
//
// # Topics
//
//	mynah/render/req                      requests for any render node (RequestTopic)
//	$share/mynah-render/mynah/render/req  what render nodes subscribe (ServeFilter)
//	mynah/render/node/<node>/req          requests for one render node (NodeTopic)
//	mynah/render/node/<node>/status       "online"/"offline", retained: its connection's will
//	mynah/render/node/<node>/voices       its voice catalog, retained (EncodeCatalog)
//	mynah/render/reply/<node>             one requester's answers (ReplyTopic)
//
// Render once. A requester follows the render nodes' status and catalog
// topics and sends each sentence to its owner: of the live nodes that
// have the voice, the one rendezvous hashing of the phrase key ranks
// first (Owners). Every requester that sees the same nodes picks the same
// owner, so a sentence that several speakers ask for is synthesized once
// in the fleet, and served from the owner's phrase cache after that. A
// node that comes or goes moves only the sentences it owns. Render nodes
// also share one subscription, so the broker hands a request on the
// shared topic to one of them in turn (Mosquitto 2 does this for MQTT
// 3.1.1 clients too): that is the way in while a requester knows no
// node, and for a try with no node left to rank. MQTT 3.1.1 has no
// response topic or correlation data, so both travel in the request:
// reply and id.
//
// # Request
//
// A JSON object of at most MaxRequestBytes (16 KiB), QoS 1, not retained:
//
//	{"id":"3f2a9c1e-1","reply":"mynah/render/reply/kitchen",
//	 "voice":"en_US-lessac-medium","speaker":"p1","rate":1,
//	 "text":"Dinner is ready.","normalize":true,"key":"<64 hex digits>"}
//
// id is 1..64 bytes of letters, digits, space, _ . - (the daemon's name
// rule); reply is ReplyPrefix and one level; voice and speaker are names;
// rate is 0.25..4; text is one sentence, 1..5000 runes of UTF-8 without
// NUL; key, optional, is the phrase key the requester computed. Unknown
// fields are ignored.
//
// # Answer
//
// The record, split into chunks of at most MaxChunkData (256 KiB), one
// MQTT message each, QoS 1, on the request's reply topic:
//
//	"MYR" | version 1 | header length (uint16, big-endian) | JSON header | data
//
// The header (at most MaxHeaderBytes, 4 KiB) is
//
//	{"id":"3f2a9c1e-1","seq":0,"total":3,"key":"<hex>","voice":"en_US-lessac-medium",
//	 "size":614400,"crc32c":2864434397}
//
// seq places the chunk (0..total-1), total is the number of chunks
// (1..MaxChunks, 64), size (1..MaxRecordBytes, 8 MiB) and crc32c (the
// Castagnoli CRC-32) are the whole record's. An error answer is one
// message with only id, voice, error (at most 512 bytes of text) and
// reason (a word: unknown_voice, key_mismatch, synthesis, too_large,
// bad_request), and no data. A message is at most MaxAnswerBytes, well
// under Mosquitto's default max_packet_size (2 MB) and EMQX's (1 MB).
//
// # Limits
//
// Every decoder of outside input (DecodeRequest, DecodeChunk, and the
// Client's reassembly) checks the limits above before it allocates, and
// has a fuzz test. A Client holds at most ClientOptions.MaxRecordBytes
// per Fetch in progress; a Server holds at most ServerOptions.Queue
// requests and renders ServerOptions.Concurrency (default 1) at once.
//
// # Failure behaviour
//
// Retry. A render node that drops loses the requests it had in flight
// (mosquitto#2662), and an offline member of a persistent session keeps
// receiving its share (mosquitto#1747). So Fetch waits
// ClientOptions.Timeout (default 3 s) and then asks once more with the
// same id, of the next node in rank (or, with none, on the shared
// topic); an answer to either try is taken. A node killed without a
// goodbye is taken out of the rankings as soon as the broker publishes
// its will. When no node is online and the last Fetch went unanswered,
// Fetch fails at once for ClientOptions.Quiet (30 s) or until a node is
// back, so a speaker whose render nodes are down synthesizes without
// waiting two timeouts per sentence. An error answer saying the node lacks the voice or
// has another model of it (unknown_voice, key_mismatch) is retried at
// once in the same way.
//
// Dedupe. Chunks may come out of order or twice (QoS 1 redelivery, or
// two nodes answering the same id): a chunk whose (id, seq) is already
// held is dropped. The first chunk of an answer fixes its total, size,
// CRC and key; chunks that disagree are refused. A Server drops a
// request whose id and reply topic it already has waiting or rendering
// (the requester's retry), and one that waited past
// ServerOptions.MaxWait.
//
// Verify. An answer is taken only for an id a Fetch is waiting for
// (answers to ids never asked, or already answered or given up, are
// refused), in the voice asked for, under the key asked for when the
// request had one, and when the reassembled record has the announced
// size and CRC-32C. Refused chunks are counted by reason (ClientStats)
// and never returned. The checks catch damage, mix-ups and stale or
// stray answers, not a determined forger: whoever may read the requests
// and publish on a requester's reply topic can answer for a render node.
// ACLs on mynah/render/# decide who may.
//
// Fallback. When neither try brings a verified record, Fetch fails with
// an error wrapping ErrNoRenderer (its reason is render) that says what
// happened; the caller synthesizes locally if it can, or fails the
// sentence with reason render. An error answer is returned as an
// *AnswerError with the node's reason instead.
//
// # Broker
//
// A render node's connection should use a clean session (daemon/mqtt
// Options.CleanSession), or, while it is offline, the broker goes on
// handing it its share of the requests, each costing a requester a
// timeout. Transport has no unsubscribe, so that connection should also
// end when Server.Serve does.
package render
