package wyoming

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/speech"
)

var testVoices = []VoiceInfo{
	{Name: "en_US-amy-medium", Description: "Amy (US English)", Languages: []string{"en_US"}, Version: "1.0"},
	{Name: "de_DE-thorsten", Languages: []string{"de_DE"}, Speakers: []string{"calm", "loud"}},
}

// tone is n frames of mono audio at rate whose samples encode their
// sentence, so that a test can tell the sentences apart.
func tone(rate, n int, v int16) audio.PCM {
	p := audio.PCM{Rate: rate, Channels: 1, Samples: make([]int16, n)}
	for i := range p.Samples {
		p.Samples[i] = v
	}
	return p
}

// sentenceEngine speaks each sentence of the text ('.'-separated) as 100
// frames at 22050 Hz with value 1, 2, 3 ... and a 10 ms pause after each.
func sentenceEngine(rec *recorder) *fakeEngine {
	return &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			rec.add(r)
			parts := strings.SplitAfter(r.Text, ".")
			parts = slices.DeleteFunc(parts, func(s string) bool { return strings.TrimSpace(s) == "" })
			for i := range parts {
				c := speech.Chunk{Index: i, Last: i == len(parts)-1, PCM: tone(22050, 100, int16(len(rec.texts()))), Silence: 10 * time.Millisecond}
				if err := emit(c); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

func newServer(t *testing.T, o Options) (*Server, string) {
	t.Helper()
	s, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	return s, startServer(t, s)
}

func TestNewOptions(t *testing.T) {
	eng := sentenceEngine(new(recorder))
	if _, err := New(nil); !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "Engine") {
		t.Errorf("New(nil) = %v, want ErrInvalidOptions naming Engine", err)
	}
	for _, o := range []Options{
		{Engine: eng, MaxConnections: -1},
		{Engine: eng, MaxParallel: -2},
		{Engine: eng, ReadTimeout: -time.Second},
		{Engine: eng, MaxTextRunes: -1},
		{Engine: eng, Listen: "no-port"},
	} {
		if _, err := New(&o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
	s, err := New(&Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	if s.o.Listen != DefaultListen || s.o.MaxConnections != DefaultMaxConnections || s.o.MaxParallel < 1 ||
		s.o.ReadTimeout != DefaultReadTimeout || s.o.MaxTextRunes != DefaultMaxTextRunes {
		t.Errorf("defaults not applied: %+v", s.o)
	}
}

func TestDescribe(t *testing.T) {
	_, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder)), Version: "1.2.3"})
	info := describe(t, addr)
	if len(info.TTS) != 1 {
		t.Fatalf("tts programs: %+v", info.TTS)
	}
	p := info.TTS[0]
	if p.Name != "mynah" || p.Description == "" || !p.Installed || p.Version != "1.2.3" || !p.SupportsSynthesizeStreaming ||
		p.Attribution.Name == "" || p.Attribution.URL == "" {
		t.Errorf("program: %+v", p)
	}
	if len(p.Voices) != 2 {
		t.Fatalf("voices: %+v", p.Voices)
	}
	amy, th := p.Voices[0], p.Voices[1]
	if amy.Name != "en_US-amy-medium" || amy.Description != "Amy (US English)" || !amy.Installed ||
		!slices.Equal(amy.Languages, []string{"en_US"}) || amy.Version == nil || *amy.Version != "1.0" || amy.Speakers != nil ||
		amy.Attribution.URL == "" {
		t.Errorf("voice 0: %+v", amy)
	}
	if th.Description != "de_DE-thorsten" || th.Version != nil || len(th.Speakers) != 2 || th.Speakers[1].Name != "loud" {
		t.Errorf("voice 1: %+v", th)
	}
}

