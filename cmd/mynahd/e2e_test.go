package main

// End-to-end tests of the daemon as a whole: real Mosquitto (started by
// the test on a free port) or the embedded broker, real ONNX Runtime and
// demo voice, audio into a WAV file or through PortAudio into the ALSA
// capture device (see package audiotest).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	neturl "net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/audiotest"
	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
	"github.com/mynah-tts/mynah/systemd"
)

// alsaCapture holds what PortAudio played in this test process.
var alsaCapture string

func TestMain(m *testing.M) {
	if addr := os.Getenv(wyomingClientEnv); addr != "" {
		if err := benchClientMain(addr, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "wyoming bench client:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	setWait()
	audiotest.Main(m, &alsaCapture)
}

// wait bounds every wait for the daemon; exceeding it fails the test (it
// is a hang detector, not a speed requirement): baseWait, longer on a CPU
// slower than the reference by the measured ratio (pace_test.go).
var wait = baseWait

// testConfig is a config for one test: its own voice dir (the demo voice
// is built there), the given broker ("" = embedded on a free port) and
// audio device.
func testConfig(t *testing.T, broker, device string) config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Node = "kitchen"
	cfg.Voices.Dir = t.TempDir()
	cfg.MQTT.Broker = broker
	if broker == "" {
		cfg.MQTT.EmbeddedListen = freeAddr(t)
	}
	cfg.Audio.Device = device
	cfg.Cache.File = filepath.Join(cfg.Voices.Dir, "cache.db")
	cfg.ONNX.OptimizedDir = t.TempDir()
	cfg.Log.Level = "warn"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	return cfg
}

func freeAddr(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// startDaemon runs mynahd in-process until the test ends (or stop is
// called) and returns the broker URL and a stop func that waits for run to
// return; its log goes to stderr at warn.
func startDaemon(t testing.TB, cfg config.Config) (url string, stop func()) {
	t.Helper()
	return runDaemon(t, cfg, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
}

// runDaemon is startDaemon with its log going to log.
func runDaemon(t testing.TB, cfg config.Config, log *slog.Logger) (url string, stop func()) {
	t.Helper()
	url = cfg.MQTT.Broker
	if url == "" {
		url = "tcp://" + cfg.MQTT.EmbeddedListen
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- run(ctx, cfg, log) }()
	stopped := false
	stop = func() {
		if stopped {
			return
		}
		stopped = true
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("run: %v", err)
			}
		case <-time.After(wait):
			t.Error("mynahd did not stop")
		}
	}
	t.Cleanup(stop)
	return url, stop
}

// events collects the daemon's events.
type events struct {
	t  *testing.T
	ch <-chan daemon.Message
}

func watchEvents(t *testing.T, url, node string) *events {
	return &events{t: t, ch: mqtttest.Subscribe(t, url, "mynah/"+node+"/event")}
}

// next returns the next event that matches, failing after wait.
func (e *events) next(match func(daemon.Event) bool) daemon.Event {
	e.t.Helper()
	deadline := time.After(wait)
	for {
		select {
		case m := <-e.ch:
			var ev daemon.Event
			if err := json.Unmarshal(m.Payload, &ev); err != nil {
				e.t.Fatalf("event is not JSON: %q: %v", m.Payload, err)
			}
			if match(ev) {
				return ev
			}
		case <-deadline:
			e.t.Fatal("no matching event in time")
		}
	}
}

func state(s string) func(daemon.Event) bool {
	return func(ev daemon.Event) bool { return ev.State == s }
}

func stateID(s, id string) func(daemon.Event) bool {
	return func(ev daemon.Event) bool { return ev.State == s && ev.ID == id }
}

// waitOnline waits for the retained "online" on the node's status topic.
func waitOnline(t *testing.T, url, node string) {
	t.Helper()
	// The embedded broker starts only after the voice is loaded.
	addr := strings.TrimPrefix(url, "tcp://")
	if u, err := neturl.Parse(url); err == nil && u.Host != "" {
		addr = u.Host // without user:password@
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("nothing listens on %s: %v", addr, err)
		}
	}
	st := mqtttest.Subscribe(t, url, daemon.StatusTopic(node))
	deadline := time.After(wait)
	for {
		select {
		case m := <-st:
			if string(m.Payload) == "online" {
				return
			}
		case <-deadline:
			t.Fatal("mynahd never came online")
		}
	}
}

