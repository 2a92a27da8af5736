package render

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// wait bounds every wait in these tests: long enough for a loaded CI
// machine, and a failure (never a pass) when it runs out.
const wait = 20 * time.Second

// fakeBroker is an in-memory MQTT broker for the tests: QoS 1 delivery
// in order per connection, on one goroutine per connection (as paho's
// router with order matters), shared subscriptions served round robin
// among their members in subscription order, members that are gone
// included (mosquitto#1747: their share is lost), and a hook that drops
// a message in flight (mosquitto#2662).
type fakeBroker struct {
	t testing.TB

	mu     sync.Mutex
	conns  []*fakeConn
	shared map[string][]*fakeConn // share group + "\x00" + filter -> members
	next   map[string]int
	// drop, if set, is asked about every delivery; true loses it.
	drop func(to *fakeConn, topic string, payload []byte) bool
}

func newFakeBroker(t testing.TB) *fakeBroker {
	return &fakeBroker{t: t, shared: make(map[string][]*fakeConn), next: make(map[string]int)}
}

// fakeConn is one client's connection; it implements Transport.
type fakeConn struct {
	b    *fakeBroker
	name string
	in   chan delivery
	done chan struct{}

	mu   sync.Mutex
	subs []fakeSub
	gone bool // disconnected: publishes fail, deliveries are lost
}

var _ Transport = (*fakeConn)(nil)

type fakeSub struct {
	filter string // without $share/<group>/
	shared bool
	handle func(topic string, payload []byte)
}

type delivery struct {
	topic   string
	payload []byte
}

// conn connects a client; it is closed when the test ends.
func (b *fakeBroker) conn(name string) *fakeConn {
	c := &fakeConn{b: b, name: name, in: make(chan delivery, 4096), done: make(chan struct{})}
	b.mu.Lock()
	b.conns = append(b.conns, c)
	b.mu.Unlock()
	var wg sync.WaitGroup
	wg.Go(c.run)
	b.t.Cleanup(func() {
		close(c.done)
		wg.Wait()
	})
	return c
}

func (c *fakeConn) run() {
	for {
		select {
		case <-c.done:
			return
		case d := <-c.in:
			c.mu.Lock()
			subs := append([]fakeSub(nil), c.subs...)
			c.mu.Unlock()
			for _, s := range subs {
				if fakeMatch(s.filter, d.topic) {
					s.handle(d.topic, d.payload)
				}
			}
		}
	}
}

// setGone disconnects (true) or reconnects the client; its
// subscriptions stay (a persistent session).
func (c *fakeConn) setGone(gone bool) {
	c.mu.Lock()
	c.gone = gone
	c.mu.Unlock()
}

func (c *fakeConn) Subscribe(filters []string, handle func(topic string, payload []byte)) error {
	c.b.mu.Lock() // broker before connection, as route locks them
	defer c.b.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gone {
		return errors.New("fake: not connected")
	}
	for _, f := range filters {
		sub := fakeSub{filter: f, handle: handle}
		if rest, ok := strings.CutPrefix(f, "$share/"); ok {
			group, filter, _ := strings.Cut(rest, "/")
			sub.filter, sub.shared = filter, true
			k := group + "\x00" + filter
			c.b.shared[k] = append(c.b.shared[k], c)
		}
		c.subs = append(c.subs, sub)
	}
	return nil
}

func (c *fakeConn) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	gone := c.gone
	c.mu.Unlock()
	if gone {
		return errors.New("fake: not connected")
	}
	c.b.route(topic, append([]byte(nil), payload...))
	return nil
}

// route delivers a message: to every plain subscriber, and to one member
// of every shared subscription that matches.
func (b *fakeBroker) route(topic string, payload []byte) {
	b.mu.Lock()
	var to []*fakeConn
	for _, c := range b.conns {
		c.mu.Lock()
		for _, s := range c.subs {
			if fakeMatch(s.filter, topic) && !s.shared {
				to = append(to, c)
				break
			}
		}
		c.mu.Unlock()
	}
	for k, members := range b.shared {
		_, filter, _ := strings.Cut(k, "\x00")
		if !fakeMatch(filter, topic) || len(members) == 0 {
			continue
		}
		i := b.next[k] % len(members)
		b.next[k] = i + 1
		to = append(to, members[i])
	}
	drop := b.drop
	b.mu.Unlock()
	for _, c := range to {
		c.mu.Lock()
		gone := c.gone
		c.mu.Unlock()
		if gone || (drop != nil && drop(c, topic, payload)) {
			continue
		}
		select {
		case c.in <- delivery{topic, payload}:
		case <-c.done:
		}
	}
}

// setDrop installs the in-flight drop hook.
func (b *fakeBroker) setDrop(drop func(to *fakeConn, topic string, payload []byte) bool) {
	b.mu.Lock()
	b.drop = drop
	b.mu.Unlock()
}

// members returns how many connections share filter in group.
func (b *fakeBroker) members(group, filter string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.shared[group+"\x00"+filter])
}

// fakeMatch is MQTT topic matching with + and #.
func fakeMatch(filter, topic string) bool {
	fs, ts := strings.Split(filter, "/"), strings.Split(topic, "/")
	for i, f := range fs {
		if f == "#" {
			return true
		}
		if i >= len(ts) || (f != "+" && f != ts[i]) {
			return false
		}
	}
	return len(fs) == len(ts)
}

// eventually polls cond until it holds, failing the test after wait.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %v", what, wait)
		}
		time.Sleep(time.Millisecond)
	}
}
