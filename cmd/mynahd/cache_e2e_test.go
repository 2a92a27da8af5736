package main

// A cache that breaks never stops speech: end-to-end tests of mynahd with
// a damaged, locked or full cache file, and the cache/purge command.

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// lastState returns the newest retained state of node.
func lastState(t *testing.T, url, node string) daemon.State {
	t.Helper()
	ch := mqtttest.Subscribe(t, url, "mynah/"+node+"/state")
	var s daemon.State
	select {
	case m := <-ch:
		if err := json.Unmarshal(m.Payload, &s); err != nil {
			t.Fatalf("state %q: %v", m.Payload, err)
		}
	case <-time.After(wait):
		t.Fatal("no retained state")
	}
	return s
}

func TestCorruptCacheFileAtStart(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	if err := os.WriteFile(cfg.Cache.File, []byte(strings.Repeat("not a bbolt file ", 4096)), 0o600); err != nil {
		t.Fatal(err)
	}
	// Subscribed before the start: the warning is not retained.
	ev := watchEvents(t, broker.URL(), cfg.Node)
	startDaemon(t, cfg)
	w := ev.next(state(daemon.EventWarning))
	if w.Reason != daemon.ReasonCacheCorrupt || !strings.Contains(w.Error, ".corrupt-") {
		t.Errorf("warning %+v, want reason cache_corrupt naming the moved file", w)
	}
	moved, _ := filepath.Glob(cfg.Cache.File + ".corrupt-*")
	if len(moved) != 1 {
		t.Errorf("moved-aside copies: %v, want one", moved)
	}
	// The fresh file works: a miss, then a hit. The warning comes as the
	// cache opens, before the daemon subscribes: a say sent then is
	// dropped by a session with nothing subscribed, so wait for online.
	waitOnline(t, broker.URL(), cfg.Node)
	for _, want := range []string{daemon.CacheMiss, daemon.CacheHit} {
		id := "t-" + want
		mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"`+id+`","text":"The oven is hot."}`), false)
		if c := ev.next(stateID(daemon.EventFinished, id)).Cache; c != want {
			t.Errorf("%s: cache %q, want %q", id, c, want)
		}
	}
}

func TestLockedCacheSpeaksUncached(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	// Another process (here: this one, through its own file handle) holds
	// the file.
	holder, err := cache.Open(cfg.Cache.File, &cache.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ev := watchEvents(t, broker.URL(), cfg.Node)
	startDaemon(t, cfg)
	if w := ev.next(state(daemon.EventWarning)); w.Reason != daemon.ReasonCacheUnavailable || !strings.Contains(w.Error, "locked") {
		t.Errorf("warning %+v, want cache_unavailable saying the file is locked", w)
	}
	waitOnline(t, broker.URL(), cfg.Node)
	for _, id := range []string{"one", "two"} {
		mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"`+id+`","text":"The oven is hot."}`), false)
		if c := ev.next(stateID(daemon.EventFinished, id)).Cache; c != daemon.CacheMiss {
			t.Errorf("%s: cache %q, want miss (the cache is locked by another process)", id, c)
		}
	}
	if s := lastState(t, broker.URL(), cfg.Node); s.Cache == nil || s.Cache.Available || !strings.Contains(s.Cache.Error, "locked") {
		t.Errorf("state cache %+v: want available false, with the reason", s.Cache)
	} else if s.Spool == nil || !s.Spool.Available {
		t.Errorf("state spool %+v: the spool has a file of its own and works", s.Spool)
	}
}

func TestCachePurgeOverMQTT(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	startDaemon(t, cfg)
	waitOnline(t, broker.URL(), cfg.Node)
	ev := watchEvents(t, broker.URL(), cfg.Node)
	say := func(id, text string) string {
		mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"`+id+`","text":"`+text+`"}`), false)
		return ev.next(stateID(daemon.EventFinished, id)).Cache
	}
	say("a", "The door is open. The light is on.")
	if c := say("b", "The door is open."); c != daemon.CacheHit {
		t.Fatalf("repeat: cache %q, want hit", c)
	}
	s := lastState(t, broker.URL(), cfg.Node)
	if s.Cache == nil || s.Cache.Entries != 2 || s.Cache.Hits == 0 || s.Cache.HitRatio <= 0 || s.Cache.Bytes <= 0 {
		t.Errorf("state cache %+v, want 2 entries and hits", s.Cache)
	}

	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/cache/purge", []byte("voice=someone-else"), false)
	if e := ev.next(state(daemon.EventDone)); e.Removed == nil || *e.Removed != 0 {
		t.Errorf("purge of another voice: %+v, want 0 removed", e)
	}
	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/cache/purge", []byte("bogus"), false)
	if e := ev.next(state(daemon.EventFailed)); e.Reason != daemon.ReasonBadScope || e.Command != "cache/purge" {
		t.Errorf("bad scope: %+v", e)
	}
	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/cache/purge", nil, false) // Home Assistant's button sends "phrases"
	if e := ev.next(state(daemon.EventDone)); e.Removed == nil || *e.Removed != 2 || e.Scope != "phrases" {
		t.Errorf("purge: %+v, want 2 removed", e)
	}
	if c := say("c", "The door is open."); c != daemon.CacheMiss {
		t.Errorf("after purge: cache %q, want miss", c)
	}
	// "cache": false neither reads nor writes.
	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"p","text":"The door is open. A secret.","cache":false}`), false)
	if c := ev.next(stateID(daemon.EventFinished, "p")).Cache; c != daemon.CacheMiss {
		t.Errorf(`"cache": false: cache %q, want miss`, c)
	}
	if c := say("q", "A secret."); c != daemon.CacheMiss {
		t.Errorf(`a sentence spoken with "cache": false was stored: %q`, c)
	}
}

// TestCacheDiskFull: the cache file lies on a 512 KiB tmpfs that fills
// up. Writes fail and are counted; every request is still spoken.
func TestCacheDiskFull(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root (CI runs as root); cache.TestFileLimitActsLikeDiskFull covers the store's side")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Fatalf("mount tmpfs: %v: %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command("umount", dir).Run() })
	broker := mqtttest.StartMosquitto(t)
	// A WAV file plays as fast as it is written, unlike the paced null sink.
	cfg := testConfig(t, broker.URL(), "wav:"+filepath.Join(t.TempDir(), "out.wav"))
	cfg.Cache.File = filepath.Join(dir, "cache.db")
	cfg.Audio.SentenceSilence = 0
	startDaemon(t, cfg)
	waitOnline(t, broker.URL(), cfg.Node)
	ev := watchEvents(t, broker.URL(), cfg.Node)
	// About 40 KiB of encoded audio per request: a dozen fill the disk.
	for i := range 20 {
		id := fmt.Sprintf("r%d", i)
		text := fmt.Sprintf("Announcement number %d: the kettle has boiled and the tea is ready in the kitchen.", i)
		mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"`+id+`","text":"`+text+`"}`), false)
		if e := ev.next(func(e daemon.Event) bool {
			return e.ID == id && e.State != daemon.EventQueued && e.State != daemon.EventStarted
		}); e.State != daemon.EventFinished {
			t.Fatalf("%s: %+v, want finished despite the full disk", id, e)
		}
	}
	s := lastState(t, broker.URL(), cfg.Node)
	if s.Cache == nil || s.Cache.WriteErrors == 0 {
		t.Fatalf("state cache %+v: want write errors counted", s.Cache)
	}
}
