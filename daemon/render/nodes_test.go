package render

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestOwnersIsRendezvous(t *testing.T) {
	nodes := []string{"attic", "basement", "garage"}
	owned := make(map[string]int)
	for i := range 3000 {
		key := fmt.Sprintf("sentence %d", i)
		ranked := Owners(key, nodes)
		if len(ranked) != len(nodes) {
			t.Fatalf("Owners ranked %d of %d nodes", len(ranked), len(nodes))
		}
		// Any order of the same nodes ranks them the same way.
		if got := Owners(key, []string{"garage", "attic", "basement"}); !slices.Equal(got, ranked) {
			t.Fatalf("%q: ranking depends on the order given: %v vs %v", key, got, ranked)
		}
		// A node that goes moves only its own sentences, to the next in rank.
		for _, gone := range nodes {
			rest := slices.DeleteFunc(slices.Clone(nodes), func(n string) bool { return n == gone })
			want := ranked[0]
			if want == gone {
				want = ranked[1]
			}
			if got := Owners(key, rest)[0]; got != want {
				t.Fatalf("%q without %s: owner %s, want %s", key, gone, got, want)
			}
		}
		owned[ranked[0]]++
	}
	for _, n := range nodes {
		if owned[n] < 800 || owned[n] > 1200 {
			t.Errorf("%s owns %d of 3000 sentences, want about 1000: %v", n, owned[n], owned)
		}
	}
	if got := Owners("x", nil); len(got) != 0 {
		t.Errorf("Owners of no nodes: %v", got)
	}
}

func TestCatalogRoundTrip(t *testing.T) {
	c := Catalog{Voices: []CatalogVoice{
		{Name: "en_US-lessac-medium", Language: "en-us", SampleRate: 22050},
		{Name: "demo", Language: "en", SampleRate: 16000, Speakers: []string{"p1", "p2"}},
	}}
	p, err := EncodeCatalog(c)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeCatalog(p)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(c) {
		t.Errorf("round trip: %+v, want %+v", got, c)
	}
}

func TestDecodeCatalogRejects(t *testing.T) {
	many := func(n int, f func(i int) string) string {
		var b strings.Builder
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			b.WriteString(f(i))
		}
		return b.String()
	}
	for _, tc := range []struct{ name, payload, want string }{
		{"not JSON", `{"voices":`, "unexpected end"},
		{"not UTF-8", "{\"voices\":[{\"name\":\"\xff\"}]}", "not UTF-8"},
		{"voices not a list", `{"voices":{}}`, "cannot unmarshal"},
		{"no name", `{"voices":[{"language":"en"}]}`, "voice 1: empty name"},
		{"name with a slash", `{"voices":[{"name":"a/b"}]}`, "contains '/'"},
		{"negative rate", `{"voices":[{"name":"a","sample_rate":-1}]}`, "sample rate -1"},
		{"bad speaker", `{"voices":[{"name":"a","speakers":["ok","x#"]}]}`, "speaker: name"},
		{"long language", `{"voices":[{"name":"a","language":"` + strings.Repeat("e", 65) + `"}]}`, "language of 65 bytes"},
		{"too many voices", `{"voices":[` + many(MaxCatalogVoices+1, func(i int) string { return fmt.Sprintf(`{"name":"v%d"}`, i) }) + `]}`, "over MaxCatalogVoices"},
		{"too many speakers", `{"voices":[{"name":"a","speakers":[` + many(MaxCatalogSpeakers+1, func(i int) string { return fmt.Sprintf(`"s%d"`, i) }) + `]}]}`, "over MaxCatalogSpeakers"},
		{"too large", `{"voices":[],"x":"` + strings.Repeat("a", MaxCatalogBytes) + `"}`, "over MaxCatalogBytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeCatalog([]byte(tc.payload))
			if err == nil || !errors.Is(err, ErrInvalidCatalog) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want ErrInvalidCatalog mentioning %q", err, tc.want)
			}
		})
	}
}

func FuzzDecodeCatalog(f *testing.F) {
	for _, s := range []string{
		`{"voices":[]}`, `{"voices":[{"name":"demo","language":"en","sample_rate":16000,"speakers":["p1"]}]}`,
		``, `null`, `{"voices":null}`, `{"voices":[{"name":""}]}`, `{"voices":[{"name":"a","sample_rate":1e99}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := DecodeCatalog(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalidCatalog) {
				t.Fatalf("error %v does not wrap ErrInvalidCatalog", err)
			}
			return
		}
		p, err := EncodeCatalog(c)
		if err != nil {
			t.Fatalf("accepted catalog does not encode: %v", err)
		}
		if _, err := DecodeCatalog(p); err != nil {
			t.Fatalf("re-encoded catalog refused: %v", err)
		}
	})
}

// countingRenders renders with renderFake and remembers which node
// rendered which text.
type countingRenders struct {
	mu sync.Mutex
	by map[string]map[string]int // text -> node -> renders
}

func (c *countingRenders) on(node string) RenderFunc {
	return func(ctx context.Context, r Request) (string, []byte, error) {
		c.mu.Lock()
		if c.by == nil {
			c.by = make(map[string]map[string]int)
		}
		if c.by[r.Text] == nil {
			c.by[r.Text] = make(map[string]int)
		}
		c.by[r.Text][node]++
		c.mu.Unlock()
		return renderFake(ctx, r)
	}
}

func (c *countingRenders) nodes(text string) map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int)
	for n, k := range c.by[text] {
		out[n] = k
	}
	return out
}

// announce publishes a render node's status, and its catalog when
// voices is not nil, as the node's connection and mynahd would.
func announce(t *testing.T, conn *fakeConn, node, status string, voices []string) {
	t.Helper()
	if err := conn.Publish(context.Background(), NodeTopic(node, NodeStatus), []byte(status)); err != nil {
		t.Fatal(err)
	}
	if voices == nil {
		return
	}
	var c Catalog
	for _, v := range voices {
		c.Voices = append(c.Voices, CatalogVoice{Name: v})
	}
	p, err := EncodeCatalog(c)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Publish(context.Background(), NodeTopic(node, NodeVoices), p); err != nil {
		t.Fatal(err)
	}
}

func TestFetchGoesToTheSentencesOwner(t *testing.T) {
	b := newFakeBroker(t)
	var renders countingRenders
	for _, n := range []string{"s0", "s1"} {
		startServer(t, b, n, renders.on(n), &ServerOptions{Node: n})
	}
	var clients []*Client
	for i := range 3 {
		clients = append(clients, newTestClient(t, b, fmt.Sprintf("remote%d", i), nil))
	}
	pub := b.conn("announcer")
	for _, n := range []string{"s0", "s1"} {
		announce(t, pub, n, StatusOnline, []string{testRequest("").Voice})
	}
	for _, c := range clients {
		eventually(t, "both render nodes known", func() bool { return len(c.Nodes()) == 2 })
	}
	const sentences = 40
	for i := range sentences {
		text := fmt.Sprintf("Sentence number %d.", i)
		for _, c := range clients {
			if _, err := c.Fetch(context.Background(), testRequest(text)); err != nil {
				t.Fatal(err)
			}
		}
		got := renders.nodes(text)
		owner := Owners(routingKey(testRequest(text)), []string{"s0", "s1"})[0]
		if len(got) != 1 || got[owner] != len(clients) {
			t.Fatalf("%q rendered by %v, want only by its owner %s (%d times)", text, got, owner, len(clients))
		}
	}
	perNode := make(map[string]int)
	for i := range sentences {
		for n := range renders.nodes(fmt.Sprintf("Sentence number %d.", i)) {
			perNode[n]++
		}
	}
	if perNode["s0"] == 0 || perNode["s1"] == 0 {
		t.Errorf("sentences per render node %v: one node got none", perNode)
	}
	for _, c := range clients {
		if st := c.Stats(); st.Routed != sentences || st.Retries != 0 {
			t.Errorf("client stats %+v: want %d routed tries, no retries", st, sentences)
		}
	}
}

func TestFetchRoutingFollowsTheNodes(t *testing.T) {
	b := newFakeBroker(t)
	var renders countingRenders
	s0 := startServer(t, b, "s0", renders.on("s0"), &ServerOptions{Node: "s0"})
	startServer(t, b, "s1", renders.on("s1"), &ServerOptions{Node: "s1"})
	c := newTestClient(t, b, "kitchen", &ClientOptions{Timeout: 200 * time.Millisecond})
	pub := b.conn("announcer")
	voice := testRequest("").Voice

	// Sentences s0 owns while both are up.
	var ownedByS0 []string
	for i := 0; len(ownedByS0) < 4; i++ {
		text := fmt.Sprintf("Owned %d.", i)
		if Owners(routingKey(testRequest(text)), []string{"s0", "s1"})[0] == "s0" {
			ownedByS0 = append(ownedByS0, text)
		}
	}
	fetch := func(text string) Answer {
		t.Helper()
		a, err := c.Fetch(context.Background(), testRequest(text))
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	onlyBy := func(text, node string) {
		t.Helper()
		if got := renders.nodes(text); len(got) != 1 || got[node] == 0 {
			t.Errorf("%q rendered by %v, want only %s", text, got, node)
		}
	}

	// s1 lacks the voice: everything goes to s0, even what s1 would own.
	announce(t, pub, "s0", StatusOnline, []string{voice})
	announce(t, pub, "s1", StatusOnline, []string{"another-voice"})
	eventually(t, "catalogs", func() bool { n := c.Nodes(); return len(n) == 2 && len(n["s1"]) == 1 })
	for i := range 6 {
		text := fmt.Sprintf("Only s0 has it %d.", i)
		fetch(text)
		onlyBy(text, "s0")
	}

	// s1 gets the voice; s0 says it is offline (its will): s1 takes all.
	announce(t, pub, "s1", StatusOnline, []string{voice, "another-voice"})
	announce(t, pub, "s0", "offline", nil)
	eventually(t, "s0 offline", func() bool { _, ok := c.Nodes()["s0"]; return !ok })
	fetch(ownedByS0[0])
	onlyBy(ownedByS0[0], "s1")

	// s0 vanishes without a will while still listed online: the owner's
	// try times out and the next in rank answers.
	announce(t, pub, "s0", StatusOnline, nil)
	eventually(t, "s0 online", func() bool { _, ok := c.Nodes()["s0"]; return ok })
	connOf(s0).setGone(true)
	if a := fetch(ownedByS0[1]); a.Tries != 2 {
		t.Errorf("answered on try %d, want 2 (the owner is gone)", a.Tries)
	}
	onlyBy(ownedByS0[1], "s1")

	// An empty retained status forgets the node; unknown nodes' junk is
	// ignored.
	announce(t, pub, "s0", "", nil)
	for _, topic := range []string{NodePrefix + "a#b/" + NodeStatus, NodePrefix + "x/y/" + NodeStatus, NodePrefix + "x/other"} {
		if err := pub.Publish(context.Background(), topic, []byte(StatusOnline)); err != nil {
			t.Fatal(err)
		}
	}
	if err := pub.Publish(context.Background(), NodeTopic("s1", NodeVoices), []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "s0 forgotten", func() bool { _, ok := c.Nodes()["s0"]; return !ok })
	fetch(ownedByS0[2])
	onlyBy(ownedByS0[2], "s1")
	if n := c.Nodes(); len(n) != 1 || len(n["s1"]) != 2 {
		t.Errorf("nodes %v, want s1 alone with its two voices", n)
	}
}

func TestNodeNames(t *testing.T) {
	for _, n := range []string{"s0", "kitchen-2", "a.b_c"} {
		if err := ValidateNode(n); err != nil {
			t.Errorf("ValidateNode(%q): %v", n, err)
		}
	}
	for _, n := range []string{"", "a/b", "a+", "#", "a b", strings.Repeat("n", 65)} {
		if err := ValidateNode(n); err == nil {
			t.Errorf("ValidateNode(%q) accepted", n)
		}
		if _, err := NewServer(renderFake, &ServerOptions{Node: n}); n != "" && !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewServer with node %q: %v, want ErrInvalidOptions", n, err)
		}
	}
}

func TestFetchQuietWhileNoNodeOnline(t *testing.T) {
	b := newFakeBroker(t)
	c := newTestClient(t, b, "kitchen", &ClientOptions{Timeout: 50 * time.Millisecond})
	if _, err := c.Fetch(context.Background(), testRequest("Nobody renders this.")); !errors.Is(err, ErrNoRenderer) {
		t.Fatalf("Fetch = %v, want ErrNoRenderer", err)
	}
	// No node online and the last ask unanswered: the next fails at once.
	for i := range 3 {
		_, err := c.Fetch(context.Background(), testRequest(fmt.Sprintf("Quiet %d.", i)))
		if !errors.Is(err, ErrNoRenderer) || !strings.Contains(err.Error(), "no render node online") {
			t.Fatalf("Fetch = %v, want an immediate ErrNoRenderer", err)
		}
	}
	if st := c.Stats(); st.Skipped != 3 || st.Requests != 1 || st.Timeouts != 2 {
		t.Errorf("stats %+v: want 3 skipped, 1 request, 2 timeouts", st)
	}
	// A node that says it is online ends the quiet at once.
	startServer(t, b, "s0", renderFake, &ServerOptions{Node: "s0"})
	announce(t, b.conn("announcer"), "s0", StatusOnline, nil)
	eventually(t, "s0 online", func() bool { return len(c.Nodes()) == 1 })
	if _, err := c.Fetch(context.Background(), testRequest("Rendered again.")); err != nil {
		t.Fatal(err)
	}
	// Never quiet when asked so.
	q := newTestClient(t, b, "hall", &ClientOptions{Timeout: 20 * time.Millisecond, Quiet: -1})
	b.setDrop(func(*fakeConn, string, []byte) bool { return true })
	for range 2 {
		if _, err := q.Fetch(context.Background(), testRequest("Lost.")); !errors.Is(err, ErrNoRenderer) {
			t.Fatalf("Fetch = %v, want ErrNoRenderer", err)
		}
	}
	if st := q.Stats(); st.Skipped != 0 || st.Requests != 2 {
		t.Errorf("stats %+v: want every Fetch asked", st)
	}
}

// A group member asks the member that leads an announcement, on its own
// topic alone: the leader serves only that topic (NodeOnly), not the
// render nodes' shared one, and one unanswered try is the end.
func TestFetchFromOneNode(t *testing.T) {
	b := newFakeBroker(t)
	var renders countingRenders
	startServer(t, b, "render", renders.on("render"), nil) // a render node on the shared topic
	leader, err := NewServer(renders.on("kitchen"), &ServerOptions{Node: "kitchen", NodeOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	conn := b.conn("kitchen")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- leader.Serve(ctx, conn) }()
	t.Cleanup(func() { cancel(); <-done })
	eventually(t, "kitchen subscribed", func() bool {
		conn.mu.Lock()
		defer conn.mu.Unlock()
		return len(conn.subs) == 1 && conn.subs[0].filter == NodeTopic("kitchen", NodeRequest)
	})

	c := newTestClient(t, b, "hall", &ClientOptions{Timeout: 100 * time.Millisecond})
	a, err := c.FetchFrom(context.Background(), "kitchen", testRequest("Dinner is ready."))
	if err != nil {
		t.Fatal(err)
	}
	if string(a.Record) != string(recordFor(testRequest("Dinner is ready."))) {
		t.Errorf("record %q", a.Record)
	}
	if got := renders.nodes("Dinner is ready."); len(got) != 1 || got["kitchen"] != 1 {
		t.Errorf("rendered by %v, want the kitchen alone", got)
	}
	// The leader gone: one try, then ErrNoRenderer, and no quiet period.
	conn.setGone(true)
	_, err = c.FetchFrom(context.Background(), "kitchen", testRequest("Gone."))
	if !errors.Is(err, ErrNoRenderer) || !strings.Contains(err.Error(), "1 of 1 tries") {
		t.Fatalf("FetchFrom a gone leader = %v, want ErrNoRenderer after one try", err)
	}
	if _, err := c.Fetch(context.Background(), testRequest("Shared.")); err != nil {
		t.Errorf("Fetch after a leader's silence: %v (a FetchFrom starts no quiet period)", err)
	}
	if got := renders.nodes("Gone."); len(got) != 0 {
		t.Errorf("%v rendered what was asked of the kitchen alone", got)
	}
	if _, err := c.FetchFrom(context.Background(), "a/b", testRequest("x")); !errors.Is(err, ErrInvalidRequest) {
		t.Errorf("FetchFrom a bad node name = %v, want ErrInvalidRequest", err)
	}
	if _, err := NewServer(renderFake, &ServerOptions{NodeOnly: true}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NodeOnly without a Node = %v, want ErrInvalidOptions", err)
	}
}

func TestClientCatalog(t *testing.T) {
	b := newFakeBroker(t)
	var mu sync.Mutex
	calls := 0
	c, err := NewClient(b.conn("kitchen"), "kitchen", &ClientOptions{OnNodes: func() { mu.Lock(); calls++; mu.Unlock() }})
	if err != nil {
		t.Fatal(err)
	}
	pub := b.conn("announcer")
	announce(t, pub, "s1", StatusOnline, []string{"lessac", "demo"})
	announce(t, pub, "s0", StatusOnline, []string{"demo"})
	names := func() []string {
		var out []string
		for _, v := range c.Catalog() {
			out = append(out, v.Name)
		}
		return out
	}
	eventually(t, "both catalogs", func() bool { return slices.Equal(names(), []string{"demo", "lessac"}) })
	// Offline, a node's voices stay the fleet's (asked for, failing
	// render), until its status is cleared.
	announce(t, pub, "s1", "offline", nil)
	eventually(t, "s1 offline", func() bool { return len(c.Nodes()) == 1 })
	if got := names(); !slices.Equal(got, []string{"demo", "lessac"}) {
		t.Errorf("catalog with s1 offline: %v", got)
	}
	announce(t, pub, "s1", "", nil)
	eventually(t, "s1 forgotten", func() bool { return slices.Equal(names(), []string{"demo"}) })
	mu.Lock()
	defer mu.Unlock()
	if calls != 6 {
		t.Errorf("OnNodes called %d times for 2 nodes online, 2 catalogs, 1 offline, 1 forgotten: want 6", calls)
	}
}
