// Package config is mynahd's configuration file: its YAML schema with the
// defaults (Default), strict parsing that names the key at fault (Parse,
// Load), and validation of every value (Config.Validate). The mynah command
// reads the same file, so its tools find the daemon's cache, node and
// broker without being told.
//
// This is the only package in the project with YAML tags: the libraries
// take *Options, and the commands translate.
package config

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon/wyoming"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Where the configuration comes from. The -config flag wins over
// $MYNAH_CONFIG, which wins over DefaultPath.
const (
	DefaultPath = "/etc/mynah/mynahd.yaml"
	EnvConfig   = "MYNAH_CONFIG"
	// EnvMQTTPassword overrides mqtt.password_file, so a secret can come
	// from a systemd drop-in's EnvironmentFile= or a container's secret
	// environment instead of the config file, which must stay readable.
	EnvMQTTPassword = "MYNAH_MQTT_PASSWORD"
)

// Limits on what the config file may contain.
const (
	// MaxFileBytes bounds the config file; the documented example is
	// about 6 KiB, so anything near this is not a config file.
	MaxFileBytes = 1 << 20
	// MaxPasswordBytes bounds mqtt.password_file.
	MaxPasswordBytes = 4 << 10
	// MaxNodeLen bounds node: it appears in every topic and in Home
	// Assistant's unique ids and entity ids.
	MaxNodeLen = 32
	// MaxQueueSize bounds queue.size; every queued request holds its text.
	MaxQueueSize = 4096
	maxPathLen   = 4096
)

// ErrInvalid is wrapped by every error of Validate (and by parse
// errors of the file), so a command can tell a bad config from a failure
// at run time (mynahd exits with EX_CONFIG, 78, for it).
var ErrInvalid = errors.New("invalid config")

// Config is mynahd's configuration file (YAML). Every key is optional; Default has the defaults, and
// systemd/mynahd.yaml documents each key with its default.
type Config struct {
	// Node names this speaker: topics are mynah/<node>/..., Home Assistant
	// ids are built from it. Lowercase letters, digits, "_" and "-", at most
	// MaxNodeLen. Default "mynah".
	Node string `yaml:"node"`

	MQTT   MQTT   `yaml:"mqtt"`
	Voices Voices `yaml:"voices"`
	ONNX   ONNX   `yaml:"onnx"`
	Audio  Audio  `yaml:"audio"`
	Queue  Queue  `yaml:"queue"`
	Cache  Cache  `yaml:"cache"`
	// Wyoming serves Home Assistant's Wyoming integration: mynah as a
	// local TTS engine (Assist, tts.speak).
	Wyoming Wyoming `yaml:"wyoming"`
	// Announce is the chimes played before speech.
	Announce Announce `yaml:"announce"`
	// Text is how a request's text is read before it is spoken.
	Text Text `yaml:"text"`
	// Groups are the speaker groups this node plays in sync with others.
	Groups Groups `yaml:"groups"`
	// Render shares synthesis between nodes through the broker.
	Render Render `yaml:"render"`

	// WatchdogStall is how long one synthesis step or one audio write may
	// block before mynahd stops its systemd watchdog pings (and systemd,
	// WatchdogSec later, restarts it). Must exceed audio.write_timeout.
	// Default 30s.
	WatchdogStall time.Duration `yaml:"watchdog_stall"`

	Log Log `yaml:"log"`
}

// Announce is the announce section: a chime before the speech, as a
// doorbell or an alarm panel has, decoded once at start and kept in memory.
type Announce struct {
	// Chimes are the chimes a request may name ("chime": "doorbell"), by
	// name: a WAV file each (an absolute path; 16-bit PCM, at most
	// MaxChimeSeconds). ding and two_tone are built in and always there.
	// At most MaxChimes. Default none.
	Chimes map[string]string `yaml:"chimes"`
	// Priority is the chime played before the requests of a priority
	// (low, normal, alert) that do not choose one ("chime": false plays
	// none); a priority absent or "" has none. Default alert: two_tone.
	Priority map[string]string `yaml:"priority"`
}

