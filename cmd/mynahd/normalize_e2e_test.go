package main

import (
	"bytes"
	"strings"
	"testing"
	"unicode"

	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// TestOneReadingOverMQTTAndWyoming: a templated sentence, as Home
// Assistant fills it in, is read into words the same way over MQTT and
// Wyoming (one-shot): the second front end finds the first one's phrase
// in the cache, and its audio is the audio of the reading itself. Spoken
// with "normalize": false, the raw text is other audio and keys an entry
// of its own.
func TestOneReadingOverMQTTAndWyoming(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.Wyoming.Listen = freeAddr(t)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	states := mqtttest.Subscribe(t, url, "mynah/"+cfg.Node+"/state")
	ev := watchEvents(t, url, cfg.Node)

	const templated = "It is 8:05 PM and 21.5 °C outside."
	// The demo voice is en-us and covers pinyin.
	reading, err := text.Normalize(templated, &text.NormalizeOptions{Language: "en-us", Mandarin: true})
	if err != nil || reading == templated || strings.ContainsFunc(reading, unicode.IsDigit) {
		t.Fatalf("Normalize(%q) = %q, %v: want it read into words", templated, reading, err)
	}

	say := func(id, payload string) daemon.Event {
		t.Helper()
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(payload), false)
		return ev.next(func(e daemon.Event) bool {
			return e.ID == id && (e.State == daemon.EventFinished || e.State == daemon.EventFailed)
		})
	}
	if e := say("mqtt", `{"id":"mqtt","text":"`+templated+`"}`); e.State != daemon.EventFinished || e.Cache != daemon.CacheMiss {
		t.Fatalf("first MQTT request: %+v, want finished, a miss", e)
	}
	first := waitState(t, states, "the first request's audio stored", func(s daemon.State) bool {
		return s.Cache != nil && s.Cache.Misses >= 1 && s.Cache.Entries >= 1
	})

	rate, overWyoming := dialWyoming(t, cfg.Wyoming.Listen).audio(templated)
	_, ofReading := dialWyoming(t, cfg.Wyoming.Listen).audio(reading)
	if rate == 0 || len(overWyoming) == 0 || !bytes.Equal(overWyoming, ofReading) {
		t.Errorf("Wyoming audio of the template (%d bytes) and of its reading (%d bytes) differ", len(overWyoming), len(ofReading))
	}

	if e := say("raw", `{"id":"raw","text":"`+templated+`","normalize":false}`); e.State != daemon.EventFinished || e.Cache != daemon.CacheMiss {
		t.Errorf("the raw text: %+v, want finished, a miss (its own entry)", e)
	}
	if e := say("again", `{"id":"again","text":"`+templated+`"}`); e.Cache != daemon.CacheHit {
		t.Errorf("the template again over MQTT: cache %q, want hit", e.Cache)
	}
	last := waitState(t, states, "every lookup counted", func(s daemon.State) bool {
		return s.Cache != nil && s.Cache.Hits+s.Cache.Misses >= first.Cache.Hits+first.Cache.Misses+4
	})
	// Wyoming's two requests and the last MQTT one hit the first entry;
	// only the raw text added one.
	if got, want := last.Cache.Entries, first.Cache.Entries+1; got != want {
		t.Errorf("cache entries %d after the raw text, want %d (%d after the first request)", got, want, first.Cache.Entries)
	}
	if got, want := last.Cache.Hits-first.Cache.Hits, uint64(3); got != want {
		t.Errorf("%d hits after the first request, want %d (two Wyoming, one MQTT)", got, want)
	}
}
