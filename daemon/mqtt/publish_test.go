package mqtt_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// returnsWithin runs f and fails the test if it has not returned within
// wait: the property under test is "bounded", not "fast".
func returnsWithin[T any](t *testing.T, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(wait):
		t.Fatalf("%s did not return within %v", what, wait)
		var zero T
		return zero
	}
}

func TestPublishCanceledContext(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t).URL()
	tc := connectClient(t, url, uniq(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := returnsWithin(t, "Publish", func() error {
		return tc.Publish(ctx, "mynah/x/event", []byte("x"), false)
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Publish with canceled ctx: %v, want context.Canceled", err)
	}
}

// TestPublishBrokerSilent: the broker stops answering (bytes vanish on
// the way). Publish must give up at the caller's deadline or at
// PublishTimeout, whichever comes first.
func TestPublishBrokerSilent(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	p := startProxy(t, m.Addr())
	tc := connectClient(t, p.url(), uniq(), func(o *mqtt.Options) {
		o.PublishTimeout = 500 * time.Millisecond
	})
	tc.waitConnected(t)
	p.blackout.Store(true)

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := returnsWithin(t, "Publish", func() error {
		return tc.Publish(ctx, "mynah/x/event", []byte("lost"), false)
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Publish with short ctx: %v, want context.DeadlineExceeded", err)
	}
	err = returnsWithin(t, "Publish", func() error {
		return tc.Publish(context.Background(), "mynah/x/event", []byte("lost"), false)
	})
	if !errors.Is(err, mqtt.ErrPublishTimeout) {
		t.Errorf("Publish to a silent broker: %v, want ErrPublishTimeout", err)
	}
	err = returnsWithin(t, "Close", func() error {
		return tc.Close(context.Background())
	})
	if !errors.Is(err, mqtt.ErrPublishTimeout) {
		t.Errorf("Close with a silent broker: %v, want ErrPublishTimeout (offline not acknowledged)", err)
	}
}

func TestPublishValidation(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t).URL()
	tc := connectClient(t, url, uniq(), nil)
	ctx := context.Background()
	for _, tt := range []struct {
		topic   string
		payload []byte
		want    error
	}{
		{"", nil, mqtt.ErrInvalidTopic},
		{"mynah/+/event", nil, mqtt.ErrInvalidTopic},
		{"mynah/#", nil, mqtt.ErrInvalidTopic},
		{"mynah/\x00", nil, mqtt.ErrInvalidTopic},
		{"mynah/\xff", nil, mqtt.ErrInvalidTopic},
		{strings.Repeat("a", mqtt.MaxTopicLen+1), nil, mqtt.ErrInvalidTopic},
		{"mynah/x/event", make([]byte, mqtt.MaxPublishSize+1), mqtt.ErrPayloadTooLarge},
	} {
		if err := tc.Publish(ctx, tt.topic, tt.payload, false); !errors.Is(err, tt.want) {
			t.Errorf("Publish(%.20q, %d bytes) = %v, want %v", tt.topic, len(tt.payload), err, tt.want)
		}
	}
	// The limits themselves are allowed.
	if err := tc.Publish(ctx, "mynah/x/event", make([]byte, mqtt.MaxPublishSize), false); err != nil {
		t.Errorf("Publish of MaxPublishSize bytes: %v", err)
	}
	if err := tc.Publish(ctx, "mynah/x/empty", nil, false); err != nil {
		t.Errorf("Publish of 0 bytes: %v", err)
	}
}

func TestSubscribeValidation(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t).URL()
	tc := connectClient(t, url, uniq(), nil)
	nop := func(daemon.Message) {}
	for _, filters := range [][]string{
		nil,
		{""},
		{"mynah/#/say"},
		{"mynah/x+/say"},
		{"mynah/ok", "bad/#/x"},
	} {
		if err := tc.Subscribe(filters, nop, nil); !errors.Is(err, mqtt.ErrInvalidTopic) {
			t.Errorf("Subscribe(%q) = %v, want ErrInvalidTopic", filters, err)
		}
	}
	if err := tc.Subscribe([]string{"mynah/x"}, nil, nil); err == nil {
		t.Error("Subscribe with nil handler succeeded")
	}
}

// TestCloseOffline: Close announces "offline" (live and retained), and
// the client refuses work afterwards.
func TestCloseOffline(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartMosquitto(t).URL()
	node := uniq()
	status := mqtttest.Subscribe(t, url, "mynah/"+node+"/status")
	tc := connectClient(t, url, node, nil)
	tc.subscribe(t, "mynah/"+node+"/say") // "online" follows the first subscription
	waitPayload(t, status, mqtt.StatusOnline, nil)
	tc.waitConnected(t)

	if err := tc.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	waitPayload(t, status, mqtt.StatusOffline, live)
	fresh := mqtttest.Subscribe(t, url, "mynah/"+node+"/status")
	waitPayload(t, fresh, mqtt.StatusOffline, retained)

	if err := tc.Close(context.Background()); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if err := tc.Publish(context.Background(), "mynah/x/event", nil, false); !errors.Is(err, mqtt.ErrClosed) {
		t.Errorf("Publish after Close: %v, want ErrClosed", err)
	}
	if err := tc.Subscribe([]string{"mynah/x"}, func(daemon.Message) {}, nil); !errors.Is(err, mqtt.ErrClosed) {
		t.Errorf("Subscribe after Close: %v, want ErrClosed", err)
	}
}

// TestConnectGivesUp: with no broker, Connect keeps trying until its
// context ends and then says why the attempts failed.
func TestConnectGivesUp(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens here now

	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	err = returnsWithin(t, "Connect", func() error {
		c, err := mqtt.Connect(ctx, &mqtt.Options{Broker: "tcp://" + addr, StatusTopic: "mynah/x/status"})
		if c != nil {
			c.Close(context.Background())
		}
		return err
	})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect: %v, want context.DeadlineExceeded", err)
	}
	if !strings.Contains(err.Error(), "last attempt") || !strings.Contains(err.Error(), "refused") {
		t.Errorf("Connect error %q does not say why the attempts failed", err)
	}
}

// TestSubscribeWhileDisconnected: Subscribe during an outage returns nil
// and the subscription is made when the connection comes back.
func TestSubscribeWhileDisconnected(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	p := startProxy(t, m.Addr())
	node := uniq()
	status := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")
	tc := connectClient(t, p.url(), node, nil)
	tc.waitConnected(t)
	p.refuse.Store(true)
	p.cut()
	waitPayload(t, status, mqtt.StatusOffline, live)
	waitDisconnected(t, tc)

	got := tc.subscribe(t, "mynah/"+node+"/say")
	p.refuse.Store(false)
	tc.waitConnected(t) // OnConnect runs after the subscriptions are renewed
	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte("late"), false)
	if msg := recv(t, got); string(msg.Payload) != "late" {
		t.Errorf("got %q", msg.Payload)
	}
}
