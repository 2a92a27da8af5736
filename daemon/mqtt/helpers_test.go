package mqtt_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
)

// wait bounds every wait in these tests: long enough for a loaded CI
// machine, and a failure (never a pass) when it runs out.
const wait = 20 * time.Second

// uniq returns a short random string for topics and client ids, so tests
// never see each other's retained messages or sessions.
func uniq() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testLogger collects the client's log and prints it if the test fails.
// It does not write to t directly: paho goroutines may log after the test.
func testLogger(t testing.TB) *slog.Logger {
	var buf lockedBuffer
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("client log:\n%s", buf.String())
		}
	})
	return slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// testClient is a connected Client with the channels tests watch.
type testClient struct {
	*mqtt.Client
	node      string
	status    string
	connected chan struct{} // one value per OnConnect call
}

// connectClient connects a Client for node to url; adjust may change the
// options first. The client is closed when the test ends.
func connectClient(t testing.TB, url, node string, adjust func(*mqtt.Options)) *testClient {
	t.Helper()
	tc := &testClient{
		node:      node,
		status:    "mynah/" + node + "/status",
		connected: make(chan struct{}, 100),
	}
	opts := &mqtt.Options{
		Broker:               url,
		ClientID:             "mynah-test-" + node,
		StatusTopic:          tc.status,
		MaxReconnectInterval: time.Second,
		OnConnect:            func() { tc.connected <- struct{}{} },
		Logger:               testLogger(t),
	}
	if adjust != nil {
		adjust(opts)
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	c, err := mqtt.Connect(ctx, opts)
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	tc.Client = c
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = c.Close(ctx)
	})
	return tc
}

// subscribe registers filters and returns the messages handed to handle.
// The handler never blocks: a full channel fails the test.
func (tc *testClient) subscribe(t testing.TB, filters ...string) <-chan daemon.Message {
	t.Helper()
	ch := make(chan daemon.Message, 4096)
	err := tc.Subscribe(filters, func(m daemon.Message) {
		select {
		case ch <- m:
		default:
			t.Errorf("handler channel full")
		}
	}, nil)
	if err != nil {
		t.Fatalf("subscribe %q: %v", filters, err)
	}
	return ch
}

// waitConnected waits for the next OnConnect call.
func (tc *testClient) waitConnected(t testing.TB) {
	t.Helper()
	select {
	case <-tc.connected:
	case <-time.After(wait):
		t.Fatalf("OnConnect was not called within %v", wait)
	}
}

// waitDisconnected waits until the client has noticed a lost connection.
func waitDisconnected(t testing.TB, tc *testClient) {
	t.Helper()
	deadline := time.Now().Add(wait)
	for tc.Connected() {
		if time.Now().After(deadline) {
			t.Fatalf("client still connected after %v", wait)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// recv returns the next message or fails the test.
func recv(t testing.TB, ch <-chan daemon.Message) daemon.Message {
	t.Helper()
	select {
	case m := <-ch:
		return m
	case <-time.After(wait):
		t.Fatalf("no message within %v", wait)
		return daemon.Message{}
	}
}

// waitPayload reads ch until a message with payload want (and, if
// retained is not nil, that Retained flag) arrives, or fails the test.
func waitPayload(t testing.TB, ch <-chan daemon.Message, want string, retained *bool) daemon.Message {
	t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-ch:
			if string(m.Payload) == want && (retained == nil || m.Retained == *retained) {
				return m
			}
		case <-deadline:
			t.Fatalf("no message %q (retained %v) within %v", want, fmtBoolPtr(retained), wait)
			return daemon.Message{}
		}
	}
}

func fmtBoolPtr(b *bool) any {
	if b == nil {
		return "any"
	}
	return *b
}

var (
	live     = new(bool)
	retained = func() *bool { b := true; return &b }()
)

// proxy forwards TCP connections to a broker and lets a test break them
// the way a network does: cut open connections (the broker sees them
// die without DISCONNECT), refuse new ones, or silently drop all bytes.
type proxy struct {
	ln       net.Listener
	target   string
	refuse   atomic.Bool
	blackout atomic.Bool

	mu    sync.Mutex
	conns []net.Conn
	wg    sync.WaitGroup
}

func startProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy listen: %v", err)
	}
	p := &proxy{ln: ln, target: target}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		ln.Close()
		p.cut()
		p.wg.Wait()
	})
	return p
}

func (p *proxy) url() string { return "tcp://" + p.ln.Addr().String() }

func (p *proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		if p.refuse.Load() {
			c.Close()
			continue
		}
		b, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, b)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(b, c)
		go p.pipe(c, b)
	}
}

// pipe copies src to dst, dropping bytes during a blackout.
func (p *proxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.blackout.Load() {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			if err != io.EOF {
				src.Close()
			}
			return
		}
	}
}

// cut closes every open connection in both directions.
func (p *proxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}
