// Package mqtt connects mynahd to an MQTT broker with Eclipse paho, and
// can run a small embedded broker (mochi-mqtt) for machines that have none.
//
// The Client implements daemon.Transport. Its choices, and why:
//
//   - Persistent session (clean session off) with a stable client id, so
//     QoS 1 commands published while mynahd restarts wait at the broker.
//     Every subscription is renewed after every (re)connect anyway: a
//     broker that lost its state (restart without persistence, session
//     expiry) would otherwise leave the daemon deaf while looking healthy.
//   - Messages are routed by this package, not by paho's router, so that
//     the persistent session's backlog, which arrives right after CONNACK
//     and before the daemon has called Subscribe, is held (bounded by
//     MaxPendingMessages) and handed over by Subscribe instead of being
//     acknowledged and lost.
//   - paho's "order matters" stays on: handlers run one at a time on
//     paho's router goroutine, in arrival order, which the daemon's FIFO
//     within a priority depends on. The price is that a handler must never
//     block or publish synchronously (the acknowledgement waits for it and
//     a synchronous publish would deadlock); the daemon's handler only
//     decodes and enqueues. Turning it off would run every message on its
//     own goroutine and reorder commands.
//   - Duplicates (the DUP flag after a reconnect) are passed on; the daemon
//     drops repeated request ids.
//   - Every wait on the broker is bounded by PublishTimeout and the
//     caller's context. Publish fails fast with ErrNotConnected while the
//     connection is down rather than queueing stale events (the daemon
//     retries what matters), and returns nil only on the broker's PUBACK,
//     also for a message paho resent after a reconnect.
//   - Last will "offline" (QoS 1, retained) on StatusTopic; "online" after
//     every connect; "offline" again on Close.
package mqtt

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mynah-tts/mynah/daemon"
)

var _ daemon.Transport = (*Client)(nil)

// Log attribute keys.
const (
	logKeyBroker   = "broker"
	logKeyClientID = "client_id"
	logKeyTopic    = "topic"
	logKeyErr      = "err"
	logKeyFilters  = "filters"
	logKeyHeld     = "held"
)

// closeQuiesce is how long Close lets paho flush the DISCONNECT packet.
const closeQuiesce = 250 * time.Millisecond

// Client is a connection to an MQTT broker that reconnects by itself.
// Its methods are safe for concurrent use.
type Client struct {
	s     *settings
	pc    paho.Client
	store *epochStore

	// ctx ends when Close starts; it bounds the waits of onConnect.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // running onConnect calls

	// dispatchMu serializes handler calls, so that messages replayed from
	// the pending list by Subscribe and live ones keep their order.
	dispatchMu sync.Mutex

	mu           sync.Mutex
	closed       bool
	subs         []*subscription
	pending      []daemon.Message
	pendingBytes int
	lastErr      error // last failed connection attempt
	// attempting is set when a connection attempt starts and cleared when
	// onConnect takes its list of filters to renew; renewed is closed
	// once that renewal is done. Subscribe uses them so that a filter is
	// subscribed once per connection, not by both Subscribe and onConnect
	// (which would make the broker send retained messages twice).
	attempting bool
	renewed    chan struct{}
	// onlinePending is set when a connect found nothing subscribed yet:
	// "online" then waits for the first Subscribe, so nobody is told the
	// daemon listens before it does (a fresh session would drop commands
	// published in between).
	onlinePending bool
}

type subscription struct {
	filters   []string
	handle    func(daemon.Message)
	connected func() // nil: the subscriber does not care about reconnects
}

// Connect connects to opts.Broker and returns once the first connection
// is up. While the broker is unreachable it keeps retrying until ctx ends
// (give it a deadline to give up); the error then includes the reason of
// the last failed attempt. Options are validated first; those errors wrap
// ErrInvalidOptions. After Connect, the client reconnects by itself.
func Connect(ctx context.Context, opts *Options) (*Client, error) {
	s, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	store := newEpochStore(s.log)
	c := &Client{s: s, store: store}
	c.ctx, c.cancel = context.WithCancel(context.Background())

	po := paho.NewClientOptions()
	po.AddBroker(s.broker.String())
	po.SetClientID(s.clientID)
	po.SetUsername(s.username)
	po.SetPassword(s.password)
	po.SetTLSConfig(s.tls)
	po.SetProtocolVersion(4) // 3.1.1: no silent fallback to 3.1
	po.SetCleanSession(false)
	po.SetOrderMatters(true) // see the package comment
	po.SetAutoAckDisabled(s.manualAck)
	po.SetKeepAlive(s.keepAlive)
	po.SetConnectTimeout(s.connTimeout)
	po.SetDialer(&net.Dialer{Timeout: s.connTimeout})
	po.SetWriteTimeout(s.pubTimeout) // bounds the hand-over to paho's writer
	po.SetAutoReconnect(true)
	po.SetConnectRetry(true)
	po.SetConnectRetryInterval(min(2*time.Second, s.maxBackoff))
	po.SetMaxReconnectInterval(s.maxBackoff)
	po.SetResumeSubs(false) // we renew subscriptions ourselves
	po.SetStore(store)
	po.SetConnectionAttemptHandler(func(_ *url.URL, cfg *tls.Config) *tls.Config {
		store.newEpoch()
		c.attemptStarted()
		return cfg
	})
	if s.statusTopic != "" {
		po.SetWill(s.statusTopic, StatusOffline, 1, true)
	}
	po.SetDefaultPublishHandler(c.onMessage)
	po.SetOnConnectHandler(c.onConnect)
	po.SetConnectionLostHandler(c.onConnectionLost)
	po.SetConnectionNotificationHandler(c.onNotification)
	c.pc = paho.NewClient(po)

	broker := s.broker.Redacted()
	tok := c.pc.Connect()
	select {
	case <-tok.Done():
		if err := tok.Error(); err != nil {
			c.abort()
			return nil, fmt.Errorf("connect %s: %w", broker, err)
		}
	case <-ctx.Done():
		c.abort()
		c.mu.Lock()
		last := c.lastErr
		c.mu.Unlock()
		if last != nil {
			return nil, fmt.Errorf("connect %s: %w (last attempt: %v)", broker, ctx.Err(), last)
		}
		return nil, fmt.Errorf("connect %s: %w", broker, ctx.Err())
	}
	return c, nil
}

// abort stops a client whose Connect failed.
func (c *Client) abort() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.pc.Disconnect(0)
	c.wg.Wait()
}

// Connected reports whether the connection is up right now.
func (c *Client) Connected() bool { return c.pc.IsConnectionOpen() }

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
	sub := &subscription{filters: append([]string(nil), filters...), handle: handle, connected: connected}

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
	c.mu.Lock()
	pending := c.onlinePending
	c.onlinePending = false
	c.mu.Unlock()
	if pending {
		c.publishOnline(c.s.log.With(logKeyBroker, c.s.broker.Redacted(), logKeyClientID, c.s.clientID))
	}
	return nil
}

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

func (s *subscription) matches(topic string) bool {
	for _, f := range s.filters {
		if matchTopic(f, topic) {
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

// Close publishes "offline" on the status topic, disconnects and waits for
// the connected and OnConnect callbacks if they are running. It returns the first error;
// the connection is closed in any case. Closing twice is a no-op.
func (c *Client) Close(ctx context.Context) error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	c.mu.Unlock()

	// Stop onConnect first, so that a late "online" cannot follow our
	// "offline" (both travel in order over the one connection).
	c.cancel()
	var first error
	done := make(chan struct{})
	go func() {
		c.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		first = fmt.Errorf("close: wait for OnConnect: %w", ctx.Err())
	}

	// If the connection is down, the broker has already published the
	// last will.
	if c.pc.IsConnectionOpen() && c.s.statusTopic != "" {
		if err := c.publish(ctx, c.s.statusTopic, []byte(StatusOffline), true); err != nil && first == nil {
			first = fmt.Errorf("close: %w", err)
		}
	}
	quiesce := closeQuiesce
	if dl, ok := ctx.Deadline(); ok {
		quiesce = max(0, min(quiesce, time.Until(dl)))
	}
	c.pc.Disconnect(uint(quiesce.Milliseconds()))
	c.s.log.Info("mqtt disconnected", logKeyBroker, c.s.broker.Redacted())
	return first
}

// onMessage is paho's handler for every message (we add no paho routes).
func (c *Client) onMessage(_ paho.Client, pm paho.Message) {
	m := daemon.Message{
		Topic:    pm.Topic(),
		Payload:  bytes.Clone(pm.Payload()),
		Retained: pm.Retained(),
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

// onConnect runs on its own goroutine (paho starts it) after every
// successful connect: renew subscriptions, announce "online", then call
// the subscribers' connected callbacks and the user's OnConnect.
func (c *Client) onConnect(paho.Client) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return
	}
	c.wg.Add(1)
	renewed := c.renewed
	c.attempting, c.renewed = false, nil
	seen := make(map[string]bool)
	var filters []string
	var connected []func()
	for _, s := range c.subs {
		if s.connected != nil {
			connected = append(connected, s.connected)
		}
		for _, f := range s.filters {
			if !seen[f] {
				seen[f] = true
				filters = append(filters, f)
			}
		}
	}
	// Decided under the same lock as the snapshot: a Subscribe that comes
	// after it finds the flag and announces "online" itself.
	c.onlinePending = len(filters) == 0
	c.mu.Unlock()
	defer c.wg.Done()

	log := c.s.log.With(logKeyBroker, c.s.broker.Redacted(), logKeyClientID, c.s.clientID)
	log.Info("mqtt connected")
	if len(filters) > 0 {
		if err := c.subscribeBroker(c.ctx, filters); err != nil {
			log.Error("mqtt resubscribe failed; commands may be missed until the next reconnect",
				logKeyFilters, filters, logKeyErr, err)
		}
	}
	if renewed != nil {
		close(renewed)
	}
	if len(filters) > 0 {
		c.publishOnline(log)
	}
	for _, fn := range connected {
		if c.ctx.Err() != nil {
			return
		}
		fn()
	}
	if c.s.onConnect != nil && c.ctx.Err() == nil {
		c.s.onConnect()
	}
}

// attemptStarted runs (on paho's connecting goroutine) before every
// connection attempt.
func (c *Client) attemptStarted() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.attempting {
		c.attempting, c.renewed = true, make(chan struct{})
	}
}

func (c *Client) onConnectionLost(_ paho.Client, err error) {
	c.s.log.Warn("mqtt connection lost; reconnecting", logKeyBroker, c.s.broker.Redacted(), logKeyErr, err)
}

// onNotification records why connection attempts fail, so that Connect
// can say more than "context deadline exceeded".
func (c *Client) onNotification(_ paho.Client, n paho.ConnectionNotification) {
	f, ok := n.(paho.ConnectionNotificationFailed)
	if !ok {
		return
	}
	c.mu.Lock()
	c.lastErr = f.Reason
	closed := c.closed
	c.mu.Unlock()
	if !closed {
		c.s.log.Warn("mqtt connect attempt failed", logKeyBroker, c.s.broker.Redacted(), logKeyErr, f.Reason)
	}
}
