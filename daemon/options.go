package daemon

import (
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"
)

// Defaults for Options fields left zero.
const (
	DefaultNode            = "mynah"
	DefaultDiscoveryPrefix = "homeassistant"
	DefaultTTL             = 60 * time.Second
	DefaultStateInterval   = 60 * time.Second
	DefaultOutboxSize      = 256
	DefaultPublishTimeout  = 5 * time.Second
	DefaultShutdownTimeout = 3 * time.Second
	DefaultWriteBlock      = 100 * time.Millisecond
	DefaultDownloadTimeout = 30 * time.Second
	// MaxQueueSize bounds Options.QueueSize.
	MaxQueueSize = 10000
	// maxSilence caps Chunk.Silence so a broken engine cannot hold the
	// speaker for minutes of nothing.
	maxSilence = 5 * time.Second
	// voiceCheckTimeout bounds Engine.CheckVoice for voice/set: a cold
	// load of a large voice on a small CPU takes seconds, not minutes.
	voiceCheckTimeout = time.Minute
)

// Options configures a Daemon. Transport, Engine and Sink are required;
// zero values of the other fields mean the defaults above.
type Options struct {
	// Node names this daemon in topics (mynah/<node>/...) and in Home
	// Assistant: 1..64 of A-Z a-z 0-9 _ - (default "mynah").
	Node      string
	Transport Transport
	Engine    Engine
	Sink      Sink
	// DiscoveryPrefix is Home Assistant's discovery prefix (default
	// "homeassistant"); its birth topic is <prefix>/status.
	DiscoveryPrefix string
	// QueueSize bounds the requests waiting to play (default 32, at most
	// MaxQueueSize).
	QueueSize int
	// DefaultTTL is how long a request without ttl may wait (default 60 s).
	DefaultTTL time.Duration
	// DefaultVolume is the volume at start, 0..1; nil means 1.
	DefaultVolume *float64
	// DefaultVoice is the voice for requests that name none; it must be one
	// of Engine.Voices. "" leaves the choice to the engine.
	DefaultVoice string
	// StateInterval is how often the state is re-published without a
	// change (default 60 s).
	StateInterval time.Duration
	Logger        *slog.Logger
	// Now is the clock, for tests (default time.Now).
	Now func() time.Time
	// Version is the software version shown in Home Assistant.
	Version string
	// Model is the device model shown in Home Assistant (default "mynahd").
	Model string
	// Decode sets the payload limits; nil means DecodeOptions' defaults.
	Decode *DecodeOptions
	// DedupeIDs and DedupeWindow bound the duplicate-id filter: an id is
	// ignored when it was seen among the last DedupeIDs ids (default 256)
	// and less than DedupeWindow ago (default 10 min).
	DedupeIDs    int
	DedupeWindow time.Duration
	// OutboxSize bounds the non-terminal events (queued, started, ...)
	// waiting to be published (default 256); beyond it they are dropped
	// and counted (Counters.EventsDropped). Terminal events are kept until
	// published (see outbox.go).
	OutboxSize int
	// PublishTimeout bounds each publish (default 5 s).
	PublishTimeout time.Duration
	// ShutdownTimeout bounds how long Run waits, after ctx ends, for the
	// worker to stop and for the last events to go out (default 3 s each).
	ShutdownTimeout time.Duration
	// WriteBlock is the longest piece of audio handed to the sink in one
	// Write (default 100 ms), so that volume changes apply within a block.
	WriteBlock time.Duration
	// Spool, when set, keeps accepted requests until they are done, so a
	// crash or restart loses none (see spool.go). nil: a crash loses the
	// queue.
	Spool Spool
	// SpoolError, when set, says why the configured spool cannot be used
	// (Spool is then nil): the state's spool object reports it and a
	// warning event spool_unavailable says so once. Commands are then
	// acknowledged at once and a crash loses the queue.
	SpoolError error
	// Cache, when set, is the engine's phrase cache: its figures go into
	// the state and cache/purge purges it. nil: cache/purge fails with
	// not_supported.
	Cache PhraseCache
	// CacheError, when set, says why the configured phrase cache cannot
	// be used (Cache is then nil): the state's cache object reports it and
	// a warning event cache_unavailable says so once.
	CacheError error
	// Wyoming, when set, reads the Wyoming server's counters for the
	// state (mynahd's wyoming.listen).
	Wyoming func() WyomingCounters
	// Chimes, when set, are the chimes played before speech: the one a
	// request names ("chime"), else the one PriorityChimes gives its
	// priority.
	Chimes Chimes
	// PriorityChimes names the chime of each priority; a priority absent
	// plays none unless the request asks for one.
	PriorityChimes map[Priority]string
	// Audio, when set, says whether the sink has its device, for the
	// state's audio object (call AudioChanged when that changes).
	Audio func() AudioStatus
	// Speakers, when set, enrolls and forgets cloned speakers
	// (speaker/enroll, speaker/forget). nil: those fail with
	// not_supported.
	Speakers SpeakerStore
	// Installer, when set, installs catalog voices on demand: a say
	// naming a voice it can install waits up to DownloadTimeout for it,
	// and voice/install installs one (see install.go). nil: a voice not
	// installed is unknown_voice, and voice/install fails not_supported.
	Installer Installer
	// DownloadTimeout is how long a say waits for its voice to be
	// installed (default 30 s) before it fails voice_downloading.
	DownloadTimeout time.Duration
	// Groups are the groups this daemon is a member of: it also takes
	// mynah/group/<group>/say, stop and volume/set (see group.go). At
	// most MaxGroups, each valid for ValidateGroup.
	Groups []string
	// GroupLead is how far ahead a member sets play_at for a group
	// request that has none (default 500 ms): time enough for every member
	// to prepare the first sentence.
	GroupLead time.Duration
	// MaxLate is how late a timed request may start (default 50 ms): up
	// to it, it starts into its first sentence at the offset it would
	// have reached; later, it is dropped with reason late. Negative means
	// none: a request that would start late at all is dropped.
	MaxLate time.Duration
}

