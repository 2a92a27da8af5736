package mqtt

import (
	"context"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/render"
)

// RenderTransport returns c as the transport of package render: its
// Subscribe is Client.Subscribe without a connected callback (the
// subscriptions are renewed after every reconnect anyway), acknowledging
// each message once the handler has returned; the first connect's
// "online" still waits for Client.Subscribe (the daemon's commands).
// Its Publish is Client.Publish, not retained.
//
// A render node (render.Serve) should get a connection of its own with
// Options.CleanSession: with mynahd's persistent session the broker goes
// on handing an offline node its share of the requests
// (mosquitto#1747), and each one costs a requester a timeout.
func (c *Client) RenderTransport() render.Transport { return renderTransport{c} }

type renderTransport struct{ c *Client }

func (t renderTransport) Subscribe(filters []string, handle func(topic string, payload []byte)) error {
	return t.c.subscribe(filters, func(m daemon.Message) {
		handle(m.Topic, m.Payload)
		if m.Ack != nil {
			m.Ack()
		}
	}, nil, true)
}

func (t renderTransport) Publish(ctx context.Context, topic string, payload []byte) error {
	return t.c.Publish(ctx, topic, payload, false)
}
