package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/mynah-tts/mynah/daemon/wyoming"
	"github.com/mynah-tts/mynah/systemd"
	"log/slog"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/portaudio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/cmd/internal/version"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/render"
	"github.com/mynah-tts/mynah/quant/ort"
)

// closeTimeout bounds each step of shutdown after the daemon stopped.
const closeTimeout = 5 * time.Second

// nullSinkBuffer is how far audio.device "null" lets writes run ahead of
// its paced "DAC".
const nullSinkBuffer = 100 * time.Millisecond

// run starts everything in dependency order, tells systemd READY=1 once the
// default voice is loaded and the broker connected, serves until ctx ends,
// and shuts down in reverse order.
func run(ctx context.Context, cfg config.Config, log *slog.Logger) (err error) {
	start := time.Now()
	notify := systemd.NewNotifier(log)

	rt, err := ort.Open(&ort.Options{LibraryPath: cfg.ONNX.Library, Logger: log.With("component", "ort"), Building: memory.SessionBuilding()})
	if err != nil {
		return err
	}
	defer rt.Close()

	st := openStores(cfg, log)
	defer st.Close()
	memory.LogTuning(log)
	remote := &remoteRenderer{}
	voices, err := openVoices(rt, cfg, st.cache, remote, notify, log)
	if err != nil {
		return err
	}
	defer voices.Close()
	installer, err := openInstaller(ctx, cfg, voices, log.With("component", "catalog"))
	if err != nil {
		return err
	}
	// Closed before the engine: a download ends before the voices do.
	defer installer.Close()
	if err := voices.PinPhrases(ctx, cfg.Cache.Pinned); err != nil {
		log.Warn("pinned phrases not cached", "err", err)
	}
	// Preload the default voice and voices.sessions.preload before READY:
	// their first requests must not pay for loading them.
	def, err := voices.Preload(ctx)
	if err != nil {
		return fmt.Errorf("load default voice: %w", err)
	}

	chimes, chimeFor, err := loadChimes(cfg.Announce, def.SampleRate)
	if err != nil {
		return err
	}
	// The reopening sink's news reaches the daemon once there is one.
	audioNews := make(chan struct{}, 1)
	sink, device, err := openSink(cfg.Audio, def.SampleRate, func() { signalNews(audioNews) }, log)
	if err != nil {
		return err
	}
	defer sink.Close()

	brokerURL := cfg.MQTT.Broker
	if brokerURL == "" {
		b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: cfg.MQTT.EmbeddedListen, Logger: log.With("component", "broker")})
		if err != nil {
			return fmt.Errorf("embedded broker: %w", err)
		}
		defer b.Close()
		brokerURL = b.URL()
		log.Info("embedded MQTT broker started", "addr", b.Addr())
	}

	// The daemon registers for reconnects when Run subscribes: the
	// client then re-announces it (discovery, state) and lets its outbox
	// retry after every reconnect.
	client, err := connectMQTT(ctx, cfg, brokerURL, asDaemon, log)
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
		defer cancel()
		if cerr := client.Close(cctx); cerr != nil {
			log.Warn("mqtt close", "err", cerr)
		}
	}()
	stopRender, err := startRender(ctx, cfg, brokerURL, client, voices, remote, log.With("component", "render"))
	if err != nil {
		return err
	}
	defer stopRender()

	vol := cfg.Audio.Volume
	opts := &daemon.Options{
		Node:            cfg.Node,
		Transport:       client,
		Engine:          voices,
		Sink:            sink,
		DiscoveryPrefix: cfg.MQTT.DiscoveryPrefix,
		QueueSize:       cfg.Queue.Size,
		DefaultTTL:      cfg.Queue.DefaultTTL,
		DefaultVolume:   &vol,
		DefaultVoice:    voices.Default(),
		Chimes:          chimes,
		PriorityChimes:  chimeFor,
		Logger:          log.With("component", "daemon"),
		Version:         version.String(),
		// Markup alone is refused as empty at once, not queued to fail.
		Decode: &daemon.DecodeOptions{Speakable: func(s string) bool { return !text.IsEmpty(s, nil) }},
	}
	// The daemon sees the files through the small interfaces it declares.
	st.options(opts)
	if st.cache != nil {
		opts.Speakers = speakerBook{voices}
	}
	if installer != nil {
		opts.Installer, opts.DownloadTimeout = installer, cfg.Voices.DownloadTimeout
	}
	opts.Groups, opts.GroupLead, opts.MaxLate = cfg.Groups.Names, cfg.Groups.Lead, cfg.Groups.MaxLate
	if cfg.Groups.MaxLate == 0 {
		opts.MaxLate = -1 // max_late: 0s: never start late
	}
	// The Wyoming server stops with the daemon, whatever ended it; its
	// counters go into the daemon's state.
	wctx, stopWyoming := context.WithCancel(ctx)
	defer stopWyoming()
	ws, wyomingDone, err := startWyoming(wctx, cfg.Wyoming, cfg.Node, wyomingVoices{voices, installer}, log)
	if err != nil {
		return err
	}
	if ws != nil {
		opts.Wyoming = func() daemon.WyomingCounters {
			st := ws.Stats()
			return daemon.WyomingCounters{Connections: st.Connections, Active: st.Active, Rejected: st.Rejected,
				Requests: st.Requests, Errors: st.Errors, CacheHits: st.CacheHits, AudioS: st.AudioOut.Seconds()}
		}
	}
	if device != nil {
		opts.Audio = func() daemon.AudioStatus { return audioStatus(device.Status()) }
	}
	d, err := daemon.New(opts)
	if err != nil {
		return err
	}
	st.report(d, cfg)
	if installer != nil {
		installer.onInstalled(d.ReloadVoices)
	}
	// A remote node's voice list takes in the render nodes' voices.
	remote.onChange(d.ReloadVoices)
	remote.nodesChanged() // catalogs retained before the daemon was made
	// The helpers below end with run, whatever ends it.
	hctx, stopHelpers := context.WithCancel(ctx)
	var helpers sync.WaitGroup
	defer func() { stopHelpers(); helpers.Wait() }()
	if device != nil {
		if st := device.Status(); !st.Available {
			d.AudioChanged(audioStatus(st))
		}
		helpers.Go(func() {
			for {
				select {
				case <-hctx.Done():
					return
				case <-audioNews:
					d.AudioChanged(audioStatus(device.Status()))
				}
			}
		})
	}
	if len(cfg.Groups.Names) > 0 && cfg.Groups.ClockCheck > 0 {
		helpers.Go(func() { watchClock(hctx, cfg.Groups.ClockCheck, probeClock, d.ClockChanged) })
	}
	if len(cfg.Groups.Names) > 0 {
		clockLog := log.With("component", "clockprobe")
		helpers.Go(func() {
			probeGroupClocks(hctx, cfg.Node, cfg.Groups, client.ClockTransport(), d.ClockOffsetChanged, clockLog)
		})
	}
	if cfg.Voices.Watch {
		watching, err := watchVoices(hctx, cfg.Voices.Dir, voicesQuiet, d.ReloadVoices, log.With("component", "voices"))
		if err != nil {
			log.Warn("voices.dir is not watched: new voices need voices/reload or a restart", "dir", cfg.Voices.Dir, "err", err)
		} else {
			helpers.Go(func() { <-watching })
		}
	}

	// READY once the daemon's subscriptions are in place: on the first
	// start the broker has no session for it yet, and a command sent at
	// READY before them would be lost.
	running := make(chan error, 1)
	go func() { running <- d.Run(ctx) }()
	select {
	case <-d.Subscribed():
		if err := notify.Ready(); err != nil {
			log.Warn("sd_notify READY", "err", err)
		}
		log.Info("mynahd ready", "node", cfg.Node, "broker", brokerURL, "voice", voices.Default(),
			"voices", len(voices.Voices()), "startup_ms", time.Since(start).Milliseconds())
		go func() {
			if err := notify.RunWatchdog(ctx, func() bool { return d.Healthy(cfg.WatchdogStall) }); err != nil {
				log.Warn("systemd watchdog disabled", "err", err)
			}
		}()
		err = <-running
	case err = <-running: // it never got its subscriptions
	}
	_ = notify.Stopping()
	stopWyoming()
	if werr := <-wyomingDone; werr != nil {
		err = errors.Join(err, werr)
	}
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	return err
}

