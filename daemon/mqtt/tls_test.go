package mqtt_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mynah-tts/mynah/daemon/mqtt"
)

// testPKI is a CA with a server certificate for 127.0.0.1 and a client
// certificate, written as PEM files.
type testPKI struct {
	caFile, clientCert, clientKey string
	server                        tls.Certificate
	pool                          *x509.CertPool
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	caTmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "mynah test CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	issue := func(serial int64, usage x509.ExtKeyUsage, ips ...net.IP) ([]byte, *ecdsa.PrivateKey) {
		key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: "mynah test"},
			NotBefore:    time.Now().Add(-time.Hour),
			NotAfter:     time.Now().Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
			IPAddresses:  ips,
		}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		return der, key
	}
	write := func(name, typ string, der []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	keyDER := func(k *ecdsa.PrivateKey) []byte {
		b, err := x509.MarshalECPrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	srvDER, srvKey := issue(2, x509.ExtKeyUsageServerAuth, net.IPv4(127, 0, 0, 1))
	cliDER, cliKey := issue(3, x509.ExtKeyUsageClientAuth)
	pool := x509.NewCertPool()
	pool.AddCert(ca)
	return &testPKI{
		caFile:     write("ca.pem", "CERTIFICATE", caDER),
		clientCert: write("client.pem", "CERTIFICATE", cliDER),
		clientKey:  write("client.key", "EC PRIVATE KEY", keyDER(cliKey)),
		server:     tls.Certificate{Certificate: [][]byte{srvDER}, PrivateKey: srvKey},
		pool:       pool,
	}
}

// TestTLSClientCertificate: ssl:// with a private CA and a client
// certificate the broker requires.
func TestTLSClientCertificate(t *testing.T) {
	t.Parallel()
	pki := newTestPKI(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{pki.server},
		ClientCAs:    pki.pool,
		ClientAuth:   tls.RequireAndVerifyClientCert,
		MinVersion:   tls.VersionTLS12,
	})
	if err != nil {
		t.Fatal(err)
	}
	startMochi(t, new(allowAll), listeners.NewNet("tls", ln))
	url := "ssl://" + ln.Addr().String()

	node := uniq()
	tc := connectClient(t, url, node, func(o *mqtt.Options) {
		o.CAFile, o.CertFile, o.KeyFile = pki.caFile, pki.clientCert, pki.clientKey
	})
	got := tc.subscribe(t, "mynah/"+node+"/say")
	tc.waitConnected(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := tc.Publish(ctx, "mynah/"+node+"/say", []byte("over tls"), false); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got); string(m.Payload) != "over tls" {
		t.Errorf("got %q", m.Payload)
	}

	for _, tt := range []struct {
		name   string
		adjust func(*mqtt.Options)
		reason string
	}{
		{"no CA", func(o *mqtt.Options) { o.CertFile, o.KeyFile = pki.clientCert, pki.clientKey }, "unknown authority"},
		{"no client certificate", func(o *mqtt.Options) { o.CAFile = pki.caFile }, "certificate"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o := &mqtt.Options{Broker: url, StatusTopic: "mynah/x/status", ClientID: "tls-" + uniq()}
			tt.adjust(o)
			ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
			defer cancel()
			c, err := mqtt.Connect(ctx, o)
			if c != nil {
				c.Close(ctx)
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("Connect = %v, want a deadline error mentioning %q", err, tt.reason)
			}
		})
	}
}

// TestWebSocket: ws:// with a path.
func TestWebSocket(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // mochi's websocket listener binds the address itself
	startMochi(t, new(allowAll), listeners.NewWebsocket(listeners.Config{ID: "ws", Address: addr}))

	node := uniq()
	// mochi starts its HTTP server on a goroutine: Connect retries until
	// it is up.
	tc := connectClient(t, "ws://"+addr+"/mqtt", node, nil)
	got := tc.subscribe(t, "mynah/"+node+"/say")
	tc.waitConnected(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := tc.Publish(ctx, "mynah/"+node+"/say", []byte("over ws"), false); err != nil {
		t.Fatal(err)
	}
	if m := recv(t, got); string(m.Payload) != "over ws" {
		t.Errorf("got %q", m.Payload)
	}
}

type allowAll struct{ mochi.HookBase }

func (h *allowAll) ID() string { return "test-allow" }
func (h *allowAll) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}
func (h *allowAll) OnConnectAuthenticate(*mochi.Client, packets.Packet) bool { return true }
func (h *allowAll) OnACLCheck(*mochi.Client, string, bool) bool              { return true }
