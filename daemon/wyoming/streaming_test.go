package wyoming

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/speech"
	"github.com/mynah-tts/mynah/audio/text"
)

func streamEngine(rec *recorder, spoke chan<- string, rates ...int) *fakeEngine {
	return &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			rec.add(r)
			n := len(rec.texts())
			rate := rates[min(n, len(rates))-1]
			if spoke != nil {
				spoke <- r.Text
			}
			return emit(speech.Chunk{Last: true, PCM: tone(rate, rate/100, int16(n))}) // 10 ms
		},
	}
}

func TestStreaming(t *testing.T) {
	rec := new(recorder)
	spoke := make(chan string, 10)
	// The second sentence comes at 16 kHz: it must be resampled to the
	// stream's 22050 Hz.
	s, addr := newServer(t, Options{Engine: streamEngine(rec, spoke, 22050, 16000)})
	cl := dial(t, addr)
	cl.send(typeSynthesizeStart, map[string]any{"voice": map[string]string{"name": "en_US-amy-medium"}})
	cl.send(typeSynthesizeChunk, map[string]any{"text": "The bed "})
	cl.send(typeSynthesizeChunk, map[string]any{"text": "light is off. The kit"})

	// The first sentence is spoken before any more text arrives.
	if got := <-spoke; got != "The bed light is off." {
		t.Fatalf("first sentence %q", got)
	}
	first := cl.audio(typeAudioStop)
	if len(first.starts) != 1 || first.starts[0].Rate != 22050 || len(first.samples) != 220 {
		t.Fatalf("first sentence audio: starts %+v, %d samples", first.starts, len(first.samples))
	}

	cl.send(typeSynthesizeChunk, map[string]any{"text": "chen lights are on"})
	cl.send(typeSynthesizeChunk, map[string]any{"text": ". Anything else?"})
	if got := <-spoke; got != "The kitchen lights are on." {
		t.Fatalf("second sentence %q", got)
	}
	// Home Assistant's compatibility copy of the whole text.
	whole := "The bed light is off. The kitchen lights are on. Anything else?"
	cl.send(typeSynthesize, map[string]any{"text": whole, "voice": map[string]string{"name": "en_US-amy-medium"}})
	cl.send(typeSynthesizeStop, nil)
	rest := cl.audio(typeSynthesizeStopped)
	if got := <-spoke; got != "Anything else?" {
		t.Fatalf("third sentence %q", got)
	}

	want := []string{"The bed light is off.", "The kitchen lights are on.", "Anything else?"}
	if got := rec.texts(); !slices.Equal(got, want) {
		t.Fatalf("spoken %q, want %q (each once)", got, want)
	}
	for _, r := range rec.requests() {
		if r.Voice != "en_US-amy-medium" {
			t.Errorf("voice %q", r.Voice)
		}
	}
	if len(rest.starts) != 2 || rest.stops != 2 {
		t.Errorf("want audio-start/stop around each of the two sentences: %d starts, %d stops", len(rest.starts), rest.stops)
	}
	for _, f := range append(rest.starts, rest.format...) {
		if f.Rate != 22050 || f.Channels != 1 || f.Width != 2 {
			t.Errorf("format %+v, want the stream's 22050 Hz mono", f)
		}
	}
	// 160 frames at 16 kHz are 221 at 22050 Hz; the third sentence is
	// 16 kHz too. No pauses: the fake asks for none.
	if want := 221 + 221; len(rest.samples) != want {
		t.Errorf("%d samples after the first sentence, want %d", len(rest.samples), want)
	}
	if st := s.Stats(); st.Requests != 1 || st.Errors != 0 {
		t.Errorf("stats %+v", st)
	}

	// A second request on the same connection starts afresh.
	cl.send(typeSynthesizeStart, nil)
	cl.send(typeSynthesizeChunk, map[string]any{"text": "Done"})
	cl.send(typeSynthesizeStop, nil)
	if got := <-spoke; got != "Done" {
		t.Errorf("second stream spoke %q", got)
	}
	again := cl.audio(typeSynthesizeStopped)
	if len(again.starts) != 1 || again.starts[0].Rate != 16000 {
		t.Errorf("second stream format %+v, want its own first sentence's", again.starts)
	}
}

