package wyoming

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mynah-tts/mynah/audio/speech"
)

// Engine is the speech engine as this server needs it (audio/engine's
// Engine, through a small adapter in mynahd). Speak calls emit once per
// sentence, in order, and must return soon after ctx ends; Voices is
// called on every describe, so it should be cheap. CutSentences splits
// text that is still arriving into the complete sentences at its front
// and the rest, with the splitter Speak uses (audio/text.Complete), so
// that a stream is spoken in the sentences the whole text would be.
type Engine interface {
	Voices() []VoiceInfo
	Speak(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error
	CutSentences(text string) (done, rest string)
}

// VoiceInfo is one voice as info lists it. Home Assistant shows a voice
// under each of its Languages (tags such as en_US) and names it by its
// Description (Name when empty); a voice without languages is listed
// but HA offers it nowhere.
type VoiceInfo struct {
	Name        string
	Description string
	Languages   []string
	Speakers    []string
	Version     string // "" is sent as null
	// Default marks the engine's default voice: a request that names only
	// a language gets it when it speaks that language.
	Default bool
	// NotInstalled marks a voice the engine can install on first use (a
	// catalog voice, as wyoming-piper lists them): info says installed
	// false, and a request for it waits for VoiceInstaller.InstallVoice
	// before it takes a synthesis slot. A request that names only a
	// language gets an installed voice when one speaks it.
	NotInstalled bool
}

// VoiceInstaller is an Engine that installs the voices it lists as
// NotInstalled. InstallVoice returns once the voice can speak, or fails:
// with an error wrapping ErrVoiceDownloading when the voice is still on
// its way (the client hears voice-downloading, and may ask again), any
// other error for an install that failed (install-failed).
type VoiceInstaller interface {
	InstallVoice(ctx context.Context, name string) error
}

// Defaults for Options' zero values.
const (
	DefaultListen          = "127.0.0.1:10200"
	DefaultMaxConnections  = 16
	DefaultMaxIdle         = 64
	DefaultIdleTimeout     = 5 * time.Second
	DefaultReadTimeout     = 60 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
	DefaultMaxTextRunes    = 5000
	DefaultSamplesPerChunk = 1024
	DefaultSendBuffer      = 256 << 10
	DefaultVersion         = "dev"
)

// Options configure a Server. nil means all defaults except Engine, which
// is required.
type Options struct {
	// Listen is the TCP address Run listens on; "" is DefaultListen
	// (loopback: Wyoming has no authentication, see the package doc).
	Listen string
	// MaxConnections bounds the requests in progress at once: a
	// synthesize being answered, or a stream from synthesize-start to its
	// synthesize-stop (0: DefaultMaxConnections). One more is answered
	// with an error event (code busy) and its connection closed. A
	// connection between requests (describe and ping need none) holds no
	// slot.
	MaxConnections int
	// MaxIdle bounds the connections open without a request in progress:
	// just accepted, done with one, or being closed after an error (0:
	// DefaultMaxIdle). One more closes the one idle longest, so that
	// sockets left open cannot lock clients out.
	MaxIdle int
	// IdleTimeout is how long a connection without a request in progress
	// may take to send its next complete event (0: DefaultIdleTimeout).
	// Home Assistant sends its request as soon as it has connected, and
	// closes the connection once answered.
	IdleTimeout time.Duration
	// MaxParallel bounds the Speak calls synthesizing at once over all
	// connections (0: runtime.NumCPU()). The others wait their turn; one
	// whose client is slow to read gives its turn back meanwhile.
	// NoParallelLimit (negative) leaves it to the Engine, which bounds
	// its own syntheses (mynahd's engine does, by sentence, and answers
	// cached phrases without a turn).
	MaxParallel int
	// ReadTimeout is how long a stream may take to send its next complete
	// event (0: DefaultReadTimeout): between streamed chunks Home
	// Assistant waits for its language model, so keep it generous.
	ReadTimeout time.Duration
	// WriteTimeout is how long a client may leave its audio unread (0:
	// DefaultWriteTimeout): a write to it that makes no progress for
	// that long drops the connection.
	WriteTimeout time.Duration
	// SendBuffer bounds the bytes of events queued for one client beyond
	// what its socket holds (0: DefaultSendBuffer, about 6 s of 22050 Hz
	// audio).
	SendBuffer int
	// MaxTextRunes bounds the text of one request: a synthesize's text, or
	// all of a stream's chunks together (0: DefaultMaxTextRunes).
	MaxTextRunes int
	// SamplesPerChunk is the number of frames per audio-chunk event (0:
	// DefaultSamplesPerChunk, as wyoming-piper sends).
	SamplesPerChunk int
	// Limits bound each event a client sends (zero fields: ReadEvent's
	// defaults).
	Limits Limits
	// Engine speaks. Required.
	Engine Engine
	// Logger gets the server's log lines (under component=wyoming); nil
	// discards them.
	Logger *slog.Logger
	// Version is the program version info reports ("" is DefaultVersion).
	Version string
}

// Server is a Wyoming TTS server. Create it with New, then call Run or
// Serve; one Server may serve several listeners at once.
type Server struct {
	o   Options
	log *slog.Logger
	// conns holds a slot per request in progress; speak a slot per
	// Speak call synthesizing.
	conns chan struct{}
	speak chan struct{}
	st    counters

	idleMu sync.Mutex
	idle   []*conn // connections without a request in progress, longest idle first

	voicesMu  sync.Mutex
	voices    []VoiceInfo // the engine's list as voiceList last read it, shared read-only
	voicesAt  time.Time
	voicesTTL time.Duration // voiceListTTL; a test's own before Serve
}

// voiceListTTL is how long a request may pick its voice from the list an
// earlier one read (conn.voice): a burst of satellites asking at once
// reads it once.
const voiceListTTL = time.Second

// voiceList returns the engine's voices: the list read under
// voiceListTTL ago, unless fresh. Callers must not change it.
func (s *Server) voiceList(fresh bool) []VoiceInfo {
	s.voicesMu.Lock()
	defer s.voicesMu.Unlock()
	if fresh || s.voices == nil || time.Since(s.voicesAt) >= s.voicesTTL {
		s.voices, s.voicesAt = s.o.Engine.Voices(), time.Now()
	}
	return s.voices
}

// New checks opts and returns a Server. Errors wrap ErrInvalidOptions and
// name the field.
func New(opts *Options) (*Server, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Engine == nil {
		return nil, fmt.Errorf("%w: Engine is required", ErrInvalidOptions)
	}
	for _, f := range []struct {
		name string
		v    int64
	}{
		{"MaxConnections", int64(o.MaxConnections)},
		{"MaxIdle", int64(o.MaxIdle)},
		{"IdleTimeout", int64(o.IdleTimeout)},
		{"ReadTimeout", int64(o.ReadTimeout)},
		{"WriteTimeout", int64(o.WriteTimeout)},
		{"SendBuffer", int64(o.SendBuffer)},
		{"MaxTextRunes", int64(o.MaxTextRunes)},
		{"SamplesPerChunk", int64(o.SamplesPerChunk)},
	} {
		if f.v < 0 {
			return nil, fmt.Errorf("%w: %s %d is negative", ErrInvalidOptions, f.name, f.v)
		}
	}
	if o.Listen == "" {
		o.Listen = DefaultListen
	}
	if _, _, err := net.SplitHostPort(o.Listen); err != nil {
		return nil, fmt.Errorf("%w: Listen %q: %w", ErrInvalidOptions, o.Listen, err)
	}
	if o.MaxConnections == 0 {
		o.MaxConnections = DefaultMaxConnections
	}
	if o.MaxIdle == 0 {
		o.MaxIdle = DefaultMaxIdle
	}
	if o.IdleTimeout == 0 {
		o.IdleTimeout = DefaultIdleTimeout
	}
	switch {
	case o.MaxParallel < 0 && o.MaxParallel != NoParallelLimit:
		return nil, fmt.Errorf("%w: MaxParallel %d is negative (NoParallelLimit is %d)", ErrInvalidOptions, o.MaxParallel, NoParallelLimit)
	case o.MaxParallel == 0:
		o.MaxParallel = runtime.NumCPU()
	}
	if o.SendBuffer == 0 {
		o.SendBuffer = DefaultSendBuffer
	}
	if o.ReadTimeout == 0 {
		o.ReadTimeout = DefaultReadTimeout
	}
	if o.WriteTimeout == 0 {
		o.WriteTimeout = DefaultWriteTimeout
	}
	if o.MaxTextRunes == 0 {
		o.MaxTextRunes = DefaultMaxTextRunes
	}
	if o.SamplesPerChunk == 0 {
		o.SamplesPerChunk = DefaultSamplesPerChunk
	}
	if o.Version == "" {
		o.Version = DefaultVersion
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Server{
		o:     o,
		log:   log.With(logKeyComponent, "wyoming"),
		conns: make(chan struct{}, o.MaxConnections),
		speak: make(chan struct{}, max(o.MaxParallel, 0)),

		voicesTTL: voiceListTTL,
	}, nil
}

// NoParallelLimit is Options.MaxParallel for an Engine that bounds its
// own syntheses.
const NoParallelLimit = -1

// Log attribute keys.
const (
	logKeyComponent = "component"
	logKeyRemote    = "remote"
	logKeyErr       = "err"
	logKeyEvent     = "event"
	logKeyAddr      = "addr"
)

// Run listens on Options.Listen and serves until ctx ends (see Serve).
func (s *Server) Run(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.o.Listen)
	if err != nil {
		return fmt.Errorf("wyoming listen: %w", err)
	}
	s.log.Info("listening", logKeyAddr, ln.Addr().String())
	return s.Serve(ctx, ln)
}

// Serve accepts connections on ln until ctx ends or ln fails, and closes
// ln. When it returns, every connection it accepted is closed and its
// goroutine has ended (their Speak calls are cancelled through ctx). It
// returns nil when ctx ended, else the accept error.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		open = make(map[net.Conn]struct{})
	)
	// The watcher closes the listener and every open connection when ctx
	// ends, which unblocks Accept and every read and write.
	wg.Add(1)
	go func() {
		defer wg.Done()
		<-ctx.Done()
		ln.Close()
		mu.Lock()
		for c := range open {
			c.Close()
		}
		mu.Unlock()
	}()
	defer wg.Wait()

	var backoff time.Duration
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if !errors.Is(err, net.ErrClosed) {
				// Out of file descriptors and the like: wait, as
				// net/http does, rather than spin or give up.
				backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
				s.log.Warn("accept failed, retrying", logKeyErr, err, "in", backoff)
				select {
				case <-time.After(backoff):
					continue
				case <-ctx.Done():
					return nil
				}
			}
			cancel()
			return fmt.Errorf("wyoming accept: %w", err)
		}
		backoff = 0
		s.st.connections.Add(1)
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			return nil
		}
		open[c] = struct{}{}
		mu.Unlock()
		s.st.active.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer s.st.active.Add(-1)
			defer func() {
				mu.Lock()
				delete(open, c)
				mu.Unlock()
				c.Close()
			}()
			s.serveConn(ctx, c)
		}()
	}
}

