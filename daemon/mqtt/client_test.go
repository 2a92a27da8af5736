package mqtt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// roundTrip is the basic contract, run against every broker: messages
// in on subscribed topics only, publishes out, "online" retained.
func roundTrip(t *testing.T, url string) {
	node := uniq()
	status := mqtttest.Subscribe(t, url, "mynah/"+node+"/status")
	events := mqtttest.Subscribe(t, url, "mynah/"+node+"/event")
	tc := connectClient(t, url, node, nil)
	got := tc.subscribe(t, "mynah/"+node+"/say", "mynah/"+node+"/+/set")

	m := waitPayload(t, status, mqtt.StatusOnline, nil)
	if m.Topic != tc.status {
		t.Errorf("status topic = %q, want %q", m.Topic, tc.status)
	}
	tc.waitConnected(t)

	// Two publishers: MQTT orders messages per publisher only, so the
	// check ignores the order between them.
	mqtttest.Publish(t, url, "mynah/"+node+"/say", []byte("hello"), false)
	mqtttest.Publish(t, url, "mynah/"+node+"/volume/set", []byte("0.5"), false)
	want := map[string]string{"mynah/" + node + "/say": "hello", "mynah/" + node + "/volume/set": "0.5"}
	for range 2 {
		m := recv(t, got)
		if p, ok := want[m.Topic]; !ok || string(m.Payload) != p || m.Retained {
			t.Errorf("got %s %q retained=%v, want one of %v, not retained", m.Topic, m.Payload, m.Retained, want)
		}
		delete(want, m.Topic)
	}

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	payload := []byte(`{"id":"1","state":"queued"}`)
	if err := tc.Publish(ctx, "mynah/"+node+"/event", payload, false); err != nil {
		t.Fatalf("publish: %v", err)
	}
	payload[0] = 'X' // Publish must have copied it
	if m := recv(t, events); string(m.Payload) != `{"id":"1","state":"queued"}` {
		t.Errorf("event payload = %q", m.Payload)
	}
}

func TestRoundTripMosquitto(t *testing.T) {
	t.Parallel()
	roundTrip(t, mqtttest.StartMosquitto(t).URL())
}

func TestRoundTripEmbedded(t *testing.T) {
	t.Parallel()
	roundTrip(t, mqtttest.StartEmbedded(t).URL())
}

func TestRetainedFlag(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartMosquitto(t).URL()
	node := uniq()
	topic := "mynah/" + node + "/voice/set"
	mqtttest.Publish(t, url, topic, []byte("old"), true)

	tc := connectClient(t, url, node, nil)
	got := tc.subscribe(t, topic)
	if m := recv(t, got); string(m.Payload) != "old" || !m.Retained {
		t.Errorf("stored retained message: got %q retained=%v, want %q retained=true", m.Payload, m.Retained, "old")
	}
	// MQTT 3.1.1 delivers a retained publish to existing subscribers with
	// RETAIN 0: the flag means "this is stored state", not "sent with retain".
	mqtttest.Publish(t, url, topic, []byte("new"), true)
	if m := recv(t, got); string(m.Payload) != "new" || m.Retained {
		t.Errorf("live message: got %q retained=%v, want %q retained=false", m.Payload, m.Retained, "new")
	}
}

// TestLastWillOnConnectionLoss cuts the TCP connection under the client:
// the broker must publish the last will, and the client must come back,
// say "online", call OnConnect and receive again.
func TestLastWillOnConnectionLoss(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	p := startProxy(t, m.Addr())
	node := uniq()
	status := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")
	tc := connectClient(t, p.url(), node, nil)
	got := tc.subscribe(t, "mynah/"+node+"/say")
	waitPayload(t, status, mqtt.StatusOnline, nil)
	tc.waitConnected(t)

	p.cut()
	waitPayload(t, status, mqtt.StatusOffline, live)
	waitPayload(t, status, mqtt.StatusOnline, live)
	tc.waitConnected(t)

	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte("after reconnect"), false)
	if msg := recv(t, got); string(msg.Payload) != "after reconnect" {
		t.Errorf("got %q after reconnect", msg.Payload)
	}
	fresh := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")
	waitPayload(t, fresh, mqtt.StatusOnline, retained)
}

