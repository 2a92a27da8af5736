package wyoming

// Tests of the server against clients that misbehave: sockets left open,
// clients that never read, floods of requests while busy.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/speech"
)

// talker speaks sentences of 4410 frames (200 ms at 22050 Hz) for as long
// as its emit takes them, or n of them when the text is "n sentences".
func talker() *fakeEngine {
	return &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			n := -1
			fmt.Sscanf(r.Text, "%d sentences", &n)
			for i := 0; n < 0 || i < n; i++ {
				if err := ctx.Err(); err != nil {
					return err
				}
				if err := emit(speech.Chunk{Index: i, Last: i == n-1, PCM: tone(22050, 4410, int16(i+1))}); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// dialNonReader connects with a small receive buffer and sends a
// synthesize for endless audio, then never reads.
func dialNonReader(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.(*net.TCPConn).SetReadBuffer(4096)
	if err := WriteEvent(c, mustEvent(typeSynthesize, map[string]any{"text": "talk forever"})); err != nil {
		t.Fatal(err)
	}
	return c
}

// honest is a Home Assistant request: connect, synthesize, read the audio
// to audio-stop. It returns the frames heard.
func honest(addr, text string) (int, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(time.Minute)) // only so that a broken server cannot hang the test
	if err := WriteEvent(c, mustEvent(typeSynthesize, map[string]any{"text": text})); err != nil {
		return 0, err
	}
	r := newReader(c)
	frames := 0
	for {
		ev, err := ReadEvent(r, Limits{MaxPayloadBytes: 1 << 20})
		if err != nil {
			return frames, err
		}
		switch ev.Type {
		case typeAudioChunk:
			frames += len(ev.Payload) / 2
		case typeAudioStop:
			return frames, nil
		case typeError:
			return frames, fmt.Errorf("error event %s", ev.Data)
		}
	}
}

// The busy answer reaches a client that wrote its request at once, as Home
// Assistant's (Python) client does, instead of a reset: the server reads
// the request, answers, half-closes and drains before it closes.
func TestBusyReachesTheClient(t *testing.T) {
	s, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder)), MaxConnections: 1})
	holder := dial(t, addr)
	holder.send(typeSynthesizeStart, nil)
	holder.send(typePing, nil)
	holder.must()

	const clients = 40
	atOnce(t, clients, func(i int) error {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(time.Minute))
		// The request and a second event right after it, as a client that
		// does not wait for answers sends them.
		for _, ev := range []Event{mustEvent(typeSynthesize, map[string]any{"text": fmt.Sprint("client ", i)}), {Type: typePing}} {
			if err := WriteEvent(c, ev); err != nil {
				return fmt.Errorf("write: %w", err)
			}
		}
		r := newReader(c)
		ev, err := ReadEvent(r, Limits{})
		if err != nil || ev.Type != typeError || !bytes.Contains(ev.Data, []byte(`"code":"busy"`)) {
			return fmt.Errorf("got %s %s, %v; want the busy error", ev.Type, ev.Data, err)
		}
		if _, err := ReadEvent(r, Limits{}); !errors.Is(err, io.EOF) {
			return fmt.Errorf("after busy %v, want a clean close", err)
		}
		return nil
	})()
	if st := s.Stats(); st.Rejected != clients {
		t.Errorf("rejected %d, want %d", st.Rejected, clients)
	}
}

// Sockets that send nothing hold no slot: more of them than
// MaxConnections lock nobody out, they are closed after IdleTimeout, and
// past MaxIdle the longest idle are closed at once.
func TestIdleConnectionsLockNobodyOut(t *testing.T) {
	s, addr := newServer(t, Options{Engine: talker(), MaxConnections: 2, MaxIdle: 6, IdleTimeout: 500 * time.Millisecond})
	var idle []*client
	for range 8 {
		idle = append(idle, dial(t, addr)) // and never a byte
	}
	if n, err := honest(addr, "2 sentences"); err != nil || n != 2*4410 {
		t.Fatalf("a client after 8 idle sockets: %d frames, %v", n, err)
	}
	// The longest idle were closed to make room as newer connections came
	// (the honest one too, and it again once answered): at least two; the
	// rest time out. (Which of those dialled close together the server
	// saw first is up to the scheduler.)
	evicted := 0
	for i, cl := range idle {
		ev, err := cl.next()
		switch {
		case errors.Is(err, io.EOF):
			evicted++
		case err != nil || ev.Type != typeError || !bytes.Contains(ev.Data, []byte(CodeTimeout)):
			t.Errorf("idle socket %d: %s %s %v, want closed for a newer one or the timeout error", i, ev.Type, ev.Data, err)
		}
	}
	if evicted < 2 {
		t.Errorf("%d idle sockets closed for newer ones, want at least 2", evicted)
	}
	if st := s.Stats(); st.IdleClosed != 8 || st.Rejected != 0 {
		t.Errorf("stats %+v, want 8 idle closed, none rejected", st)
	}
}

