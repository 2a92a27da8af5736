package mqtt

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Defaults and limits of Options.
const (
	DefaultKeepAlive            = 30 * time.Second
	DefaultConnectTimeout       = 10 * time.Second
	DefaultPublishTimeout       = 5 * time.Second
	DefaultMaxReconnectInterval = 10 * time.Second

	// MaxPublishSize is the largest payload Publish sends. Everything
	// mynahd publishes (events, state, discovery) is a few KB; a bigger
	// payload is a bug, and many brokers cap messages well below MQTT's
	// 256 MB.
	MaxPublishSize = 1 << 20
	// MaxPasswordFileSize is the largest PasswordFile read.
	MaxPasswordFileSize = 4096
	// MaxPendingMessages and MaxPendingBytes bound the messages held
	// between Connect and the first Subscribe whose filter matches them
	// (a persistent session delivers its queue right after connecting).
	// Past either bound the oldest held message is dropped with a warning.
	MaxPendingMessages = 1000
	MaxPendingBytes    = 8 << 20
)

// Options configure Connect. Only Broker and StatusTopic are required.
type Options struct {
	// Broker is the broker URL: tcp://host:port (also mqtt://),
	// ssl://, tls:// or mqtts:// for TLS, ws:// or wss:// for MQTT over
	// WebSocket (the path is kept, e.g. ws://host:8080/mqtt). Without a
	// port, 1883 (tcp), 8883 (TLS), 80 (ws) or 443 (wss) is used.
	Broker string

	// Username and Password authenticate to the broker. PasswordFile, if
	// set, is read at Connect and trimmed of surrounding white space; it is
	// how cmd/mynahd keeps the secret out of the config file and the unit
	// file (it also accepts the password from the environment and passes
	// it as Password). Setting both Password and PasswordFile is an error.
	Username     string
	Password     string
	PasswordFile string

	// ClientID must be stable across restarts: the broker keys the
	// persistent session (subscriptions and queued QoS 1 commands) by it.
	// Default "mynah-<hostname>"; cmd/mynahd passes "mynah-<node>".
	ClientID string

	// TLS, used by ssl://, tls://, mqtts:// and wss:// brokers. CAFile is
	// a PEM bundle of the CAs to trust (default: the system roots);
	// CertFile and KeyFile, both or neither, are a PEM client certificate
	// and key. InsecureSkipVerify turns off server certificate checks
	// (testing only).
	CAFile             string
	CertFile           string
	KeyFile            string
	InsecureSkipVerify bool

	// KeepAlive is the MQTT keep-alive (default 30 s). The broker
	// publishes the last will after 1.5 times this without traffic.
	KeepAlive time.Duration
	// ConnectTimeout bounds one connection attempt: dial, TLS and CONNACK
	// (default 10 s). Connect itself keeps retrying until its ctx ends.
	ConnectTimeout time.Duration
	// PublishTimeout bounds every publish and subscribe wait for the
	// broker's acknowledgement (default 5 s).
	PublishTimeout time.Duration
	// MaxReconnectInterval caps the back-off between reconnect attempts
	// (default 10 s; the first retry comes after about 1 s).
	MaxReconnectInterval time.Duration

	// StatusTopic (required), e.g. mynah/<node>/status, carries the
	// retained availability: the last will publishes "offline" (QoS 1,
	// retained) when the connection dies, every (re)connect publishes
	// "online" once the subscriptions are in place (on the first connect,
	// after the first Subscribe), and Close publishes "offline".
	StatusTopic string

	// HelpersListen makes the subscriptions of the helper transports
	// (RenderTransport, ClockTransport) count for the first connect's
	// "online", for a connection that exists for them (a render node's
	// own). By default "online" waits for Subscribe: on mynahd's
	// connection the render client subscribes before the daemon, and a
	// command sent at an earlier "online" would reach a fresh session
	// with nothing subscribed for it.
	HelpersListen bool

	// NoStatus marks a short-lived tool connection that is not the device
	// (mynahd -unregister): no last will, no "online", no "offline", and no
	// StatusTopic needed. Without it such a tool would announce the real
	// daemon offline.
	NoStatus bool

	// OnConnect, if set, runs after every successful connect and
	// reconnect, after the subscriptions were renewed, "online" was
	// published and the connected callbacks given to Subscribe have run
	// (a subscriber such as the daemon registers there, so it needs no
	// hook here). It runs on its own goroutine, so it may publish but
	// should return within PublishTimeout or so; Close waits for it.
	OnConnect func()

	// ManualAck makes handlers acknowledge: every daemon.Message carries
	// an Ack that the handler must call exactly once, possibly later from
	// another goroutine (mynahd acknowledges a say command once it is
	// spooled on disk). Until then the broker holds the message and sends
	// it again after a reconnect; a broker also stops sending once its
	// in-flight limit (Mosquitto: 20) of unacknowledged messages is
	// reached. Without ManualAck a message is acknowledged when its
	// handlers return, and Message.Ack is nil.
	ManualAck bool

	// CleanSession connects with a session the broker forgets on
	// disconnect, instead of the persistent session mynahd's own
	// connection keeps: nothing is queued for the client while it is
	// offline. For the second connection of a render node (package
	// render), whose shared subscription must not stay a member while the
	// node is offline, or the broker goes on handing it its share of the
	// requests, which are lost (mosquitto#1747). Give it a ClientID of
	// its own and a status topic of its own (the render node's).
	CleanSession bool

	// Logger receives connection events; nil discards them.
	Logger *slog.Logger
}