// The raw info JSON has every key the Python dataclasses require.
func TestDescribeRawKeys(t *testing.T) {
	_, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder))})
	cl := dial(t, addr)
	cl.send(typeDescribe, nil)
	ev := cl.must()
	var raw struct {
		TTS []map[string]json.RawMessage `json:"tts"`
		ASR []any                        `json:"asr"`
	}
	if err := json.Unmarshal(ev.Data, &raw); err != nil || raw.ASR == nil {
		t.Fatalf("info %s: %v", ev.Data, err)
	}
	for _, k := range []string{"name", "description", "attribution", "installed", "version", "voices", "supports_synthesize_streaming"} {
		if _, ok := raw.TTS[0][k]; !ok {
			t.Errorf("program lacks %q", k)
		}
	}
	var voices []map[string]json.RawMessage
	json.Unmarshal(raw.TTS[0]["voices"], &voices)
	for _, k := range []string{"name", "description", "attribution", "installed", "version", "languages"} {
		if _, ok := voices[1][k]; !ok {
			t.Errorf("voice lacks %q", k)
		}
	}
}

func TestSynthesizeOneShot(t *testing.T) {
	rec := new(recorder)
	s, addr := newServer(t, Options{Engine: sentenceEngine(rec), SamplesPerChunk: 64})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "One. Two.", "voice": map[string]string{"name": "de_DE-thorsten", "speaker": "calm"}})
	res := cl.audio(typeAudioStop)
	if len(res.starts) != 1 || res.starts[0].Rate != 22050 || res.starts[0].Width != 2 || res.starts[0].Channels != 1 {
		t.Errorf("audio-start: %+v", res.starts)
	}
	// 100 frames, 10 ms (221 frames) of pause, 100 frames; no pause at the end.
	if want := 100 + 221 + 100; len(res.samples) != want {
		t.Errorf("got %d samples, want %d", len(res.samples), want)
	}
	if res.samples[0] != 1 || res.samples[150] != 0 || res.samples[len(res.samples)-1] != 1 {
		t.Errorf("samples are not sentence, pause, sentence")
	}
	for _, f := range res.format {
		if f.Rate != 22050 || f.Width != 2 || f.Channels != 1 {
			t.Errorf("chunk format %+v", f)
		}
	}
	if res.chunks != 2+4+2 { // 64-frame chunks: 100 → 2, 221 → 4, 100 → 2
		t.Errorf("%d chunks", res.chunks)
	}
	if got := rec.requests(); len(got) != 1 || got[0].Voice != "de_DE-thorsten" || got[0].Speaker != "calm" || got[0].Text != "One. Two." {
		t.Errorf("engine got %+v", got)
	}
	// The connection stays usable, as with the Python servers.
	cl.send(typeDescribe, nil)
	if ev := cl.must(); ev.Type != typeInfo {
		t.Errorf("describe after synthesize: %s", ev.Type)
	}
	st := s.Stats()
	if st.Requests != 1 || st.Describes != 1 || st.Errors != 0 || st.BytesOut == 0 || st.AudioOut < 19*time.Millisecond {
		t.Errorf("stats %+v", st)
	}
}

func TestSynthesizeVoiceByLanguage(t *testing.T) {
	rec := new(recorder)
	_, addr := newServer(t, Options{Engine: sentenceEngine(rec)})
	for _, lang := range []string{"de_DE", "de-de", "de"} {
		cl := dial(t, addr)
		cl.send(typeSynthesize, map[string]any{"text": "Hallo.", "voice": map[string]string{"language": lang}})
		cl.audio(typeAudioStop)
	}
	for _, r := range rec.requests() {
		if r.Voice != "de_DE-thorsten" {
			t.Errorf("language picked %q", r.Voice)
		}
	}
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Bonjour.", "voice": map[string]string{"language": "fr_FR"}})
	cl.wantError(CodeUnknownVoice)
}

func TestSynthesizeDefaultVoice(t *testing.T) {
	rec := new(recorder)
	_, addr := newServer(t, Options{Engine: sentenceEngine(rec)})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi."})
	cl.audio(typeAudioStop)
	if rec.requests()[0].Voice != "" {
		t.Errorf("voice %q, want the engine's default", rec.requests()[0].Voice)
	}
}

