package main

import (
	"bufio"
	"encoding/json"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/daemon/wyoming"
)

// wyomingClient speaks the Wyoming protocol as Home Assistant does: a
// connection per request.
type wyomingClient struct {
	t    *testing.T
	conn net.Conn
	r    *bufio.Reader
}

func dialWyoming(t *testing.T, addr string) *wyomingClient {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(wait))
	return &wyomingClient{t: t, conn: conn, r: bufio.NewReader(conn)}
}

func (c *wyomingClient) send(typ string, data any) {
	c.t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := wyoming.WriteEvent(c.conn, wyoming.Event{Type: typ, Data: b}); err != nil {
		c.t.Fatal(err)
	}
}

func (c *wyomingClient) next() wyoming.Event {
	c.t.Helper()
	e, err := wyoming.ReadEvent(c.r, wyoming.Limits{MaxPayloadBytes: 1 << 20})
	if err != nil {
		c.t.Fatalf("read event: %v", err)
	}
	return e
}

// speak sends a one-shot synthesize and returns the audio format and the
// samples, as Home Assistant reads them.
func (c *wyomingClient) speak(text string) (rate int, samples int) {
	c.t.Helper()
	rate, pcm := c.audio(text)
	return rate, len(pcm) / 2
}

// audio sends a one-shot synthesize and returns the audio format and its
// bytes.
func (c *wyomingClient) audio(text string) (rate int, pcm []byte) {
	c.t.Helper()
	c.send("synthesize", map[string]any{"text": text, "voice": map[string]string{"name": demo.Name}})
	for {
		e := c.next()
		switch e.Type {
		case "audio-start":
			var f struct{ Rate, Width, Channels int }
			json.Unmarshal(e.Data, &f)
			if f.Width != 2 || f.Channels != 1 {
				c.t.Fatalf("audio-start %s", e.Data)
			}
			rate = f.Rate
		case "audio-chunk":
			pcm = append(pcm, e.Payload...)
		case "audio-stop":
			return rate, pcm
		case "error":
			c.t.Fatalf("error event %s", e.Data)
		}
	}
}

