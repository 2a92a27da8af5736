package render

import "errors"

// Errors of this package, in one place. Those a caller reports as an
// event reason carry it (Reason, the same method daemon.Reasoner asks
// for), so the daemon finds the reason without knowing the error.
var (
	// ErrNoRenderer is what Fetch wraps when no render node answered with
	// a record it could verify, on the first try nor on the retry (or
	// neither request could be published). The wrapped message says what
	// happened: timeouts, refused answers and the last publish error. The
	// caller falls back to local synthesis or fails with reason render.
	ErrNoRenderer = reasoned("no render node answered", ReasonRender)
	// ErrUnknownVoice is what a RenderFunc wraps for a voice this node
	// does not have: the error answer says unknown_voice, and the
	// requester asks again, which the broker hands to another render node.
	ErrUnknownVoice = reasoned("voice unknown here", ReasonUnknownVoice)

	// ErrInvalidRequest is wrapped by Request.Validate and DecodeRequest.
	ErrInvalidRequest = errors.New("invalid render request")
	// ErrInvalidAnswer is wrapped by DecodeChunk and EncodeChunk.
	ErrInvalidAnswer = errors.New("invalid render answer")
	// ErrInvalidCatalog is wrapped by DecodeCatalog and EncodeCatalog.
	ErrInvalidCatalog = errors.New("invalid render catalog")
	// ErrTooLarge is wrapped, together with ErrInvalidRequest or
	// ErrInvalidAnswer, when a payload, record or field is over one of
	// the package's limits.
	ErrTooLarge = errors.New("over a render limit")
	// ErrInvalidOptions is wrapped by NewClient and NewServer; the
	// message names the field.
	ErrInvalidOptions = errors.New("invalid render options")
	// ErrIDInUse: Fetch was given the id of a Fetch still in progress on
	// the same Client, whose answers it could not tell apart.
	ErrIDInUse = errors.New("render id already waited for")
	// ErrServing: Serve was called on a Server that is serving already.
	ErrServing = errors.New("render server already serving")
)

// Reasons an error answer carries, and ErrNoRenderer's. They match the
// daemon's event reasons where one exists.
const (
	ReasonUnknownVoice = "unknown_voice" // the voice is not on this render node
	ReasonKeyMismatch  = "key_mismatch"  // this node's voice gives another phrase key (another model)
	ReasonSynthesis    = "synthesis"     // the render failed
	ReasonTooLarge     = "too_large"     // the record is over MaxRecordBytes or MaxChunks
	ReasonBadRequest   = "bad_request"   // the request broke the protocol (another version?)
	ReasonRender       = "render"        // no render node answered (ErrNoRenderer)
)

// Why the Client refused an answer chunk, the keys of
// ClientStats.Refused. A refused chunk is never part of a returned
// record; the Fetch goes on waiting for a good answer.
const (
	RefusedMalformed    = "malformed"    // DecodeChunk failed
	RefusedTooLarge     = "too_large"    // over a limit: the payload, or the record over ClientOptions.MaxRecordBytes
	RefusedUnknownID    = "unknown_id"   // no Fetch ever asked for this id
	RefusedAnswered     = "answered"     // the id's Fetch has returned (answered, failed or given up)
	RefusedVoice        = "voice"        // another voice than the one asked for
	RefusedKey          = "key"          // another phrase key than the one asked for
	RefusedTotal        = "total"        // the chunk count differs from the answer's first chunk
	RefusedInconsistent = "inconsistent" // size, crc32c or key differ from the answer's first chunk
	RefusedSize         = "size"         // the chunks hold more or fewer bytes than the answer's size
	RefusedCRC          = "crc"          // the reassembled record's CRC-32C is not the answer's
)

// Why the Server dropped a request without rendering it, the keys of
// ServerStats.Dropped.
const (
	DroppedMalformed = "malformed" // not a request, and no valid id and reply topic to answer on
	DroppedBusy      = "busy"      // ServerOptions.Queue requests were waiting already
	DroppedStale     = "stale"     // waited over ServerOptions.MaxWait: the requester has asked again
	DroppedDuplicate = "duplicate" // the same id on the same reply topic is waiting or rendering already
	DroppedStopped   = "stopped"   // came while the server was not serving, or Serve ended before its answer
)

// reasonedError is a sentinel error with its reason.
type reasonedError struct{ msg, reason string }

func reasoned(msg, reason string) *reasonedError { return &reasonedError{msg, reason} }

func (e *reasonedError) Error() string  { return e.msg }
func (e *reasonedError) Reason() string { return e.reason }

// AnswerError is a render node's error answer, as Fetch returns it: the
// node got the request and said why it gives no record. It is not
// ErrNoRenderer; Reason is the node's (ReasonUnknownVoice,
// ReasonSynthesis, ...), checked to be a short lower-case word.
type AnswerError struct {
	ID      string // the request's id
	Message string // the node's error text
	reason  string
}

func (e *AnswerError) Error() string {
	return "render node: " + e.Message + " (" + e.reason + ")"
}

// Reason returns the reason the node gave.
func (e *AnswerError) Reason() string { return e.reason }

// reasonOf returns the reason of the first error in err's chain that has
// one, or fallback.
func reasonOf(err error, fallback string) string {
	var r interface{ Reason() string }
	if errors.As(err, &r) && validReason(r.Reason()) {
		return r.Reason()
	}
	return fallback
}