// Text is the text section: what mynah reads for you.
type Text struct {
	// Normalize reads numbers, units, times, dates, money and symbols into
	// words and removes Markdown before speech ("21.5 °C" is "twenty-one
	// point five degrees Celsius"), for English and Mandarin voices in full
	// (see the README's "What mynah reads for you"). A say command's
	// "normalize": false turns it off for one request. Default true.
	Normalize bool `yaml:"normalize"`
	// Emoji is drop (default): emoji are not read, or name: read by their
	// Unicode names (English voices; others drop them).
	Emoji string `yaml:"emoji"`
}

// Groups is the groups section: the speaker groups this node belongs to.
// Every member of a group subscribes to mynah/group/<name>/say, stop and
// volume/set, and a group request carries play_at, the instant at which
// every member's first sample reaches its DAC. The members' clocks must
// agree, so every speaker of a group should take its time from the same
// LAN time server (chrony or another NTP client).
//
// The section is a list of names, groups: [downstairs, all], which leaves
// the other keys at their defaults, or a mapping of the keys below
// (Groups.UnmarshalYAML).
type Groups struct {
	// Names are the groups, each 1 to MaxGroupNameLen ASCII letters,
	// digits, "-" and "_" (a topic level: no MQTT wildcards or "/"), no
	// name twice, at most MaxGroups. Default none.
	Names []string `yaml:"names"`
	// Lead is how far ahead of now the first member to see a group request
	// without play_at sets its play_at, so that every member has the time
	// to receive the request and synthesize the first sentence (the phrase
	// cache makes a repeated announcement quicker). 50ms to 10s, default
	// 500ms.
	Lead time.Duration `yaml:"lead"`
	// MaxLate is how late a member may be at play_at and still join: up to
	// this late it starts into the clip at the offset the others have
	// reached; later it skips the request. 0s to 1s, default 50ms.
	MaxLate time.Duration `yaml:"max_late"`
	// ClockCheck is how often mynahd checks that the system clock is
	// synchronized (by the kernel's NTP state, which chrony, ntpd and
	// systemd-timesyncd keep). 0s never checks, else 10s to 24h.
	// Default 5m.
	ClockCheck time.Duration `yaml:"clock_check"`
	// ClockProbe is how often mynahd measures its clock against its
	// groups' other members over MQTT (NTP-style pings on
	// mynah/group/<name>/clock; daemon/clockprobe), for the state's clock
	// object and the warning clock_offset. A node with groups answers the
	// others' pings whatever this says. 0s never probes (default), else
	// 10s to 24h; it needs ClockCheck, beside whose finding it is
	// reported.
	ClockProbe time.Duration `yaml:"clock_probe"`
}

// Render is the render section: nodes that synthesize for others (serve)
// and nodes that ask them first (remote), through the broker.
type Render struct {
	// Mode is local (default: every sentence is made here), remote (a
	// phrase-cache miss is asked of the render nodes first, and made here
	// only when none answers) or serve (this node answers other nodes'
	// requests, from its phrase cache or by synthesis, and makes its own
	// sentences itself).
	Mode string `yaml:"mode"`
	// Timeout is how long a remote node waits for an answer before it
	// asks once more, then synthesizes the sentence itself. 100ms to 1m,
	// default 3s.
	Timeout time.Duration `yaml:"timeout"`
}

// Modes of Render.Mode.
const (
	RenderLocal  = "local"
	RenderRemote = "remote"
	RenderServe  = "serve"
)

