package mqtttest

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mynah-tts/mynah/daemon"
)

// How long the helpers wait for the broker before failing the test, and
// how many messages a Subscribe channel buffers.
const (
	helperWait      = 15 * time.Second
	subscribeBuffer = 4096
)

// Subscribe connects a throwaway client (clean session, auto-reconnect)
// to url, subscribes to topic at QoS 1 and returns the messages it
// receives; it returns after the broker acknowledged the subscription.
// The subscription is renewed after a reconnect, so the channel keeps
// working across a broker restart. A test that lets more than 4096
// messages pile up in the channel fails. The client disconnects when the
// test ends.
func Subscribe(tb testing.TB, url, topic string) <-chan daemon.Message {
	tb.Helper()
	return subscribe(tb, clientOptions(url, "mqtttest-sub-"), topic)
}

// SubscribeSession is Subscribe with a persistent session under clientID
// (clean session off): the broker keeps what is published on topic while
// this client is disconnected, also across a broker restart once the
// session is saved (Mosquitto.Flush), and sends it after the reconnect.
// A test that counts every message across a broker kill needs it.
func SubscribeSession(tb testing.TB, url, topic, clientID string) <-chan daemon.Message {
	tb.Helper()
	opts := clientOptions(url, "")
	opts.SetClientID(clientID).SetCleanSession(false)
	return subscribe(tb, opts, topic)
}

func subscribe(tb testing.TB, opts *paho.ClientOptions, topic string) <-chan daemon.Message {
	tb.Helper()
	ch := make(chan daemon.Message, subscribeBuffer)
	handle := func(_ paho.Client, m paho.Message) {
		msg := daemon.Message{Topic: m.Topic(), Payload: bytes.Clone(m.Payload()), Retained: m.Retained()}
		select {
		case ch <- msg:
		default:
			tb.Errorf("mqtttest: subscriber on %s: more than %d unread messages", topic, subscribeBuffer)
		}
	}
	subscribed := make(chan error, 1)
	opts.SetDefaultPublishHandler(handle) // a resumed session's backlog comes before the SUBACK
	opts.SetOnConnectHandler(func(c paho.Client) {
		// Runs on its own goroutine after every (re)connect.
		tok := c.Subscribe(topic, 1, handle)
		var err error
		if !tok.WaitTimeout(helperWait) {
			err = errTimeout
		} else {
			err = tok.Error()
		}
		select {
		case subscribed <- err:
		default:
		}
	})
	c := connect(tb, opts)
	select {
	case err := <-subscribed:
		if err != nil {
			tb.Fatalf("mqtttest: subscribe %s: %v", topic, err)
		}
	case <-time.After(helperWait):
		tb.Fatalf("mqtttest: subscribe %s: no SUBACK within %v", topic, helperWait)
	}
	tb.Cleanup(func() { c.Disconnect(100) })
	return ch
}

// Publish connects to url, publishes payload at QoS 1, waits for the
// broker's acknowledgement and disconnects.
func Publish(tb testing.TB, url, topic string, payload []byte, retained bool) {
	tb.Helper()
	c := connect(tb, clientOptions(url, "mqtttest-pub-"))
	defer c.Disconnect(100)
	tok := c.Publish(topic, 1, retained, payload)
	if !tok.WaitTimeout(helperWait) {
		tb.Fatalf("mqtttest: publish %s: no PUBACK within %v", topic, helperWait)
	}
	if err := tok.Error(); err != nil {
		tb.Fatalf("mqtttest: publish %s: %v", topic, err)
	}
}

func clientOptions(url, prefix string) *paho.ClientOptions {
	id := make([]byte, 6)
	_, _ = rand.Read(id)
	return paho.NewClientOptions().
		AddBroker(url).
		SetClientID(prefix + hex.EncodeToString(id)).
		SetProtocolVersion(4).
		SetCleanSession(true).
		SetConnectTimeout(helperWait).
		SetAutoReconnect(true).
		SetMaxReconnectInterval(time.Second)
}

func connect(tb testing.TB, opts *paho.ClientOptions) paho.Client {
	tb.Helper()
	c := paho.NewClient(opts)
	tok := c.Connect()
	if !tok.WaitTimeout(helperWait) {
		c.Disconnect(0)
		tb.Fatalf("mqtttest: connect %v: no CONNACK within %v", opts.Servers, helperWait)
	}
	if err := tok.Error(); err != nil {
		tb.Fatalf("mqtttest: connect %v: %v", opts.Servers, err)
	}
	return c
}

var errTimeout = errors.New("timed out")