func readWAV(t *testing.T, path string) audio.PCM {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pcm, err := audio.DecodeWAV(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return pcm
}

// sayAndCheck publishes a plain-text and a JSON request and checks their
// events; then stops the daemon and checks the WAV file holds the speech.
func sayAndCheck(t *testing.T, cfg config.Config, wavPath string) {
	url, stop := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)

	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte("The washing machine has finished."), false)
	started := ev.next(state("started"))
	finished := ev.next(stateID("finished", started.ID))
	if started.FirstAudioMS == nil || *started.FirstAudioMS <= 0 {
		t.Fatalf("started event without first_audio_ms: %+v", started)
	}
	if finished.LatencyMS == nil || *finished.LatencyMS < *started.FirstAudioMS {
		t.Fatalf("finished latency %v before first audio %v", finished.LatencyMS, *started.FirstAudioMS)
	}

	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"json-1","text":"Dinner is ready. Come and eat.","speaker":"robin","rate":1.2}`), false)
	ev.next(stateID("queued", "json-1"))
	done := ev.next(stateID("finished", "json-1"))
	if done.Sentences == nil || *done.Sentences != 2 {
		t.Fatalf("finished %+v, want 2 sentences", done)
	}
	stop()
	pcm := readWAV(t, wavPath)
	if pcm.Duration() < 2*time.Second {
		t.Fatalf("the WAV sink got %v of audio for three sentences", pcm.Duration())
	}
}

func TestSayMosquitto(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	wav := filepath.Join(t.TempDir(), "out.wav")
	sayAndCheck(t, testConfig(t, broker.URL(), "wav:"+wav), wav)
}

func TestSayEmbeddedBroker(t *testing.T) {
	wav := filepath.Join(t.TempDir(), "out.wav")
	sayAndCheck(t, testConfig(t, "", "wav:"+wav), wav)
}

// TestSayThroughPortAudio: what the daemon played through PortAudio is
// exactly the voice's speech for that sentence. No optimized-copy cache:
// with one the daemon's first sentence comes from the model as the file
// has it or from the copy built in the background, whichever is ready
// (under qemu the first), and the load-time rewrites round the demo
// voice's samples a 16-bit step apart; without, both engines load the
// rewritten graph.
func TestSayThroughPortAudio(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "")
	cfg.ONNX.OptimizedDir = ""
	url, stop := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	const sentence = "Good night."
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"pa","text":"`+sentence+`"}`), false)
	ev.next(stateID("finished", "pa"))
	stop() // closes the PortAudio stream: the capture file is complete

	played, err := os.ReadFile(alsaCapture)
	if err != nil {
		t.Fatal(err)
	}
	// The same sentence from the same voice, straight from the engine.
	vs, err := openVoices(enginetest.OpenRuntime(t), cfg, nil, &remoteRenderer{}, systemd.NewNotifier(slog.New(slog.DiscardHandler)), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	var want []int16
	err = vs.Speak(context.Background(), engine.Request{Text: sentence}, func(c engine.Chunk) error {
		want = append(want, c.PCM.Samples...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	wantBytes := audio.EncodeWAV(audio.PCM{Rate: 22050, Channels: 1, Samples: want})[44:]
	if !bytes.Equal(played, wantBytes) {
		t.Fatalf("PortAudio played %d bytes, the voice made %d", len(played), len(wantBytes))
	}
}

// TestCommandAtFirstOnline: a node's very first start on a broker that
// keeps its sessions, as a member of a group (its render client and
// clock probe subscribe on the daemon's connection before the daemon
// does). A command published the moment the status says "online" must be
// spoken: the broker has subscriptions for it by then. (Here the window
// the old code left, render client subscribed → daemon subscribed, is a
// few milliseconds: this test caught it once that was 50 ms, as on a
// slow board; daemon/mqtt's TestOnlineWaitsForTheDaemonsSubscription
// catches it at any speed.)
func TestCommandAtFirstOnline(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.Node = "porch"
	cfg.Groups.Names = []string{"outside"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// The command goes out from the status message's handler, without a
	// round trip of the test's between "online" and the publish.
	ev := watchEvents(t, broker.URL(), cfg.Node)
	pub := paho.NewClient(paho.NewClientOptions().AddBroker(broker.URL()).SetClientID("at-online-publisher"))
	if tok := pub.Connect(); !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("connect the publisher: %v", tok.Error())
	}
	defer pub.Disconnect(100)
	sent := make(chan struct{})
	var once sync.Once
	tok := pub.Subscribe(daemon.StatusTopic(cfg.Node), 1, func(c paho.Client, m paho.Message) {
		if string(m.Payload()) == mqtt.StatusOnline {
			once.Do(func() {
				c.Publish("mynah/porch/say", 1, false, `{"id":"at-online","text":"The door is open."}`)
				close(sent)
			})
		}
	})
	if !tok.WaitTimeout(wait) || tok.Error() != nil {
		t.Fatalf("subscribe: %v", tok.Error())
	}
	startDaemon(t, cfg)
	select {
	case <-sent:
	case <-time.After(wait):
		t.Fatal("mynahd never came online")
	}
	ev.next(stateID("finished", "at-online"))
}

// TestBrokerKilledAndRestarted: SIGKILL the broker while mynahd is
// connected, restart it; mynahd reconnects and resubscribes, its status
// goes offline → online, and every command published afterwards is spoken
// exactly once.
func TestBrokerKilledAndRestarted(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	wav := filepath.Join(t.TempDir(), "out.wav")
	cfg := testConfig(t, broker.URL(), "wav:"+wav)
	cfg.MQTT.Keepalive = 2 * time.Second
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)

	broker.Flush(t) // mynahd's persistent session is on disk before the crash
	broker.Kill()
	broker.Restart(t)
	// The will fires when the broker notices; a killed broker never sent
	// it, so "offline" comes from mynahd's last will only if the broker
	// saw the connection die. What must hold: mynahd comes back online.
	waitOnline(t, url, cfg.Node)

	ev := watchEvents(t, url, cfg.Node)
	const n = 5
	for i := range n {
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(fmt.Sprintf(`{"id":"after-%d","text":"Number %d."}`, i, i)), false)
	}
	seen := map[string]int{}
	for len(seen) < n {
		e := ev.next(state("finished"))
		seen[e.ID]++
	}
	// Anything spoken twice would have a second finished event by now or
	// shortly: the queue is empty, so a duplicate would play at once.
	deadline := time.After(quietFor())
	for done := false; !done; {
		select {
		case m := <-ev.ch:
			var e daemon.Event
			if json.Unmarshal(m.Payload, &e) == nil && e.State == "finished" {
				seen[e.ID]++
			}
		case <-deadline:
			done = true
		}
	}
	for i := range n {
		if id := fmt.Sprintf("after-%d", i); seen[id] != 1 {
			t.Errorf("%s spoken %d times, want exactly once", id, seen[id])
		}
	}
}

func TestCheckConfigAndFlags(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	os.WriteFile(good, []byte("node: hall\nqueue:\n  size: 4\n"), 0o600)
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("node: hall\nmqtt:\n  broker: ftp://x\n"), 0o600)
	var out, errb strings.Builder
	if code := mainExit([]string{"-config", good, "-check-config"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "valid") {
		t.Fatalf("good config: %d %q %q", code, out.String(), errb.String())
	}
	errb.Reset()
	if code := mainExit([]string{"-config", bad, "-check-config"}, &out, &errb); code != exitConfigError || !strings.Contains(errb.String(), "mqtt.broker") {
		t.Fatalf("bad config: %d %q", code, errb.String())
	}
	if code := mainExit([]string{"-config", filepath.Join(dir, "missing.yaml")}, &out, &errb); code != exitConfigError {
		t.Fatalf("missing explicit config: %d", code)
	}
	if code := mainExit([]string{"-nope"}, &out, &errb); code != 2 {
		t.Fatalf("unknown flag: %d", code)
	}
}

// TestBadInputOverMosquitto: hostile payloads through a real broker each
// get a failed event with a reason; retained commands and duplicate ids
// are not spoken; a burst overflows the queue with events, and mynahd
// still speaks afterwards.
func TestBadInputOverMosquitto(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.Queue.Size = 4
	// A retained command left on the broker must not be spoken when mynahd
	// (re)subscribes: it is stale by definition. (Live delivery clears the
	// retain flag, so only what a subscription brings up is retained.)
	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"retained-1","text":"Old news."}`), true)
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	say := func(payload []byte, retained bool) { mqtttest.Publish(t, url, "mynah/kitchen/say", payload, retained) }

	deep := strings.Repeat(`{"a":`, 100) + "1" + strings.Repeat("}", 100)
	for _, c := range []struct {
		payload []byte
		reason  string
	}{
		{[]byte{}, daemon.ReasonEmpty},
		{bytes.Repeat([]byte("a"), 1<<20), daemon.ReasonTooLarge},
		{[]byte("caf\xe9"), daemon.ReasonInvalidUTF8},
		{[]byte("he\x00llo"), daemon.ReasonNULByte},
		{[]byte(deep), daemon.ReasonTooDeep},
		{[]byte(`{"text": 42}`), daemon.ReasonBadField},
		{[]byte(`{"text":"hi","rate":1e309}`), ""},
		{[]byte(`{"text":"hi","voice":"../../etc"}`), daemon.ReasonBadName},
		{[]byte(`{"text":"hi","voice":"klingon"}`), daemon.ReasonUnknownVoice},
	} {
		say(c.payload, false)
		e := ev.next(state("failed"))
		if e.Reason == "" || (c.reason != "" && e.Reason != c.reason) {
			t.Errorf("payload %.40q: reason %q, want %q", c.payload, e.Reason, c.reason)
		}
	}

	say([]byte(`{"id":"dup","text":"Once."}`), false)
	say([]byte(`{"id":"dup","text":"Once."}`), false)
	say([]byte(`{"id":"marker","text":"Done."}`), false)
	counts := map[string]int{}
	for {
		e := ev.next(func(daemon.Event) bool { return true })
		if e.State == "finished" {
			counts[e.ID]++
		}
		if e.ID == "marker" && e.State == "finished" {
			break
		}
	}
	if counts["retained-1"] != 0 || counts["dup"] != 1 {
		t.Fatalf("finished counts %v: retained must be ignored, a duplicate id spoken once", counts)
	}

	// A burst much larger than the queue: queue_full events, then service.
	pub, err := mqtt.Connect(context.Background(), &mqtt.Options{Broker: url, ClientID: "burst", StatusTopic: "test/burst/status"})
	if err != nil {
		t.Fatal(err)
	}
	defer pub.Close(context.Background())
	for i := range 1000 {
		if err := pub.Publish(context.Background(), "mynah/kitchen/say", []byte(fmt.Sprintf(`{"id":"burst-%d","text":"Burst %d."}`, i, i)), false); err != nil {
			t.Fatal(err)
		}
	}
	ev.next(func(e daemon.Event) bool { return e.State == "dropped" && e.Reason == daemon.ReasonQueueFull })
	say([]byte(`{"id":"after-burst","text":"Still talking.","priority":"alert"}`), false)
	ev.next(stateID("finished", "after-burst"))
}

// TestPhraseCache: a repeated sentence is served from the phrase cache,
// bit-identical to what was synthesized; a message sharing one sentence
// reports partial; another speaker misses.
func TestPhraseCache(t *testing.T) {
	wav := filepath.Join(t.TempDir(), "out.wav")
	cfg := testConfig(t, "", "wav:"+wav)
	url, stop := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	say := func(id, payload string) string {
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(payload), false)
		return ev.next(stateID("finished", id)).Cache
	}
	if c := say("a", `{"id":"a","text":"The washing machine has finished."}`); c != daemon.CacheMiss {
		t.Fatalf("first request: cache %q, want miss", c)
	}
	if c := say("b", `{"id":"b","text":"The washing machine has finished."}`); c != daemon.CacheHit {
		t.Fatalf("repeat: cache %q, want hit", c)
	}
	stop()
	pcm := readWAV(t, wav)
	half := len(pcm.Samples) / 2
	if half == 0 || len(pcm.Samples) != 2*half || !slices.Equal(pcm.Samples[:half], pcm.Samples[half:]) {
		t.Fatalf("the cached audio (%d samples in all) is not identical to the synthesized audio", len(pcm.Samples))
	}

	// Same cache file, new daemon: the cache persisted.
	url, _ = startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev = watchEvents(t, url, cfg.Node)
	if c := say("c", `{"id":"c","text":"The washing machine has finished. It is 7 pm."}`); c != daemon.CachePartial {
		t.Fatalf("one shared sentence: cache %q, want partial", c)
	}
	if c := say("d", `{"id":"d","text":"The washing machine has finished.","speaker":"wren"}`); c != daemon.CacheMiss {
		t.Fatalf("another speaker: cache %q, want miss", c)
	}
	if c := say("e", `{"id":"e","text":"The washing machine has finished.","rate":1.5}`); c != daemon.CacheMiss {
		t.Fatalf("another rate: cache %q, want miss", c)
	}
}

// TestPinnedPhrases: a configured phrase is synthesized and pinned before
// READY, so its first request is already a cache hit.
func TestPinnedPhrases(t *testing.T) {
	cfg := testConfig(t, "", "null")
	cfg.Cache.Pinned = []string{"Good morning. Breakfast is ready."}
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"gm","text":"Good morning."}`), false)
	if c := ev.next(stateID("finished", "gm")).Cache; c != daemon.CacheHit {
		t.Fatalf("first request for a pinned phrase: cache %q, want hit", c)
	}
}