// Wyoming is the wyoming section.
type Wyoming struct {
	// Listen is the TCP address of the Wyoming server, e.g.
	// 127.0.0.1:10200, or 0.0.0.0:10200 for Home Assistant on another
	// machine (Wyoming has no authentication: a trusted network only).
	// "" (default) turns it off.
	Listen string `yaml:"listen"`
	// MaxConnections bounds the requests in progress at once, 1 to 256
	// (default 16); more are refused with an error event (busy).
	// Connections between requests do not count (see daemon/wyoming).
	MaxConnections int `yaml:"max_connections"`
	// MaxParallel bounds the sentences synthesized at once on this node,
	// for Wyoming, MQTT and render requests alike; others wait their
	// turn, a request's first sentence before later ones and the
	// shortest first, and phrase-cache hits need no turn. 0 (default)
	// is one per core, at most 64.
	MaxParallel int `yaml:"max_parallel"`
	// Zeroconf announces the server on the local network (mDNS,
	// _wyoming._tcp) so Home Assistant offers to add it. Default true; a
	// loopback Listen is never announced.
	Zeroconf bool `yaml:"zeroconf"`
}

// MQTT is the mqtt section.
type MQTT struct {
	// Broker is the broker URL: tcp://host:1883, ssl://host:8883 (or
	// tls://), ws://host/path, wss://host/path. "" (the default) starts the
	// embedded broker on EmbeddedListen and connects to it.
	Broker string `yaml:"broker"`
	// Username for the broker; "" sends none.
	Username string `yaml:"username"`
	// PasswordFile holds the password (trailing newline ignored, at most
	// MaxPasswordBytes). $MYNAH_MQTT_PASSWORD overrides it. Default "".
	PasswordFile string `yaml:"password_file"`
	// ClientID must stay the same across restarts for the persistent
	// session to deliver commands sent while mynahd was down. "" (default)
	// means "mynahd-<node>".
	ClientID string `yaml:"client_id"`
	// Keepalive is the MQTT keepalive, whole seconds, 1s to 65535s.
	// Default 30s.
	Keepalive time.Duration `yaml:"keepalive"`
	// CAFile, CertFile and KeyFile (PEM) are for ssl:// and wss:// brokers:
	// CAFile replaces the system roots, CertFile+KeyFile is a client
	// certificate. All default "".
	CAFile   string `yaml:"ca_file"`
	CertFile string `yaml:"cert_file"`
	KeyFile  string `yaml:"key_file"`
	// InsecureSkipVerify accepts any server certificate. Only for testing.
	InsecureSkipVerify bool `yaml:"insecure_skip_verify"`
	// DiscoveryPrefix is Home Assistant's discovery prefix. Default
	// "homeassistant".
	DiscoveryPrefix string `yaml:"discovery_prefix"`
	// EmbeddedListen is where the embedded broker listens when Broker is
	// "". Default 127.0.0.1:1883; port 0 picks a free port.
	EmbeddedListen string `yaml:"embedded_listen"`
}

// Voices is the voices section.
type Voices struct {
	// Dir holds one directory per voice. Default /var/lib/mynah/voices
	// (the unit's StateDirectory).
	Dir string `yaml:"dir"`
	// Default is the voice used when a request names none: a directory
	// name inside Dir. "" (default) is the demo voice, which mynahd builds
	// into <dir>/mynah-demo on first start.
	Default string `yaml:"default"`
	// Sessions bounds the voices kept loaded.
	Sessions Sessions `yaml:"sessions"`
	// Precision picks which variant of a voice is loaded: auto (default:
	// the smallest variant made by mynah quantize --voice that passed its
	// quality gate, for the configured onnx.provider, and whose int8
	// weights this CPU computes exactly; the original when none did), fp32
	// (the original), fp16, int8 or nbits (that variant, which must exist,
	// have passed or be recorded as not judged, and suit this CPU).
	Precision string `yaml:"precision"`
	// Precisions overrides Precision per voice name. Default none.
	Precisions map[string]string `yaml:"precisions"`
	// Watch rereads the voices when Dir changes, as a voice is copied in,
	// replaced or removed (after the directory has been quiet for 2 s):
	// new ones are offered, changed ones loaded anew on their next use.
	// Default true; false leaves it to mynah/<node>/voices/reload.
	Watch bool `yaml:"watch"`
	// CatalogURL is the Piper voice catalog (a voices.json) that mynah
	// voice install and list --available read: http(s):// or
	// file:///path for an offline copy. Default the Piper voices
	// collection at a pinned release (catalog.DefaultCatalogURL).
	CatalogURL string `yaml:"catalog_url"`
	// DownloadURL is the base URL the catalog's file paths are fetched
	// from: the collection, a mirror, or file:///dir. Default the
	// collection's release (catalog.DefaultDownloadURL).
	DownloadURL string `yaml:"download_url"`
	// Download lets mynahd install catalog voices itself: a say or
	// Wyoming request naming a catalog voice that is not installed
	// starts its install (from CatalogURL and DownloadURL, into Dir),
	// mynah/<node>/voice/install installs one, and Wyoming's info lists
	// the catalog's voices as not installed. Default false: nothing
	// leaves the device unless the user says so.
	Download bool `yaml:"download"`
	// DownloadTimeout is how long a request waits for its voice to be
	// installed before it fails voice_downloading (the install goes on,
	// so a later request finds the voice): 1s to 10m, default 30s.
	DownloadTimeout time.Duration `yaml:"download_timeout"`
}

