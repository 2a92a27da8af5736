package render

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestFetchAnswered(t *testing.T) {
	b := newFakeBroker(t)
	srv := startServer(t, b, "serve", renderFake, nil)
	c := newTestClient(t, b, "kitchen", nil)

	r := testRequest("Dinner is ready.")
	a, err := c.Fetch(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Record, recordFor(r)) || a.Key != keyFor(r) || a.Voice != r.Voice || a.Tries != 1 || a.ID == "" {
		t.Fatalf("answer %+v", a)
	}
	// The server counts an answer once its last chunk is published,
	// which may be after the client has it.
	eventually(t, "answer counted", func() bool { return srv.Stats().Answers == 1 })
	cs, ss := c.Stats(), srv.Stats()
	if cs.Requests != 1 || cs.Answers != 1 || cs.Retries != 0 || cs.Timeouts != 0 || len(cs.Refused) != 0 {
		t.Fatalf("client stats %+v", cs)
	}
	if ss.Requests != 1 || ss.Answers != 1 || ss.ErrorAnswers != 0 || len(ss.Dropped) != 0 {
		t.Fatalf("server stats %+v", ss)
	}

	// With the key the requester computed.
	r.Key = keyFor(r)
	if a, err := c.Fetch(context.Background(), r); err != nil || a.Key != r.Key {
		t.Fatalf("Fetch with key: %+v, %v", a, err)
	}
}

// A render node that drops while it has the request loses it
// (mosquitto#2662): the client asks again with the same id, and the
// broker's round robin hands the retry to the other node.
func TestFetchRetriesWhenServerDropsRequest(t *testing.T) {
	b := newFakeBroker(t)
	a := startServer(t, b, "serve-a", renderFake, nil)
	other := startServer(t, b, "serve-b", renderFake, nil)
	var dropped []string
	var mu sync.Mutex
	b.setDrop(func(to *fakeConn, topic string, payload []byte) bool {
		mu.Lock()
		defer mu.Unlock()
		if topic != RequestTopic || to != connOf(a) || len(dropped) > 0 {
			return false
		}
		r, _ := DecodeRequest(payload)
		dropped = append(dropped, r.ID)
		return true
	})
	c := newTestClient(t, b, "kitchen", &ClientOptions{Timeout: time.Second})

	r := testRequest("Hello.")
	ans, err := c.Fetch(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ans.Record, recordFor(r)) || ans.Tries != 2 {
		t.Fatalf("answer %+v", ans)
	}
	mu.Lock()
	if len(dropped) != 1 || dropped[0] != ans.ID {
		t.Fatalf("dropped %q, answered %q: the retry must keep the id", dropped, ans.ID)
	}
	mu.Unlock()
	if cs := c.Stats(); cs.Retries != 1 || cs.Timeouts != 1 || cs.Answers != 1 {
		t.Fatalf("client stats %+v", cs)
	}
	eventually(t, "answer counted", func() bool { return other.Stats().Answers == 1 })
	if sa, sb := a.Stats(), other.Stats(); sa.Requests != 0 || sb.Requests != 1 || sb.Answers != 1 {
		t.Fatalf("server stats a %+v, b %+v", sa, sb)
	}
}

