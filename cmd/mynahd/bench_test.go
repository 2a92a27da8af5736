package main

import (
	"context"
	"fmt"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/systemd"
	"github.com/mynah-tts/mynah/systemd/systemdtest"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// firstWriteSink is a null sink that reports the time of the first Write
// after each mark: when the first PCM of a request reached the "device".
type firstWriteSink struct {
	*audio.NullSink
	mu     sync.Mutex
	armed  int // writes still to time since arm
	first  chan time.Time
	second chan time.Time // with a chime: the speech's first write
}

func (s *firstWriteSink) Write(ctx context.Context, p audio.PCM) error {
	s.mu.Lock()
	switch s.armed {
	case 2:
		s.first <- time.Now()
	case 1:
		if s.second != nil {
			s.second <- time.Now()
		}
	}
	s.armed = max(0, s.armed-1)
	s.mu.Unlock()
	return s.NullSink.Write(ctx, p)
}

func (s *firstWriteSink) arm() {
	s.mu.Lock()
	s.armed = 2
	s.mu.Unlock()
}

// BenchmarkPublishToFirstAudio measures MQTT publish (QoS 1, through a
// real Mosquitto on loopback) to the first PCM at the sink, for a short
// phrase with the demo voice: synthesized every time (uncached), or served
// from the phrase cache (hit; the first request fills it before the timer
// starts), or from the cache after a chime (hit+chime: the first PCM is
// the chime's, from memory; speech-p50-ms is publish to the speech's first
// PCM, which follows the chime at once on this unpaced sink). Reports p50
// and p99 over all requests (20 per op).
func BenchmarkPublishToFirstAudio(b *testing.B) {
	b.Run("uncached", func(b *testing.B) { benchPublish(b, false, false) })
	b.Run("hit", func(b *testing.B) { benchPublish(b, true, false) })
	b.Run("hit+chime", func(b *testing.B) { benchPublish(b, true, true) })
}

func benchPublish(b *testing.B, cached, chime bool) {
	// Autosave after every change costs ~0.4 ms per message; not what a
	// configured mosquitto does.
	broker := mqtttest.StartMosquittoWith(b, &mqtttest.MosquittoOptions{NoAutosave: true})
	log := slog.New(slog.DiscardHandler)
	cfg := config.Default()
	cfg.Node = "bench"
	cfg.Voices.Dir = b.TempDir()
	cfg.ONNX.OptimizedDir = b.TempDir()
	var store *cache.Store
	if cached {
		var err error
		if store, err = cache.Open(filepath.Join(b.TempDir(), "cache.db"), nil); err != nil {
			b.Fatal(err)
		}
		defer store.Close()
	}
	voices, err := openVoices(enginetest.OpenRuntime(b), cfg, store, &remoteRenderer{}, systemd.NewNotifier(log), log)
	if err != nil {
		b.Fatal(err)
	}
	defer voices.Close()
	if _, err := voices.Preload(context.Background()); err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// As mynahd runs: commands acknowledged once spooled (with a cache
	// file, every request is spooled and its message acked after the
	// durable write, which runs beside playback).
	client, err := mqtt.Connect(ctx, &mqtt.Options{Broker: broker.URL(), ClientID: "bench-daemon",
		StatusTopic: daemon.StatusTopic("bench"), ManualAck: true})
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close(context.Background())
	null, err := audio.NewNullSink(nil)
	if err != nil {
		b.Fatal(err)
	}
	sink := &firstWriteSink{NullSink: null, first: make(chan time.Time, 1)}
	opts := &daemon.Options{Node: "bench", Transport: client, Engine: voices, Sink: sink, DefaultVoice: voices.Default()}
	text := `"text":"Good morning."`
	if chime {
		sink.second = make(chan time.Time, 1)
		def, _ := voices.Preload(context.Background())
		if opts.Chimes, _, err = loadChimes(cfg.Announce, def.SampleRate); err != nil {
			b.Fatal(err)
		}
		text += `,"chime":"ding"`
	}
	if store != nil {
		opts.Spool, opts.Cache = storeSpool{store}, storePhrases{store}
	}
	d, err := daemon.New(opts)
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	pub, err := mqtt.Connect(ctx, &mqtt.Options{Broker: broker.URL(), ClientID: "bench-pub", StatusTopic: "bench/pub/status"})
	if err != nil {
		b.Fatal(err)
	}
	defer pub.Close(context.Background())
	time.Sleep(200 * time.Millisecond) // let the daemon's subscription settle
	// One request outside the timer: loads what is lazy, fills the cache.
	sink.arm()
	if err := pub.Publish(ctx, "mynah/bench/say", []byte(`{"id":"warm",`+text+`}`), false); err != nil {
		b.Fatal(err)
	}
	<-sink.first
	if chime {
		<-sink.second
	}
	time.Sleep(100 * time.Millisecond) // the rest of the warm-up request plays

	// One op is a batch of 20 requests, so the default benchtime already
	// gathers a few hundred latencies for the percentiles.
	const batch = 20
	lat := make([]time.Duration, 0, b.N*batch)
	var speech []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N*batch; i++ {
		sink.arm()
		start := time.Now()
		payload := fmt.Sprintf(`{"id":"b%d",%s}`, i, text)
		if err := pub.Publish(ctx, "mynah/bench/say", []byte(payload), false); err != nil {
			b.Fatal(err)
		}
		select {
		case t := <-sink.first:
			lat = append(lat, t.Sub(start))
		case <-time.After(wait):
			b.Fatal("no audio")
		}
		if chime {
			speech = append(speech, (<-sink.second).Sub(start))
		}
	}
	b.StopTimer()
	cancel()
	<-done
	slices.Sort(lat)
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	if chime {
		slices.Sort(speech)
		b.ReportMetric(ms(speech[len(speech)/2]), "speech-p50-ms")
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// BenchmarkStartToReady starts the mynahd binary (embedded broker, demo
// voice already built, null audio) and measures exec → READY=1, then the
// idle RSS three seconds after the last READY.
func BenchmarkStartToReady(b *testing.B) {
	bin := buildMynahd(b)
	dir := b.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, demo.Name), 0o755); err != nil {
		b.Fatal(err)
	}
	if _, err := demo.Write(filepath.Join(dir, demo.Name), nil); err != nil {
		b.Fatal(err)
	}
	conf := filepath.Join(dir, "mynahd.yaml")
	// One op is five starts: enough for an average on a noisy machine.
	const starts = 5
	var total time.Duration
	var rss float64
	b.ResetTimer()
	for i := 0; i < b.N*starts; i++ {
		listen := freeAddr(b)
		os.WriteFile(conf, []byte("node: bench\nmqtt:\n  embedded_listen: "+listen+"\nvoices:\n  dir: "+dir+"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: "+dir+"/cache.db\naudio:\n  device: \"null\"\nlog:\n  level: warn\n"), 0o600)
		sd := systemdtest.New(b)
		cmd := exec.Command(bin, "-config", conf)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		sd.Expect("READY=1")
		total += time.Since(start)
		if i == b.N*starts-1 {
			time.Sleep(3 * time.Second)
			m, err := readMem(cmd.Process.Pid)
			if err != nil {
				b.Fatal(err)
			}
			rss = mb(m.RSS)
		}
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	b.ReportMetric(ms(total/time.Duration(b.N*starts)), "ready-ms")
	b.ReportMetric(rss, "idle-rss-MB")
}

func mb(n int64) float64 { return float64(n) / (1 << 20) }