// Sessions is the voices.sessions section: loaded voices (ONNX
// Runtime sessions) stay warm in a least-recently-used cache, so switching
// back to a voice costs no load. The default voice is always loaded before
// READY and never evicted.
type Sessions struct {
	// MaxCount bounds the voices kept loaded, 1 to MaxSessionVoices; the
	// least recently used unpinned idle voice is closed first. It must hold
	// the default voice, Preload and Pinned together. Default
	// engine.DefaultMaxSessions (4).
	MaxCount int `yaml:"max_count"`
	// MaxBytes bounds the summed model file sizes of the loaded voices (a
	// session takes at least its file's size in memory); 0 (default) means
	// no byte bound, else 1 MiB to MaxSessionBytes.
	MaxBytes int64 `yaml:"max_bytes"`
	// Preload names voices (directory names inside voices.dir) loaded at
	// start, after the default voice and before READY. An unknown name
	// stops mynahd at start; one that fails to load is logged and skipped.
	// At most MaxSessionVoices. Default none.
	Preload []string `yaml:"preload"`
	// Pinned names voices that, once loaded, are never evicted, by the
	// bounds nor by memory pressure (list them in Preload too to load them
	// at start). The default voice is always pinned. An unknown name stops
	// mynahd at start. At most MaxSessionVoices. Default none.
	Pinned []string `yaml:"pinned"`
	// LowWater is memory pressure in bytes: when less than this is left
	// below the limit — the cgroup's memory.max (systemd MemoryMax=) when
	// one is set, else MemoryBudget — idle unpinned voices are closed,
	// least recently used first. 0 turns the check off; at most
	// MaxSessionBytes. Default 67108864 (64 MiB).
	LowWater int64 `yaml:"low_water"`
	// MemoryBudget is the limit used when no cgroup sets one: the process's
	// anonymous resident memory (heap and ONNX Runtime's allocations, not
	// mapped files, which the kernel can drop) counts against it. 0 (default) means none, else
	// 16 MiB to MaxSessionBytes and more than LowWater.
	MemoryBudget int64 `yaml:"memory_budget"`
	// CheckInterval is how often memory pressure is checked while no
	// voice is requested (it is also checked before every load and, at
	// most every 250ms, on requests). 0s turns the timer off, else 1s to
	// 1h. Default 30s.
	CheckInterval time.Duration `yaml:"check_interval"`
}