func TestFetchNoRenderer(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setup    func(t *testing.T, b *fakeBroker)
		cut      bool // the client's own connection is down
		timeouts uint64
	}{
		{"servers gone", func(t *testing.T, b *fakeBroker) {
			// Persistent members that went offline keep getting their
			// share of the requests, which is lost (mosquitto#1747).
			connOf(startServer(t, b, "serve-a", renderFake, nil)).setGone(true)
			connOf(startServer(t, b, "serve-b", renderFake, nil)).setGone(true)
		}, false, 2},
		{"no servers", func(*testing.T, *fakeBroker) {}, false, 2},
		{"servers that never answer", func(t *testing.T, b *fakeBroker) {
			respond(t, b, "mute", func(Request) [][]byte { return nil })
		}, false, 2},
		{"client not connected", func(*testing.T, *fakeBroker) {}, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t)
			tc.setup(t, b)
			conn := b.conn("kitchen")
			c, err := NewClient(conn, "kitchen", &ClientOptions{Timeout: 50 * time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			conn.setGone(tc.cut)
			_, err = c.Fetch(context.Background(), testRequest("Hello."))
			if !errors.Is(err, ErrNoRenderer) {
				t.Fatalf("Fetch = %v, want ErrNoRenderer", err)
			}
			if got := reasonOf(err, ""); got != ReasonRender {
				t.Fatalf("reason %q, want %q", got, ReasonRender)
			}
			var ae *AnswerError
			if errors.As(err, &ae) {
				t.Fatalf("Fetch = %v: an AnswerError without an error answer", err)
			}
			if tc.cut && !strings.Contains(err.Error(), "publish") {
				t.Fatalf("Fetch = %v: does not say the publish failed", err)
			}
			cs := c.Stats()
			if cs.Retries != 1 || cs.Timeouts != tc.timeouts || cs.NoRenderer != 1 || cs.Answers != 0 {
				t.Fatalf("client stats %+v", cs)
			}
		})
	}
}

// A record over several messages is reassembled whatever their order,
// and a chunk that comes twice is taken once.
func TestFetchChunksOutOfOrder(t *testing.T) {
	b := newFakeBroker(t)
	record := testRecord(600<<10, 7)
	respond(t, b, "serve", func(r Request) [][]byte {
		m := answerMessages(t, r.ID, r.Voice, testKey, record, MaxChunkData)
		if len(m) != 3 {
			t.Errorf("%d chunks, want 3", len(m))
			return nil
		}
		return [][]byte{m[2], m[0], m[2], m[1]}
	})
	c := newTestClient(t, b, "kitchen", nil)
	a, err := c.Fetch(context.Background(), testRequest("A long one."))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Record, record) || a.Key != testKey {
		t.Fatalf("record of %d bytes differs (key %s)", len(a.Record), a.Key)
	}
	if cs := c.Stats(); cs.Duplicates != 1 || len(cs.Refused) != 0 || cs.Answers != 1 {
		t.Fatalf("client stats %+v", cs)
	}
}