func TestUnknownVoice(t *testing.T) {
	rec := new(recorder)
	s, addr := newServer(t, Options{Engine: sentenceEngine(rec)})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"name": "nope"}})
	if text := cl.wantError(CodeUnknownVoice); !strings.Contains(text, "nope") {
		t.Errorf("error text %q does not name the voice", text)
	}
	cl = dial(t, addr)
	cl.send(typeSynthesizeStart, map[string]any{"voice": map[string]string{"name": "nope"}})
	cl.wantError(CodeUnknownVoice)
	if len(rec.requests()) != 0 {
		t.Errorf("engine was asked: %+v", rec.requests())
	}
	if st := s.Stats(); st.Errors != 2 {
		t.Errorf("errors = %d, want 2", st.Errors)
	}
}

func TestRefusedRequests(t *testing.T) {
	tests := []struct {
		name   string
		events func(cl *client)
		code   string
	}{
		{"empty text", func(cl *client) { cl.send(typeSynthesize, map[string]any{"text": "  "}) }, CodeEmptyText},
		{"text too long", func(cl *client) { cl.send(typeSynthesize, map[string]any{"text": strings.Repeat("é", 11)}) }, CodeTextTooLong},
		{"stream too long", func(cl *client) {
			cl.send(typeSynthesizeStart, nil)
			cl.send(typeSynthesizeChunk, map[string]any{"text": "123456"})
			cl.send(typeSynthesizeChunk, map[string]any{"text": "78901"})
		}, CodeTextTooLong},
		{"chunk outside stream", func(cl *client) { cl.send(typeSynthesizeChunk, map[string]any{"text": "x"}) }, CodeUnexpected},
		{"stop outside stream", func(cl *client) { cl.send(typeSynthesizeStop, nil) }, CodeUnexpected},
		{"start inside stream", func(cl *client) { cl.send(typeSynthesizeStart, nil); cl.send(typeSynthesizeStart, nil) }, CodeUnexpected},
		{"text not a string", func(cl *client) { cl.send(typeSynthesize, map[string]any{"text": 5}) }, CodeBadEvent},
		{"voice not an object", func(cl *client) { cl.send(typeSynthesize, map[string]any{"text": "x", "voice": "amy"}) }, CodeBadEvent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder)), MaxTextRunes: 10})
			cl := dial(t, addr)
			tt.events(cl)
			cl.wantError(tt.code)
		})
	}
}

func TestEngineFailure(t *testing.T) {
	eng := &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			if err := emit(speech.Chunk{PCM: tone(16000, 10, 1)}); err != nil {
				return err
			}
			return errors.New("model exploded")
		},
	}
	_, addr := newServer(t, Options{Engine: eng})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "Hi."})
	if ev := cl.must(); ev.Type != typeAudioStart {
		t.Fatalf("got %s", ev.Type)
	}
	if ev := cl.must(); ev.Type != typeAudioChunk {
		t.Fatalf("got %s", ev.Type)
	}
	if text := cl.wantError(CodeSynthesis); !strings.Contains(text, "model exploded") {
		t.Errorf("error text %q", text)
	}
}

func TestNothingToSayIsEmptyAudio(t *testing.T) {
	eng := &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc:  func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error { return nil },
	}
	_, addr := newServer(t, Options{Engine: eng})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": "<break/>"})
	res := cl.audio(typeAudioStop)
	if len(res.starts) != 1 || res.chunks != 1 || len(res.samples) != 0 {
		t.Errorf("got %+v, want audio-start, one empty chunk, audio-stop", res)
	}
}

// streamEngine speaks every call as one sentence: 10 ms at rates[i]
// (the last rate repeats), value i+1, after telling spoke.
// Ten clients at once: MaxParallel 2 keeps their Speak calls to two at a
// time; NoParallelLimit lets all ten in (the engine schedules).
func TestConcurrentClients(t *testing.T) {
	for _, tc := range []struct {
		name     string
		parallel int
		wantPeak int32
	}{{"max_parallel=2", 2, 2}, {"no_limit", NoParallelLimit, 10}} {
		t.Run(tc.name, func(t *testing.T) { concurrentClients(t, tc.parallel, tc.wantPeak) })
	}
}