// counter counts messages by payload.
type counter struct {
	mu     sync.Mutex
	seen   map[string]int
	order  []string
	notify chan struct{}
}

func newCounter() *counter {
	return &counter{seen: make(map[string]int), notify: make(chan struct{}, 1)}
}

func (c *counter) handle(m daemon.Message) {
	c.mu.Lock()
	c.seen[string(m.Payload)]++
	c.order = append(c.order, string(m.Payload))
	c.mu.Unlock()
	select {
	case c.notify <- struct{}{}:
	default:
	}
}

// waitAll waits until every payload in want was seen at least once.
func (c *counter) waitAll(t *testing.T, want []string) {
	t.Helper()
	deadline := time.After(wait)
	for {
		c.mu.Lock()
		missing := 0
		for _, w := range want {
			if c.seen[w] == 0 {
				missing++
			}
		}
		c.mu.Unlock()
		if missing == 0 {
			return
		}
		select {
		case <-c.notify:
		case <-deadline:
			c.mu.Lock()
			t.Fatalf("%d of %d messages missing after %v; got %q", missing, len(want), wait, c.order)
			c.mu.Unlock()
		}
	}
}

// checkOnce fails for every payload not seen exactly once.
func (c *counter) checkOnce(t *testing.T, want []string) {
	t.Helper()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range want {
		if n := c.seen[w]; n != 1 {
			t.Errorf("%q delivered %d times, want exactly once", w, n)
		}
	}
}

func payloads(prefix string, n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("%s-%02d", prefix, i))
	}
	return out
}

// TestBrokerKillRestart: mosquitto dies by SIGKILL while the client is
// connected and subscribed, and comes back on the same port. Every QoS 1
// command published after the restart arrives exactly once, OnConnect
// runs again, and the status goes back online.
func TestBrokerKillRestart(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	node := uniq()
	status := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")
	tc := connectClient(t, m.URL(), node, nil)
	cnt := newCounter()
	if err := tc.Subscribe([]string{"mynah/" + node + "/say"}, cnt.handle, nil); err != nil {
		t.Fatal(err)
	}
	waitPayload(t, status, mqtt.StatusOnline, nil)
	tc.waitConnected(t)
	// The broker must have saved the session and its subscription, or
	// nothing can deliver what is published before the client is back.
	m.Flush(t)

	m.Kill()
	m.Restart(t)
	want := payloads("cmd", 20)
	for _, p := range want {
		mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte(p), false)
	}
	cnt.waitAll(t, want)
	tc.waitConnected(t)
	// A live "online" (not the copy restored from the broker's
	// persistence) proves the client announced itself after reconnecting.
	waitPayload(t, status, mqtt.StatusOnline, live)

	// A last message through the same session: once it is in, any
	// redelivered duplicate of the earlier ones would have been too.
	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte("fence"), false)
	cnt.waitAll(t, []string{"fence"})
	cnt.checkOnce(t, append(want, "fence"))
}