// TestWyomingServesHomeAssistant: mynahd with wyoming.listen answers a
// describe with its voices and speaks through the same engine and phrase
// cache as MQTT: the second time a sentence is asked for, it is a hit.
func TestWyomingServesHomeAssistant(t *testing.T) {
	cfg := testConfig(t, "", "null")
	cfg.Wyoming.Listen = freeAddr(t)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)

	c := dialWyoming(t, cfg.Wyoming.Listen)
	c.send("describe", map[string]any{})
	info := c.next()
	if info.Type != "info" {
		t.Fatalf("describe answered with %q", info.Type)
	}
	var in struct {
		TTS []struct {
			Name      string `json:"name"`
			Streaming bool   `json:"supports_synthesize_streaming"`
			Voices    []struct {
				Name      string   `json:"name"`
				Languages []string `json:"languages"`
				Installed bool     `json:"installed"`
				Speakers  []struct {
					Name string `json:"name"`
				} `json:"speakers"`
			} `json:"voices"`
		} `json:"tts"`
	}
	if err := json.Unmarshal(info.Data, &in); err != nil || len(in.TTS) != 1 || !in.TTS[0].Streaming {
		t.Fatalf("info %s (%v)", info.Data, err)
	}
	i := slices.IndexFunc(in.TTS[0].Voices, func(v struct {
		Name      string   `json:"name"`
		Languages []string `json:"languages"`
		Installed bool     `json:"installed"`
		Speakers  []struct {
			Name string `json:"name"`
		} `json:"speakers"`
	}) bool {
		return v.Name == demo.Name
	})
	if i < 0 {
		t.Fatalf("no %s among %s", demo.Name, info.Data)
	}
	if v := in.TTS[0].Voices[i]; !v.Installed || !slices.Equal(v.Languages, []string{"en_US"}) || len(v.Speakers) != len(demo.Speakers()) {
		t.Errorf("demo voice in info: %+v", v)
	}

	// Asked for over Wyoming first, the sentence is in the phrase cache
	// that MQTT requests read too.
	const text = "The washing machine has finished."
	rate, samples := dialWyoming(t, cfg.Wyoming.Listen).speak(text)
	if rate != demo.SampleRate || samples < rate/2 {
		t.Fatalf("audio: %d Hz, %d samples", rate, samples)
	}
	ev := watchEvents(t, url, cfg.Node)
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"after-wyoming","text":"`+text+`"}`), false)
	if e := ev.next(stateID(daemon.EventFinished, "after-wyoming")); e.Cache != daemon.CacheHit {
		t.Errorf("the MQTT request after the Wyoming one: cache %q, want hit", e.Cache)
	}
	// The state, published after that request, counts the Wyoming ones.
	if w := lastState(t, url, cfg.Node).Wyoming; w == nil || w.Requests != 1 || w.Connections != 2 || w.AudioS <= 0 {
		t.Errorf("state wyoming %+v: want 1 request over 2 connections (describe, synthesize)", w)
	}
}

// TestWyomingStreamsEveryKind: Home Assistant's streaming sequence, with
// the whole-text synthesize it sends along for old servers, is spoken
// once, sentence by sentence; and every voice kind speaks over Wyoming,
// with a speaker where it has them.
func TestWyomingStreamsEveryKind(t *testing.T) {
	cfg := testConfig(t, "", "null")
	cfg.Wyoming.Listen = freeAddr(t)
	enginetest.WriteKits(t, cfg.Voices.Dir, true)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)

	c := dialWyoming(t, cfg.Wyoming.Listen)
	voice := map[string]any{"name": demo.Name, "speaker": demo.Speakers()[1].Name}
	c.send("synthesize-start", map[string]any{"voice": voice})
	c.send("synthesize-chunk", map[string]any{"text": "The door is "})
	c.send("synthesize-chunk", map[string]any{"text": "open. Please close"})
	c.send("synthesize-chunk", map[string]any{"text": " it."})
	c.send("synthesize", map[string]any{"text": "The door is open. Please close it.", "voice": voice})
	c.send("synthesize-stop", map[string]any{})
	starts, samples := 0, 0
	for done := false; !done; {
		e := c.next()
		switch e.Type {
		case "audio-start":
			starts++
		case "audio-chunk":
			samples += len(e.Payload) / 2
		case "synthesize-stopped":
			done = true
		case "error":
			t.Fatalf("error %s", e.Data)
		}
	}
	if starts != 2 || samples < demo.SampleRate/2 {
		t.Errorf("stream: %d audio-starts, %d samples; want the two sentences once each", starts, samples)
	}

	for _, v := range []map[string]any{
		{"name": demo.Name, "speaker": demo.Speakers()[0].Name},
		{"name": demo.StyleName, "speaker": "iris"},
		{"name": demo.CloneName},
	} {
		cl := dialWyoming(t, cfg.Wyoming.Listen)
		cl.send("synthesize", map[string]any{"text": "Good evening.", "voice": v})
		got := 0
		for {
			e := cl.next()
			if e.Type == "error" {
				t.Fatalf("%v: error %s", v, e.Data)
			}
			if e.Type == "audio-chunk" {
				got += len(e.Payload) / 2
			}
			if e.Type == "audio-stop" {
				break
			}
		}
		if got == 0 {
			t.Errorf("%v: no audio", v)
		}
	}
}

// stream sends text as a Home Assistant stream in the given chunks and
// returns the samples heard up to synthesize-stopped.
func (c *wyomingClient) stream(voice map[string]any, chunks ...string) (samples int) {
	c.t.Helper()
	c.send("synthesize-start", map[string]any{"voice": voice})
	for _, ch := range chunks {
		c.send("synthesize-chunk", map[string]any{"text": ch})
	}
	c.send("synthesize-stop", map[string]any{})
	for {
		e := c.next()
		switch e.Type {
		case "audio-chunk":
			samples += len(e.Payload) / 2
		case "synthesize-stopped":
			return samples
		case "error":
			c.t.Fatalf("error event %s", e.Data)
		}
	}
}

// TestWyomingStreamSoundsLikeTheWhole: a text streamed in chunks is spoken
// as the same text sent whole — the same sentences ("Mr." across a chunk
// does not end one), so each comes from the phrase cache the one-shot
// request filled, and the voice's pause between them — and a request
// naming only a language gets the default voice (the same audio again).
func TestWyomingStreamSoundsLikeTheWhole(t *testing.T) {
	cfg := testConfig(t, "", "null")
	cfg.Wyoming.Listen = freeAddr(t)
	enginetest.WriteKits(t, cfg.Voices.Dir, true) // other en_US voices beside the default
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)

	const whole = "I spoke to Mr. Jones today. He is fine. See you soon!"
	_, oneShot := dialWyoming(t, cfg.Wyoming.Listen).speak(whole)
	streamed := dialWyoming(t, cfg.Wyoming.Listen).stream(map[string]any{"name": demo.Name},
		"I spoke to Mr.", " Jones today", ". He is ", "fine. See", " you soon!")
	if streamed != oneShot {
		t.Errorf("streamed %d samples, one-shot %d (%.0f ms apart)", streamed, oneShot, float64(oneShot-streamed)*1000/demo.SampleRate)
	}

	c := dialWyoming(t, cfg.Wyoming.Listen)
	c.send("synthesize", map[string]any{"text": whole, "voice": map[string]string{"language": "en_US"}})
	byLanguage := 0
	for done := false; !done; {
		e := c.next()
		switch e.Type {
		case "audio-chunk":
			byLanguage += len(e.Payload) / 2
		case "audio-stop":
			done = true
		case "error":
			t.Fatalf("error event %s", e.Data)
		}
	}
	if byLanguage != oneShot {
		t.Errorf("language en_US: %d samples, the default voice's %d: another voice spoke", byLanguage, oneShot)
	}
}
