package config

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"net"
	"net/url"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/ort"
)

// MaxPinnedPhrases bounds cache.pinned: every one is synthesized at start.
const MaxPinnedPhrases = 100

// Limits of voices.sessions.
const (
	// MaxSessionVoices bounds voices.sessions.max_count and the length of
	// its preload and pinned lists: far more voices than a small device
	// holds in memory.
	MaxSessionVoices = 64
	// MaxSessionBytes bounds the byte settings of voices.sessions (1 TiB):
	// a larger figure is a typo.
	MaxSessionBytes = 1 << 40
)

// fieldError is one problem found by Validate, named by its YAML path.
type fieldError struct {
	Field   string // e.g. "mqtt.broker"
	Problem string
}

func (e *fieldError) Error() string        { return e.Field + ": " + e.Problem }
func (e *fieldError) Is(target error) bool { return target == ErrInvalid }

var (
	hostnamePattern = regexp.MustCompile(`^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})$`)
	nodePattern     = regexp.MustCompile(`^[a-z0-9_-]+$`)
	voicePattern    = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]*$`)
	groupPattern    = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)
)

const maxVoiceNameLen = 64

// Validate checks every field and returns all problems at once (joined),
// each naming its field, e.g.
// `mqtt.broker: scheme "ftp" not supported (tcp, ssl, tls, ws, wss)`.
// Every error wraps ErrInvalid. It reads no files.
func (c Config) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, &fieldError{Field: field, Problem: fmt.Sprintf(format, args...)})
	}

	switch {
	case c.Node == "":
		bad("node", "must not be empty")
	case len(c.Node) > MaxNodeLen:
		bad("node", "%d characters; at most %d (MaxNodeLen)", len(c.Node), MaxNodeLen)
	case !nodePattern.MatchString(c.Node):
		bad("node", "%q: use only lowercase letters, digits, '_' and '-' (it is part of MQTT topics and Home Assistant ids)", c.Node)
	}

	c.MQTT.validate(bad)

	if c.Voices.Dir == "" {
		bad("voices.dir", "must not be empty")
	} else {
		checkPath(bad, "voices.dir", c.Voices.Dir)
	}
	if v := c.Voices.Default; v != "" {
		checkVoiceName(bad, "voices.default", v)
	}

	c.Voices.Sessions.validate(bad, c.Voices.Default)
	checkPrecision := func(field, p string) {
		if !slices.Contains([]string{"auto", "fp32", "fp16", "int8", "nbits"}, p) {
			bad(field, "%q: want auto, fp32, fp16, int8 or nbits", p)
		}
	}
	checkPrecision("voices.precision", c.Voices.Precision)
	if len(c.Voices.Precisions) > MaxSessionVoices {
		bad("voices.precisions", "%d voices, at most %d", len(c.Voices.Precisions), MaxSessionVoices)
	}
	for _, name := range slices.Sorted(maps.Keys(c.Voices.Precisions)) {
		checkVoiceName(bad, "voices.precisions", name)
		checkPrecision("voices.precisions."+name, c.Voices.Precisions[name])
	}

	for field, u := range map[string]string{"voices.catalog_url": c.Voices.CatalogURL, "voices.download_url": c.Voices.DownloadURL} {
		checkSourceURL(bad, field, u)
	}
	checkDuration(bad, "voices.download_timeout", c.Voices.DownloadTimeout, time.Second, 10*time.Minute)

	checkPath(bad, "onnx.library", c.ONNX.Library)
	checkPath(bad, "onnx.optimized_dir", c.ONNX.OptimizedDir)
	if c.ONNX.OptimizedDir != "" && !filepath.IsAbs(c.ONNX.OptimizedDir) {
		bad("onnx.optimized_dir", "%q is not an absolute path", c.ONNX.OptimizedDir)
	}
	switch ort.Provider(c.ONNX.Provider) {
	case ort.ProviderAuto, ort.ProviderCPU, ort.ProviderCUDA, ort.ProviderTensorRT:
	default:
		bad("onnx.provider", "%q not supported (auto, cpu, cuda, tensorrt)", c.ONNX.Provider)
	}
	if c.ONNX.Threads < 0 || c.ONNX.Threads > ort.MaxThreads {
		bad("onnx.threads", "%d out of range (0 to %d; 0 lets ONNX Runtime choose)", c.ONNX.Threads, ort.MaxThreads)
	}

	a := c.Audio
	if len(a.Device) > 256 || strings.ContainsFunc(a.Device, isControl) {
		bad("audio.device", "not a device name (at most 256 printable characters)")
	}
	if !(a.Volume >= 0 && a.Volume <= 1) { // also rejects NaN
		bad("audio.volume", "%v out of range (0 to 1)", a.Volume)
	}
	checkDuration(bad, "audio.write_timeout", a.WriteTimeout, 10*time.Millisecond, time.Minute)
	checkDuration(bad, "audio.sentence_silence", a.SentenceSilence, 0, 5*time.Second)
	if a.Fallback != "" && a.Fallback != "null" && !isWAVOutput(a.Fallback) {
		bad("audio.fallback", "%q not supported (\"\" to fail without a device, \"null\" to play into nothing, \"wav:PATH\" for a file)", a.Fallback)
	}
	for field, v := range map[string]string{"audio.device": a.Device, "audio.fallback": a.Fallback} {
		if strings.HasPrefix(v, "wav:") && !isWAVOutput(v) {
			bad(field, "%q: wav: needs an absolute path ending in .wav", v)
		}
	}

	checkPath(bad, "cache.file", c.Cache.File)
	if c.Cache.File != "" && !filepath.IsAbs(c.Cache.File) {
		bad("cache.file", "%q must be an absolute path (or empty to turn the cache off)", c.Cache.File)
	}
	if c.Cache.MaxBytes < 1<<20 || c.Cache.MaxBytes > 16<<30 {
		bad("cache.max_bytes", "%d out of range (1 MiB to 16 GiB)", c.Cache.MaxBytes)
	}
	if len(c.Cache.Pinned) > MaxPinnedPhrases {
		bad("cache.pinned", "%d phrases, at most %d", len(c.Cache.Pinned), MaxPinnedPhrases)
	}
	for i, p := range c.Cache.Pinned {
		if n := utf8.RuneCountInString(p); n == 0 || n > 400 || !utf8.ValidString(p) || strings.ContainsFunc(p, isControl) {
			bad(fmt.Sprintf("cache.pinned[%d]", i), "must be 1 to 400 characters of printable UTF-8")
		}
	}
	if c.Cache.MaxSpeakers < 1 || c.Cache.MaxSpeakers > 64 {
		bad("cache.max_speakers", "%d out of range (1 to 64)", c.Cache.MaxSpeakers)
	}
	if c.Cache.SpeakerPrecision != "fp16" && c.Cache.SpeakerPrecision != "int8" {
		bad("cache.speaker_precision", "%q: want fp16 or int8", c.Cache.SpeakerPrecision)
	}
	if c.Cache.TTL < 0 {
		bad("cache.ttl", "%v is negative (0s keeps phrases until evicted)", c.Cache.TTL)
	}
	if c.Queue.Size < 1 || c.Queue.Size > MaxQueueSize {
		bad("queue.size", "%d out of range (1 to %d)", c.Queue.Size, MaxQueueSize)
	}
	checkDuration(bad, "queue.default_ttl", c.Queue.DefaultTTL, time.Second, 24*time.Hour)
	c.Wyoming.validate(bad)
	c.Announce.validate(bad)
	c.Groups.validate(bad)
	if !slices.Contains([]string{RenderLocal, RenderRemote, RenderServe}, c.Render.Mode) {
		bad("render.mode", "%q: want local, remote or serve", c.Render.Mode)
	}
	checkDuration(bad, "render.timeout", c.Render.Timeout, 100*time.Millisecond, time.Minute)
	if c.Text.Emoji != "drop" && c.Text.Emoji != "name" {
		bad("text.emoji", "%q: want drop or name", c.Text.Emoji)
	}
	if f := c.Queue.SpoolFile; f != "" {
		checkPath(bad, "queue.spool_file", f)
		switch {
		case !filepath.IsAbs(f):
			bad("queue.spool_file", "%q must be an absolute path (or empty for spool.db beside cache.file)", f)
		case filepath.Clean(f) == filepath.Clean(c.Cache.File):
			bad("queue.spool_file", "%q is cache.file: the spool needs a file of its own", f)
		}
	} else if c.Cache.File != "" && filepath.Base(c.Cache.File) == "spool.db" {
		bad("cache.file", "%q: spool.db beside it is the spool's default file; name the cache otherwise or set queue.spool_file", c.Cache.File)
	}

	if checkDuration(bad, "watchdog_stall", c.WatchdogStall, time.Second, time.Hour) &&
		c.WatchdogStall <= a.WriteTimeout {
		bad("watchdog_stall", "%v must exceed audio.write_timeout (%v), or a timed-out write looks like a stuck daemon",
			c.WatchdogStall, a.WriteTimeout)
	}

	switch c.Log.Level {
	case "debug", "info", "warn", "error":
	default:
		bad("log.level", "%q not supported (debug, info, warn, error)", c.Log.Level)
	}
	switch c.Log.Format {
	case "auto", "text", "json", "journal":
	default:
		bad("log.format", "%q not supported (auto, text, json, journal)", c.Log.Format)
	}
	return errors.Join(errs...)
}

// validate checks voices.sessions; def is voices.default ("" is the demo
// voice), which is always loaded and pinned and so takes one place.
func (sc Sessions) validate(bad func(field, format string, args ...any), def string) {
	const f = "voices.sessions."
	if sc.MaxCount < 1 || sc.MaxCount > MaxSessionVoices {
		bad(f+"max_count", "%d out of range (1 to %d)", sc.MaxCount, MaxSessionVoices)
	}
	if sc.MaxBytes != 0 && (sc.MaxBytes < 1<<20 || sc.MaxBytes > MaxSessionBytes) {
		bad(f+"max_bytes", "%d out of range (0 for no bound, else 1 MiB to 1 TiB)", sc.MaxBytes)
	}
	if def == "" {
		def = demo.Name
	}
	kept := map[string]bool{def: true}
	for _, list := range []struct {
		name  string
		names []string
	}{{"preload", sc.Preload}, {"pinned", sc.Pinned}} {
		if len(list.names) > MaxSessionVoices {
			bad(f+list.name, "%d voices, at most %d", len(list.names), MaxSessionVoices)
			continue
		}
		for i, v := range list.names {
			checkVoiceName(bad, fmt.Sprintf("%s%s[%d]", f, list.name, i), v)
			kept[v] = true
		}
	}
	if sc.MaxCount >= 1 && len(kept) > sc.MaxCount {
		// Preloading past the bound would evict what was just loaded, and
		// pins past it would keep the cache over its bound for good.
		bad(f+"max_count", "%d is less than the %d voices that voices.default, preload and pinned keep loaded",
			sc.MaxCount, len(kept))
	}
	if sc.LowWater < 0 || sc.LowWater > MaxSessionBytes {
		bad(f+"low_water", "%d out of range (0 turns the pressure check off, else up to 1 TiB)", sc.LowWater)
	}
	switch {
	case sc.MemoryBudget == 0:
	case sc.MemoryBudget < 16<<20 || sc.MemoryBudget > MaxSessionBytes:
		bad(f+"memory_budget", "%d out of range (0 for none, else 16 MiB to 1 TiB)", sc.MemoryBudget)
	case sc.MemoryBudget <= sc.LowWater:
		bad(f+"memory_budget", "%d must exceed voices.sessions.low_water (%d), the headroom kept below it",
			sc.MemoryBudget, sc.LowWater)
	case sc.LowWater == 0:
		bad(f+"memory_budget", "set, but voices.sessions.low_water is 0, which turns the pressure check off")
	}
	if sc.CheckInterval != 0 {
		checkDuration(bad, f+"check_interval", sc.CheckInterval, time.Second, time.Hour)
	}
}

// checkVoiceName reports v unless it can be a directory name inside
// voices.dir: whether that voice is installed is checked at start.
func checkVoiceName(bad func(field, format string, args ...any), field, v string) {
	switch {
	case len(v) > maxVoiceNameLen:
		bad(field, "%d characters; at most %d", len(v), maxVoiceNameLen)
	case !voicePattern.MatchString(v):
		bad(field, "%q is not a voice name: a directory name inside voices.dir (letters, digits, '.', '_', '-'; no '/')", v)
	}
}

var brokerSchemes = []string{"tcp", "ssl", "tls", "ws", "wss"}

func (m MQTT) validate(bad func(field, format string, args ...any)) {
	tlsBroker := false
	if m.Broker == "" {
		if m.EmbeddedListen == "" {
			bad("mqtt.embedded_listen", "must not be empty when mqtt.broker is empty (the embedded broker listens there)")
		}
	} else if u, err := url.Parse(m.Broker); err != nil {
		bad("mqtt.broker", "not a URL (e.g. tcp://broker.local:1883): %v", err)
	} else {
		switch {
		case !slices.Contains(brokerSchemes, u.Scheme):
			bad("mqtt.broker", "scheme %q not supported (%s)", u.Scheme, strings.Join(brokerSchemes, ", "))
		case u.Hostname() == "":
			bad("mqtt.broker", "%q has no host (e.g. tcp://broker.local:1883)", m.Broker)
		case u.User != nil:
			bad("mqtt.broker", "credentials in the URL; use mqtt.username and mqtt.password_file")
		case (u.Scheme == "tcp" || u.Scheme == "ssl" || u.Scheme == "tls") && u.Port() == "":
			bad("mqtt.broker", "%q has no port (1883 for tcp, 8883 for ssl)", m.Broker)
		case u.Port() != "" && !validPort(u.Port(), false):
			bad("mqtt.broker", "port %q out of range (1 to 65535)", u.Port())
		}
		tlsBroker = u.Scheme == "ssl" || u.Scheme == "tls" || u.Scheme == "wss"
	}
	if m.EmbeddedListen != "" {
		host, port, err := net.SplitHostPort(m.EmbeddedListen)
		switch {
		case err != nil:
			bad("mqtt.embedded_listen", "%q is not host:port (e.g. 127.0.0.1:1883)", m.EmbeddedListen)
		case host != "" && net.ParseIP(host) == nil && host != "localhost":
			bad("mqtt.embedded_listen", "host %q is not an IP address or localhost", host)
		case !validPort(port, true):
			bad("mqtt.embedded_listen", "port %q out of range (0 to 65535)", port)
		}
	}
	if len(m.Username) > 256 || strings.ContainsFunc(m.Username, isControl) {
		bad("mqtt.username", "not a user name (at most 256 printable characters)")
	}
	checkPath(bad, "mqtt.password_file", m.PasswordFile)
	if len(m.ClientID) > 128 || strings.ContainsFunc(m.ClientID, isControl) || strings.ContainsRune(m.ClientID, ' ') {
		bad("mqtt.client_id", "at most 128 printable characters without spaces")
	}
	if checkDuration(bad, "mqtt.keepalive", m.Keepalive, time.Second, 65535*time.Second) &&
		m.Keepalive%time.Second != 0 {
		bad("mqtt.keepalive", "%v is not whole seconds (MQTT counts keepalive in seconds)", m.Keepalive)
	}
	for _, f := range []struct{ name, value string }{
		{"mqtt.ca_file", m.CAFile}, {"mqtt.cert_file", m.CertFile}, {"mqtt.key_file", m.KeyFile},
	} {
		checkPath(bad, f.name, f.value)
		if f.value != "" && !tlsBroker {
			bad(f.name, "set, but mqtt.broker is not ssl://, tls:// or wss://")
		}
	}
	if (m.CertFile == "") != (m.KeyFile == "") {
		bad("mqtt.cert_file", "a client certificate needs both mqtt.cert_file and mqtt.key_file")
	}
	if m.InsecureSkipVerify && !tlsBroker {
		bad("mqtt.insecure_skip_verify", "set, but mqtt.broker is not ssl://, tls:// or wss://")
	}
	p := m.DiscoveryPrefix
	switch {
	case p == "":
		bad("mqtt.discovery_prefix", "must not be empty (Home Assistant's default is homeassistant)")
	case len(p) > 64:
		bad("mqtt.discovery_prefix", "%d characters; at most 64", len(p))
	case strings.ContainsAny(p, "+#") || strings.ContainsFunc(p, isControl):
		bad("mqtt.discovery_prefix", "%q: MQTT wildcards and control characters are not allowed in a topic", p)
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		bad("mqtt.discovery_prefix", "%q has an empty topic level", p)
	}
}

// checkDuration reports d outside [lo, hi] and returns whether d was fine.
func checkDuration(bad func(field, format string, args ...any), field string, d, lo, hi time.Duration) bool {
	if d < lo || d > hi {
		bad(field, "%v out of range (%v to %v)", d, lo, hi)
		return false
	}
	return true
}

func checkPath(bad func(field, format string, args ...any), field, p string) {
	switch {
	case len(p) > maxPathLen:
		bad(field, "path longer than %d bytes", maxPathLen)
	case strings.ContainsRune(p, 0):
		bad(field, "path contains a NUL byte")
	}
}

func validPort(s string, zeroOK bool) bool {
	if s == "" || strings.Trim(s, "0123456789") != "" {
		return false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n > math.MaxUint16 {
		return false
	}
	return n > 0 || (zeroOK && n == 0)
}

// isWAVOutput reports whether v is "wav:" followed by an absolute .wav path.
func isWAVOutput(v string) bool {
	p, ok := strings.CutPrefix(v, "wav:")
	return ok && filepath.IsAbs(p) && strings.HasSuffix(p, ".wav")
}

func isControl(r rune) bool { return r < 0x20 || r == 0x7f }

func (w Wyoming) validate(bad func(field, format string, args ...any)) {
	if w.Listen != "" {
		host, port, err := net.SplitHostPort(w.Listen)
		if n, perr := strconv.Atoi(port); err != nil || perr != nil || n < 1 || n > 65535 {
			bad("wyoming.listen", "%q is not HOST:PORT (e.g. 127.0.0.1:10200, or 0.0.0.0:10200 for the whole network)", w.Listen)
		} else if host != "" && net.ParseIP(host) == nil && !hostnamePattern.MatchString(host) {
			bad("wyoming.listen", "%q: host %q is neither an IP address nor a host name", w.Listen, host)
		}
	}
	if w.MaxConnections < 1 || w.MaxConnections > 256 {
		bad("wyoming.max_connections", "%d out of range (1 to 256)", w.MaxConnections)
	}
	if w.MaxParallel < 0 || w.MaxParallel > 64 {
		bad("wyoming.max_parallel", "%d out of range (0 = one per core, up to 64)", w.MaxParallel)
	}
}

// Limits of the announce section.
const (
	// MaxChimes bounds announce.chimes: each is kept in memory.
	MaxChimes = 16
	// MaxChimeSeconds bounds a chime file's length.
	MaxChimeSeconds = 10
)

// builtinChimes are the chimes mynahd makes itself (audio.BuiltinChimes).
var builtinChimes = []string{"ding", "two_tone"}

func (a Announce) validate(bad func(field, format string, args ...any)) {
	if len(a.Chimes) > MaxChimes {
		bad("announce.chimes", "%d chimes, at most %d", len(a.Chimes), MaxChimes)
	}
	for _, name := range slices.Sorted(maps.Keys(a.Chimes)) {
		field, path := "announce.chimes."+name, a.Chimes[name]
		switch {
		case !voicePattern.MatchString(name) || len(name) > maxVoiceNameLen:
			bad("announce.chimes", "%q is not a chime name (letters, digits, '.', '_', '-')", name)
		case name == "none" || name == "default" || slices.Contains(builtinChimes, name):
			bad(field, "%q is taken (none and default mean no chime and the default one; %s are built in)", name, strings.Join(builtinChimes, ", "))
		case !filepath.IsAbs(path) || !strings.HasSuffix(path, ".wav"):
			bad(field, "%q: want an absolute path to a .wav file", path)
		default:
			checkPath(bad, field, path)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(a.Priority)) {
		name := a.Priority[p]
		switch {
		case p != "low" && p != "normal" && p != "alert":
			bad("announce.priority", "%q is not a priority (low, normal, alert)", p)
		case name == "":
		case !slices.Contains(builtinChimes, name) && a.Chimes[name] == "":
			bad("announce.priority."+p, "%q is neither built in (%s) nor in announce.chimes", name, strings.Join(builtinChimes, ", "))
		}
	}
}

// Limits of the groups section.
const (
	// MaxGroups bounds groups.names: each is three more subscriptions.
	MaxGroups = 16
	// MaxGroupNameLen bounds a group name, a level of the group's topics.
	MaxGroupNameLen = 64
)

func (g Groups) validate(bad func(field, format string, args ...any)) {
	if len(g.Names) > MaxGroups {
		bad("groups.names", "%d groups, at most %d (MaxGroups)", len(g.Names), MaxGroups)
	}
	first := map[string]int{} // name → its first index
	for i, name := range g.Names {
		field := fmt.Sprintf("groups.names[%d]", i)
		j, dup := first[name]
		switch {
		case name == "":
			bad(field, "must not be empty")
		case !groupPattern.MatchString(name):
			bad(field, "%q: a group name may hold letters, digits, - and _ only (no MQTT wildcards + # or /)", name)
		case len(name) > MaxGroupNameLen:
			// The pattern is ASCII, so characters are bytes here.
			bad(field, "%d characters; at most %d (MaxGroupNameLen)", len(name), MaxGroupNameLen)
		case dup:
			bad(field, "%q is groups.names[%d] again", name, j)
		default:
			first[name] = i
		}
	}
	checkDuration(bad, "groups.lead", g.Lead, 50*time.Millisecond, 10*time.Second)
	checkDuration(bad, "groups.max_late", g.MaxLate, 0, time.Second)
	if g.ClockCheck != 0 {
		checkDuration(bad, "groups.clock_check", g.ClockCheck, 10*time.Second, 24*time.Hour)
	}
	if g.ClockProbe != 0 {
		checkDuration(bad, "groups.clock_probe", g.ClockProbe, 10*time.Second, 24*time.Hour)
		if g.ClockCheck == 0 {
			bad("groups.clock_probe", "needs groups.clock_check (e.g. 5m): the offset is reported beside the clock's synchronization state")
		}
	}
}

// checkSourceURL checks a voices.catalog_url or download_url: http(s)://
// with a host, or file:///absolute/path.
func checkSourceURL(bad func(field, format string, args ...any), field, s string) {
	u, err := url.Parse(s)
	switch {
	case s == "":
		bad(field, "must not be empty")
	case len(s) > maxPathLen || strings.ContainsFunc(s, isControl):
		bad(field, "not a URL (at most %d printable characters)", maxPathLen)
	case err != nil:
		bad(field, "not a URL: %v", err)
	case u.Scheme == "http" || u.Scheme == "https":
		if u.Host == "" {
			bad(field, "%q has no host", s)
		}
	case u.Scheme == "file":
		if (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
			bad(field, "%q: a file URL names an absolute local path, file:///srv/piper-voices/", s)
		}
	default:
		bad(field, "%q: want http://, https:// or file:///", s)
	}
}