// ONNX is the onnx section.
type ONNX struct {
	// Library is the libonnxruntime path. "" (default) searches
	// $MYNAH_ORT_LIB (set by the unit), the project's .ort/ and the system
	// library directories.
	Library string `yaml:"library"`
	// Provider: auto (default), cpu, cuda or tensorrt.
	Provider string `yaml:"provider"`
	// Threads per operator; 0 (default) lets ONNX Runtime use one per core.
	Threads int `yaml:"threads"`
	// Arena gives the voices ONNX Runtime's CPU memory arena, which hands
	// a run's tensors out of a few large regions: kept while mynahd
	// speaks, given back once the engine is idle a second (a Piper
	// voice's by one small run, quant/ort Session.ReleaseArena; the other
	// kinds' after every run). Default true. false gives every tensor a
	// malloc of its own, which under mynahd's allocator settings is a
	// fresh mapping faulted in on every run: synthesis about twice as
	// slow (audio/voice BenchmarkSynthesizeOneThread), 2.6 MB less idle
	// RSS (the arena's first region, never given back).
	Arena bool `yaml:"arena"`
	// LiftConv1D rewrites a voice's 1-D convolutions as the same
	// convolutions in 2-D as it loads (quant/onnx LiftConv1D), which ONNX
	// Runtime's CPU kernels run faster: a Piper-medium-sized voice
	// synthesizes in about 0.85 of the time, and its first load takes
	// about twice as long (later ones load the copy in OptimizedDir).
	// With it, gathers along the last axis of a constant table and linear
	// upsampling of the last axis are rewritten for ONNX Runtime's faster
	// kernels (quant/onnx GatherTableRows, ResizeLinearMatMul: the demo
	// voice's synthesis in 0.6 of the time; GatherTableRows for demo
	// voices written before 2026-12-07). Default true; false hands
	// ONNX Runtime the model as the file has it.
	LiftConv1D bool `yaml:"lift_conv1d"`
	// BlockLeakyRelu, with LiftConv1D, keeps a Piper voice's residual
	// stacks in ONNX Runtime's blocked layout on x86 (quant/onnx
	// BlockLeakyRelu: its LeakyRelus read through identity convolutions,
	// which it fuses): the same samples, bit for bit, without two reorders
	// of the stream per residual block. Default true; false leaves the
	// LeakyRelus as written.
	BlockLeakyRelu bool `yaml:"block_leaky_relu"`
	// OptimizedDir keeps what ONNX Runtime makes of each Piper voice as it
	// loads it (the optimized graph, in ONNX Runtime's own format, about
	// the model's size), so that the next load of the same file, with the
	// same ONNX Runtime, CPU and settings, skips the optimizing: a
	// Piper-medium-sized voice loads in about a third of the time. A
	// damaged or outdated copy is rebuilt. Default
	// /var/cache/mynah/optimized (the unit's CacheDirectory); "" keeps
	// nothing. CPU provider (and auto falling back to it) only.
	OptimizedDir string `yaml:"optimized_dir"`
}

// Audio is the audio section.
type Audio struct {
	// Device is the output device name (as `mynah devices` lists it); ""
	// (default) is the system's default output. Two special values: "null"
	// plays into nothing, "wav:PATH" writes everything spoken into one WAV
	// file (complete when mynahd stops).
	Device string `yaml:"device"`
	// Volume from 0 to 1 at start; MQTT volume/set changes it. Default 1.
	Volume float64 `yaml:"volume"`
	// WriteTimeout bounds one write to the device, so a vanished USB sound
	// card fails a request instead of hanging the daemon. Default 2s.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// SentenceSilence is the pause between sentences; 0 means none.
	// Default 200ms.
	SentenceSilence time.Duration `yaml:"sentence_silence"`
	// Fallback is what happens when the device cannot be opened at start:
	// "" (default) keeps serving and opens it once it is there (as after
	// a device lost later: requests fail with reason audio meanwhile);
	// "null" plays into nothing and "wav:PATH" into a WAV file instead.
	Fallback string `yaml:"fallback"`
}

