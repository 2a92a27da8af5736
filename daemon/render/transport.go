package render

import "context"

// Transport is the MQTT connection as this package needs it; mynahd's
// daemon/mqtt client provides one (Client.RenderTransport).
type Transport interface {
	// Subscribe subscribes to filters at QoS 1 for as long as the
	// transport lives (renewed after reconnects) and calls handle for
	// every message, with its topic as published (a shared subscription's
	// "$share/<group>/" is not part of it). handle runs on the transport's
	// goroutine: it returns quickly and never publishes. The handler may
	// keep the payload, but never changes it.
	Subscribe(filters []string, handle func(topic string, payload []byte)) error
	// Publish sends payload at QoS 1, not retained, and returns once the
	// broker has it, or when ctx ends.
	Publish(ctx context.Context, topic string, payload []byte) error
}