func TestPinnedConfig(t *testing.T) {
	for _, c := range []struct {
		yaml string
		ok   bool
	}{
		{"cache:\n  pinned: [\"Good morning.\", \"Dinner is ready.\"]\n", true},
		{"cache:\n  pinned:\n    - Good night.\n", true},
		{"cache:\n  pinned: Good night.\n", false},
		{"cache:\n  pinned: [{a: 1}]\n", false},
		{"cache:\n  pinned: [\"\"]\n", false},
	} {
		cfg, err := config.Parse([]byte(c.yaml))
		if err == nil {
			err = cfg.Validate()
		}
		if (err == nil) != c.ok {
			t.Errorf("%q: error %v, want ok=%v", c.yaml, err, c.ok)
		}
	}
}

// TestUnregisterWhileRunning: mynahd -unregister clears the discovery
// payload without disturbing a running daemon (its own client id, no
// status announcements): the daemon stays online and keeps speaking.
func TestUnregisterWhileRunning(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	status := mqtttest.Subscribe(t, url, daemon.StatusTopic(cfg.Node))
	<-status // the retained "online"
	// Discovery is published by the daemon's publisher after "online"
	// (once per connect and once after subscribing, which may come as
	// two publishes); unregistering before the last lands would be undone
	// by it. Wait for the first, then for half a second of quiet.
	published := mqtttest.Subscribe(t, url, daemon.DiscoveryTopic("homeassistant", cfg.Node))
	select {
	case <-published:
	case <-time.After(wait):
		t.Fatal("no discovery from the daemon")
	}
	for quiet := false; !quiet; {
		select {
		case <-published:
		case <-time.After(500 * time.Millisecond):
			quiet = true
		}
	}

	if err := runUnregister(context.Background(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	discovery := mqtttest.Subscribe(t, url, daemon.DiscoveryTopic("homeassistant", cfg.Node))
	select {
	case m := <-discovery:
		t.Fatalf("discovery still retained after unregister: %.60q", m.Payload)
	case <-time.After(time.Second):
	}
	ev := watchEvents(t, url, cfg.Node)
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"still","text":"Still here."}`), false)
	ev.next(stateID("finished", "still"))
	select {
	case m := <-status:
		t.Fatalf("unregister changed the daemon's status to %q", m.Payload)
	default:
	}
}

// With onnx.arena and onnx.lift_conv1d off (a malloc per tensor, the
// model as the file has it) mynahd speaks the same way.
func TestSayWithoutArenaOrLifting(t *testing.T) {
	wav := filepath.Join(t.TempDir(), "out.wav")
	cfg := testConfig(t, "", "wav:"+wav)
	cfg.ONNX.Arena, cfg.ONNX.LiftConv1D = false, false
	sayAndCheck(t, cfg, wav)
}
