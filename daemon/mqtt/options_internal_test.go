package mqtt

import (
	"bytes"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestParseBrokerURL(t *testing.T) {
	for _, tt := range []struct {
		in, want string // want "" = error
	}{
		{"tcp://127.0.0.1:1883", "tcp://127.0.0.1:1883"},
		{"tcp://broker.lan", "tcp://broker.lan:1883"},
		{"mqtt://broker.lan", "mqtt://broker.lan:1883"},
		{"ssl://broker.lan", "ssl://broker.lan:8883"},
		{"tls://broker.lan:8884", "tls://broker.lan:8884"},
		{"mqtts://broker.lan", "mqtts://broker.lan:8883"},
		{"ws://broker.lan/mqtt", "ws://broker.lan:80/mqtt"},
		{"wss://broker.lan:8443/mqtt", "wss://broker.lan:8443/mqtt"},
		{"tcp://[::1]", "tcp://[::1]:1883"},
		{"", ""},
		{"broker.lan:1883", ""},
		{"http://broker.lan", ""},
		{"unix:///run/mosquitto.sock", ""},
		{"tcp://", ""},
		{"tcp://:1883", ""},
		{"tcp://user:pw@broker.lan", ""},
		{"tcp://[::1", ""},
		{"tcp://broker.lan:port", ""},
		{"tcp://broker.lan:0", ""},
		{"wss://::", ""},
		{"tcp://broker.lan:65536", ""},
		{"tcp://broker.lan:65535", "tcp://broker.lan:65535"},
	} {
		u, err := parseBrokerURL(tt.in)
		switch {
		case tt.want == "" && err == nil:
			t.Errorf("parseBrokerURL(%q) = %s, want an error", tt.in, u)
		case tt.want == "" && !errors.Is(err, ErrInvalidOptions):
			t.Errorf("parseBrokerURL(%q) = %v, want ErrInvalidOptions", tt.in, err)
		case tt.want != "" && err != nil:
			t.Errorf("parseBrokerURL(%q): %v", tt.in, err)
		case tt.want != "" && u.String() != tt.want:
			t.Errorf("parseBrokerURL(%q) = %s, want %s", tt.in, u, tt.want)
		}
	}
}

// FuzzParseBrokerURL: whatever a config file holds, an accepted URL has
// a supported scheme, a host and a numeric port, and parsing is stable.
func FuzzParseBrokerURL(f *testing.F) {
	for _, s := range []string{
		"tcp://127.0.0.1:1883", "ssl://h", "ws://h/p?q#f", "wss://[::1]:443/mqtt",
		"tcp://u@h", "tcp://h:99999", "tcp://%zz", "", "tcp://h:1883/../x",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		u, err := parseBrokerURL(in)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v does not wrap ErrInvalidOptions", err)
			}
			return
		}
		switch u.Scheme {
		case "tcp", "mqtt", "ssl", "tls", "mqtts", "ws", "wss":
		default:
			t.Fatalf("accepted scheme %q", u.Scheme)
		}
		host, port, err := net.SplitHostPort(u.Host)
		n, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || n < 1 || n > 65535 {
			t.Fatalf("accepted %q with host %q: %v", in, u.Host, err)
		}
		again, err := parseBrokerURL(u.String())
		if err != nil || again.String() != u.String() {
			t.Fatalf("reparsing %q: %v, %v", u, again, err)
		}
	})
}

// FuzzReadPasswordFile: a secret file is either refused with
// ErrInvalidOptions or read as its trimmed, non-empty text.
func FuzzReadPasswordFile(f *testing.F) {
	for _, s := range []string{"secret\n", " \t\n", "", "pa ss\r\n", "a\x00b", "\xff\xfe", strings.Repeat("x", MaxPasswordFileSize+1)} {
		f.Add([]byte(s))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(dir, "pw")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		pw, err := readPasswordFile(p)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v does not wrap ErrInvalidOptions", err)
			}
			return
		}
		if len(data) > MaxPasswordFileSize {
			t.Fatalf("accepted %d bytes", len(data))
		}
		if pw == "" || pw != strings.TrimSpace(pw) || pw != string(bytes.TrimSpace(data)) || strings.IndexByte(pw, 0) >= 0 {
			t.Fatalf("readPasswordFile(%q) = %q", data, pw)
		}
	})
}
