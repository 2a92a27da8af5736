package main

import (
	"bytes"
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// A group's Home Assistant device is retained on the broker by its
// member, and stays there when the member stops and when it is
// unregistered (other members may still serve it); the node's own device
// goes.
func TestGroupDeviceOutlivesMember(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.Groups.Names = []string{"downstairs"}
	cfg.Groups.ClockCheck = 0 // not what this test is about
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	topic := daemon.GroupDiscoveryTopic("homeassistant", "downstairs")
	// published returns the group device on the broker; once the member
	// is stopped, it must be the retained copy.
	published := func(stopped bool) []byte {
		t.Helper()
		select {
		case m := <-mqtttest.Subscribe(t, broker.URL(), topic):
			if stopped && !m.Retained {
				t.Errorf("%s not retained", topic)
			}
			return m.Payload
		case <-time.After(wait):
			t.Fatalf("no retained %s", topic)
			return nil
		}
	}
	url, stop := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	doc := published(false)
	if !bytes.Contains(doc, []byte(`"command_topic":"mynah/group/downstairs/say"`)) {
		t.Errorf("group device %s lacks the group's say topic", doc)
	}
	stop()
	if got := published(true); !bytes.Equal(got, doc) {
		t.Errorf("after the member stopped the group device is %q, want %s", got, doc)
	}
	if err := runUnregister(context.Background(), cfg, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	if got := published(true); !bytes.Equal(got, doc) {
		t.Errorf("after unregister the group device is %q, want %s", got, doc)
	}
	select {
	case m := <-mqtttest.Subscribe(t, url, daemon.DiscoveryTopic("homeassistant", cfg.Node)):
		t.Errorf("the node's own device still retained after unregister: %.60q", m.Payload)
	case <-time.After(time.Second):
	}
}