func concurrentClients(t *testing.T, parallel int, wantPeak int32) {
	var running, peak atomic.Int32
	release := make(chan struct{})
	eng := &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			n := running.Add(1)
			defer running.Add(-1)
			for {
				p := peak.Load()
				if n <= p || peak.CompareAndSwap(p, n) {
					break
				}
			}
			<-release
			var v int16
			fmt.Sscanf(r.Text, "client %d", &v)
			return emit(speech.Chunk{Last: true, PCM: tone(22050, 300, v)})
		},
	}
	const clients = 10
	s, addr := newServer(t, Options{Engine: eng, MaxConnections: clients, MaxParallel: parallel})
	wait := atOnce(t, clients, func(i int) error {
		i++ // clients 1 to 10: their samples say who they are
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		cl := &client{t: t, c: c, r: newReader(c)}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := WriteEvent(c, mustEvent(typeSynthesize, map[string]any{"text": fmt.Sprintf("client %d", i)})); err != nil {
			return err
		}
		var got []int16
		for {
			ev, err := cl.next()
			if err != nil {
				return err
			}
			if ev.Type == typeAudioChunk {
				for j := 0; j+1 < len(ev.Payload); j += 2 {
					got = append(got, int16(ev.Payload[j])|int16(ev.Payload[j+1])<<8)
				}
			}
			if ev.Type == typeAudioStop {
				break
			}
		}
		if len(got) != 300 || got[0] != int16(i) || got[299] != int16(i) {
			return fmt.Errorf("got %d samples of %v", len(got), got[:min(1, len(got))])
		}
		return nil
	})
	// Let every Speak finish only once all ten requests are in: then the
	// semaphore, not timing, is what keeps them to two at once.
	for s.Stats().Requests < clients {
		runtimeGosched()
	}
	close(release)
	wait()
	if p := peak.Load(); p != wantPeak {
		t.Errorf("peak parallel Speak calls %d, want %d (MaxParallel %d)", p, wantPeak, parallel)
	}
	if st := s.Stats(); st.Requests != clients || st.Connections != clients || st.Rejected != 0 {
		t.Errorf("stats %+v", st)
	}
}

func TestTooManyConnections(t *testing.T) {
	s, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder)), MaxConnections: 1})
	first := dial(t, addr)
	first.send(typeSynthesizeStart, nil) // a stream in progress holds the only slot
	first.send(typePing, nil)
	first.must()
	// A describe needs no slot; a second request is refused as busy.
	if info := describe(t, addr); len(info.TTS) != 1 {
		t.Errorf("describe while busy: %+v", info)
	}
	second := dial(t, addr)
	second.send(typeSynthesize, map[string]any{"text": "Me too."})
	second.wantError(CodeBusy)
	if st := s.Stats(); st.Rejected != 1 {
		t.Errorf("stats %+v", st)
	}
	// The first connection is still served.
	first.send(typeSynthesizeChunk, map[string]any{"text": "Still here."})
	first.send(typeSynthesizeStop, nil)
	first.audio(typeSynthesizeStopped)
	// Its slot is free again.
	third := dial(t, addr)
	third.send(typeSynthesize, map[string]any{"text": "Now me."})
	third.audio(typeAudioStop)
}

// After each bad client the server answers a fresh describe.
func TestMalformedFrames(t *testing.T) {
	tests := []struct {
		name string
		send string
		code string // "" when the server only closes
	}{
		{"data too large", `{"type":"synthesize","data_length":2000000}` + "\n", CodeBadEvent},
		{"payload on a tts event", `{"type":"synthesize","payload_length":10}` + "\n0123456789", CodeBadEvent},
		{"negative length", `{"type":"synthesize","data_length":-5}` + "\n", CodeBadEvent},
		{"bad json header", `{"type":"synthesize",` + "\n", CodeBadEvent},
		{"bad json data", `{"type":"synthesize","data_length":5}` + "\n{abc}", CodeBadEvent},
		{"binary garbage", "\x00\x01\x02\xff\xfe\xfd\n\x00\x00", CodeBadEvent},
		{"header too long", strings.Repeat("x", 70000) + "\n", CodeBadEvent},
		{"half a header then close", `{"type":"descr`, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder))})
			cl := dial(t, addr)
			cl.raw(tt.send)
			if tt.code != "" {
				cl.wantError(tt.code)
			} else {
				cl.c.(*net.TCPConn).CloseWrite()
				cl.closed()
			}
			if info := describe(t, addr); len(info.TTS) != 1 {
				t.Errorf("describe after a bad client: %+v", info)
			}
			if st := s.Stats(); st.Errors != 1 {
				t.Errorf("errors = %d, want 1", st.Errors)
			}
		})
	}
}

