package main

// mynahd installing catalog voices on demand (voices.download), against
// a Piper-style collection served by the test (catalogtest), never the
// internet.

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

const lessac = "en_US-lessac-medium"

// onDemandConfig is testConfig with the catalog pointed at srv and
// downloads as asked, with the Wyoming server on.
func onDemandConfig(t *testing.T, broker string, srv *catalogtest.Server, download bool) config.Config {
	t.Helper()
	cfg := testConfig(t, broker, "null")
	cfg.Voices.CatalogURL, cfg.Voices.DownloadURL = srv.CatalogURL, srv.BaseURL
	cfg.Voices.Download = download
	cfg.Wyoming.Listen = freeAddr(t)
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// infoVoices is what a Wyoming describe lists: installed or not, by name.
func infoVoices(t *testing.T, addr string) map[string]bool {
	t.Helper()
	c := dialWyoming(t, addr)
	c.send("describe", map[string]any{})
	e := c.next()
	var info struct {
		TTS []struct {
			Voices []struct {
				Name      string
				Installed bool
				Languages []string
			}
		}
	}
	if err := json.Unmarshal(e.Data, &info); err != nil || e.Type != "info" || len(info.TTS) != 1 {
		t.Fatalf("describe answered %s %s (%v)", e.Type, e.Data, err)
	}
	out := map[string]bool{}
	for _, v := range info.TTS[0].Voices {
		out[v.Name] = v.Installed
	}
	return out
}

// synthesize sends a one-shot synthesize for voice and returns its audio
// bytes, or the error event's code.
func (c *wyomingClient) synthesize(text, voice string) (pcm []byte, code string) {
	c.t.Helper()
	for {
		e := c.next()
		switch e.Type {
		case "audio-chunk":
			pcm = append(pcm, e.Payload...)
		case "audio-stop":
			return pcm, ""
		case "error":
			var d struct{ Code, Text string }
			json.Unmarshal(e.Data, &d)
			c.t.Logf("error event: %s", e.Data)
			return nil, d.Code
		}
	}
}

// With downloads on, five Home Assistant requests at once for a catalog
// voice that is not installed start one download, and all five are
// answered with speech in it; before, info lists the voice as not
// installed, after, as installed.
func TestOnDemandWyomingOneDownload(t *testing.T) {
	srv := catalogtest.New(t, catalogtest.Standard...)
	cfg := onDemandConfig(t, "", srv, true)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)

	voices := infoVoices(t, cfg.Wyoming.Listen)
	if installed, listed := voices[lessac]; !listed || installed {
		t.Fatalf("info lists %s as %v (listed %v), want installed false", lessac, installed, listed)
	}
	if !voices["mynah-demo"] {
		t.Errorf("info %v: the demo voice is not listed as installed", voices)
	}

	clients := make([]*wyomingClient, 5)
	for i := range clients {
		clients[i] = dialWyoming(t, cfg.Wyoming.Listen)
		clients[i].send("synthesize", map[string]any{"text": "The washing is done.", "voice": map[string]string{"name": lessac}})
	}
	for i, c := range clients {
		if pcm, code := c.synthesize("", lessac); code != "" || len(pcm) == 0 {
			t.Errorf("request %d: %d bytes, error %q", i, len(pcm), code)
		}
	}
	if n := srv.Gets(catalogtest.ModelURLPath(lessac)); n != 1 {
		t.Errorf("the model was fetched %d times, want once", n)
	}
	if n := srv.Gets("/voices.json"); n != 1 {
		t.Errorf("the catalog was fetched %d times, want once (describes read it from memory)", n)
	}
	if voices := infoVoices(t, cfg.Wyoming.Listen); !voices[lessac] {
		t.Errorf("after the install info lists %s as not installed", lessac)
	}
}

