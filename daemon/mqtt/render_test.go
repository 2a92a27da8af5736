package mqtt_test

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/daemon/render"
)

const renderKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// renderNode is a render.Serve on a connection of its own.
type renderNode struct {
	name string
	tc   *testClient
	w    *watchedTransport
}

// renderNodes records which nodes rendered which request ids.
type renderNodes struct {
	mu       sync.Mutex
	servedBy map[string][]string
}

// serve starts a render node on url; clean picks a clean session for its
// connection (the render node's setting) over the persistent default.
// It waits until the node's shared subscription is in place.
func (rn *renderNodes) serve(t *testing.T, url, name string, clean bool) *renderNode {
	t.Helper()
	tc := connectClient(t, url, name, func(o *mqtt.Options) {
		o.CleanSession = clean
		o.NoStatus, o.StatusTopic = true, ""
	})
	w := &watchedTransport{Transport: tc.RenderTransport(), subscribed: make(chan struct{}), topics: make(map[string]int)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- render.Serve(ctx, w, func(_ context.Context, r render.Request) (string, []byte, error) {
			rn.mu.Lock()
			rn.servedBy[r.ID] = append(rn.servedBy[r.ID], name)
			rn.mu.Unlock()
			return renderKey, []byte("record of " + r.Text), nil
		}, &render.ServerOptions{Node: "s0"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve %s: %v", name, err)
		}
	})
	select {
	case <-w.subscribed:
	case <-time.After(wait):
		t.Fatalf("%s not subscribed within %v", name, wait)
	}
	return &renderNode{name: name, tc: tc, w: w}
}

// watchedTransport records the topics its handlers see and says when
// Subscribe has returned (the broker's SUBACK is in).
type watchedTransport struct {
	render.Transport
	subscribed chan struct{}

	mu     sync.Mutex
	topics map[string]int
}

func (w *watchedTransport) Subscribe(filters []string, handle func(string, []byte)) error {
	err := w.Transport.Subscribe(filters, func(topic string, payload []byte) {
		w.mu.Lock()
		w.topics[topic]++
		w.mu.Unlock()
		handle(topic, payload)
	})
	close(w.subscribed)
	return err
}

// fetchAll fetches n sentences and checks every answer.
func fetchAll(t *testing.T, c *render.Client, n int) []render.Answer {
	t.Helper()
	var out []render.Answer
	for i := range n {
		r := render.Request{Voice: "en_US-lessac-medium", Rate: 1, Text: fmt.Sprintf("Sentence %d.", i)}
		a, err := c.Fetch(context.Background(), r)
		if err != nil {
			t.Fatalf("Fetch %d: %v", i, err)
		}
		if !bytes.Equal(a.Record, []byte("record of "+r.Text)) {
			t.Fatalf("Fetch %d: %q", i, a.Record)
		}
		out = append(out, a)
	}
	return out
}

