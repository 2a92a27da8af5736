package mqtt_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	mochi "github.com/mochi-mqtt/server/v2"
	"github.com/mochi-mqtt/server/v2/listeners"
	"github.com/mochi-mqtt/server/v2/packets"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt"
)

func TestStartBrokerAddress(t *testing.T) {
	t.Parallel()
	b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	host, port, err := net.SplitHostPort(b.Addr())
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Errorf("Addr() = %q, want 127.0.0.1 and the real port", b.Addr())
	}
	if b.URL() != "tcp://"+b.Addr() {
		t.Errorf("URL() = %q", b.URL())
	}
	// The port is taken now: a second broker on it must fail, not hang.
	if b2, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: b.Addr()}); err == nil {
		b2.Close()
		t.Error("second broker on the same address started")
	}
	tc := connectClient(t, b.URL(), uniq(), nil)
	tc.waitConnected(t)
	if err := b.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := b.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	waitDisconnected(t, tc) // Close dropped the client
}

func TestStartBrokerLoopbackOnly(t *testing.T) {
	t.Parallel()
	for _, addr := range []string{":0", "0.0.0.0:0", "[::]:0", "192.0.2.1:0"} {
		b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: addr})
		if err == nil {
			b.Close()
		}
		if !errors.Is(err, mqtt.ErrNotLoopback) {
			t.Errorf("StartBroker(%q) = %v, want ErrNotLoopback", addr, err)
		}
	}
	for _, addr := range []string{"localhost:0", "[::1]:0", "127.0.0.2:0"} {
		b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: addr})
		if err != nil {
			// ::1 may be missing in a container; loopback it still is.
			if strings.Contains(err.Error(), "assign requested address") || strings.Contains(err.Error(), "cannot assign") {
				continue
			}
			t.Errorf("StartBroker(%q): %v", addr, err)
			continue
		}
		b.Close()
	}
	b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: ":0", AllowRemote: true})
	if err != nil {
		t.Fatalf("StartBroker(:0, AllowRemote): %v", err)
	}
	b.Close()
}

func TestStartBrokerBadOptions(t *testing.T) {
	t.Parallel()
	for _, o := range []mqtt.BrokerOptions{
		{Addr: "no-port"},
		{Addr: "127.0.0.1:0", MaxPacketSize: -1},
		{Addr: "127.0.0.1:0", MaxPacketSize: 1 << 29},
		{Addr: "127.0.0.1:0", MaxClients: -1},
	} {
		b, err := mqtt.StartBroker(&o)
		if err == nil {
			b.Close()
		}
		if !errors.Is(err, mqtt.ErrInvalidOptions) {
			t.Errorf("StartBroker(%+v) = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// TestBrokerMaxPacketSize: the embedded broker drops a client that sends
// a packet over its limit. The message must not be delivered, and the
// client must not resend it after every reconnect forever: it gives up
// after a few resends and stays connected.
func TestBrokerMaxPacketSize(t *testing.T) {
	t.Parallel()
	b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: "127.0.0.1:0", MaxPacketSize: 1024})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	node := uniq()
	tc := connectClient(t, b.URL(), node, nil)
	got := tc.subscribe(t, "mynah/"+node+"/big")
	tc.waitConnected(t)
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	// The result is not checked: paho may end the wait when it takes the
	// message over for resending, or the wait may time out.
	_ = tc.Publish(ctx, "mynah/"+node+"/big", make([]byte, 2048), false)

	// Recovered means staying connected: 20 round trips in a row. Without
	// the resend limit every reconnect resends the big message and is
	// dropped within milliseconds, so no streak would last. Probes whose
	// publish failed may still arrive late (resent): they are skipped.
	deadline := time.Now().Add(wait)
	streak := 0
	for i := 0; streak < 20; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("no 20 round trips in a row within %v", wait)
		}
		p := fmt.Sprintf("probe-%d", i)
		if err := tc.Publish(ctx, "mynah/"+node+"/big", []byte(p), false); err != nil {
			streak = 0
			time.Sleep(50 * time.Millisecond)
			continue
		}
		if receive(t, got, p, 2*time.Second) {
			streak++
		} else {
			streak = 0
		}
	}
}

// receive reads ch until payload p arrives (true) or d passes (false).
// It fails the test if the oversized message ever arrives.
func receive(t *testing.T, ch <-chan daemon.Message, p string, d time.Duration) bool {
	t.Helper()
	timeout := time.After(d)
	for {
		select {
		case m := <-ch:
			if len(m.Payload) > 1024 {
				t.Fatalf("the message over MaxPacketSize was delivered")
			}
			if string(m.Payload) == p {
				return true
			}
		case <-timeout:
			return false
		}
	}
}

// startMochi serves a mochi broker with the given hook on ln, for the
// tests of features the embedded broker does not offer (TLS, accounts).
func startMochi(t *testing.T, hook mochi.Hook, l listeners.Listener) {
	t.Helper()
	srv := mochi.New(&mochi.Options{Logger: slog.New(slog.DiscardHandler)})
	if err := srv.AddHook(hook, nil); err != nil {
		t.Fatal(err)
	}
	if err := srv.AddListener(l); err != nil {
		t.Fatal(err)
	}
	if err := srv.Serve(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
}

// accountHook admits one user name and password.
type accountHook struct {
	mochi.HookBase
	user, password string
}

func (h *accountHook) ID() string { return "test-account" }

func (h *accountHook) Provides(b byte) bool {
	return b == mochi.OnConnectAuthenticate || b == mochi.OnACLCheck
}

func (h *accountHook) OnConnectAuthenticate(_ *mochi.Client, pk packets.Packet) bool {
	return string(pk.Connect.Username) == h.user && string(pk.Connect.Password) == h.password
}

func (h *accountHook) OnACLCheck(*mochi.Client, string, bool) bool { return true }

// TestPasswordFile: the password is read from the file, trimmed of the
// trailing newline, and a wrong one makes Connect report the refusal.
func TestPasswordFile(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	startMochi(t, &accountHook{user: "mynah", password: "s3cret"}, listeners.NewNet("acct", ln))
	url := "tcp://" + ln.Addr().String()
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	bad := filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("s3cret\n"), 0o600)
	os.WriteFile(bad, []byte("wrong\n"), 0o600)

	tc := connectClient(t, url, uniq(), func(o *mqtt.Options) {
		o.Username, o.PasswordFile = "mynah", good
	})
	tc.waitConnected(t)

	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	c, err := mqtt.Connect(ctx, &mqtt.Options{
		Broker: url, StatusTopic: "mynah/x/status", Username: "mynah", PasswordFile: bad,
	})
	if c != nil {
		c.Close(ctx)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect with a wrong password: %v, want context.DeadlineExceeded", err)
	}
	// paho's text for CONNACK code 4 (3.1.1) or 5: either names the cause.
	if msg := err.Error(); !strings.Contains(msg, "password") && !strings.Contains(msg, "uthorized") {
		t.Errorf("Connect error %q does not say the credentials were refused", msg)
	}
}
