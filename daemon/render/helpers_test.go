package render

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"testing"
)

// keyFor and recordFor are a fake voice: the record is a function of the
// request, so a test can tell whose answer it got.
func keyFor(r Request) string {
	h := sha256.Sum256([]byte(r.Voice + "\x00" + r.Text))
	return hex.EncodeToString(h[:])
}

func recordFor(r Request) []byte { return []byte("record of " + r.Voice + ": " + r.Text) }

// renderFake renders every request with recordFor.
func renderFake(_ context.Context, r Request) (string, []byte, error) {
	return keyFor(r), recordFor(r), nil
}

// startServer serves render on a new connection of b and waits until its
// shared subscription is in place. It stops when the test ends.
func startServer(t testing.TB, b *fakeBroker, name string, render RenderFunc, opts *ServerOptions) *Server {
	t.Helper()
	s, err := NewServer(render, opts)
	if err != nil {
		t.Fatal(err)
	}
	return runServer(t, b, name, s)
}

// runServer runs s on a new connection of b (see startServer).
func runServer(t testing.TB, b *fakeBroker, name string, s *Server) *Server {
	t.Helper()
	conn := b.conn(name)
	before := b.members(ShareGroup, RequestTopic)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, conn) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	eventually(t, name+" subscribed", func() bool { return b.members(ShareGroup, RequestTopic) > before })
	servers.Store(s, conn)
	return s
}

// servers maps a Server to its connection, for tests that cut one.
var servers sync.Map

func connOf(s *Server) *fakeConn {
	c, _ := servers.Load(s)
	return c.(*fakeConn)
}

// newTestClient is a Client for node on a new connection of b.
func newTestClient(t testing.TB, b *fakeBroker, node string, opts *ClientOptions) *Client {
	t.Helper()
	if opts == nil {
		opts = &ClientOptions{Timeout: wait}
	}
	c, err := NewClient(b.conn(node), node, opts)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// respond is a hand-made render node: it subscribes RequestTopic (not
// shared) and publishes, in order and from its own goroutine, what
// answer returns for each request.
func respond(t testing.TB, b *fakeBroker, name string, answer func(r Request) [][]byte) *fakeConn {
	t.Helper()
	conn := b.conn(name)
	var wg sync.WaitGroup
	t.Cleanup(wg.Wait)
	err := conn.Subscribe([]string{RequestTopic}, func(_ string, payload []byte) {
		r, err := DecodeRequest(payload)
		if err != nil {
			t.Errorf("responder: %v", err)
			return
		}
		wg.Go(func() {
			for _, p := range answer(r) {
				if err := conn.Publish(context.Background(), r.Reply, p); err != nil {
					t.Errorf("responder: %v", err)
				}
			}
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return conn
}

// answerMessages encodes the answer to r of record under key and voice,
// in chunks of chunkSize.
func answerMessages(t testing.TB, id, voice, key string, record []byte, chunkSize int) [][]byte {
	t.Helper()
	chunks, err := SplitRecord(id, voice, key, record, chunkSize)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]byte, len(chunks))
	for i, c := range chunks {
		if out[i], err = EncodeChunk(c); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func mustEncodeChunk(t testing.TB, c Chunk) []byte {
	t.Helper()
	p, err := EncodeChunk(c)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func testRequest(text string) Request {
	return Request{Voice: "en_US-lessac-medium", Rate: 1, Text: text}
}
