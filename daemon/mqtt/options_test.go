package mqtt_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon/mqtt"
)

// TestOptionsValidation: every bad option is refused before any network
// traffic, with an error that wraps ErrInvalidOptions and names the field.
func TestOptionsValidation(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notPEM := write("ca.txt", "not a certificate\n")
	emptyPw := write("empty.pw", " \n\t\n")
	bigPw := write("big.pw", strings.Repeat("x", mqtt.MaxPasswordFileSize+1))
	nulPw := write("nul.pw", "pa\x00ss")
	okPw := write("ok.pw", "secret\n")
	missing := filepath.Join(dir, "missing")

	base := func() mqtt.Options {
		return mqtt.Options{Broker: "tcp://127.0.0.1:1", StatusTopic: "mynah/n/status"}
	}
	for _, tt := range []struct {
		name   string
		adjust func(*mqtt.Options)
		field  string // must appear in the error
	}{
		{"no broker", func(o *mqtt.Options) { o.Broker = "" }, "Broker"},
		{"bad scheme", func(o *mqtt.Options) { o.Broker = "http://localhost:1883" }, "unsupported scheme"},
		{"no scheme", func(o *mqtt.Options) { o.Broker = "localhost:1883" }, "Broker"},
		{"no host", func(o *mqtt.Options) { o.Broker = "tcp://:1883" }, "missing host"},
		{"unparsable", func(o *mqtt.Options) { o.Broker = "tcp://[::1" }, "Broker"},
		{"credentials in URL", func(o *mqtt.Options) { o.Broker = "tcp://u:secret@localhost" }, "Username/Password"},
		{"no status topic", func(o *mqtt.Options) { o.StatusTopic = "" }, "StatusTopic"},
		{"wildcard status topic", func(o *mqtt.Options) { o.StatusTopic = "mynah/+/status" }, "StatusTopic"},
		{"NUL client id", func(o *mqtt.Options) { o.ClientID = "a\x00b" }, "ClientID"},
		{"negative keepalive", func(o *mqtt.Options) { o.KeepAlive = -time.Second }, "KeepAlive"},
		{"sub-second keepalive", func(o *mqtt.Options) { o.KeepAlive = 500 * time.Millisecond }, "KeepAlive"},
		{"negative publish timeout", func(o *mqtt.Options) { o.PublishTimeout = -1 }, "PublishTimeout"},
		{"negative connect timeout", func(o *mqtt.Options) { o.ConnectTimeout = -1 }, "ConnectTimeout"},
		{"negative reconnect interval", func(o *mqtt.Options) { o.MaxReconnectInterval = -1 }, "MaxReconnectInterval"},
		{"password and file", func(o *mqtt.Options) { o.Username, o.Password, o.PasswordFile = "u", "p", okPw }, "PasswordFile"},
		{"password file missing", func(o *mqtt.Options) { o.Username, o.PasswordFile = "u", missing }, "PasswordFile"},
		{"password file empty", func(o *mqtt.Options) { o.Username, o.PasswordFile = "u", emptyPw }, "PasswordFile"},
		{"password file too big", func(o *mqtt.Options) { o.Username, o.PasswordFile = "u", bigPw }, "MaxPasswordFileSize"},
		{"password file NUL", func(o *mqtt.Options) { o.Username, o.PasswordFile = "u", nulPw }, "PasswordFile"},
		{"password without user", func(o *mqtt.Options) { o.Password = "p" }, "Username"},
		{"CA file unreadable", func(o *mqtt.Options) { o.Broker, o.CAFile = "ssl://localhost", missing }, "CAFile"},
		{"CA file not PEM", func(o *mqtt.Options) { o.Broker, o.CAFile = "ssl://localhost", notPEM }, "CAFile"},
		{"cert without key", func(o *mqtt.Options) { o.Broker, o.CertFile = "tls://localhost", notPEM }, "KeyFile"},
		{"key without cert", func(o *mqtt.Options) { o.Broker, o.KeyFile = "tls://localhost", notPEM }, "CertFile"},
		{"bad key pair", func(o *mqtt.Options) { o.Broker, o.CertFile, o.KeyFile = "wss://localhost", notPEM, notPEM }, "CertFile/KeyFile"},
		{"TLS files on tcp", func(o *mqtt.Options) { o.CAFile = notPEM }, "CAFile"},
		{"insecure on ws", func(o *mqtt.Options) { o.Broker, o.InsecureSkipVerify = "ws://localhost/mqtt", true }, "InsecureSkipVerify"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := base()
			tt.adjust(&o)
			ctx, cancel := context.WithTimeout(context.Background(), wait)
			defer cancel()
			c, err := mqtt.Connect(ctx, &o)
			if c != nil {
				c.Close(ctx)
			}
			if !errors.Is(err, mqtt.ErrInvalidOptions) {
				t.Fatalf("Connect = %v, want ErrInvalidOptions", err)
			}
			if !strings.Contains(err.Error(), tt.field) {
				t.Errorf("error %q does not mention %q", err, tt.field)
			}
		})
	}

	t.Run("nil options", func(t *testing.T) {
		if _, err := mqtt.Connect(context.Background(), nil); !errors.Is(err, mqtt.ErrInvalidOptions) {
			t.Errorf("Connect(nil) = %v, want ErrInvalidOptions", err)
		}
	})
}
