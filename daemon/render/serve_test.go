package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// gate is a RenderFunc that holds every render until released, and
// records how many ran at once.
type gate struct {
	release chan struct{}

	mu       sync.Mutex
	running  int
	max      int
	rendered []string
}

func newGate() *gate { return &gate{release: make(chan struct{})} }

func (g *gate) render(ctx context.Context, r Request) (string, []byte, error) {
	g.mu.Lock()
	g.running++
	g.max = max(g.max, g.running)
	g.rendered = append(g.rendered, r.ID)
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.running--
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
	return renderFake(ctx, r)
}

func (g *gate) state() (running, max, rendered int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.running, g.max, len(g.rendered)
}

// Renders are bounded by Concurrency (default 1): the other requests wait
// in the queue, and every one is answered.
func TestServeConcurrency(t *testing.T) {
	for _, concurrency := range []int{0, 1, 3} {
		t.Run(fmt.Sprint(concurrency), func(t *testing.T) {
			want := max(concurrency, DefaultConcurrency)
			b := newFakeBroker(t)
			g := newGate()
			srv := startServer(t, b, "serve", g.render, &ServerOptions{Concurrency: concurrency})
			c := newTestClient(t, b, "kitchen", nil)
			const n = 6
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					r := testRequest(fmt.Sprintf("Sentence %d.", i))
					if a, err := c.Fetch(context.Background(), r); err != nil || !bytes.Equal(a.Record, recordFor(r)) {
						t.Errorf("Fetch %d: %q, %v", i, a.Record, err)
					}
				})
			}
			// Every request is at the server before any render ends, so
			// an unbounded server would run all of them now.
			eventually(t, "requests queued", func() bool {
				running, _, _ := g.state()
				return srv.Stats().Requests == n && running == want
			})
			for done := 0; done < n; {
				g.release <- struct{}{}
				done++
				eventually(t, "next render started", func() bool {
					running, _, rendered := g.state()
					return running == min(want, n-done) && rendered == min(n, done+want)
				})
			}
			wg.Wait()
			if _, most, _ := g.state(); most != want {
				t.Fatalf("%d renders at once, want %d", most, want)
			}
		})
	}
}

// publishRequest sends a request as a requester would, without a Client.
func publishRequest(t *testing.T, conn *fakeConn, r Request) {
	t.Helper()
	p, err := EncodeRequest(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.Publish(context.Background(), RequestTopic, p); err != nil {
		t.Fatal(err)
	}
}

// replies subscribes conn to reply and returns the chunks that come.
func replies(t *testing.T, conn *fakeConn, reply string) <-chan Chunk {
	ch := make(chan Chunk, 100)
	err := conn.Subscribe([]string{reply}, func(_ string, p []byte) {
		c, err := DecodeChunk(p)
		if err != nil {
			t.Errorf("answer: %v", err)
			return
		}
		ch <- c
	})
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

func recvChunk(t *testing.T, ch <-chan Chunk) Chunk {
	t.Helper()
	select {
	case c := <-ch:
		return c
	case <-time.After(wait):
		t.Fatalf("no answer within %v", wait)
		return Chunk{}
	}
}

// The queue is bounded (busy past it), a retry of a request still
// waiting is dropped (its first answer serves it), and a request that
// waited past MaxWait is dropped unrendered.
func TestServeQueue(t *testing.T) {
	b := newFakeBroker(t)
	g := newGate()
	s, err := NewServer(g.render, &ServerOptions{Queue: 2, MaxWait: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	var clock struct {
		sync.Mutex
		now time.Time
	}
	clock.now = time.Unix(1e9, 0)
	s.now = func() time.Time {
		clock.Lock()
		defer clock.Unlock()
		return clock.now
	}
	runServer(t, b, "serve", s)
	req := b.conn("kitchen")
	reply := ReplyPrefix + "kitchen"
	answers := replies(t, req, reply)
	request := func(id string) Request {
		r := testRequest("Sentence " + id + ".")
		r.ID, r.Reply = id, reply
		return r
	}

	publishRequest(t, req, request("1")) // renders
	eventually(t, "first render", func() bool { running, _, _ := g.state(); return running == 1 })
	publishRequest(t, req, request("2")) // queued
	publishRequest(t, req, request("3")) // queued
	publishRequest(t, req, request("4")) // busy
	publishRequest(t, req, request("2")) // duplicate (the requester's retry)
	publishRequest(t, req, request("1")) // duplicate: rendering
	eventually(t, "requests taken", func() bool { return s.Stats().Requests == 6 })
	clock.Lock()
	clock.now = clock.now.Add(2 * time.Minute) // "2" and "3" are stale now
	clock.Unlock()
	g.release <- struct{}{}
	if c := recvChunk(t, answers); c.ID != "1" || c.IsError() {
		t.Fatalf("answer %+v, want the record of 1", c)
	}
	eventually(t, "stale requests dropped", func() bool { return s.Stats().Dropped[DroppedStale] == 2 })
	st := s.Stats()
	if st.Dropped[DroppedBusy] != 1 || st.Dropped[DroppedDuplicate] != 2 || st.Answers != 1 {
		t.Fatalf("server stats %+v", st)
	}
	// Answered, "1" may be asked again.
	publishRequest(t, req, request("1"))
	g.release <- struct{}{}
	if c := recvChunk(t, answers); c.ID != "1" {
		t.Fatalf("answer %+v", c)
	}
	if _, _, rendered := g.state(); rendered != 2 {
		t.Fatalf("%d renders, want 2", rendered)
	}
}

// A request that is not one is dropped, unless it has an id and a reply
// topic to say so on (bad_request).
func TestServeBadRequests(t *testing.T) {
	b := newFakeBroker(t)
	var rendered sync.Map
	srv := startServer(t, b, "serve", func(ctx context.Context, r Request) (string, []byte, error) {
		rendered.Store(r.ID, true)
		return renderFake(ctx, r)
	}, nil)
	req := b.conn("kitchen")
	reply := ReplyPrefix + "kitchen"
	answers := replies(t, req, reply)
	for _, p := range []string{
		``,
		`not json`,
		`{"id":"a","reply":"mynah/kitchen/say","voice":"v","rate":1,"text":"x"}`,
		`{"id":"a/b","reply":"mynah/render/reply/kitchen","voice":"v","rate":1,"text":"x"}`,
		`{"id":"a","reply":"mynah/render/reply/kitchen/#","voice":"v","rate":1,"text":"x"}`,
		`{"id":"b","reply":"mynah/render/reply/kitchen","voice":"v","rate":"fast","text":"x"}`, // answerable
		`{"id":"c","reply":"mynah/render/reply/kitchen","voice":"v","rate":1,"text":""}`,       // answerable
	} {
		if err := req.Publish(context.Background(), RequestTopic, []byte(p)); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"b", "c"} {
		c := recvChunk(t, answers)
		if c.ID != id || c.Reason != ReasonBadRequest {
			t.Fatalf("answer %+v, want bad_request for %s", c, id)
		}
	}
	eventually(t, "error answers counted", func() bool { return srv.Stats().ErrorAnswers == 2 })
	if st := srv.Stats(); st.Requests != 7 || st.Dropped[DroppedMalformed] != 5 || st.Answers != 0 {
		t.Fatalf("server stats %+v", st)
	}
	rendered.Range(func(k, _ any) bool {
		t.Errorf("rendered %v", k)
		return true
	})
}

// A record is answered in chunks of ChunkSize; one that would need over
// MaxChunks, or is bigger than MaxRecordBytes, is answered too_large.
func TestServeChunks(t *testing.T) {
	record := testRecord(600<<10, 9)
	for _, tc := range []struct {
		name      string
		record    []byte
		chunkSize int
		messages  int
		reason    string
	}{
		{"600 KiB in 64 KiB chunks", record, 64 << 10, 10, ""},
		{"600 KiB in the default chunks", record, 0, 3, ""},
		{"over MaxChunks", record, 4 << 10, 1, ReasonTooLarge},
		{"over MaxRecordBytes", make([]byte, MaxRecordBytes+1), 0, 1, ReasonTooLarge},
		{"empty record", []byte{}, 0, 1, ReasonSynthesis},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t)
			var messages sync.Map // id -> count
			b.setDrop(func(_ *fakeConn, topic string, payload []byte) bool {
				if topic == ReplyPrefix+"kitchen" {
					c, _ := DecodeChunk(payload)
					n, _ := messages.LoadOrStore(c.ID, new(int))
					*n.(*int)++
				}
				return false
			})
			startServer(t, b, "serve", func(context.Context, Request) (string, []byte, error) {
				return testKey, tc.record, nil
			}, &ServerOptions{ChunkSize: tc.chunkSize})
			c := newTestClient(t, b, "kitchen", nil)
			a, err := c.Fetch(context.Background(), testRequest("Hello."))
			if tc.reason != "" {
				var ae *AnswerError
				if !errors.As(err, &ae) || ae.Reason() != tc.reason {
					t.Fatalf("Fetch = %v, want reason %s", err, tc.reason)
				}
				return
			}
			if err != nil || !bytes.Equal(a.Record, tc.record) {
				t.Fatalf("Fetch: %d bytes, %v", len(a.Record), err)
			}
			n, _ := messages.Load(a.ID)
			if got := *n.(*int); got != tc.messages {
				t.Fatalf("%d messages, want %d", got, tc.messages)
			}
		})
	}
}

func TestServeStops(t *testing.T) {
	b := newFakeBroker(t)
	g := newGate()
	s, err := NewServer(g.render, nil)
	if err != nil {
		t.Fatal(err)
	}
	conn := b.conn("serve")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, conn) }()
	eventually(t, "subscribed", func() bool { return b.members(ShareGroup, RequestTopic) == 1 })
	req := b.conn("kitchen")
	answers := replies(t, req, ReplyPrefix+"kitchen")
	for _, id := range []string{"1", "2"} {
		r := testRequest("Hi.")
		r.ID, r.Reply = id, ReplyPrefix+"kitchen"
		publishRequest(t, req, r)
	}
	eventually(t, "rendering", func() bool { running, _, _ := g.state(); return running == 1 && s.Stats().Requests == 2 })
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v", err)
	}
	// The render in progress was cancelled and not answered, the queued
	// request and any later one are dropped: all three count as stopped.
	r := testRequest("Hi.")
	r.ID, r.Reply = "3", ReplyPrefix+"kitchen"
	publishRequest(t, req, r)
	eventually(t, "dropped", func() bool { return s.Stats().Dropped[DroppedStopped] == 3 })
	select {
	case c := <-answers:
		t.Fatalf("answer %+v after Serve returned", c)
	default:
	}
	if err := s.Serve(context.Background(), conn); !errors.Is(err, ErrServing) {
		t.Fatalf("second Serve = %v, want ErrServing", err)
	}
}

func TestServeSubscribeFails(t *testing.T) {
	b := newFakeBroker(t)
	conn := b.conn("serve")
	conn.setGone(true)
	if err := Serve(context.Background(), conn, renderFake, nil); err == nil {
		t.Fatal("Serve without a connection returned nil")
	}
}

func TestNewServerOptions(t *testing.T) {
	for _, o := range []*ServerOptions{
		{Concurrency: -1}, {Concurrency: 65}, {Queue: -1}, {Queue: 1025},
		{ChunkSize: -1}, {ChunkSize: MaxChunkData + 1}, {MaxWait: -time.Second},
	} {
		if _, err := NewServer(renderFake, o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewServer(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	if _, err := NewServer(nil, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("NewServer(nil) = %v", err)
	}
	s, err := NewServer(renderFake, nil)
	if err != nil || s.concurrency != DefaultConcurrency || cap(s.queue) != DefaultQueue || s.maxWait != DefaultMaxWait || s.chunkSize != MaxChunkData {
		t.Fatalf("NewServer defaults: %+v, %v", s, err)
	}
}
