package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"sync"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"
)

// Defaults and limits of the embedded broker.
const (
	DefaultBrokerAddr = "127.0.0.1:1883"
	// DefaultMaxPacketSize caps one MQTT packet. mynahd's biggest inbound
	// message, a speaker enrollment with a base64 WAV, stays well below.
	DefaultMaxPacketSize = 4 << 20
	// DefaultMaxClients caps concurrent connections.
	DefaultMaxClients = 100
	// DefaultSessionExpiry (seconds) is how long the broker keeps the
	// session and queued messages of a disconnected persistent client.
	// The broker is in memory, so this bounds what a vanished client can
	// pin there.
	DefaultSessionExpiry = 24 * 60 * 60
)

// BrokerOptions configure StartBroker. nil means defaults.
type BrokerOptions struct {
	// Addr is the TCP address to listen on (default 127.0.0.1:1883).
	// Port 0 picks a free port; Broker.Addr reports it.
	//
	// The embedded broker lets every client in and allows every topic.
	// The bind address is therefore what decides who can talk to mynahd:
	// loopback (127.0.0.1, ::1, localhost) keeps it on this machine. Any
	// other address, including ":1883" (all interfaces), is refused with
	// ErrNotLoopback unless AllowRemote is set. For a shared network, run
	// a real broker with accounts and ACLs and point mynahd at it.
	Addr        string
	AllowRemote bool

	MaxPacketSize int // bytes; default DefaultMaxPacketSize
	MaxClients    int // default DefaultMaxClients

	// Logger receives the broker's own messages at Warn level and above
	// (mochi is chatty at Info); nil discards them.
	Logger *slog.Logger
}

// Broker is a running embedded MQTT broker. It keeps everything in memory:
// retained messages and persistent sessions survive client reconnects but
// not a restart of mynahd.
type Broker struct {
	srv  *mochi.Server
	addr string
	once sync.Once
}

// StartBroker starts an embedded broker listening on opts.Addr and returns
// once it accepts connections.
func StartBroker(opts *BrokerOptions) (*Broker, error) {
	var o BrokerOptions
	if opts != nil {
		o = *opts
	}
	if o.Addr == "" {
		o.Addr = DefaultBrokerAddr
	}
	if o.MaxPacketSize == 0 {
		o.MaxPacketSize = DefaultMaxPacketSize
	}
	if o.MaxClients == 0 {
		o.MaxClients = DefaultMaxClients
	}
	switch {
	case o.MaxPacketSize < 0 || int64(o.MaxPacketSize) > 1<<28:
		return nil, fmt.Errorf("%w: MaxPacketSize %d is outside 1..%d", ErrInvalidOptions, o.MaxPacketSize, 1<<28)
	case o.MaxClients < 0:
		return nil, fmt.Errorf("%w: MaxClients %d is negative", ErrInvalidOptions, o.MaxClients)
	}
	host, _, err := net.SplitHostPort(o.Addr)
	if err != nil {
		return nil, fmt.Errorf("%w: Addr %q: %w", ErrInvalidOptions, o.Addr, err)
	}
	if !o.AllowRemote && !isLoopbackHost(host) {
		return nil, fmt.Errorf("start broker on %s: %w (bind 127.0.0.1, or set AllowRemote)", o.Addr, ErrNotLoopback)
	}
	ln, err := net.Listen("tcp", o.Addr)
	if err != nil {
		return nil, fmt.Errorf("start broker: %w", err)
	}

	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	caps := mochi.NewDefaultServerCapabilities()
	caps.MaximumPacketSize = uint32(o.MaxPacketSize)
	caps.MaximumClients = int64(o.MaxClients)
	caps.MaximumSessionExpiryInterval = DefaultSessionExpiry
	srv := mochi.New(&mochi.Options{
		Capabilities: caps,
		Logger:       slog.New(minLevelHandler{h: log.Handler(), min: slog.LevelWarn}),
	})
	if err := srv.AddHook(new(allowAllHook), nil); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start broker: %w", err)
	}
	if err := srv.AddListener(listeners.NewNet("tcp", ln)); err != nil {
		ln.Close()
		return nil, fmt.Errorf("start broker: %w", err)
	}
	// Serve starts the accept loop on its own goroutines and returns;
	// the listener is already bound, so connections queue until then.
	if err := srv.Serve(); err != nil {
		srv.Close()
		return nil, fmt.Errorf("start broker: %w", err)
	}
	return &Broker{srv: srv, addr: ln.Addr().String()}, nil
}

// Addr is the address the broker listens on, with the real port.
func (b *Broker) Addr() string { return b.addr }

// URL is the broker URL for Options.Broker, e.g. tcp://127.0.0.1:1883.
func (b *Broker) URL() string { return "tcp://" + b.addr }

// Close disconnects all clients and stops listening. Closing twice is a
// no-op.
func (b *Broker) Close() error {
	b.once.Do(func() { b.srv.Close() })
	return nil
}

func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// minLevelHandler drops records below min before they reach h.
type minLevelHandler struct {
	h   slog.Handler
	min slog.Level
}

func (m minLevelHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= m.min && m.h.Enabled(ctx, l)
}

func (m minLevelHandler) Handle(ctx context.Context, r slog.Record) error {
	return m.h.Handle(ctx, r)
}

func (m minLevelHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return minLevelHandler{h: m.h.WithAttrs(as), min: m.min}
}

func (m minLevelHandler) WithGroup(name string) slog.Handler {
	return minLevelHandler{h: m.h.WithGroup(name), min: m.min}
}

// allowAllHook admits every client and allows every topic. It is ours
// rather than mochi's auth.AllowHook because that package also carries the
// YAML ledger and its dependency, which mynah does not use.
type allowAllHook struct {
	mochi.HookBase
}

func (h *allowAllHook) ID() string { return "mynah-allow-all" }

func (h *allowAllHook) Provides(b byte) bool {
	return bytes.IndexByte([]byte{mochi.OnConnectAuthenticate, mochi.OnACLCheck}, b) >= 0
}

func (h *allowAllHook) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }

func (h *allowAllHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }
