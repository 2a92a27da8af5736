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
//     A render node's second connection is the exception: it asks for a
//     clean session (Options.CleanSession, RenderTransport).
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
//     every connect once the subscriptions are renewed (on the first
//     connect: once Subscribe, not a helper's transport, has subscribed);
//     "offline" again on Close.
package mqtt

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/url"
	"sync"
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
	// onlinePending is set when a connect found nothing subscribed yet
	// but side subscriptions: "online" then waits for the first
	// Subscribe, so nobody is told the daemon listens before it does (a
	// fresh session would drop commands published in between). mynahd's
	// render client subscribes before the daemon does.
	onlinePending bool
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
	// Persistent unless asked otherwise (Options.CleanSession).
	po.SetCleanSession(s.clean)
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
	listening := false
	for _, s := range c.subs {
		listening = listening || !s.side
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
	c.onlinePending = !listening
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
	if listening {
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