// With downloads off (the default), a say for a catalog voice fails
// unknown_voice as before, Wyoming's info lists installed voices only,
// and the server sees no request at all.
func TestOnDemandOffFetchesNothing(t *testing.T) {
	srv := catalogtest.New(t, catalogtest.Standard...)
	cfg := onDemandConfig(t, "", srv, false)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"s1","voice":"`+lessac+`","text":"Hello."}`), false)
	if e := ev.next(stateID(daemon.EventFailed, "s1")); e.Reason != daemon.ReasonUnknownVoice {
		t.Errorf("say: %+v, want unknown_voice", e)
	}
	if voices := infoVoices(t, cfg.Wyoming.Listen); len(voices) != 1 || !voices["mynah-demo"] {
		t.Errorf("info lists %v, want the installed demo voice only", voices)
	}
	mqtttest.Publish(t, url, "mynah/kitchen/voice/install", []byte(lessac), false)
	if e := ev.next(func(e daemon.Event) bool { return e.Command == "voice/install" }); e.State != daemon.EventFailed || e.Reason != daemon.ReasonNotSupported {
		t.Errorf("voice/install: %+v, want failed not_supported", e)
	}
	if n := srv.Gets("/voices.json") + srv.Gets(catalogtest.ModelURLPath(lessac)); n != 0 {
		t.Errorf("%d requests reached the server, want none", n)
	}
}

// A say whose voice takes longer than voices.download_timeout fails
// voice_downloading; the download goes on, and the next say speaks.
func TestOnDemandSayTimesOut(t *testing.T) {
	srv := catalogtest.New(t, catalogtest.Standard...)
	release := make(chan struct{})
	srv.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == catalogtest.ModelURLPath(lessac) {
			<-release
		}
		return false
	}
	cfg := onDemandConfig(t, "", srv, true)
	cfg.Voices.DownloadTimeout = time.Second
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)

	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"s1","voice":"`+lessac+`","text":"Hello."}`), false)
	e := ev.next(func(e daemon.Event) bool { return e.ID == "s1" && e.State != daemon.EventDownloading })
	if e.State != daemon.EventFailed || e.Reason != daemon.ReasonVoiceDownloading {
		t.Fatalf("say: %+v, want failed voice_downloading", e)
	}
	close(release)
	// The voices are reread once the install is whole.
	ev.next(func(e daemon.Event) bool { return e.Command == "voices/reload" && e.State == daemon.EventDone })
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"s2","voice":"`+lessac+`","text":"Hello again."}`), false)
	ev.next(stateID(daemon.EventFinished, "s2"))
	if n := srv.Gets(catalogtest.ModelURLPath(lessac)); n != 1 {
		t.Errorf("the model was fetched %d times, want once", n)
	}
}

// voice/install over Mosquitto: downloading news, then done naming the
// voice, which then speaks; a name the catalog lacks fails unknown_voice
// with the nearest names.
func TestOnDemandVoiceInstallCommand(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	srv := catalogtest.New(t, catalogtest.Standard...)
	cfg := onDemandConfig(t, broker.URL(), srv, true)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)

	mqtttest.Publish(t, url, "mynah/kitchen/voice/install", []byte(`{"name":"en_GB","id":"i1"}`), false)
	var news int
	done := ev.next(func(e daemon.Event) bool {
		if e.ID == "i1" && e.State == daemon.EventDownloading && e.Download != nil {
			news++
		}
		return e.ID == "i1" && e.State != daemon.EventDownloading
	})
	if done.State != daemon.EventDone || done.Command != "voice/install" || done.Voice != "en_GB-alan-medium" {
		t.Fatalf("voice/install: %+v, want done en_GB-alan-medium", done)
	}
	if news == 0 {
		t.Errorf("no downloading event before done")
	}
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"s1","voice":"en_GB-alan-medium","text":"Cheerio."}`), false)
	ev.next(stateID(daemon.EventFinished, "s1"))

	mqtttest.Publish(t, url, "mynah/kitchen/voice/install", []byte(`{"name":"en_US-lesac-medium","id":"i2"}`), false)
	e := ev.next(func(e daemon.Event) bool { return e.ID == "i2" && e.State != daemon.EventDownloading })
	if e.State != daemon.EventFailed || e.Reason != daemon.ReasonUnknownVoice || !strings.Contains(e.Error, lessac) {
		t.Errorf("unknown name: %+v, want failed unknown_voice naming %s", e, lessac)
	}
}
