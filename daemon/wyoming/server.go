package wyoming

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mynah-tts/mynah/audio/speech"
)

// Engine is the speech engine as this server needs it (audio/engine's
// Engine, through a small adapter in mynahd). Speak calls emit once per
// sentence, in order, and must return soon after ctx ends; Voices is
// called on every describe, so it should be cheap.
type Engine interface {
	Voices() []VoiceInfo
	Speak(ctx context.Context, r speech.Request, emit func(speech.Chunk) error) error
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
}

// Defaults for Options' zero values.
const (
	DefaultListen          = "127.0.0.1:10200"
	DefaultMaxConnections  = 8
	DefaultReadTimeout     = 60 * time.Second
	DefaultWriteTimeout    = 30 * time.Second
	DefaultMaxTextRunes    = 5000
	DefaultSamplesPerChunk = 1024
	DefaultVersion         = "dev"
)

// Options configure a Server. nil means all defaults except Engine, which
// is required.
type Options struct {
	// Listen is the TCP address Run listens on; "" is DefaultListen
	// (loopback: Wyoming has no authentication, see the package doc).
	Listen string
	// MaxConnections bounds the connections served at once (0:
	// DefaultMaxConnections). One more is answered with an error event
	// (code busy) and closed.
	MaxConnections int
	// MaxParallel bounds the Speak calls running at once over all
	// connections (0: runtime.NumCPU()). The others wait their turn.
	MaxParallel int
	// ReadTimeout is how long a connection may take to send its next
	// complete event (0: DefaultReadTimeout). It also ends idle
	// connections and slow senders. Between streamed chunks Home Assistant
	// waits for its language model, so keep it generous.
	ReadTimeout time.Duration
	// WriteTimeout bounds writing one event to a client (0:
	// DefaultWriteTimeout).
	WriteTimeout time.Duration
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
	// conns holds a slot per connection being served; speak a slot per
	// Speak call running.
	conns chan struct{}
	speak chan struct{}
	st    counters
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
		{"MaxParallel", int64(o.MaxParallel)},
		{"ReadTimeout", int64(o.ReadTimeout)},
		{"WriteTimeout", int64(o.WriteTimeout)},
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
	if o.MaxParallel == 0 {
		o.MaxParallel = runtime.NumCPU()
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
		speak: make(chan struct{}, o.MaxParallel),
	}, nil
}

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
		select {
		case s.conns <- struct{}{}:
		default:
			s.reject(c)
			continue
		}
		mu.Lock()
		if ctx.Err() != nil {
			mu.Unlock()
			c.Close()
			<-s.conns
			return nil
		}
		open[c] = struct{}{}
		mu.Unlock()
		s.st.active.Add(1)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-s.conns }()
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

// reject answers a connection over MaxConnections with an error event and
// closes it. The write goes into an empty socket buffer, so it does not
// hold up the accept loop; the deadline covers a peer that is gone.
func (s *Server) reject(c net.Conn) {
	s.st.rejected.Add(1)
	s.st.errors.Add(1)
	s.log.Warn("too many connections", logKeyRemote, c.RemoteAddr().String(), "max", s.o.MaxConnections)
	c.SetWriteDeadline(time.Now().Add(time.Second))
	ev, _ := errorEvent(CodeBusy, fmt.Sprintf("busy: %d connections already, try again", s.o.MaxConnections))
	n, _ := writeEvent(c, ev)
	s.st.bytesOut.Add(uint64(n))
	c.Close()
}

// Stats are the server's counters since New.
type Stats struct {
	Connections uint64        // accepted, rejected ones included
	Active      int64         // being served now
	Rejected    uint64        // closed at once: over MaxConnections
	Describes   uint64        // describe events answered
	Requests    uint64        // synthesize requests and streams begun
	Errors      uint64        // error events sent, and connections dropped on a bad frame
	CacheHits   uint64        // sentences the engine had in its phrase cache
	BytesOut    uint64        // bytes written to clients
	AudioOut    time.Duration // audio sent
}

type counters struct {
	connections, rejected, describes, requests, errors, bytesOut atomic.Uint64
	cacheHits                                                    atomic.Uint64
	active, audioNanos                                           atomic.Int64
}

// Stats returns the counters; safe at any time, from any goroutine.
func (s *Server) Stats() Stats {
	return Stats{
		Connections: s.st.connections.Load(),
		Active:      s.st.active.Load(),
		Rejected:    s.st.rejected.Load(),
		Describes:   s.st.describes.Load(),
		Requests:    s.st.requests.Load(),
		Errors:      s.st.errors.Load(),
		CacheHits:   s.st.cacheHits.Load(),
		BytesOut:    s.st.bytesOut.Load(),
		AudioOut:    time.Duration(s.st.audioNanos.Load()),
	}
}
