package daemon

import "testing"

// TestReconnectRepublishes: the daemon registers for reconnects when it
// subscribes, and each one re-publishes discovery (a broker without
// persistence lost it) without anyone calling Connected by hand.
func TestReconnectRepublishes(t *testing.T) {
	h := newHarness(t, nil)
	h.start()
	waitFor(t, "discovery at start", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	h.tr.fake.reconnect()
	waitFor(t, "discovery after the reconnect", func() bool { return len(h.tr.on(discoveryTopic)) == 2 })
}