// TestBrokerStopRestartOffline: with mynahd still connected, the broker
// stops cleanly and restarts; commands published while the client has
// not reconnected yet wait in its persistent session, and the
// subscriber's connected callback tells it about the reconnect.
func TestBrokerStopRestartQueued(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	p := startProxy(t, m.Addr())
	node := uniq()
	tc := connectClient(t, p.url(), node, nil)
	cnt := newCounter()
	reconnected := make(chan struct{}, 10)
	if err := tc.Subscribe([]string{"mynah/" + node + "/say"}, cnt.handle, func() { reconnected <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	tc.waitConnected(t)
	for len(reconnected) > 0 {
		<-reconnected // the first connect, if Subscribe came while it was set up
	}

	p.refuse.Store(true) // keep the client away until the queue is filled
	m.Stop()
	m.Restart(t)
	want := payloads("queued", 20)
	for _, s := range want {
		mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte(s), false)
	}
	p.refuse.Store(false)
	cnt.waitAll(t, want)
	tc.waitConnected(t)
	// The subscriber's connected callback ran once, before OnConnect.
	if n := len(reconnected); n != 1 {
		t.Errorf("connected callback ran %d times after one reconnect, want 1", n)
	}
	cnt.checkOnce(t, want)
	cnt.mu.Lock()
	if got := strings.Join(cnt.order, ","); got != strings.Join(want, ",") {
		t.Errorf("order = %s, want %s", got, strings.Join(want, ","))
	}
	cnt.mu.Unlock()
}

// TestQueuedWhileDisconnected: the connection drops, commands are
// published while the client cannot reach the broker, and they arrive
// once, in order, after it reconnects.
func TestQueuedWhileDisconnected(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	p := startProxy(t, m.Addr())
	node := uniq()
	status := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")
	tc := connectClient(t, p.url(), node, nil)
	cnt := newCounter()
	if err := tc.Subscribe([]string{"mynah/" + node + "/say"}, cnt.handle, nil); err != nil {
		t.Fatal(err)
	}
	waitPayload(t, status, mqtt.StatusOnline, nil)
	tc.waitConnected(t)

	p.refuse.Store(true)
	p.cut()
	waitPayload(t, status, mqtt.StatusOffline, live) // the broker knows it is gone
	waitDisconnected(t, tc)                          // and so does the client

	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := tc.Publish(ctx, "mynah/"+node+"/event", []byte("x"), false); !errors.Is(err, mqtt.ErrNotConnected) {
		t.Errorf("publish while disconnected: %v, want ErrNotConnected", err)
	}

	want := payloads("offline", 20)
	for _, s := range want {
		mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte(s), false)
	}
	p.refuse.Store(false)
	cnt.waitAll(t, want)
	waitPayload(t, status, mqtt.StatusOnline, live)
	cnt.checkOnce(t, want)
	cnt.mu.Lock()
	if got := strings.Join(cnt.order, ","); got != strings.Join(want, ",") {
		t.Errorf("order = %s, want %s", got, strings.Join(want, ","))
	}
	cnt.mu.Unlock()
}

// TestSessionBacklogBeforeSubscribe: mynahd restarts. The commands sent
// meanwhile arrive right after it connects, before the daemon calls
// Subscribe; they must be held and handed to Subscribe, not dropped.
func TestSessionBacklogBeforeSubscribe(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	node := uniq()
	status := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/status")

	first := connectClient(t, m.URL(), node, nil)
	first.subscribe(t, "mynah/"+node+"/say")
	first.waitConnected(t) // subscriptions made
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := first.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
	waitPayload(t, status, mqtt.StatusOffline, live)

	want := payloads("backlog", 10)
	for _, s := range want {
		mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte(s), false)
	}

	second := connectClient(t, m.URL(), node, nil)
	// The broker sends the backlog right after CONNACK, before anything
	// is subscribed on this connection; the client holds it until
	// Subscribe. "online" now comes only after that first Subscribe.
	second.waitConnected(t)
	cnt := newCounter()
	if err := second.Subscribe([]string{"mynah/" + node + "/say"}, cnt.handle, nil); err != nil {
		t.Fatal(err)
	}
	waitPayload(t, status, mqtt.StatusOnline, live)
	cnt.waitAll(t, want)
	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte("fence"), false)
	cnt.waitAll(t, []string{"fence"})
	cnt.checkOnce(t, append(want, "fence"))
	cnt.mu.Lock()
	if got, w := strings.Join(cnt.order, ","), strings.Join(append(want, "fence"), ","); got != w {
		t.Errorf("order = %s, want %s", got, w)
	}
	cnt.mu.Unlock()
}