// Forged or broken answers are refused and counted, and the Fetch still
// returns the genuine answer that follows them.
func TestFetchRefusesForged(t *testing.T) {
	genuine := testRecord(1000, 1)
	other := testRecord(1000, 2)
	for _, tc := range []struct {
		name   string
		reason string
		// messages returns what the node sends, forgeries included; the
		// genuine answer is answerMessages(r.ID, r.Voice, testKey,
		// genuine, 500), two chunks.
		messages func(t *testing.T, r Request, real [][]byte) [][]byte
	}{
		{"bad crc", RefusedCRC, func(t *testing.T, r Request, real [][]byte) [][]byte {
			bad := mustEncodeChunk(t, Chunk{ID: r.ID, Total: 1, Key: testKey, Voice: r.Voice, Size: len(genuine), CRC32C: Checksum(genuine) ^ 1, Data: genuine})
			return append([][]byte{bad}, real...)
		}},
		{"wrong key", RefusedKey, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append(answerMessages(t, r.ID, r.Voice, strings.Repeat("e", KeyHexLen), other, MaxChunkData), real...)
		}},
		{"another voice", RefusedVoice, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append(answerMessages(t, r.ID, "de_DE-thorsten-medium", testKey, other, MaxChunkData), real...)
		}},
		{"oversize record", RefusedTooLarge, func(t *testing.T, r Request, real [][]byte) [][]byte {
			big := rawAnswer(1, fmt.Sprintf(`{"id":%q,"seq":0,"total":1,"key":%q,"voice":%q,"size":%d,"crc32c":1}`, r.ID, testKey, r.Voice, MaxRecordBytes+1), []byte{1})
			return append([][]byte{big}, real...)
		}},
		{"oversize message", RefusedTooLarge, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append([][]byte{make([]byte, MaxAnswerBytes+1)}, real...)
		}},
		{"over the client's limit", RefusedTooLarge, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append(answerMessages(t, r.ID, r.Voice, testKey, testRecord(5000, 3), MaxChunkData), real...)
		}},
		{"wrong total", RefusedTotal, func(t *testing.T, r Request, real [][]byte) [][]byte {
			forged := mustEncodeChunk(t, Chunk{ID: r.ID, Seq: 1, Total: 3, Key: testKey, Voice: r.Voice, Size: len(genuine), CRC32C: Checksum(genuine), Data: other[:500]})
			return [][]byte{real[0], forged, real[1]}
		}},
		{"inconsistent crc", RefusedInconsistent, func(t *testing.T, r Request, real [][]byte) [][]byte {
			forged := mustEncodeChunk(t, Chunk{ID: r.ID, Seq: 1, Total: 2, Key: testKey, Voice: r.Voice, Size: len(genuine), CRC32C: Checksum(other), Data: other[500:]})
			return [][]byte{real[0], forged, real[1]}
		}},
		{"more bytes than its size", RefusedSize, func(t *testing.T, r Request, real [][]byte) [][]byte {
			forged := mustEncodeChunk(t, Chunk{ID: r.ID, Seq: 1, Total: 2, Key: testKey, Voice: r.Voice, Size: len(genuine), CRC32C: Checksum(genuine), Data: other[:501]})
			return [][]byte{real[0], forged, real[1]}
		}},
		{"fewer bytes than its size", RefusedSize, func(t *testing.T, r Request, real [][]byte) [][]byte {
			forged := answerMessages(t, r.ID, r.Voice, testKey, genuine, 500)
			short := mustEncodeChunk(t, Chunk{ID: r.ID, Seq: 1, Total: 2, Key: testKey, Voice: r.Voice, Size: len(genuine), CRC32C: Checksum(genuine), Data: genuine[500:999]})
			return append([][]byte{forged[0], short}, real...)
		}},
		{"answer for an id never asked", RefusedUnknownID, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append(answerMessages(t, "never-asked", r.Voice, testKey, other, MaxChunkData), real...)
		}},
		{"malformed", RefusedMalformed, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append([][]byte{[]byte(`{"id":"` + r.ID + `"}`)}, real...)
		}},
		{"second answer for an answered id", RefusedAnswered, func(t *testing.T, r Request, real [][]byte) [][]byte {
			return append(real, answerMessages(t, r.ID, r.Voice, testKey, other, MaxChunkData)...)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t)
			respond(t, b, "serve", func(r Request) [][]byte {
				return tc.messages(t, r, answerMessages(t, r.ID, r.Voice, testKey, genuine, 500))
			})
			c := newTestClient(t, b, "kitchen", &ClientOptions{Timeout: wait, MaxRecordBytes: 4096})
			r := testRequest("Hello.")
			r.Key = testKey
			a, err := c.Fetch(context.Background(), r)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Record, genuine) || a.Tries != 1 {
				t.Fatalf("got a record of %d bytes (tries %d), not the genuine one", len(a.Record), a.Tries)
			}
			eventually(t, "refusal counted", func() bool { return c.Stats().Refused[tc.reason] > 0 })
			cs := c.Stats()
			if cs.Refused[tc.reason] != 1 || len(cs.Refused) != 1 || cs.Answers != 1 || cs.Retries != 0 {
				t.Fatalf("client stats %+v, want one refused %s", cs, tc.reason)
			}
		})
	}
}