func TestSlowloris(t *testing.T) {
	s, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder)), IdleTimeout: 50 * time.Millisecond})
	cl := dial(t, addr)
	cl.raw(`{"type":"desc`) // and never the rest
	cl.wantError(CodeTimeout)
	if info := describe(t, addr); len(info.TTS) != 1 {
		t.Errorf("describe after a slow client: %+v", info)
	}
	if st := s.Stats(); st.Errors != 1 {
		t.Errorf("errors = %d", st.Errors)
	}
}

func TestIgnoredEventsAndPing(t *testing.T) {
	_, addr := newServer(t, Options{Engine: sentenceEngine(new(recorder))})
	cl := dial(t, addr)
	cl.send("transcribe", map[string]any{"language": "en"})
	cl.send(typePing, map[string]any{"text": "hello"})
	ev := cl.must()
	if ev.Type != typePong || !strings.Contains(string(ev.Data), `"hello"`) {
		t.Errorf("ping answered with %s %s", ev.Type, ev.Data)
	}
}

// Serve returns once ctx ends, after cancelling a Speak in progress and
// closing its connection.
func TestServeShutdown(t *testing.T) {
	started := make(chan struct{})
	eng := &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			close(started)
			<-ctx.Done()
			return ctx.Err()
		},
	}
	s, err := New(&Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	cl := dial(t, ln.Addr().String())
	cl.send(typeSynthesize, map[string]any{"text": "A long story."})
	<-started
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Serve = %v, want nil", err)
	}
	cl.closed()
	if st := s.Stats(); st.Active != 0 {
		t.Errorf("%d connections still active", st.Active)
	}
	if _, err := net.Dial("tcp", ln.Addr().String()); err == nil {
		t.Error("listener still open")
	}
}

func TestRunBadAddress(t *testing.T) {
	s, err := New(&Options{Engine: sentenceEngine(new(recorder)), Listen: "127.0.0.1:-1"})
	if err != nil {
		return // refused up front is fine too
	}
	if err := s.Run(context.Background()); err == nil {
		t.Fatal("Run on a bad port succeeded")
	}
}

// A burst of requests picks its voices from one reading of the engine's
// list; a voice that list lacks (installed since) is looked for in a
// list read then, and describe always reads it anew.
func TestVoiceListReadOncePerBurst(t *testing.T) {
	rec := new(recorder)
	var mu sync.Mutex
	reads := 0
	voices := slices.Clone(testVoices)
	eng := sentenceEngine(rec)
	eng.VoicesFunc = func() []VoiceInfo {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return slices.Clone(voices)
	}
	s, err := New(&Options{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	// Within one list's life however slowly the requests go (race
	// detector, emulated CPUs): the test counts reads, not time.
	s.voicesTTL = time.Hour
	addr := startServer(t, s)
	say := func(voice string) {
		cl := dial(t, addr)
		cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"name": voice}})
		cl.audio(typeAudioStop)
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return reads
	}
	for range 5 {
		say(testVoices[0].Name)
	}
	if n := count(); n != 1 {
		t.Fatalf("5 requests read the voice list %d times, want once", n)
	}
	mu.Lock()
	voices = append(voices, VoiceInfo{Name: "new-voice", Languages: []string{"en_GB"}})
	mu.Unlock()
	say("new-voice")
	if n := count(); n != 2 {
		t.Fatalf("a voice not in the list: %d reads in all, want 2", n)
	}
	if got := rec.requests(); got[len(got)-1].Voice != "new-voice" {
		t.Fatalf("engine got voice %q, want new-voice", got[len(got)-1].Voice)
	}
	cl := dial(t, addr)
	cl.send(typeDescribe, nil)
	if ev := cl.must(); ev.Type != typeInfo {
		t.Fatalf("describe: %s", ev.Type)
	}
	if n := count(); n != 3 {
		t.Fatalf("describe: %d reads in all, want 3", n)
	}
}