// TestOnlineWaitsForTheDaemonsSubscription: on a node's very first
// connect mynahd's render client subscribes (through RenderTransport)
// before the daemon does. "online" must wait for the daemon's Subscribe:
// a command sent at "online" would otherwise reach a fresh session with
// no subscription for it, and the broker would drop it.
func TestOnlineWaitsForTheDaemonsSubscription(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	node := uniq()
	watch := mqtttest.Subscribe(t, m.URL(), "mynah/"+node+"/#")
	tc := connectClient(t, m.URL(), node, nil)
	tc.waitConnected(t)
	side := make(chan string, 4)
	err := tc.RenderTransport().Subscribe([]string{"mynah/render/node/" + node + "/req"},
		func(_ string, payload []byte) { side <- string(payload) })
	if err != nil {
		t.Fatal(err)
	}
	// The side subscription is acknowledged; a fence published after it
	// reaches the watcher after anything the client published before.
	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/fence", []byte("fence"), false)
	for msg := waitTopic(t, watch, "mynah/"+node+"/"); string(msg.Payload) != "fence"; msg = waitTopic(t, watch, "mynah/"+node+"/") {
		if msg.Topic == tc.status && string(msg.Payload) == mqtt.StatusOnline {
			t.Fatal(`"online" published after a side subscription, before the daemon subscribed`)
		}
	}
	// The daemon subscribes: now it says so, and a command sent at
	// "online" is received.
	cnt := newCounter()
	if err := tc.Subscribe([]string{"mynah/" + node + "/say"}, cnt.handle, nil); err != nil {
		t.Fatal(err)
	}
	waitPayload(t, watch, mqtt.StatusOnline, nil)
	mqtttest.Publish(t, m.URL(), "mynah/"+node+"/say", []byte("at online"), false)
	cnt.waitAll(t, []string{"at online"})
	// The side subscription works too.
	mqtttest.Publish(t, m.URL(), "mynah/render/node/"+node+"/req", []byte("req"), false)
	select {
	case got := <-side:
		if got != "req" {
			t.Errorf("side handler got %q", got)
		}
	case <-time.After(wait):
		t.Fatal("side subscription received nothing")
	}
}

// TestOnlineAfterHelpersWhenTheyListen: a render node's own connection
// (HelpersListen) exists for render.Serve, so its first "online" follows
// the render transport's subscription.
func TestOnlineAfterHelpersWhenTheyListen(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t).URL()
	node := uniq()
	watch := mqtttest.Subscribe(t, url, "mynah/"+node+"/status")
	tc := connectClient(t, url, node, func(o *mqtt.Options) { o.HelpersListen = true })
	tc.waitConnected(t)
	err := tc.RenderTransport().Subscribe([]string{"mynah/render/node/" + node + "/req"}, func(string, []byte) {})
	if err != nil {
		t.Fatal(err)
	}
	waitPayload(t, watch, mqtt.StatusOnline, nil)
}

// waitTopic returns the next message on ch whose topic starts with prefix.
func waitTopic(t testing.TB, ch <-chan daemon.Message, prefix string) daemon.Message {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-ch:
			if strings.HasPrefix(m.Topic, prefix) {
				return m
			}
		case <-deadline:
			t.Fatalf("no message under %s within %v", prefix, wait)
			return daemon.Message{}
		}
	}
}

// TestOverlappingSubscriptions: a message matching the filters of two
// Subscribe calls reaches each handler once; one matching only the first
// reaches only the first.
func TestOverlappingSubscriptions(t *testing.T) {
	t.Parallel()
	url := mqtttest.StartEmbedded(t).URL()
	node := uniq()
	tc := connectClient(t, url, node, nil)
	all := tc.subscribe(t, "mynah/"+node+"/u/#", "mynah/"+node+"/say")
	say := tc.subscribe(t, "mynah/"+node+"/u/+/say")
	for _, topic := range []string{"u/ann/say", "u/ann/stop", "say"} {
		mqtttest.Publish(t, url, "mynah/"+node+"/"+topic, []byte(topic), false)
	}
	// Three publishers: MQTT orders messages per publisher only, so
	// compare sets. "say" matches no filter of the second handler.
	for name, tt := range map[string]struct {
		ch   <-chan daemon.Message
		want []string
	}{
		"all": {all, []string{"u/ann/say", "u/ann/stop", "say"}},
		"say": {say, []string{"u/ann/say"}},
	} {
		want := make(map[string]bool)
		for _, w := range tt.want {
			want[w] = true
		}
		for range tt.want {
			m := recv(t, tt.ch)
			if !want[string(m.Payload)] {
				t.Errorf("%s handler: unexpected or repeated %q", name, m.Payload)
			}
			delete(want, string(m.Payload))
		}
	}
	// A fence through both handlers: anything delivered twice before it
	// would now be waiting in a channel.
	mqtttest.Publish(t, url, "mynah/"+node+"/u/bob/say", []byte("fence"), false)
	for name, ch := range map[string]<-chan daemon.Message{"all": all, "say": say} {
		if m := recv(t, ch); string(m.Payload) != "fence" {
			t.Errorf("%s handler: got %q, want the fence", name, m.Payload)
		}
	}
}

