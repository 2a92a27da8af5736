package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
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
// The clients run in a process of their own (this test binary again,
// benchClientMain), as Home Assistant's do: on the same two cores, but with
// their own heap, so that what they allocate reading ten answers does not
// set off the server's garbage collector, which in one process it did
// every few ops (a client allocates each chunk it reads; the server
// answering a cache hit, little).
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

	// start runs mynahd until stop or the benchmark's end (startDaemon)
	// and waits for its Wyoming server.
	start := func() (stop func()) {
		_, stop = startDaemon(b, cfg)
		if err := waitWyoming(cfg.Wyoming.Listen); err != nil {
			b.Fatal(err)
		}
		return stop
	}

	sentences := []string{
		"The washing machine has finished.",
		"Someone is at the front door.",
		"The oven has reached temperature.",
		"It will rain this afternoon.",
		"The garage door is still open.",
	}
	client, err := startWyomingClient(cfg.Wyoming.Listen)
	if err != nil {
		b.Fatal(err)
	}
	defer func() {
		if err := client.close(); err != nil {
			b.Error(err)
		}
	}()
	round := func(op int) ([]time.Duration, time.Duration, error) {
		reqs := make([]benchRequest, wyomingClients)
		for i := range reqs {
			text := sentences[i%len(sentences)]
			if !cached {
				text = fmt.Sprintf("Reminder %d: %s", op*wyomingClients+i, text)
			}
			v := voices[i%len(voices)]
			reqs[i] = benchRequest{Text: text, Voice: v.name, Speaker: v.speaker}
		}
		return client.round(reqs)
	}
	// A first start finds no optimized copies of the Piper voices: it
	// speaks as loaded and builds them in the background, and stopping
	// waits for the builds. The mynahd a household runs has them, so the
	// one timed is a later start. Each start's untimed first op loads
	// every voice and speaker and, with the cache on, the first fills it
	// and the second reads every phrase from the file once.
	stop := start()
	if _, _, err := round(0); err != nil {
		b.Fatal(err)
	}
	stop()
	start()
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

// wyomingClientEnv makes the test binary BenchmarkWyomingConcurrent's
// client process, speaking to the Wyoming server at its value.
const wyomingClientEnv = "MYNAH_WYOMING_BENCH_CLIENT"

// benchRequest is one client's request in a round.
type benchRequest struct {
	Text    string `json:"text"`
	Voice   string `json:"voice"`
	Speaker string `json:"speaker"`
}

// benchRound is what the client process answers for one round: each
// request's time to its first audio-chunk, in request order, and the
// round's wall time.
type benchRound struct {
	Firsts []time.Duration `json:"firsts"`
	Total  time.Duration   `json:"total"`
	Err    string          `json:"error,omitempty"`
}

// benchClientMain is the client process: for each line of in (a JSON list
// of requests) it sends every request at once, each on its own
// connection (speakOnce), and writes a benchRound line to out.
func benchClientMain(addr string, in io.Reader, out io.Writer) error {
	dec, enc := json.NewDecoder(in), json.NewEncoder(out)
	for {
		var reqs []benchRequest
		if err := dec.Decode(&reqs); err == io.EOF {
			return nil
		} else if err != nil {
			return err
		}
		r := benchRound{Firsts: make([]time.Duration, len(reqs))}
		errs := make([]error, len(reqs))
		var wg sync.WaitGroup
		start := time.Now()
		for i, q := range reqs {
			wg.Go(func() { r.Firsts[i], errs[i] = speakOnce(addr, q.Text, benchVoice{q.Voice, q.Speaker}) })
		}
		wg.Wait()
		r.Total = time.Since(start)
		if err := errors.Join(errs...); err != nil {
			r.Err = err.Error()
		}
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
}

// benchClient is the benchmark's handle on the client process.
type benchClient struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *json.Decoder
}

func startWyomingClient(addr string) (*benchClient, error) {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), wyomingClientEnv+"="+addr)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the client process: %w", err)
	}
	return &benchClient{cmd: cmd, in: in, out: json.NewDecoder(out)}, nil
}

// round has the client process send reqs at once and returns what it
// measured.
func (c *benchClient) round(reqs []benchRequest) ([]time.Duration, time.Duration, error) {
	if err := json.NewEncoder(c.in).Encode(reqs); err != nil {
		return nil, 0, fmt.Errorf("client process: %w", err)
	}
	var r benchRound
	if err := c.out.Decode(&r); err != nil {
		return nil, 0, fmt.Errorf("client process: %w", err)
	}
	if r.Err != "" {
		return nil, 0, errors.New(r.Err)
	}
	return r.Firsts, r.Total, nil
}

// close ends the client process (its input closed, it exits).
func (c *benchClient) close() error {
	c.in.Close()
	if err := c.cmd.Wait(); err != nil {
		return fmt.Errorf("client process: %w", err)
	}
	return nil
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