func TestStreamingNothingToSay(t *testing.T) {
	rec := new(recorder)
	_, addr := newServer(t, Options{Engine: streamEngine(rec, nil, 22050)})
	cl := dial(t, addr)
	cl.send(typeSynthesizeStart, nil)
	cl.send(typeSynthesizeChunk, map[string]any{"text": "  "})
	cl.send(typeSynthesizeStop, nil)
	if res := cl.audio(typeSynthesizeStopped); len(res.starts) != 0 || len(rec.requests()) != 0 {
		t.Errorf("got %+v, engine %+v", res, rec.requests())
	}
}

// pauseEngine speaks each request as one 100-frame sentence followed by
// a 50 ms pause when the engine would give one: after every sentence but
// the last, and after the last of a Continued request (audio/engine's
// rule).
func pauseEngine(rec *recorder) *fakeEngine {
	return &fakeEngine{
		VoicesFunc: func() []VoiceInfo { return testVoices },
		SpeakFunc: func(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error {
			rec.add(r)
			sentences, err := text.Split(r.Text, nil)
			if err != nil {
				return err
			}
			for i, s := range sentences {
				c := speech.Chunk{Index: i, Last: i == len(sentences)-1, PCM: tone(22050, 100, int16(len(s)))}
				if !c.Last || r.Continued {
					c.Silence = 50 * time.Millisecond
				}
				if err := emit(c); err != nil {
					return err
				}
			}
			return nil
		},
	}
}

// A streamed text is spoken in the sentences of the whole text, with the
// same pauses between them: "Mr." across a chunk boundary does not end a
// sentence, and each part but the last is followed by the voice's pause.
func TestStreamingSoundsLikeTheWhole(t *testing.T) {
	const whole = "I spoke to Mr. Jones today. He is fine. See you!"
	rec := new(recorder)
	_, addr := newServer(t, Options{Engine: pauseEngine(rec)})
	cl := dial(t, addr)
	cl.send(typeSynthesize, map[string]any{"text": whole})
	oneShot := cl.audio(typeAudioStop)

	cl = dial(t, addr)
	cl.send(typeSynthesizeStart, nil)
	for _, chunk := range []string{"I spoke to Mr.", " Jones today", ". He is ", "fine. See", " you!"} {
		cl.send(typeSynthesizeChunk, map[string]any{"text": chunk})
	}
	cl.send(typeSynthesizeStop, nil)
	stream := cl.audio(typeSynthesizeStopped)

	reqs := rec.requests()
	var parts []string
	for _, r := range reqs[1:] {
		parts = append(parts, r.Text)
	}
	if want := []string{"I spoke to Mr. Jones today.", "He is fine.", "See you!"}; !slices.Equal(parts, want) {
		t.Errorf("streamed parts %q, want %q", parts, want)
	}
	if got := []bool{reqs[1].Continued, reqs[2].Continued, reqs[3].Continued}; !slices.Equal(got, []bool{true, true, false}) {
		t.Errorf("Continued %v, want all but the last", got)
	}
	if len(stream.samples) != len(oneShot.samples) {
		t.Errorf("streamed %d samples, one-shot %d: the pauses between parts differ", len(stream.samples), len(oneShot.samples))
	}
	if !slices.Equal(stream.samples, oneShot.samples) {
		t.Error("streamed audio differs from the one-shot audio of the same text")
	}
}

// A request that names only a language gets the default voice when it
// speaks that language, else the first voice that does.
func TestLanguagePrefersTheDefaultVoice(t *testing.T) {
	voices := []VoiceInfo{
		{Name: "clone", Languages: []string{"en_US"}},
		{Name: "demo", Languages: []string{"en_US"}, Default: true},
		{Name: "german", Languages: []string{"de_DE"}},
	}
	rec := new(recorder)
	eng := pauseEngine(rec)
	eng.VoicesFunc = func() []VoiceInfo { return voices }
	_, addr := newServer(t, Options{Engine: eng})
	for _, tt := range []struct{ lang, want string }{
		{"en_US", "demo"}, {"en-us", "demo"}, {"en", "demo"}, {"de", "german"},
	} {
		cl := dial(t, addr)
		cl.send(typeSynthesize, map[string]any{"text": "Hi.", "voice": map[string]string{"language": tt.lang}})
		cl.audio(typeAudioStop)
		reqs := rec.requests()
		if got := reqs[len(reqs)-1].Voice; got != tt.want {
			t.Errorf("language %q: voice %q, want %q", tt.lang, got, tt.want)
		}
	}
}