// Queue is the queue section.
type Queue struct {
	// Size is how many requests may wait; when full, the lowest-priority
	// oldest one is rejected with an event. 1 to MaxQueueSize, default 32.
	Size int `yaml:"size"`
	// DefaultTTL applies to requests without their own ttl: one that could
	// not start within it is dropped rather than spoken late. 1s to 24h,
	// default 60s.
	DefaultTTL time.Duration `yaml:"default_ttl"`
	// SpoolFile keeps accepted commands, and the answers the broker has
	// not acknowledged yet, across crashes and restarts: a small bbolt
	// file of its own, so that damage to the phrase cache cannot take
	// them along. "" (default) is spool.db beside cache.file, and no spool
	// when cache.file is empty too.
	SpoolFile string `yaml:"spool_file"`
}

// SpoolPath is where the spool lives ("" for none): queue.spool_file, or
// spool.db beside cache.file.
func (c Config) SpoolPath() string {
	switch {
	case c.Queue.SpoolFile != "":
		return c.Queue.SpoolFile
	case c.Cache.File != "":
		return filepath.Join(filepath.Dir(c.Cache.File), "spool.db")
	}
	return ""
}

// Cache is the cache section: the audio of sentences already spoken,
// in one bbolt file, so a repeated announcement plays without synthesis.
type Cache struct {
	// File is the cache file; "" turns the phrase cache off. A damaged file
	// is moved aside (*.corrupt-<time>) and a new one made. Default
	// /var/lib/mynah/cache.db (the unit's StateDirectory).
	File string `yaml:"file"`
	// MaxBytes bounds the cached audio; the least recently used phrases are
	// evicted first. 1 MiB to 16 GiB, default 67108864 (64 MiB).
	MaxBytes int64 `yaml:"max_bytes"`
	// TTL forgets phrases stored longer ago than this; 0s (default) keeps
	// them until they are evicted.
	TTL time.Duration `yaml:"ttl"`
	// Pinned are texts synthesized at start (before READY) in the default
	// voice, speaker and settings, and never evicted or expired: the
	// announcements a household hears every day. Default none.
	Pinned []string `yaml:"pinned"`
	// MaxSpeakers is how many cloned speakers are kept (the most recently
	// used; enrolling one more evicts the least recently used, with an
	// evicted event). 1 to 64, default 5.
	MaxSpeakers int `yaml:"max_speakers"`
	// SpeakerPrecision stores speaker embeddings as fp16 (default; cosine
	// to the original ≈ 1 − 2e-8) or int8 (half the bytes; ≈ 1 − 3e-5).
	SpeakerPrecision string `yaml:"speaker_precision"`
}

// Log is the log section.
type Log struct {
	// Level: debug, info (default), warn or error.
	Level string `yaml:"level"`
	// Format: auto (default), text, json or journal. auto is journal when
	// standard error is connected to the journal ($JOURNAL_STREAM), text
	// otherwise. journal is "level=… msg=…" without a timestamp (the
	// journal adds its own) and with a priority prefix journald reads, so
	// `journalctl -p warning` works; text adds the time.
	Format string `yaml:"format"`
}