// Status topic payloads.
const (
	StatusOnline  = "online"
	StatusOffline = "offline"
)

// settings is Options after defaults, validation and loading files.
type settings struct {
	broker      *url.URL
	username    string
	password    string
	clientID    string
	tls         *tls.Config
	keepAlive   time.Duration
	connTimeout time.Duration
	pubTimeout  time.Duration
	maxBackoff  time.Duration
	statusTopic string
	helpers     bool // HelpersListen
	onConnect   func()
	manualAck   bool
	clean       bool
	log         *slog.Logger
}

// resolve applies defaults, validates every field and loads the password
// and TLS files. Errors wrap ErrInvalidOptions and name the field.
func (o *Options) resolve() (*settings, error) {
	if o == nil {
		return nil, fmt.Errorf("%w: Broker and StatusTopic are required", ErrInvalidOptions)
	}
	s := &settings{
		username:    o.Username,
		password:    o.Password,
		clientID:    o.ClientID,
		keepAlive:   o.KeepAlive,
		connTimeout: o.ConnectTimeout,
		pubTimeout:  o.PublishTimeout,
		maxBackoff:  o.MaxReconnectInterval,
		statusTopic: o.StatusTopic,
		helpers:     o.HelpersListen,
		onConnect:   o.OnConnect,
		manualAck:   o.ManualAck,
		clean:       o.CleanSession,
		log:         o.Logger,
	}
	var err error
	if s.broker, err = parseBrokerURL(o.Broker); err != nil {
		return nil, err
	}
	switch {
	case o.NoStatus && s.statusTopic != "":
		return nil, fmt.Errorf("%w: StatusTopic and NoStatus exclude each other", ErrInvalidOptions)
	case o.NoStatus:
	case s.statusTopic == "":
		return nil, fmt.Errorf("%w: StatusTopic is required (e.g. mynah/<node>/status)", ErrInvalidOptions)
	default:
		if err := ValidateTopic(s.statusTopic); err != nil {
			return nil, fmt.Errorf("%w: StatusTopic: %w", ErrInvalidOptions, err)
		}
	}
	if s.clientID == "" {
		s.clientID = defaultClientID()
	}
	if len(s.clientID) > MaxTopicLen || !utf8.ValidString(s.clientID) || strings.IndexByte(s.clientID, 0) >= 0 {
		return nil, fmt.Errorf("%w: ClientID must be valid UTF-8 without NUL, at most %d bytes", ErrInvalidOptions, MaxTopicLen)
	}
	for _, d := range []struct {
		name string
		v    *time.Duration
		def  time.Duration
	}{
		{"KeepAlive", &s.keepAlive, DefaultKeepAlive},
		{"ConnectTimeout", &s.connTimeout, DefaultConnectTimeout},
		{"PublishTimeout", &s.pubTimeout, DefaultPublishTimeout},
		{"MaxReconnectInterval", &s.maxBackoff, DefaultMaxReconnectInterval},
	} {
		switch {
		case *d.v < 0:
			return nil, fmt.Errorf("%w: %s is negative (%v)", ErrInvalidOptions, d.name, *d.v)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	// MQTT carries the keep-alive in whole seconds; 0 would disable it
	// (and with it the last will on a silent half-open connection).
	if s.keepAlive < time.Second {
		return nil, fmt.Errorf("%w: KeepAlive must be at least 1s (got %v)", ErrInvalidOptions, s.keepAlive)
	}
	if o.PasswordFile != "" {
		if o.Password != "" {
			return nil, fmt.Errorf("%w: set Password or PasswordFile, not both", ErrInvalidOptions)
		}
		if s.password, err = readPasswordFile(o.PasswordFile); err != nil {
			return nil, err
		}
	}
	if s.password != "" && s.username == "" {
		// MQTT 3.1.1 (section 3.1.2.9) forbids a password without a user name.
		return nil, fmt.Errorf("%w: Password needs a Username", ErrInvalidOptions)
	}
	if s.tls, err = o.tlsConfig(s.broker); err != nil {
		return nil, err
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	return s, nil
}

// parseBrokerURL checks the scheme and host and fills in the default port.
func parseBrokerURL(raw string) (*url.URL, error) {
	if raw == "" {
		return nil, fmt.Errorf("%w: Broker is required (e.g. tcp://127.0.0.1:1883)", ErrInvalidOptions)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: Broker: %w", ErrInvalidOptions, err)
	}
	var port string
	switch u.Scheme {
	case "tcp", "mqtt":
		port = "1883"
	case "ssl", "tls", "mqtts":
		port = "8883"
	case "ws":
		port = "80"
	case "wss":
		port = "443"
	default:
		return nil, fmt.Errorf("%w: Broker %q: unsupported scheme %q (use tcp://, ssl://, tls://, ws:// or wss://)", ErrInvalidOptions, raw, u.Scheme)
	}
	if u.Hostname() == "" {
		return nil, fmt.Errorf("%w: Broker %q: missing host", ErrInvalidOptions, raw)
	}
	if strings.Contains(u.Hostname(), ":") && net.ParseIP(u.Hostname()) == nil {
		return nil, fmt.Errorf("%w: Broker %q: bad host %q (IPv6 addresses go in brackets: tcp://[::1]:1883)", ErrInvalidOptions, raw, u.Hostname())
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: Broker %q: put credentials in Username/Password, not in the URL", ErrInvalidOptions, u.Redacted())
	}
	if u.Port() == "" {
		u.Host = net.JoinHostPort(u.Hostname(), port)
	} else if n, err := strconv.Atoi(u.Port()); err != nil || n < 1 || n > 65535 {
		return nil, fmt.Errorf("%w: Broker %q: port must be 1..65535", ErrInvalidOptions, raw)
	}
	return u, nil
}

func isTLSScheme(scheme string) bool {
	switch scheme {
	case "ssl", "tls", "mqtts", "wss":
		return true
	}
	return false
}

// tlsConfig builds the TLS configuration for TLS schemes. TLS files given
// for a plain-text scheme are an error: silently sending the password in
// clear text because of a typo in the URL would be worse than refusing.
func (o *Options) tlsConfig(broker *url.URL) (*tls.Config, error) {
	hasTLSFields := o.CAFile != "" || o.CertFile != "" || o.KeyFile != "" || o.InsecureSkipVerify
	if !isTLSScheme(broker.Scheme) {
		if hasTLSFields {
			return nil, fmt.Errorf("%w: CAFile/CertFile/KeyFile/InsecureSkipVerify need a TLS Broker URL (ssl://, tls:// or wss://), got %s://", ErrInvalidOptions, broker.Scheme)
		}
		return nil, nil
	}
	cfg := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         broker.Hostname(),
		InsecureSkipVerify: o.InsecureSkipVerify, //nolint:gosec // opt-in, documented as testing only
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CAFile: %w", ErrInvalidOptions, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%w: CAFile %s: no PEM certificates in it", ErrInvalidOptions, o.CAFile)
		}
		cfg.RootCAs = pool
	}
	switch {
	case o.CertFile != "" && o.KeyFile != "":
		cert, err := tls.LoadX509KeyPair(o.CertFile, o.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("%w: CertFile/KeyFile: %w", ErrInvalidOptions, err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	case o.CertFile != "":
		return nil, fmt.Errorf("%w: CertFile needs KeyFile", ErrInvalidOptions)
	case o.KeyFile != "":
		return nil, fmt.Errorf("%w: KeyFile needs CertFile", ErrInvalidOptions)
	}
	return cfg, nil
}

// readPasswordFile reads a secret, trimming the white space (a trailing
// newline above all) that editors and `echo` leave behind.
func readPasswordFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%w: PasswordFile: %w", ErrInvalidOptions, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxPasswordFileSize+1))
	if err != nil {
		return "", fmt.Errorf("%w: PasswordFile: %w", ErrInvalidOptions, err)
	}
	if len(b) > MaxPasswordFileSize {
		return "", fmt.Errorf("%w: PasswordFile %s is over MaxPasswordFileSize (%d bytes)", ErrInvalidOptions, path, MaxPasswordFileSize)
	}
	b = bytes.TrimSpace(b)
	if len(b) == 0 {
		return "", fmt.Errorf("%w: PasswordFile %s is empty", ErrInvalidOptions, path)
	}
	if !utf8.Valid(b) || bytes.IndexByte(b, 0) >= 0 {
		return "", fmt.Errorf("%w: PasswordFile %s: not a UTF-8 text without NUL", ErrInvalidOptions, path)
	}
	return string(b), nil
}

// defaultClientID is stable across restarts of the same machine, which
// the persistent session needs.
func defaultClientID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "mynah-" + host
}
