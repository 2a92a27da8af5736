package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon/wyoming"
)

// wyomingClients is how many Home Assistant clients speak at once in
// BenchmarkWyomingConcurrent: a house of satellites and automations
// firing together.
const wyomingClients = 10

// benchVoice is one voice and speaker a client asks for.
type benchVoice struct{ name, speaker string }

// BenchmarkWyomingConcurrent runs mynahd with its Wyoming server (real
// demo Piper voice and style-vector kit, null audio) and, per op, 10
// clients in parallel, each on its own connection with a one-shot
// synthesize, neighbours on different voices and speakers. It reports
// request sent → first audio-chunk (p50, p90 over all requests) and the
// wall time until all 10 have their audio-stop.
//
// cache=on repeats the same 10 sentence/voice pairs every op, filled by
// the untimed first op: every timed request is a phrase-cache hit.
// cache=off (no cache file) sends sentences never sent before.
func BenchmarkWyomingConcurrent(b *testing.B) {
	b.Run("cache=on", func(b *testing.B) { benchWyoming(b, true) })
	b.Run("cache=off", func(b *testing.B) { benchWyoming(b, false) })
}

func benchWyoming(b *testing.B, cached bool) {
	cfg := config.Default()
	cfg.Node = "bench"
	cfg.Voices.Dir = b.TempDir()
	cfg.ONNX.OptimizedDir = b.TempDir()
	cfg.MQTT.EmbeddedListen = freeAddr(b)
	cfg.Audio.Device = "null"
	cfg.Cache.File = ""
	if cached {
		cfg.Cache.File = filepath.Join(cfg.Voices.Dir, "cache.db")
	}
	cfg.Log.Level = "warn"
	if n, err := strconv.Atoi(os.Getenv("MYNAH_BENCH_THREADS")); err == nil {
		cfg.ONNX.Threads = n
	}
	if n, err := strconv.Atoi(os.Getenv("MYNAH_BENCH_PARALLEL")); err == nil {
		cfg.Wyoming.MaxParallel = n
	}
	cfg.Wyoming.Listen = freeAddr(b)
	// The default (8) would refuse two of the ten; and a connection the
	// client has just closed counts until the server reads its EOF, so
	// exactly ten would refuse one now and then when ops follow at once.
	cfg.Wyoming.MaxConnections = 2 * wyomingClients
	if err := cfg.Validate(); err != nil {
		b.Fatal(err)
	}
	styleDir := filepath.Join(cfg.Voices.Dir, demo.StyleName)
	if err := os.MkdirAll(styleDir, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := demo.WriteStyle(styleDir, nil); err != nil {
		b.Fatal(err)
	}
	// Piper and style-vector speakers interleaved, so that neighbouring
	// clients never share a voice and speaker.
	var voices []benchVoice
	for i := range max(len(demo.Speakers()), len(demo.StyleVoices())) {
		if i < len(demo.Speakers()) {
			voices = append(voices, benchVoice{demo.Name, demo.Speakers()[i].Name})
		}
		if i < len(demo.StyleVoices()) {
			voices = append(voices, benchVoice{demo.StyleName, demo.StyleVoices()[i].Name})
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	go func() { done <- run(ctx, cfg, log) }()
	defer func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				b.Errorf("run: %v", err)
			}
		case <-time.After(wait):
			b.Error("mynahd did not stop")
		}
	}()
	if err := waitWyoming(cfg.Wyoming.Listen); err != nil {
		b.Fatal(err)
	}

	sentences := []string{
		"The washing machine has finished.",
		"Someone is at the front door.",
		"The oven has reached temperature.",
		"It will rain this afternoon.",
		"The garage door is still open.",
	}
	round := func(op int) (firsts []time.Duration, total time.Duration, err error) {
		firsts = make([]time.Duration, wyomingClients)
		errs := make([]error, wyomingClients)
		var wg sync.WaitGroup
		start := time.Now()
		for i := range wyomingClients {
			text := sentences[i%len(sentences)]
			if !cached {
				text = fmt.Sprintf("Reminder %d: %s", op*wyomingClients+i, text)
			}
			wg.Go(func() { firsts[i], errs[i] = speakOnce(cfg.Wyoming.Listen, text, voices[i%len(voices)]) })
		}
		wg.Wait()
		return firsts, time.Since(start), errors.Join(errs...)
	}
	// The untimed first op loads every voice and speaker and, with the
	// cache on, fills it.
	if _, _, err := round(0); err != nil {
		b.Fatal(err)
	}

	b.ReportAllocs()
	var firsts []time.Duration
	var total time.Duration
	op := 1
	for b.Loop() {
		f, t, err := round(op)
		if err != nil {
			b.Fatal(err)
		}
		firsts = append(firsts, f...)
		total += t
		op++
	}
	slices.Sort(firsts)
	b.ReportMetric(ms(firsts[len(firsts)/2]), "first-audio-p50-ms")
	b.ReportMetric(ms(firsts[len(firsts)*9/10]), "first-audio-p90-ms")
	b.ReportMetric(ms(total)/float64(op-1), "total-ms")
}

// waitWyoming waits until the server answers a describe: it listens only
// once the voices are installed.
func waitWyoming(addr string) error {
	deadline := time.Now().Add(wait)
	for {
		err := func() error {
			conn, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				return err
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(wait))
			if err := wyoming.WriteEvent(conn, wyoming.Event{Type: "describe", Data: []byte("{}")}); err != nil {
				return err
			}
			e, err := wyoming.ReadEvent(bufio.NewReader(conn), wyoming.Limits{MaxPayloadBytes: 1 << 20})
			if err == nil && e.Type != "info" {
				err = fmt.Errorf("describe answered with %q", e.Type)
			}
			return err
		}()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("wyoming on %s: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// speakOnce is one Home Assistant request on a fresh connection: it
// returns the time from the synthesize sent to the first audio-chunk,
// after reading through to audio-stop.
func speakOnce(addr, text string, v benchVoice) (first time.Duration, err error) {
	conn, err := net.DialTimeout("tcp", addr, wait)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(wait))
	data, err := json.Marshal(map[string]any{"text": text, "voice": map[string]string{"name": v.name, "speaker": v.speaker}})
	if err != nil {
		return 0, err
	}
	r := bufio.NewReader(conn)
	sent := time.Now()
	if err := wyoming.WriteEvent(conn, wyoming.Event{Type: "synthesize", Data: data}); err != nil {
		return 0, err
	}
	for {
		e, err := wyoming.ReadEvent(r, wyoming.Limits{MaxPayloadBytes: 1 << 20})
		if err != nil {
			return 0, fmt.Errorf("%s/%s %q: %w", v.name, v.speaker, text, err)
		}
		switch e.Type {
		case "audio-chunk":
			if first == 0 {
				first = time.Since(sent)
			}
		case "audio-stop":
			if first == 0 {
				return 0, fmt.Errorf("%s/%s %q: audio-stop without audio", v.name, v.speaker, text)
			}
			return first, nil
		case "error":
			return 0, fmt.Errorf("%s/%s %q: error event %s", v.name, v.speaker, text, e.Data)
		}
	}
}