// A connection is idle again once its request is answered: it gives its
// slot back, and must send the next one within IdleTimeout.
func TestSlotGivenBackBetweenRequests(t *testing.T) {
	s, addr := newServer(t, Options{Engine: talker(), MaxConnections: 1, IdleTimeout: 300 * time.Millisecond})
	first := dial(t, addr)
	first.send(typeSynthesize, map[string]any{"text": "1 sentences"})
	first.audio(typeAudioStop)
	if n, err := honest(addr, "1 sentences"); err != nil || n != 4410 {
		t.Errorf("while the first connection stays open: %d frames, %v", n, err)
	}
	first.wantError(CodeTimeout)
	if st := s.Stats(); st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

// Inside a stream the connection keeps its slot and ReadTimeout applies
// (Home Assistant waits for its language model between chunks).
func TestStreamReadTimeout(t *testing.T) {
	_, addr := newServer(t, Options{Engine: talker(), IdleTimeout: time.Minute, ReadTimeout: 100 * time.Millisecond})
	cl := dial(t, addr)
	cl.send(typeSynthesizeStart, nil)
	cl.wantError(CodeTimeout)
}

// A client that does not read gives back its synthesis slot once its
// send queue is full: another client is answered while the first is
// still connected, long before its WriteTimeout.
func TestSlowReaderGivesBackItsSlot(t *testing.T) {
	s, addr := newServer(t, Options{Engine: talker(), MaxParallel: 1, WriteTimeout: 20 * time.Second, SendBuffer: 64 << 10})
	stuck := dialNonReader(t, addr)
	waitRequests(s, 1)
	if n, err := honest(addr, "3 sentences"); err != nil || n != 3*4410 {
		t.Fatalf("beside a client that does not read: %d frames, %v", n, err)
	}
	// The stuck client was not dropped to make way (a dropped connection
	// counts as an error): it still holds its request.
	if st := s.Stats(); st.Errors != 0 || st.Active < 1 {
		t.Errorf("stats %+v: the client that does not read was dropped before the other was answered", st)
	}
	stuck.Close()
}

// A client that reads nothing for WriteTimeout is dropped, and its Speak
// call ends.
func TestNonReaderDropped(t *testing.T) {
	ended := make(chan error, 1)
	eng := talker()
	speak := eng.SpeakFunc
	eng.SpeakFunc = func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
		err := speak(ctx, r, emit)
		ended <- err
		return err
	}
	s, addr := newServer(t, Options{Engine: eng, WriteTimeout: 200 * time.Millisecond, SendBuffer: 64 << 10})
	dialNonReader(t, addr)
	if err := <-ended; err == nil {
		t.Error("Speak for a client that never reads ended without an error")
	}
	// The server closed its end (the kernel still sends what its buffers
	// hold, to a client that would read it).
	for deadline := time.Now().Add(10 * time.Second); s.Stats().Active != 0; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("stats %+v: the connection is still served", s.Stats())
		}
	}
	if st := s.Stats(); st.Errors != 1 {
		t.Errorf("stats %+v, want the dropped connection counted as an error", st)
	}
}

// first_audio_ms counts from the request's arrival, its wait for a
// synthesis slot included.
func TestFirstAudioCountsTheWait(t *testing.T) {
	release := make(chan struct{})
	eng := talker()
	speak := eng.SpeakFunc
	eng.SpeakFunc = func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
		if r.Text == "hold" {
			<-release
			r.Text = "1 sentences"
		}
		return speak(ctx, r, emit)
	}
	var logs logBuffer
	s, addr := newServer(t, Options{Engine: eng, MaxParallel: 1, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	holder := dial(t, addr)
	holder.send(typeSynthesize, map[string]any{"text": "hold"})
	waitRequests(s, 1)
	done := make(chan error, 1)
	go func() { _, err := honest(addr, "1 sentences"); done <- err }()
	waitRequests(s, 2)
	const held = 300 * time.Millisecond
	time.Sleep(held)
	close(release)
	holder.audio(typeAudioStop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	var waited bool
	for _, m := range regexp.MustCompile(`msg=spoken .*first_audio_ms=([0-9.]+) wait_ms=([0-9.]+)`).FindAllStringSubmatch(logs.String(), -1) {
		first, _ := strconv.ParseFloat(m[1], 64)
		wait, _ := strconv.ParseFloat(m[2], 64)
		if first < wait {
			t.Errorf("first_audio_ms %v is less than the wait %v", first, wait)
		}
		waited = waited || wait >= float64(held.Milliseconds())
	}
	if !waited {
		t.Errorf("no request logged a wait of at least %v:\n%s", held, logs.String())
	}
}

// The soak: 8 idle sockets, 2 clients that never read (one per synthesis
// slot) and 10 honest clients at once, on the default limits. Every honest
// client is answered in full; each within 2 s, where the idle and
// non-reading clients' own timeouts (5 s, 30 s) are what a server that
// let them hold slots would make it wait.
func TestMisbehavingClientsSoak(t *testing.T) {
	s, addr := newServer(t, Options{Engine: talker(), MaxParallel: 2})
	for range 8 {
		dial(t, addr)
	}
	for range 2 {
		dialNonReader(t, addr)
	}
	waitRequests(s, 2)
	var mu sync.Mutex
	var slowest time.Duration
	atOnce(t, 10, func(int) error {
		start := time.Now()
		n, err := honest(addr, "5 sentences")
		took := time.Since(start)
		mu.Lock()
		slowest = max(slowest, took)
		mu.Unlock()
		switch {
		case err != nil || n != 5*4410:
			return fmt.Errorf("%d frames, %v", n, err)
		case took > 2*time.Second:
			return fmt.Errorf("answered in %v", took)
		}
		return nil
	})()
	t.Logf("slowest honest client answered in %v", slowest)
	if st := s.Stats(); st.Rejected != 0 {
		t.Errorf("stats %+v, want nobody refused", st)
	}
}

// logBuffer is a bytes.Buffer safe for the server's goroutines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
