package mqtt

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mynah-tts/mynah/daemon"
)

type subscription struct {
	filters   []string
	handle    func(daemon.Message)
	connected func() // nil: the subscriber does not care about reconnects
	// side marks a helper transport's subscription (render client,
	// clock probe) on a connection whose "online" says the daemon's
	// commands are listened to: it does not release a pending "online"
	// (see onlinePending and Options.HelpersListen).
	side bool
}

// Subscribe subscribes to filters at QoS 1 and calls handle for every
// message whose topic matches one of them, including messages of the
// persistent session that arrived before this call. handle runs on paho's
// router goroutine, one message at a time: it must return quickly, must
// not publish synchronously and must not call Subscribe. A message that
// matches filters of several Subscribe calls reaches each handle once.
//
// The filters are renewed at the broker after every reconnect. If the
// connection is down when Subscribe is called, the subscription is made
// when it comes back and Subscribe returns nil.
//
// connected, if not nil, is called after every connect that comes later
// than this call, once the subscriptions are renewed and "online" is
// published, before Options.OnConnect. It runs on the connect goroutine,
// so it may publish; Close waits for it. A connection that is up when
// Subscribe is called need not be reported (the subscriber knows it is
// up), though one that came up just before the call may be.
func (c *Client) Subscribe(filters []string, handle func(daemon.Message), connected func()) error {
	return c.subscribe(filters, handle, connected, false)
}

// subscribe is Subscribe, for the helper transports with helper set.
func (c *Client) subscribe(filters []string, handle func(daemon.Message), connected func(), helper bool) error {
	side := helper && !c.s.helpers
	if handle == nil {
		return errors.New("subscribe: nil handler")
	}
	if len(filters) == 0 {
		return fmt.Errorf("subscribe: %w: no filters", ErrInvalidTopic)
	}
	for _, f := range filters {
		if err := ValidateFilter(f); err != nil {
			return fmt.Errorf("subscribe: %w", err)
		}
	}
	sub := &subscription{filters: append([]string(nil), filters...), handle: handle, connected: connected, side: side}

	c.dispatchMu.Lock()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		c.dispatchMu.Unlock()
		return fmt.Errorf("subscribe: %w", ErrClosed)
	}
	c.subs = append(c.subs, sub)
	attempting, renewed := c.attempting, c.renewed
	var replay []daemon.Message
	kept := c.pending[:0]
	for _, m := range c.pending {
		if sub.matches(m.Topic) {
			replay = append(replay, m)
			c.pendingBytes -= len(m.Payload)
		} else {
			kept = append(kept, m)
		}
	}
	clear(c.pending[len(kept):])
	c.pending = kept
	c.mu.Unlock()
	for _, m := range replay {
		handle(m)
	}
	c.dispatchMu.Unlock()

	if !c.pc.IsConnectionOpen() {
		return nil // onConnect subscribes when the connection is up
	}
	if attempting {
		// The connection has just come up and onConnect, which now
		// includes our filters, is about to renew the subscriptions:
		// wait for it (it logs its own errors).
		t := time.NewTimer(c.s.pubTimeout)
		defer t.Stop()
		select {
		case <-renewed:
		case <-t.C:
		case <-c.ctx.Done():
		}
		return nil
	}
	err := c.subscribeBroker(c.ctx, sub.filters)
	if err != nil && !c.pc.IsConnectionOpen() {
		return nil // lost the connection meanwhile; onConnect subscribes
	}
	if err != nil {
		c.mu.Lock()
		for i, s := range c.subs {
			if s == sub {
				c.subs = append(c.subs[:i], c.subs[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
		return fmt.Errorf("subscribe %q: %w", filters, err)
	}
	if side {
		return nil
	}
	c.mu.Lock()
	pending := c.onlinePending
	c.onlinePending = false
	c.mu.Unlock()
	if pending {
		c.publishOnline(c.s.log.With(logKeyBroker, c.s.broker.Redacted(), logKeyClientID, c.s.clientID))
	}
	return nil
}

func (s *subscription) matches(topic string) bool {
	for _, f := range s.filters {
		if matchTopic(topicFilter(f), topic) {
			return true
		}
	}
	return false
}

// subscribeBroker sends one SUBSCRIBE for filters and checks every
// granted QoS.
func (c *Client) subscribeBroker(ctx context.Context, filters []string) error {
	m := make(map[string]byte, len(filters))
	for _, f := range filters {
		m[f] = 1
	}
	tok := c.pc.SubscribeMultiple(m, nil) // nil: no paho route, see onMessage
	t := time.NewTimer(c.s.pubTimeout)
	defer t.Stop()
	if err := c.wait(ctx, t.C, tok); err != nil {
		return err
	}
	st, ok := tok.(*paho.SubscribeToken)
	if !ok {
		return nil
	}
	for f, code := range st.Result() {
		if code > 2 {
			return fmt.Errorf("%w: %q (return code 0x%02x)", ErrSubscribeRejected, f, code)
		}
	}
	return nil
}

// onMessage is paho's handler for every message (we add no paho routes).
func (c *Client) onMessage(_ paho.Client, pm paho.Message) {
	m := daemon.Message{
		Topic:    pm.Topic(),
		Payload:  bytes.Clone(pm.Payload()),
		Retained: pm.Retained(),
		// The broker's DUP flag: it sends the message again.
		Redelivered: pm.Duplicate(),
	}
	if c.s.manualAck {
		m.Ack = pm.Ack
	}
	c.dispatchMu.Lock()
	defer c.dispatchMu.Unlock()
	c.mu.Lock()
	var handlers []func(daemon.Message)
	for _, s := range c.subs {
		if s.matches(m.Topic) {
			handlers = append(handlers, s.handle)
		}
	}
	if len(handlers) == 0 {
		c.hold(m)
	}
	c.mu.Unlock()
	if len(handlers) > 1 && m.Ack != nil {
		m.Ack = ackAfter(len(handlers), m.Ack)
	}
	for _, h := range handlers {
		h(m)
	}
}

// ackAfter returns an Ack for a message that n handlers share: the broker
// is told once the last of them has acknowledged.
func ackAfter(n int, ack func()) func() {
	var left atomic.Int32
	left.Store(int32(n))
	return func() {
		if left.Add(-1) == 0 {
			ack()
		}
	}
}

// hold keeps a message no Subscribe has claimed yet. c.mu is held.
func (c *Client) hold(m daemon.Message) {
	if c.closed {
		return
	}
	c.pending = append(c.pending, m)
	c.pendingBytes += len(m.Payload)
	for len(c.pending) > MaxPendingMessages || c.pendingBytes > MaxPendingBytes {
		old := c.pending[0]
		c.pending[0] = daemon.Message{}
		c.pending = c.pending[1:]
		c.pendingBytes -= len(old.Payload)
		if old.Ack != nil {
			old.Ack() // lost either way; unacknowledged it would hold a broker slot
		}
		c.s.log.Warn("mqtt message dropped: no subscription claimed it and the pending list is full",
			logKeyTopic, truncate(old.Topic), logKeyHeld, len(c.pending))
	}
}
