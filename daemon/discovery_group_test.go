package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
)

const groupDiscoveryTopic = "homeassistant/device/mynah_group_downstairs/config"

// A group is a device of its own with one notify entity on the group's
// say topic, shaped as the node's own notify entity, and with nothing of
// the member in it: no node, version, model or availability.
func TestGroupDiscoveryPayload(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Groups = []string{"downstairs", "Up-stairs"} }).start()
	upTopic := GroupDiscoveryTopic(DefaultDiscoveryPrefix, "Up-stairs")
	waitFor(t, "group discovery", func() bool {
		return len(h.tr.on(groupDiscoveryTopic)) == 1 && len(h.tr.on(upTopic)) == 1
	})
	if upTopic != "homeassistant/device/mynah_group_Up-stairs/config" {
		t.Errorf("GroupDiscoveryTopic = %q", upTopic)
	}
	m := h.tr.on(groupDiscoveryTopic)[0]
	if !m.retained {
		t.Error("group discovery not retained")
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(m.payload, &doc); err != nil {
		t.Fatalf("group discovery is not JSON: %v", err)
	}
	if keys := slices.Sorted(maps.Keys(doc)); !slices.Equal(keys, []string{"cmps", "dev", "o", "qos"}) {
		t.Errorf("top-level keys %v, want cmps, dev, o and qos (no availability: any member serves it)", keys)
	}
	want := `{"ids":["mynah_group_downstairs"],"name":"mynah group downstairs","mf":"mynah"}`
	if got := string(doc["dev"]); got != want {
		t.Errorf("dev %s, want %s", got, want)
	}
	if got := string(doc["o"]); got != `{"name":"mynah","url":"https://github.com/mynah-tts/mynah"}` {
		t.Errorf("origin %s, want no version", got)
	}
	var cmps map[string]haComponent
	if err := json.Unmarshal(doc["cmps"], &cmps); err != nil {
		t.Fatal(err)
	}
	say, ok := cmps["say"]
	if len(cmps) != 1 || !ok {
		t.Fatalf("components %v, want say alone", slices.Collect(maps.Keys(cmps)))
	}
	if say.Platform != "notify" || say.UniqueID != "mynah_group_downstairs_say" ||
		say.DefaultEntityID != "notify.mynah_group_downstairs_say" || say.CommandTopic != "mynah/group/downstairs/say" {
		t.Errorf("say %+v", say)
	}
	if !slices.Contains(h.tr.filters, say.CommandTopic) {
		t.Errorf("the group entity commands %s, which the daemon does not subscribe to", say.CommandTopic)
	}
	// The node's notify entity, but for its ids and topic.
	var node haDiscovery
	if err := json.Unmarshal(h.tr.on(discoveryTopic)[0].payload, &node); err != nil {
		t.Fatal(err)
	}
	own := node.Components["say"]
	own.UniqueID, own.DefaultEntityID, own.CommandTopic = say.UniqueID, say.DefaultEntityID, say.CommandTopic
	if !reflect.DeepEqual(own, say) {
		t.Errorf("group say %+v, want the node's say %+v on the group's topic", say, node.Components["say"])
	}

	var up haDiscovery
	if err := json.Unmarshal(h.tr.on(upTopic)[0].payload, &up); err != nil {
		t.Fatal(err)
	}
	if c := up.Components["say"]; c.DefaultEntityID != "notify.mynah_group_up_stairs_say" || c.CommandTopic != "mynah/group/Up-stairs/say" {
		t.Errorf("say of group Up-stairs: %+v", c)
	}
}

// Members that differ in everything but the group publish byte-identical
// documents, so the retained one is the same whichever published last.
func TestGroupDiscoveryIdenticalAcrossMembers(t *testing.T) {
	c := newCacheRec()
	a := newHarness(t, func(o *Options) {
		o.Node, o.Version, o.Model = "kitchen", "1.2.3", "mynahd"
		o.Groups = []string{"downstairs"}
	})
	b := newHarness(t, func(o *Options) {
		o.Node, o.Version, o.Model = "hall-2", "2.0.0-dev", "pi zero"
		o.Groups = []string{"all", "downstairs"}
		o.Cache = &c.fake
		o.Audio = func() AudioStatus { return AudioStatus{Available: true} }
	})
	a.start()
	b.start()
	var docs [][]byte
	for _, h := range []*harness{a, b} {
		waitFor(t, "group discovery", func() bool { return len(h.tr.on(groupDiscoveryTopic)) == 1 })
		docs = append(docs, h.tr.on(groupDiscoveryTopic)[0].payload)
	}
	if !bytes.Equal(docs[0], docs[1]) {
		t.Errorf("members publish different group documents:\n%s\n%s", docs[0], docs[1])
	}
	for _, s := range []string{"kitchen", "hall", "1.2.3", "2.0.0", "pi zero", "mynahd", "availability"} {
		if bytes.Contains(docs[0], []byte(s)) {
			t.Errorf("group document names %q, which differs between members: %s", s, docs[0])
		}
	}
}

// A group's document goes with the node's (start, reconnect, Home
// Assistant's birth) and is never removed by a member: not when it stops,
// nor when it is unregistered.
func TestGroupDiscoveryRepublishedNeverRemoved(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.Groups = []string{"downstairs"} }).start()
	count := func() int { return len(h.tr.on(groupDiscoveryTopic)) }
	waitFor(t, "group discovery at start", func() bool { return count() == 1 })
	h.d.Connected()
	waitFor(t, "group discovery after a reconnect", func() bool { return count() == 2 })
	h.sendMsg(Message{Topic: "homeassistant/status", Payload: []byte("online")})
	waitFor(t, "group discovery after HA online", func() bool { return count() == 3 })

	if err := h.stop(); err != nil {
		t.Fatal(err)
	}
	if err := h.d.Unregister(context.Background()); err != nil {
		t.Fatal(err)
	}
	if msgs := h.tr.on(discoveryTopic); len(msgs[len(msgs)-1].payload) != 0 {
		t.Fatal("the node's own device was not removed")
	}
	for _, m := range h.tr.on(groupDiscoveryTopic) {
		if len(m.payload) == 0 {
			t.Error("a member removed the group's device")
		}
	}
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	for _, m := range h.tr.msgs {
		if strings.Contains(m.topic, "mynah_group_") && m.topic != groupDiscoveryTopic {
			t.Errorf("published %s", m.topic)
		}
	}
}

// A node in no group publishes no group device.
func TestNoGroupNoGroupDiscovery(t *testing.T) {
	h := newHarness(t, nil).start()
	waitFor(t, "discovery", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	h.d.Connected()
	waitFor(t, "discovery again", func() bool { return len(h.tr.on(discoveryTopic)) == 2 })
	h.tr.mu.Lock()
	defer h.tr.mu.Unlock()
	for _, m := range h.tr.msgs {
		if strings.Contains(m.topic, "mynah_group_") {
			t.Errorf("a node in no group published %s", m.topic)
		}
	}
}