// An error answer is the node's word: returned with its reason, not as
// ErrNoRenderer, and not retried (another node would fail the same way).
func TestFetchErrorAnswer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		reason string
	}{
		{"plain error", errors.New("model crashed"), ReasonSynthesis},
		{"reasoned error", fmt.Errorf("front end: %w", &reasonedError{"nothing to say", "empty"}), "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBroker(t)
			srv := startServer(t, b, "serve", func(context.Context, Request) (string, []byte, error) {
				return "", nil, tc.err
			}, nil)
			c := newTestClient(t, b, "kitchen", nil)
			_, err := c.Fetch(context.Background(), testRequest("Hello."))
			var ae *AnswerError
			if !errors.As(err, &ae) || ae.Reason() != tc.reason || !strings.Contains(ae.Message, tc.err.Error()) {
				t.Fatalf("Fetch = %v, want an AnswerError with reason %s", err, tc.reason)
			}
			if errors.Is(err, ErrNoRenderer) || reasonOf(err, "") != tc.reason {
				t.Fatalf("Fetch = %v: reason %q", err, reasonOf(err, ""))
			}
			if cs := c.Stats(); cs.Retries != 0 || cs.ErrorAnswers != 1 || cs.NoRenderer != 0 {
				t.Fatalf("client stats %+v", cs)
			}
			eventually(t, "error answer counted", func() bool { return srv.Stats().ErrorAnswers == 1 })
			if ss := srv.Stats(); ss.ErrorAnswers != 1 || ss.Answers != 0 {
				t.Fatalf("server stats %+v", ss)
			}
		})
	}
}

// A node without the voice says so, and the retry goes to one that has
// it; when none has it, the error answer is returned.
func TestFetchUnknownVoiceAsksAgain(t *testing.T) {
	lacks := func(context.Context, Request) (string, []byte, error) {
		return "", nil, fmt.Errorf("voice list: %w", ErrUnknownVoice)
	}
	t.Run("another node has it", func(t *testing.T) {
		b := newFakeBroker(t)
		a := startServer(t, b, "serve-a", lacks, nil)
		other := startServer(t, b, "serve-b", renderFake, nil)
		c := newTestClient(t, b, "kitchen", nil)
		r := testRequest("Hello.")
		ans, err := c.Fetch(context.Background(), r)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(ans.Record, recordFor(r)) || ans.Tries != 2 {
			t.Fatalf("answer %+v", ans)
		}
		if cs := c.Stats(); cs.Retries != 1 || cs.ErrorAnswers != 1 || cs.Timeouts != 0 {
			t.Fatalf("client stats %+v", cs)
		}
		eventually(t, "answers counted", func() bool { return a.Stats().ErrorAnswers == 1 && other.Stats().Answers == 1 })
		if a.Stats().ErrorAnswers != 1 || other.Stats().Answers != 1 {
			t.Fatalf("server stats %+v, %+v", a.Stats(), other.Stats())
		}
	})
	t.Run("no node has it", func(t *testing.T) {
		b := newFakeBroker(t)
		startServer(t, b, "serve-a", lacks, nil)
		startServer(t, b, "serve-b", lacks, nil)
		c := newTestClient(t, b, "kitchen", nil)
		_, err := c.Fetch(context.Background(), testRequest("Hello."))
		var ae *AnswerError
		if !errors.As(err, &ae) || ae.Reason() != ReasonUnknownVoice || errors.Is(err, ErrNoRenderer) {
			t.Fatalf("Fetch = %v, want an unknown_voice AnswerError", err)
		}
		if cs := c.Stats(); cs.Retries != 1 || cs.ErrorAnswers != 2 {
			t.Fatalf("client stats %+v", cs)
		}
	})
}

// A node whose voice gives another phrase key than the requester's (a
// different model) answers key_mismatch instead of a record the client
// would refuse.
func TestServeKeyMismatch(t *testing.T) {
	b := newFakeBroker(t)
	srv := startServer(t, b, "serve", renderFake, nil)
	c := newTestClient(t, b, "kitchen", nil)
	r := testRequest("Hello.")
	r.Key = testKey // not keyFor(r)
	_, err := c.Fetch(context.Background(), r)
	var ae *AnswerError
	if !errors.As(err, &ae) || ae.Reason() != ReasonKeyMismatch {
		t.Fatalf("Fetch = %v, want key_mismatch", err)
	}
	eventually(t, "error answers counted", func() bool { return srv.Stats().ErrorAnswers == 2 })
	if ss := srv.Stats(); ss.ErrorAnswers != 2 || ss.Answers != 0 {
		t.Fatalf("server stats %+v (asked twice: the retry may reach another model)", ss)
	}
}