// Default returns the configuration used for every key the file
// leaves out.
func Default() Config {
	return Config{
		Node: "mynah",
		MQTT: MQTT{
			Keepalive:       30 * time.Second,
			DiscoveryPrefix: "homeassistant",
			EmbeddedListen:  "127.0.0.1:1883",
		},
		Voices: Voices{
			Dir:         "/var/lib/mynah/voices",
			Precision:   "auto",
			Precisions:  map[string]string{},
			Watch:       true,
			CatalogURL:  catalog.DefaultCatalogURL,
			DownloadURL: catalog.DefaultDownloadURL,
			// Matches daemon.DefaultDownloadTimeout.
			DownloadTimeout: 30 * time.Second,
			Sessions: Sessions{
				MaxCount:      engine.DefaultMaxSessions,
				Preload:       []string{},
				Pinned:        []string{},
				LowWater:      64 << 20,
				CheckInterval: 30 * time.Second,
			},
		},
		ONNX:     ONNX{Provider: string(ort.ProviderAuto), Arena: true, LiftConv1D: true, BlockLeakyRelu: true, OptimizedDir: "/var/cache/mynah/optimized"},
		Wyoming:  Wyoming{MaxConnections: wyoming.DefaultMaxConnections, Zeroconf: true},
		Announce: Announce{Chimes: map[string]string{}, Priority: map[string]string{"alert": "two_tone"}},
		Text:     Text{Normalize: true, Emoji: "drop"},
		Render:   Render{Mode: RenderLocal, Timeout: 3 * time.Second},
		Groups: Groups{
			Names:      []string{},
			Lead:       500 * time.Millisecond,
			MaxLate:    50 * time.Millisecond,
			ClockCheck: 5 * time.Minute,
		},
		Audio: Audio{
			Volume:          1,
			WriteTimeout:    2 * time.Second,
			SentenceSilence: 200 * time.Millisecond,
		},
		Queue: Queue{Size: 32, DefaultTTL: 60 * time.Second},
		Cache: Cache{File: "/var/lib/mynah/cache.db", MaxBytes: 64 << 20, Pinned: []string{},
			MaxSpeakers: cache.DefaultMaxSpeakers, SpeakerPrecision: "fp16"},
		WatchdogStall: 30 * time.Second,
		Log:           Log{Level: "info", Format: "auto"},
	}
}

// BrokerURL is the broker a tool reaches mynahd on: mqtt.broker, or the
// embedded broker's mqtt.embedded_listen as a tcp:// URL (a wildcard host
// as the loopback address). An embedded broker on port 0 has no address
// known in advance, which is an error.
func (c Config) BrokerURL() (string, error) {
	if c.MQTT.Broker != "" {
		return c.MQTT.Broker, nil
	}
	host, port, err := net.SplitHostPort(c.MQTT.EmbeddedListen)
	if err != nil {
		return "", fmt.Errorf("mqtt.embedded_listen %q: %w", c.MQTT.EmbeddedListen, err)
	}
	if port == "0" {
		return "", errors.New("the embedded broker listens on a port chosen at start (mqtt.embedded_listen port 0)")
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "127.0.0.1"
	}
	return "tcp://" + net.JoinHostPort(host, port), nil
}

// ClientID is mqtt.client_id, or "mynahd-<node>" when that is empty.
func (c Config) ClientID() string {
	if c.MQTT.ClientID != "" {
		return c.MQTT.ClientID
	}
	return "mynahd-" + c.Node
}

// MQTTPassword returns the broker password: $MYNAH_MQTT_PASSWORD if set
// and not empty, else the contents of mqtt.password_file with surrounding
// whitespace trimmed, else "". The file is limited to MaxPasswordBytes.
// Call it at start (and in -check-config) so an unreadable file is reported
// before anything connects.
func (c Config) MQTTPassword() (string, error) {
	pw := os.Getenv(EnvMQTTPassword)
	source := "$" + EnvMQTTPassword
	if pw == "" && c.MQTT.PasswordFile != "" {
		var err error
		pw, err = readSecret(c.MQTT.PasswordFile)
		if err != nil {
			return "", fmt.Errorf("mqtt.password_file: %w", err)
		}
		source = "mqtt.password_file"
	}
	if pw != "" && c.MQTT.Username == "" {
		// MQTT 3.1.1 (section 3.1.2.9) forbids a password without a user name.
		return "", fmt.Errorf("%s: a password needs mqtt.username: %w", source, ErrInvalid)
	}
	return pw, nil
}

func readSecret(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w (under systemd, give it to the service with LoadCredential=)", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil {
		return "", err
	} else if !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxPasswordBytes+1))
	if err != nil {
		return "", fmt.Errorf("read %s: %w", path, err)
	}
	if len(data) > MaxPasswordBytes {
		return "", fmt.Errorf("%s is larger than %d bytes (MaxPasswordBytes)", path, MaxPasswordBytes)
	}
	pw := strings.TrimSpace(string(data))
	if pw == "" {
		return "", fmt.Errorf("%s is empty", path)
	}
	return pw, nil
}