// silence maps the config's "0 means none" onto PiperOptions' "negative
// means none".
func silence(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}

func audioStatus(st audio.SinkStatus) daemon.AudioStatus {
	a := daemon.AudioStatus{Available: st.Available, Since: st.Since}
	if st.Err != nil {
		a.Error = st.Err.Error()
	}
	return a
}

func signalNews(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// sink is what the daemon plays into, plus Close.
type sink interface {
	daemon.Sink
	Close() error
}

// openSink opens audio.device: "" or a device name (PortAudio), "null"
// (no sound), or "wav:PATH" (one WAV file with everything spoken). A sound
// card is held by an audio.ReopeningSink, returned too: when it fails (a
// USB speaker unplugged) or is not there at start, mynahd keeps serving
// and opens it again when it is back, failing requests with reason audio
// meanwhile. Only with audio.fallback set does a card missing at start
// give way to that stand-in ("null" or "wav:PATH") instead.
func openSink(c config.Audio, rate int, onChange func(), log *slog.Logger) (sink, *audio.ReopeningSink, error) {
	if c.Device == "null" || strings.HasPrefix(c.Device, "wav:") {
		s, err := openOutput(c.Device, c, rate, log)
		return s, nil, err
	}
	first, err := openOutput(c.Device, c, rate, log)
	if err != nil && c.Fallback != "" {
		log.Warn("audio device unavailable, using the fallback", "err", err, "fallback", c.Fallback)
		s, err := openOutput(c.Fallback, c, rate, log)
		return s, nil, err
	}
	rs, err := audio.NewReopeningSink(&audio.ReopenOptions{
		Open: func() (audio.Sink, error) {
			if first != nil {
				s := first
				first = nil
				return s, nil
			}
			return openOutput(c.Device, c, rate, log)
		},
		OnChange: func(audio.SinkStatus) { onChange() },
		Logger:   log.With("component", "audio"),
	})
	return rs, rs, err
}

func openOutput(spec string, c config.Audio, rate int, log *slog.Logger) (sink, error) {
	switch {
	case spec == "null":
		// Paced with a buffer as a sound card has (ALSA's default here:
		// 2048 frames at 22050 Hz, 93 ms), so group members place their
		// audio on it as on a device.
		return audio.NewNullSink(&audio.NullSinkOptions{Pace: true, Buffer: nullSinkBuffer})
	case strings.HasPrefix(spec, "wav:"):
		return audio.NewWAVFileSink(strings.TrimPrefix(spec, "wav:"), rate, 1)
	}
	if spec == "" && !portaudio.DefaultOutputAvailable() {
		return nil, errors.New("no default audio output device")
	}
	return portaudio.Open(&portaudio.Options{Device: spec, WriteTimeout: c.WriteTimeout, Logger: log.With("component", "audio")})
}

// Roles of an MQTT connection (connectMQTT).
const (
	asDaemon = iota // the daemon's own: persistent, announces its status
	asTool          // a short-lived tool (mynahd -unregister)
	asRender        // a render node's: its shared subscription (render.go)
)

// connectMQTT connects as the daemon, or as a short-lived tool or a
// render node's second connection: their own client ids (taking the
// daemon's would cut the running daemon off and take over its queued
// commands) and no device status; a render node's has a clean session
// (mosquitto#1747) and its render status.
func connectMQTT(ctx context.Context, cfg config.Config, broker string, role int, log *slog.Logger) (*mqtt.Client, error) {
	password, err := cfg.MQTTPassword()
	if err != nil {
		return nil, err
	}
	clientID, status := cfg.ClientID(), daemon.StatusTopic(cfg.Node)
	tool := role != asDaemon
	switch role {
	case asTool:
		clientID, status = clientID+"-tool", ""
	case asRender:
		// Its status is the render node's liveness: requesters rank only
		// the nodes whose status says online (render.NodeTopic).
		clientID, status = clientID+"-render", render.NodeTopic(cfg.Node, render.NodeStatus)
	}
	cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	c, err := mqtt.Connect(cctx, &mqtt.Options{
		Broker:             broker,
		Username:           cfg.MQTT.Username,
		Password:           password,
		ClientID:           clientID,
		CAFile:             cfg.MQTT.CAFile,
		CertFile:           cfg.MQTT.CertFile,
		KeyFile:            cfg.MQTT.KeyFile,
		InsecureSkipVerify: cfg.MQTT.InsecureSkipVerify,
		KeepAlive:          cfg.MQTT.Keepalive,
		StatusTopic:        status,
		NoStatus:           status == "",
		HelpersListen:      role == asRender, // its status says render.Serve listens
		ManualAck:          !tool,            // say commands are acknowledged once spooled
		CleanSession:       role == asRender,
		Logger:             log.With("component", "mqtt"),
	})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", broker, err)
	}
	return c, nil
}

