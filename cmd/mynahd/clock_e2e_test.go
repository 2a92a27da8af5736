package main

import (
	"math"
	"strings"
	"testing"
	"time"

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

// Two nodes of a group on one machine, against Mosquitto: hall only
// answers (clock_probe 0s), kitchen probes, and its state's clock object
// gets hall as its one peer, at an offset within half the round trip of
// the truth, 0 (they share the clock).
func TestClockProbeOfGroupNodes(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	hall := testConfig(t, broker.URL(), "null")
	hall.Node, hall.Groups.Names = "hall", []string{"downstairs"}
	startDaemon(t, hall)
	waitOnline(t, broker.URL(), hall.Node)

	kitchen := testConfig(t, broker.URL(), "null")
	kitchen.Groups.Names, kitchen.Groups.ClockProbe = []string{"downstairs"}, 10*time.Second
	if err := kitchen.Validate(); err != nil {
		t.Fatal(err)
	}
	states := mqtttest.Subscribe(t, broker.URL(), "mynah/"+kitchen.Node+"/state")
	startDaemon(t, kitchen)
	s := waitState(t, states, "a clock offset from one peer", func(s daemon.State) bool {
		return s.Clock != nil && s.Clock.ClockOffset != nil && s.Clock.Peers == 1
	})
	o := *s.Clock.ClockOffset
	t.Logf("kitchen's clock against hall: %+v", o)
	if math.Abs(o.OffsetMS) > o.DelayMS/2+0.001 || o.MaxOffsetMS != o.OffsetMS || s.Clock.Source != "adjtimex" {
		t.Errorf("clock %+v: want hall's offset within δ/2 of 0, beside the adjtimex check", *s.Clock)
	}
}
