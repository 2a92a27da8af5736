package mqtt

import "errors"

// Sentinel errors. Callers test them with errors.Is; the wrapped message
// says which field, topic or limit was at fault.
var (
	// ErrInvalidOptions: an Options or BrokerOptions field is wrong. The
	// message names the field.
	ErrInvalidOptions = errors.New("invalid mqtt options")
	// ErrInvalidTopic: a topic or filter breaks the MQTT topic rules
	// (empty, over MaxTopicLen, invalid UTF-8, NUL, misplaced wildcard).
	ErrInvalidTopic = errors.New("invalid mqtt topic")
	// ErrPayloadTooLarge: a payload is over MaxPublishSize.
	ErrPayloadTooLarge = errors.New("mqtt payload too large")
	// ErrNotConnected: the broker connection is down right now. Publish
	// fails fast instead of queueing, so that a daemon whose broker is gone
	// does not pile up stale events; the client keeps reconnecting.
	ErrNotConnected = errors.New("mqtt not connected")
	// ErrPublishTimeout: the broker did not acknowledge a QoS 1 publish
	// within Options.PublishTimeout.
	ErrPublishTimeout = errors.New("mqtt publish timed out")
	// ErrSubscribeRejected: the broker refused a subscription (SUBACK 0x80),
	// usually an ACL that does not grant read access.
	ErrSubscribeRejected = errors.New("mqtt subscription rejected")
	// ErrClosed: the client or broker was closed.
	ErrClosed = errors.New("mqtt closed")
	// ErrNotLoopback: the embedded broker was asked to listen on an
	// address other than loopback without BrokerOptions.AllowRemote. It
	// lets every client in, so exposing it must be a deliberate choice.
	ErrNotLoopback = errors.New("embedded broker address is not loopback")
)