// enterIdle counts cn among the idle connections; when MaxIdle already
// are, the one idle longest is closed.
func (s *Server) enterIdle(cn *conn) {
	s.idleMu.Lock()
	var oldest *conn
	if len(s.idle) >= s.o.MaxIdle {
		oldest = s.idle[0]
		s.idle = slices.Delete(s.idle, 0, 1)
	}
	s.idle = append(s.idle, cn)
	s.idleMu.Unlock()
	if oldest != nil {
		oldest.evicted.Store(true)
		oldest.c.Close()
		s.st.idleClosed.Add(1)
	}
}

// leaveIdle takes cn out of the idle connections (if it was not closed
// for a newer one meanwhile).
func (s *Server) leaveIdle(cn *conn) {
	s.idleMu.Lock()
	if i := slices.Index(s.idle, cn); i >= 0 {
		s.idle = slices.Delete(s.idle, i, i+1)
	}
	s.idleMu.Unlock()
}

// Stats are the server's counters since New.
type Stats struct {
	Connections uint64        // accepted, rejected ones included
	Active      int64         // open now, idle ones included
	Rejected    uint64        // requests refused as busy: over MaxConnections
	IdleClosed  uint64        // closed without a request: IdleTimeout, or the longest idle of MaxIdle
	Describes   uint64        // describe events answered
	Requests    uint64        // synthesize requests and streams begun
	Errors      uint64        // error events sent, and connections dropped on a bad frame
	CacheHits   uint64        // sentences the engine had in its phrase cache
	BytesOut    uint64        // bytes written to clients
	AudioOut    time.Duration // audio sent
}

type counters struct {
	connections, rejected, describes, requests, errors, bytesOut atomic.Uint64
	cacheHits, idleClosed                                        atomic.Uint64
	active, audioNanos                                           atomic.Int64
}

// Stats returns the counters; safe at any time, from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Connections: s.st.connections.Load(),
		Active:      s.st.active.Load(),
		Rejected:    s.st.rejected.Load(),
		IdleClosed:  s.st.idleClosed.Load(),
		Describes:   s.st.describes.Load(),
		Requests:    s.st.requests.Load(),
		Errors:      s.st.errors.Load(),
		CacheHits:   s.st.cacheHits.Load(),
		BytesOut:    s.st.bytesOut.Load(),
		AudioOut:    time.Duration(s.st.audioNanos.Load()),
	}
}