func (o *Options) withDefaults() (Options, error) {
	var out Options
	if o != nil {
		out = *o
	}
	bad := func(format string, args ...any) (Options, error) {
		return Options{}, fmt.Errorf("%w: "+format, append([]any{ErrInvalidOptions}, args...)...)
	}
	if out.Node == "" {
		out.Node = DefaultNode
	}
	if err := ValidateNode(out.Node); err != nil {
		return bad("Node: %v", err)
	}
	if out.DiscoveryPrefix == "" {
		out.DiscoveryPrefix = DefaultDiscoveryPrefix
	}
	if err := validatePrefix(out.DiscoveryPrefix); err != nil {
		return bad("DiscoveryPrefix: %v", err)
	}
	switch {
	case out.Transport == nil:
		return bad("Transport is required")
	case out.Engine == nil:
		return bad("Engine is required")
	case out.Sink == nil:
		return bad("Sink is required")
	case out.QueueSize < 0 || out.QueueSize > MaxQueueSize:
		return bad("QueueSize %d is outside 1..%d", out.QueueSize, MaxQueueSize)
	case out.DefaultVolume != nil && !(*out.DefaultVolume >= 0 && *out.DefaultVolume <= 1):
		return bad("DefaultVolume %g is outside 0..1", *out.DefaultVolume)
	case out.DefaultTTL < 0, out.StateInterval < 0, out.DedupeWindow < 0, out.PublishTimeout < 0,
		out.ShutdownTimeout < 0, out.WriteBlock < 0, out.OutboxSize < 0, out.DedupeIDs < 0, out.DownloadTimeout < 0,
		out.GroupLead < 0:
		return bad("durations and sizes must not be negative")
	case len(out.Groups) > MaxGroups:
		return bad("%d groups, over the limit of %d", len(out.Groups), MaxGroups)
	}
	for i, g := range out.Groups {
		if err := ValidateGroup(g); err != nil {
			return bad("Groups[%d]: %v", i, err)
		}
		if slices.Contains(out.Groups[:i], g) {
			return bad("Groups: %q twice", g)
		}
	}
	if out.DefaultVoice != "" {
		if err := ValidateName(out.DefaultVoice); err != nil {
			return bad("DefaultVoice: %v", err)
		}
		if voices := out.Engine.Voices(); !slices.Contains(voices, out.DefaultVoice) {
			return bad("DefaultVoice: %w %q (the engine has: %s)", ErrUnknownVoice, out.DefaultVoice, strings.Join(voices, ", "))
		}
	}
	setDefault(&out.QueueSize, DefaultQueueSize)
	setDefault(&out.DefaultTTL, DefaultTTL)
	setDefault(&out.StateInterval, DefaultStateInterval)
	setDefault(&out.DedupeIDs, DefaultDedupeIDs)
	setDefault(&out.DedupeWindow, DefaultDedupeWindow)
	setDefault(&out.OutboxSize, DefaultOutboxSize)
	setDefault(&out.PublishTimeout, DefaultPublishTimeout)
	setDefault(&out.ShutdownTimeout, DefaultShutdownTimeout)
	setDefault(&out.WriteBlock, DefaultWriteBlock)
	setDefault(&out.DownloadTimeout, DefaultDownloadTimeout)
	setDefault(&out.GroupLead, DefaultGroupLead)
	if out.MaxLate == 0 {
		out.MaxLate = DefaultMaxLate
	} else if out.MaxLate < 0 {
		out.MaxLate = 0
	}
	setDefault(&out.Model, "mynahd")
	if out.Logger == nil {
		out.Logger = slog.New(slog.DiscardHandler)
	}
	if out.Now == nil {
		out.Now = time.Now
	}
	return out, nil
}

func setDefault[T comparable](v *T, def T) {
	var zero T
	if *v == zero {
		*v = def
	}
}

// ValidateNode checks a node name: 1..64 bytes of A-Z a-z 0-9 _ -, which
// is what both an MQTT topic level and a Home Assistant discovery node id
// accept.
func ValidateNode(node string) error { return validateLevel("node", node) }

// validateLevel checks a name that is one MQTT topic level and a Home
// Assistant id: 1..64 bytes of A-Z a-z 0-9 _ -.
func validateLevel(kind, name string) error {
	if name == "" || len(name) > 64 {
		return fmt.Errorf("%s name must be 1..64 bytes, not %d", kind, len(name))
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !isNameStart(c) && c != '-' {
			return fmt.Errorf("%s name %s contains %q: use A-Z a-z 0-9 _ - (one MQTT topic level: no wildcards + # or /)", kind, quoteShort(name), c)
		}
	}
	return nil
}

func validatePrefix(p string) error {
	switch {
	case len(p) > 128:
		return fmt.Errorf("%d bytes is over the limit of 128", len(p))
	case strings.ContainsAny(p, "+#\x00"):
		return fmt.Errorf("%s contains an MQTT wildcard or NUL", quoteShort(p))
	case strings.HasPrefix(p, "/") || strings.HasSuffix(p, "/") || strings.Contains(p, "//"):
		return fmt.Errorf("%s has an empty topic level", quoteShort(p))
	}
	return nil
}
