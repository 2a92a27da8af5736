package main

import (
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// A node in a group checks the system clock as it starts: its state has a
// clock object saying what this machine's kernel says, and an
// unsynchronized clock (as in most containers and on a board without a
// time server) is a clock_unsynced warning that says what to do. A node in
// no group does not check.
func TestClockCheckOfGroupNode(t *testing.T) {
	want, err := probeClock()
	if err != nil {
		t.Fatalf("probeClock: %v", err)
	}
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.Groups.Names = []string{"downstairs"}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	// Subscribed before the start: warnings are not retained.
	ev := watchEvents(t, broker.URL(), cfg.Node)
	states := mqtttest.Subscribe(t, broker.URL(), "mynah/"+cfg.Node+"/state")
	url, stop := startDaemon(t, cfg)
	s := waitState(t, states, "a clock object", func(s daemon.State) bool { return s.Clock != nil })
	c := s.Clock
	if c.Source != "adjtimex" || c.Error != "" || c.Synced != want.Synced || c.MaxErrorMS < 0 {
		t.Errorf("state clock %+v, want source adjtimex, no error and synced %v (this machine's clock)", *c, want.Synced)
	}
	t.Logf("clock: %+v", *c)
	if !want.Synced {
		w := ev.next(func(e daemon.Event) bool {
			return e.State == daemon.EventWarning && e.Reason == daemon.ReasonClockUnsynced
		})
		if !strings.Contains(w.Error, "timedatectl") {
			t.Errorf("clock_unsynced warning %q does not say what to do", w.Error)
		}
	}
	stop()

	// Without groups: a request's states come and go, none with a clock.
	cfg.Groups.Names = nil
	startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	states = mqtttest.Subscribe(t, url, "mynah/"+cfg.Node+"/state")
	mqtttest.Publish(t, url, "mynah/"+cfg.Node+"/say", []byte(`{"id":"lone-1","text":"Hello."}`), false)
	if s := waitState(t, states, "the request finished", func(s daemon.State) bool { return s.Counters.Finished == 1 }); s.Clock != nil {
		t.Errorf("state of a node in no group has clock %+v", *s.Clock)
	}
}
