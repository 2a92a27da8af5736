package wyoming

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"
)

// client is a minimal Wyoming client, as Home Assistant behaves: one
// connection per request.
type client struct {
	t *testing.T
	c net.Conn
	r *bufio.Reader
}

func dial(t *testing.T, addr string) *client {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	// A deadline only so that a broken server fails the test instead of
	// hanging it; no assertion depends on it.
	c.SetDeadline(time.Now().Add(30 * time.Second))
	return &client{t: t, c: c, r: bufio.NewReader(c)}
}

func (cl *client) send(typ string, data any) {
	cl.t.Helper()
	ev := Event{Type: typ}
	if data != nil {
		b, err := json.Marshal(data)
		if err != nil {
			cl.t.Fatal(err)
		}
		ev.Data = b
	}
	if err := WriteEvent(cl.c, ev); err != nil {
		cl.t.Fatal(err)
	}
}

func (cl *client) raw(s string) {
	cl.t.Helper()
	if _, err := io.WriteString(cl.c, s); err != nil {
		cl.t.Fatal(err)
	}
}

// next reads the next event; io.EOF once the server closed.
func (cl *client) next() (Event, error) {
	return ReadEvent(cl.r, Limits{MaxPayloadBytes: 1 << 20})
}

func (cl *client) must() Event {
	cl.t.Helper()
	ev, err := cl.next()
	if err != nil {
		cl.t.Fatalf("read event: %v", err)
	}
	return ev
}

// closed asserts that the server has closed the connection.
func (cl *client) closed() {
	cl.t.Helper()
	ev, err := cl.next()
	if !errors.Is(err, io.EOF) && !errors.Is(err, ErrTruncated) && !isReset(err) {
		cl.t.Fatalf("want the connection closed, got %+v, %v", ev, err)
	}
}

func isReset(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// wantError reads an error event with that code, then the close.
func (cl *client) wantError(code string) string {
	cl.t.Helper()
	ev := cl.must()
	if ev.Type != typeError {
		cl.t.Fatalf("got %s %s, want error %s", ev.Type, ev.Data, code)
	}
	var d struct{ Text, Code string }
	json.Unmarshal(ev.Data, &d)
	if d.Code != code || d.Text == "" {
		cl.t.Fatalf("error %+v, want code %s with a text", d, code)
	}
	cl.closed()
	return d.Text
}

// audioResult is what one audio-start ... audio-stop carried.
type audioResult struct {
	starts  []audioFormat
	chunks  int
	format  []audioFormat // of each chunk
	samples []int16
	stops   int
}

// audio reads events up to and including the one of type until, and
// collects the audio on the way.
func (cl *client) audio(until string) audioResult {
	cl.t.Helper()
	var res audioResult
	for {
		ev := cl.must()
		switch ev.Type {
		case typeAudioStart:
			var f audioFormat
			json.Unmarshal(ev.Data, &f)
			res.starts = append(res.starts, f)
		case typeAudioChunk:
			var f audioFormat
			json.Unmarshal(ev.Data, &f)
			res.chunks++
			res.format = append(res.format, f)
			for i := 0; i+1 < len(ev.Payload); i += 2 {
				res.samples = append(res.samples, int16(binary.LittleEndian.Uint16(ev.Payload[i:])))
			}
		case typeAudioStop:
			res.stops++
		default:
			if ev.Type != until {
				cl.t.Fatalf("unexpected %s %s", ev.Type, ev.Data)
			}
		}
		if ev.Type == until {
			return res
		}
	}
}

// startServer serves s on a loopback port until the test ends, and fails
// the test if Serve returns an error.
func startServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

func describe(t *testing.T, addr string) infoData {
	t.Helper()
	cl := dial(t, addr)
	cl.send(typeDescribe, nil)
	ev := cl.must()
	if ev.Type != typeInfo {
		t.Fatalf("describe answered with %s %s", ev.Type, ev.Data)
	}
	var info infoData
	if err := json.Unmarshal(ev.Data, &info); err != nil {
		t.Fatal(err)
	}
	return info
}

func newReader(c net.Conn) *bufio.Reader { return bufio.NewReader(c) }

func mustEvent(typ string, data any) Event {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return Event{Type: typ, Data: b}
}

func runtimeGosched() { runtime.Gosched() }

// atOnce runs fn for clients 0 to n-1, each on a goroutine of its own, and
// returns what waits for them all and reports each error.
func atOnce(t *testing.T, n int, fn func(i int) error) (wait func()) {
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(i); err != nil {
				errs <- fmt.Errorf("client %d: %w", i, err)
			}
		}()
	}
	return func() {
		t.Helper()
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}

// waitRequests waits until s has begun n requests.
func waitRequests(s *Server, n uint64) {
	for s.Stats().Requests < n {
		time.Sleep(time.Millisecond)
	}
}