// TestManualAckRedelivery: with ManualAck a message the handler has not
// acknowledged stays with the broker and comes again after a reconnect
// (mynahd died before spooling it); an acknowledged one does not.
func TestManualAckRedelivery(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquitto(t)
	node := uniq()
	topic := "mynah/" + node + "/say"
	manual := func(o *mqtt.Options) { o.ManualAck = true }

	first := connectClient(t, m.URL(), node, manual)
	ch := first.subscribe(t, topic)
	first.waitConnected(t)
	mqtttest.Publish(t, m.URL(), topic, []byte("acked"), false)
	mqtttest.Publish(t, m.URL(), topic, []byte("kept"), false)
	for _, want := range []string{"acked", "kept"} {
		msg := recv(t, ch)
		if string(msg.Payload) != want || msg.Ack == nil {
			t.Fatalf("got %q (ack %v), want %q with an Ack", msg.Payload, msg.Ack != nil, want)
		}
		if want == "acked" {
			msg.Ack()
		}
	}
	closeClient(t, first)

	second := connectClient(t, m.URL(), node, manual)
	ch = second.subscribe(t, topic)
	msg := recv(t, ch)
	if string(msg.Payload) != "kept" {
		t.Fatalf("after reconnect got %q, want the unacknowledged \"kept\"", msg.Payload)
	}
	msg.Ack()
	mqtttest.Publish(t, m.URL(), topic, []byte("fence"), false)
	if msg := recv(t, ch); string(msg.Payload) != "fence" {
		t.Fatalf("got %q, want fence", msg.Payload)
	} else {
		msg.Ack()
	}
	closeClient(t, second)

	third := connectClient(t, m.URL(), node, manual)
	ch = third.subscribe(t, topic)
	mqtttest.Publish(t, m.URL(), topic, []byte("last"), false)
	msg = recv(t, ch)
	if string(msg.Payload) != "last" {
		t.Fatalf("got %q, want \"last\": an acknowledged message came again", msg.Payload)
	}
	msg.Ack()
}

func closeClient(t *testing.T, tc *testClient) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := tc.Close(ctx); err != nil {
		t.Fatalf("close: %v", err)
	}
}

// TestMosquittoUsersAndACL checks the harness's users and ACL: with the
// documented owner pattern, anna may publish on her own topics only, and
// the broker silently drops what she sends to ben's.
func TestMosquittoUsersAndACL(t *testing.T) {
	t.Parallel()
	m := mqtttest.StartMosquittoWith(t, &mqtttest.MosquittoOptions{
		Users: map[string]string{"mynahd": "d-secret", "anna": "a-secret"},
		ACL:   "user mynahd\ntopic readwrite mynah/#\n\npattern readwrite mynah/+/u/%u/#",
	})
	got := mqtttest.Subscribe(t, m.URLAs("mynahd", "d-secret"), "mynah/n/u/+/say")
	mqtttest.Publish(t, m.URLAs("anna", "a-secret"), "mynah/n/u/ben/say", []byte("not hers"), false)
	mqtttest.Publish(t, m.URLAs("anna", "a-secret"), "mynah/n/u/anna/say", []byte("hers"), false)
	if msg := recv(t, got); msg.Topic != "mynah/n/u/anna/say" || string(msg.Payload) != "hers" {
		t.Fatalf("got %s %q: the ACL let anna speak for ben", msg.Topic, msg.Payload)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	_, err := mqtt.Connect(ctx, &mqtt.Options{Broker: m.URL(), ClientID: "anonymous", Username: "anna", Password: "wrong",
		MaxReconnectInterval: time.Second})
	if err == nil {
		t.Fatal("a wrong password connected")
	}
}
