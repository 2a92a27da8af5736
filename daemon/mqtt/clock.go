package mqtt

import "github.com/mynah-tts/mynah/daemon/clockprobe"

// ClockTransport returns c as the transport of package clockprobe, which
// has the shape of package render's: Subscribe without a connected
// callback, acknowledging each message once the handler has returned;
// Publish not retained. mynahd probes and answers on its one persistent
// connection: a ping that waited in the session while the node was away
// is dropped by the prober when the pong comes (its round is over).
func (c *Client) ClockTransport() clockprobe.Transport { return renderTransport{c} }