func TestFetchConcurrent(t *testing.T) {
	b := newFakeBroker(t)
	opts := &ServerOptions{Concurrency: 2, Queue: 32}
	sa := startServer(t, b, "serve-a", renderFake, opts)
	sb := startServer(t, b, "serve-b", renderFake, opts)
	c := newTestClient(t, b, "kitchen", nil)
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			r := testRequest(fmt.Sprintf("Sentence %d.", i))
			a, err := c.Fetch(context.Background(), r)
			if err != nil {
				t.Error(err)
				return
			}
			if !bytes.Equal(a.Record, recordFor(r)) {
				t.Errorf("sentence %d: got %q", i, a.Record)
			}
		})
	}
	wg.Wait()
	if cs := c.Stats(); cs.Answers != n || cs.Retries != 0 || len(cs.Refused) != 0 {
		t.Fatalf("client stats %+v", cs)
	}
	eventually(t, "answers counted", func() bool { return sa.Stats().Answers+sb.Stats().Answers == n })
	if a, b := sa.Stats().Answers, sb.Stats().Answers; a+b != n || a == 0 || b == 0 {
		t.Fatalf("served %d and %d, want %d in all, both some", a, b, n)
	}
}

func TestFetchIDInUse(t *testing.T) {
	b := newFakeBroker(t)
	release := make(chan struct{})
	startServer(t, b, "serve", func(ctx context.Context, r Request) (string, []byte, error) {
		<-release
		return renderFake(ctx, r)
	}, nil)
	c := newTestClient(t, b, "kitchen", nil)
	r := testRequest("Hello.")
	r.ID = "same"
	done := make(chan error, 1)
	go func() {
		_, err := c.Fetch(context.Background(), r)
		done <- err
	}()
	eventually(t, "first Fetch waiting", func() bool { return c.Stats().Requests == 1 })
	if _, err := c.Fetch(context.Background(), r); !errors.Is(err, ErrIDInUse) {
		t.Fatalf("second Fetch = %v, want ErrIDInUse", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Done with, the id may be used again.
	if _, err := c.Fetch(context.Background(), r); err != nil {
		t.Fatal(err)
	}
}

func TestFetchContext(t *testing.T) {
	b := newFakeBroker(t)
	c := newTestClient(t, b, "kitchen", nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		eventually(t, "Fetch waiting", func() bool { return c.Stats().Requests == 1 })
		cancel()
	}()
	_, err := c.Fetch(ctx, testRequest("Hello."))
	if !errors.Is(err, context.Canceled) || errors.Is(err, ErrNoRenderer) {
		t.Fatalf("Fetch = %v, want context.Canceled", err)
	}
}

func TestFetchRefusesBadRequest(t *testing.T) {
	b := newFakeBroker(t)
	c := newTestClient(t, b, "kitchen", nil)
	for _, r := range []Request{
		{Voice: "v", Text: ""},
		{Voice: "v", Text: "x", Rate: 9},
		{Voice: "v", Text: "x", Reply: ReplyPrefix + "elsewhere"},
	} {
		if _, err := c.Fetch(context.Background(), r); !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("Fetch(%+v) = %v, want ErrInvalidRequest", r, err)
		}
	}
	if cs := c.Stats(); cs.Requests != 0 {
		t.Fatalf("client stats %+v: nothing should have been sent", cs)
	}
}

func TestNewClientOptions(t *testing.T) {
	b := newFakeBroker(t)
	for _, tc := range []struct {
		node string
		opts *ClientOptions
	}{
		{"", nil},
		{"a/b", nil},
		{"+", nil},
		{"n", &ClientOptions{Timeout: -1}},
		{"n", &ClientOptions{MaxRecordBytes: MaxRecordBytes + 1}},
		{"n", &ClientOptions{MaxRecordBytes: -1}},
	} {
		if _, err := NewClient(b.conn("x"), tc.node, tc.opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewClient(%q, %+v) = %v, want ErrInvalidOptions", tc.node, tc.opts, err)
		}
	}
	c, err := NewClient(b.conn("x"), "kitchen-1", nil)
	if err != nil || c.Reply() != "mynah/render/reply/kitchen-1" || c.timeout != DefaultTimeout {
		t.Fatalf("NewClient = %+v, %v", c, err)
	}
}

func TestIDRing(t *testing.T) {
	r := newIDRing(3)
	for _, id := range []string{"a", "b", "a", "c"} {
		r.add(id)
	}
	if !r.has("a") || !r.has("b") || !r.has("c") || r.has("d") {
		t.Fatal("ring lost an id")
	}
	// Full: [c b a]. Each add now evicts the oldest left.
	r.add("d") // evicts "b"
	if r.has("b") || !r.has("a") || !r.has("d") {
		t.Fatalf("ring %+v", r)
	}
	r.add("e") // evicts the second "a"
	if r.has("a") || !r.has("c") || !r.has("e") || len(r.set) != 3 {
		t.Fatalf("ring %+v", r)
	}
}

// framed joins messages for FuzzClientAnswers: each with a 3-byte
// big-endian length.
func framed(msgs ...[]byte) []byte {
	var out []byte
	for _, m := range msgs {
		out = append(out, byte(len(m)>>16), byte(len(m)>>8), byte(len(m)))
		out = append(out, m...)
	}
	return out
}

// FuzzClientAnswers feeds a waiting Fetch any sequence of answer
// messages: the client never panics, never holds more than the record
// limit, and an answer it takes has the asked voice and key and its
// checksum.
func FuzzClientAnswers(f *testing.F) {
	const id, voice = "id-1", "v"
	// Small seeds: the fuzzer's minimization of a new input takes time
	// quadratic in its length.
	rec := testRecord(24, 5)
	msgs := answerMessages(f, id, voice, testKey, rec, 8)
	f.Add(framed(msgs...))
	f.Add(framed(msgs[2], msgs[0], msgs[0], msgs[1]))
	f.Add(framed(msgs[0], rawAnswer(1, `{"id":"id-1","key":"`+testKey+`","voice":"v","seq":1,"total":3,"size":24,"crc32c":1}`, rec[:20])))
	f.Add(framed(mustEncodeChunk(f, Chunk{ID: id, Voice: voice, Error: "no", Reason: "synthesis"})))
	f.Add([]byte{0, 0, 3, 'M', 'Y', 'R'})
	f.Fuzz(func(t *testing.T, in []byte) {
		c, err := NewClient(nopTransport{}, "kitchen", &ClientOptions{MaxRecordBytes: 64 << 10})
		if err != nil {
			t.Fatal(err)
		}
		fe := &fetch{id: id, voice: voice, key: testKey, signal: make(chan struct{}, 1), refused: make(map[string]int)}
		c.waiting[id] = fe
		for len(in) >= 3 {
			n := int(in[0])<<16 | int(in[1])<<8 | int(in[2])
			in = in[3:]
			if n > len(in) {
				n = len(in)
			}
			c.handle(c.reply, in[:n])
			in = in[n:]
			if a := fe.asm; a != nil && (a.bytes > a.size || a.size > c.maxRecord) {
				t.Fatalf("assembly holds %d bytes of %d (limit %d)", a.bytes, a.size, c.maxRecord)
			}
		}
		if a := fe.answer; a != nil {
			if a.Voice != voice || a.Key != testKey || len(a.Record) > c.maxRecord {
				t.Fatalf("took answer %+v", a)
			}
		}
	})
}

// nopTransport subscribes and publishes nothing.
type nopTransport struct{}

var _ Transport = nopTransport{}

func (nopTransport) Subscribe([]string, func(string, []byte)) error { return nil }
func (nopTransport) Publish(context.Context, string, []byte) error  { return nil }
