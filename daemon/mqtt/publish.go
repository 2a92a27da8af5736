package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mynah-tts/mynah/daemon"
)

// publishOnline announces, retained, that the client is connected and
// subscribed.
func (c *Client) publishOnline(log *slog.Logger) {
	if c.s.statusTopic == "" {
		return
	}
	if err := c.publish(c.ctx, c.s.statusTopic, []byte(StatusOnline), true); err != nil {
		log.Warn("mqtt publish online failed", logKeyTopic, c.s.statusTopic, logKeyErr, err)
	}
}

// Publish sends payload at QoS 1 and waits for the broker's
// acknowledgement (PUBACK), at most until ctx ends or PublishTimeout
// passes. While the connection is down it fails at once with
// ErrNotConnected (wrapping daemon.ErrNotSent: nothing left).
//
// A message whose connection drops before the acknowledgement is resent
// by paho after the reconnect (on at most 3 reconnects); Publish goes on
// waiting for that copy's acknowledgement, within the same bounds. Any
// error but ErrNotConnected therefore leaves open whether the broker has
// the message: it may still arrive later.
func (c *Client) Publish(ctx context.Context, topic string, payload []byte, retained bool) error {
	c.mu.Lock()
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return fmt.Errorf("publish %s: %w", truncate(topic), ErrClosed)
	}
	return c.publish(ctx, topic, payload, retained)
}

func (c *Client) publish(ctx context.Context, topic string, payload []byte, retained bool) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("publish %s: %w", truncate(topic), err)
	}
	if err := ValidateTopic(topic); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	if len(payload) > MaxPublishSize {
		return fmt.Errorf("publish %s: %w: %d bytes is over MaxPublishSize (%d)", topic, ErrPayloadTooLarge, len(payload), MaxPublishSize)
	}
	if !c.pc.IsConnectionOpen() {
		return fmt.Errorf("publish %s: %w (%w)", topic, ErrNotConnected, daemon.ErrNotSent)
	}
	// paho keeps the slice until the broker acknowledges it, possibly
	// after a reconnect; the caller may reuse its buffer once we return.
	own := bytes.Clone(payload)
	if len(own) == 0 {
		own = []byte{} // a retained clear: nothing to tell copies apart by
	}
	tok := c.pc.Publish(topic, 1, retained, own)
	t := time.NewTimer(c.s.pubTimeout)
	defer t.Stop()
	if err := c.wait(ctx, t.C, tok); err != nil {
		return fmt.Errorf("publish %s: %w", topic, err)
	}
	// Completed by a PUBACK, or by paho taking the message over for
	// resending after a reconnect: then wait for the resent copy's.
	pt, ok := tok.(*paho.PublishToken)
	if !ok {
		return nil
	}
	key := fmt.Sprintf("o.%d", pt.MessageID())
	ack := c.store.awaitAck(key, own)
	if ack == nil {
		return nil
	}
	defer c.store.forget(key, ack)
	select {
	case acked := <-ack:
		if !acked {
			return fmt.Errorf("publish %s: %w: given up after %d resends", topic, ErrPublishTimeout, maxResends)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("publish %s: %w", topic, ctx.Err())
	case <-t.C:
		return fmt.Errorf("publish %s: %w after %v (the connection dropped and the resent copy is not acknowledged yet)", topic, ErrPublishTimeout, c.s.pubTimeout)
	}
}

// wait waits for a paho token, bounded by ctx and timeout.
func (c *Client) wait(ctx context.Context, timeout <-chan time.Time, tok paho.Token) error {
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			if errors.Is(err, paho.ErrNotConnected) {
				return fmt.Errorf("%w: %w (%w)", ErrNotConnected, err, daemon.ErrNotSent)
			}
			return err
		}
		return nil
	case <-ctx.Done():
		return ctx.Err()
	case <-timeout:
		return fmt.Errorf("%w after %v", ErrPublishTimeout, c.s.pubTimeout)
	}
}
