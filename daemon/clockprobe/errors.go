package clockprobe

import "errors"

// The errors of the package. ErrMalformed is a ping or pong that does not
// decode or breaks a limit; the others are messages that decode but are
// refused: Run drops them, logging at debug level.
var (
	ErrMalformed = errors.New("malformed clock message")

	errOwn          = errors.New("own message")
	errNotForUs     = errors.New("pong addressed to another node")
	errUnknownSeq   = errors.New("pong to no ping of this round")
	errDuplicate    = errors.New("second pong of a peer to one ping")
	errNegative     = errors.New("negative round trip (a clock stepped during the exchange)")
	errTooManyPeers = errors.New("more peers than MaxPeers")
)