func renderClient(t *testing.T, url, node string, timeout time.Duration) *render.Client {
	t.Helper()
	req := connectClient(t, url, node, nil)
	c, err := render.NewClient(req.RenderTransport(), node, &render.ClientOptions{Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Two render nodes share $share/mynah-render/mynah/render/req on a real
// Mosquitto: each of 20 requests is rendered by exactly one of them, both
// get some (round robin), and the handlers see the plain topic
// mynah/render/req (the broker sends it so; this package, which routes
// by itself rather than with paho's router, strips "$share/<group>/"
// from the filter to match it).
func TestRenderSharedSubscription(t *testing.T) {
	m := mqtttest.StartMosquitto(t)
	id := uniq()
	rn := &renderNodes{servedBy: make(map[string][]string)}
	nodes := []*renderNode{
		rn.serve(t, m.URL(), "serve-a-"+id, true),
		rn.serve(t, m.URL(), "serve-b-"+id, true),
	}
	c := renderClient(t, m.URL(), "kitchen-"+id, wait)
	const n = 20
	answers := fetchAll(t, c, n)

	rn.mu.Lock()
	defer rn.mu.Unlock()
	per := make(map[string]int)
	for _, a := range answers {
		if got := rn.servedBy[a.ID]; len(got) != 1 || a.Tries != 1 {
			t.Errorf("request %s rendered by %q (tries %d), want exactly one node", a.ID, got, a.Tries)
		} else {
			per[got[0]]++
		}
	}
	if len(rn.servedBy) != n || per[nodes[0].name] == 0 || per[nodes[1].name] == 0 {
		t.Fatalf("rendered %d requests: %v per node, want %d shared by both", len(rn.servedBy), per, n)
	}
	for _, node := range nodes {
		node.w.mu.Lock()
		if len(node.w.topics) != 1 || node.w.topics[render.RequestTopic] == 0 {
			t.Errorf("%s's handler saw topics %v, want only %s", node.name, node.w.topics, render.RequestTopic)
		}
		node.w.mu.Unlock()
	}
	if st := c.Stats(); st.Answers != n || st.Retries != 0 || len(st.Refused) != 0 {
		t.Fatalf("client stats %+v", st)
	}
	t.Logf("rendered per node: %v", per)
}

// A render node that goes offline: with a clean session it leaves the
// share group at once and no request is lost; with a persistent session
// Mosquitto keeps handing it its share (mosquitto#1747), which is lost,
// and every such request is answered only by the requester's retry.
func TestRenderNodeOffline(t *testing.T) {
	for _, tc := range []struct {
		name  string
		clean bool
	}{
		{"clean session", true},
		{"persistent session", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := mqtttest.StartMosquitto(t)
			id := uniq()
			rn := &renderNodes{servedBy: make(map[string][]string)}
			gone := rn.serve(t, m.URL(), "serve-a-"+id, tc.clean)
			rn.serve(t, m.URL(), "serve-b-"+id, tc.clean)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			if err := gone.tc.Close(ctx); err != nil {
				t.Fatal(err)
			}
			// The persistent case needs a short timeout: half its
			// requests wait for it.
			c := renderClient(t, m.URL(), "kitchen-"+id, time.Second)
			const n = 10
			fetchAll(t, c, n)
			st := c.Stats()
			rn.mu.Lock()
			defer rn.mu.Unlock()
			for rid, nodes := range rn.servedBy {
				if len(nodes) != 1 || nodes[0] == gone.name {
					t.Errorf("request %s rendered by %q", rid, nodes)
				}
			}
			switch {
			case tc.clean && st.Retries != 0:
				t.Fatalf("clean session: %d retries, want none (client stats %+v)", st.Retries, st)
			case !tc.clean && st.Retries == 0:
				t.Fatalf("persistent session: no retries; does this Mosquitto no longer queue an offline member's share (mosquitto#1747)? %+v", st)
			}
			t.Logf("%s: %d retries for %d requests", tc.name, st.Retries, n)
		})
	}
}

// renderACL is the README's Mosquitto acl_file for render nodes: the
// render nodes' user may read the requests (shared and their own), write
// their status and catalog, and write any reply topic; a requester (its
// MQTT user named as its node) may write requests, read the render
// nodes' status and catalogs, and read only its own reply topic.
const renderACL = `user render
topic read mynah/render/req
topic read mynah/render/node/+/req
topic write mynah/render/node/+/status
topic write mynah/render/node/+/voices
topic write mynah/render/reply/+

pattern write mynah/render/req
pattern write mynah/render/node/+/req
pattern read mynah/render/node/+/status
pattern read mynah/render/node/+/voices
pattern read mynah/render/reply/%u`

// The README's ACL for render nodes works for a shared subscription and
// for a node's own topics: the render user's subscriptions get the
// requests, its status reaches the requesters (who then send to it
// directly), and one requester can neither read nor forge another's
// answers, nor take a render node offline in the others' eyes.
func TestRenderACL(t *testing.T) {
	m := mqtttest.StartMosquittoWith(t, &mqtttest.MosquittoOptions{
		Users: map[string]string{"render": "r-secret", "kitchen": "k-secret", "hall": "h-secret"},
		ACL:   renderACL,
	})
	as := func(user, pass string, clean bool) func(*mqtt.Options) {
		return func(o *mqtt.Options) {
			o.Username, o.Password = user, pass
			o.CleanSession = clean
			o.NoStatus, o.StatusTopic = true, ""
		}
	}
	id := uniq()
	serve := connectClient(t, m.URL(), "serve-"+id, func(o *mqtt.Options) {
		as("render", "r-secret", true)(o)
		o.NoStatus, o.StatusTopic, o.HelpersListen = false, render.NodeTopic("s0", render.NodeStatus), true
	})
	w := &watchedTransport{Transport: serve.RenderTransport(), subscribed: make(chan struct{}), topics: make(map[string]int)}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- render.Serve(ctx, w, func(_ context.Context, r render.Request) (string, []byte, error) {
			return renderKey, []byte("record of " + r.Text), nil
		}, &render.ServerOptions{Node: "s0"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	select {
	case <-w.subscribed:
	case <-time.After(wait):
		t.Fatal("not subscribed")
	}

	kitchen := connectClient(t, m.URL(), "kitchen-"+id, as("kitchen", "k-secret", false))
	c, err := render.NewClient(kitchen.RenderTransport(), "kitchen", &render.ClientOptions{Timeout: wait})
	if err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(wait); len(c.Nodes()) != 1; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the kitchen never saw s0's status")
		}
	}
	fetchAll(t, c, 2)
	if st := c.Stats(); st.Routed != 2 {
		t.Fatalf("client stats %+v: want both requests sent to s0's own topic", st)
	}

	// Another requester may neither read nor write the kitchen's replies.
	hall := connectClient(t, m.URL(), "hall-"+id, as("hall", "h-secret", false))
	got := hall.subscribe(t, "mynah/render/reply/kitchen", "mynah/render/reply/hall")
	// In order on one connection, so to the hall in order: had the first
	// been let through, it would come before the second.
	for _, topic := range []string{"mynah/render/reply/kitchen", "mynah/render/reply/hall"} {
		if err := serve.Publish(context.Background(), topic, []byte("marker"), false); err != nil {
			t.Fatal(err)
		}
	}
	if msg := recv(t, got); msg.Topic != "mynah/render/reply/hall" {
		t.Fatalf("the hall read %s", msg.Topic)
	}
	if err := hall.Publish(context.Background(), "mynah/render/reply/kitchen", []byte("forged"), false); err != nil {
		t.Fatal(err)
	}
	if err := hall.Publish(context.Background(), render.NodeTopic("s0", render.NodeStatus), []byte("offline"), true); err != nil {
		t.Fatal(err)
	}
	// A marker after the forgeries: once the kitchen has it, it has
	// everything the broker let through before it.
	if err := serve.Publish(context.Background(), "mynah/render/reply/kitchen", []byte("marker"), false); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(wait); c.Stats().Refused[render.RefusedMalformed] < 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the kitchen never got the second marker")
		}
	}
	fetchAll(t, c, 1)
	if st := c.Stats(); st.Routed != 3 {
		t.Fatalf("client stats %+v: the hall's forged status took s0 out of the kitchen's ranking", st)
	}
	// The kitchen refused the render user's markers, and saw nothing of
	// the hall's.
	if st := c.Stats(); len(st.Refused) != 1 || st.Refused[render.RefusedMalformed] != 2 || st.Answers != 3 {
		t.Fatalf("client stats %+v: the hall's publish reached the kitchen", st)
	}
}