// runUnregister removes this node's device from Home Assistant.
func runUnregister(ctx context.Context, cfg config.Config, log *slog.Logger) error {
	if cfg.MQTT.Broker == "" {
		return errors.New("-unregister needs mqtt.broker: the embedded broker keeps nothing after mynahd stops")
	}
	client, err := connectMQTT(ctx, cfg, cfg.MQTT.Broker, asTool, log)
	if err != nil {
		return err
	}
	defer client.Close(context.Background())
	pctx, cancel := context.WithTimeout(ctx, closeTimeout)
	defer cancel()
	if err := daemon.Unregister(pctx, client, cfg.Node, cfg.MQTT.DiscoveryPrefix); err != nil {
		return err
	}
	log.Info("removed from Home Assistant", "node", cfg.Node)
	return nil
}

// startWyoming serves Home Assistant's Wyoming integration on c.Listen
// until ctx ends; the channel gives Serve's result then (at once, and no
// server, when it is off). The port is taken here, before READY, so a port in
// use stops the start with a clear error.
func startWyoming(ctx context.Context, c config.Wyoming, node string, voices wyomingVoices, log *slog.Logger) (*wyoming.Server, <-chan error, error) {
	done := make(chan error, 1)
	if c.Listen == "" {
		done <- nil
		return nil, done, nil
	}
	// The engine bounds the syntheses (wyoming.max_parallel, by sentence,
	// cached phrases free), for Wyoming and MQTT alike.
	ws, err := wyoming.New(&wyoming.Options{Listen: c.Listen, MaxConnections: c.MaxConnections, MaxParallel: wyoming.NoParallelLimit,
		Engine: voices, Logger: log, Version: version.String()}) // it adds component=wyoming
	if err != nil {
		return nil, nil, fmt.Errorf("wyoming: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", c.Listen)
	if err != nil {
		return nil, nil, fmt.Errorf("wyoming.listen: %w (is another Wyoming server, wyoming-piper say, on that port?)", err)
	}
	log.Info("wyoming server listening", "addr", ln.Addr().String())
	stopAnnounce := announceWyoming(c, ln.Addr().(*net.TCPAddr), node, log)
	go func() {
		err := ws.Serve(ctx, ln)
		stopAnnounce()
		done <- err
	}()
	return ws, done, nil
}

// announceWyoming announces the server for Home Assistant's discovery
// (wyoming.zeroconf), under the node's name, unless it listens on
// loopback only; it returns what stops the announcement. Without
// multicast the server still works: the user adds it by host and port.
func announceWyoming(c config.Wyoming, addr *net.TCPAddr, node string, log *slog.Logger) (stop func()) {
	if !c.Zeroconf || addr.IP.IsLoopback() {
		return func() {}
	}
	shutdown, err := wyoming.Announce("mynah-"+node, addr.Port, log.With("component", "zeroconf"))
	if err != nil {
		log.Warn("wyoming server not announced on the network; add it in Home Assistant by host and port", "err", err)
		return func() {}
	}
	log.Info("wyoming server announced", "service", wyoming.ZeroconfService, "name", "mynah-"+node)
	return func() { _ = shutdown() }
}
