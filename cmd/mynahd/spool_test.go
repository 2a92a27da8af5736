package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// TestSpoolSurvivesSIGKILL: mynahd is killed with SIGKILL while one
// request plays and nine wait. After the restart the unexpired ones are
// spoken, each exactly once (the one that was playing from its start),
// and the ones whose ttl passed meanwhile are dropped as expired.
func TestSpoolSurvivesSIGKILL(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mynahd.yaml")
	db := filepath.Join(dir, "cache.db")
	spool := filepath.Join(dir, "spool.db") // beside the cache file
	// The null sink plays in real time, so the queue stays full while
	// the first request speaks.
	err := os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker.URL()+"\nvoices:\n  dir: "+dir+
		"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: "+db+"\naudio:\n  device: \"null\"\nlog:\n  level: info\n"), 0o600)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var evs []daemon.Event
	evCh := mqtttest.Subscribe(t, broker.URL(), "mynah/den/event")
	go func() {
		for m := range evCh {
			var e daemon.Event
			if json.Unmarshal(m.Payload, &e) == nil {
				mu.Lock()
				evs = append(evs, e)
				mu.Unlock()
			}
		}
	}()
	waitEvents := func(what string, cond func([]daemon.Event) bool) {
		t.Helper()
		for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
			mu.Lock()
			ok := cond(evs)
			mu.Unlock()
			if ok {
				return
			}
			if time.Now().After(deadline) {
				mu.Lock()
				defer mu.Unlock()
				t.Fatalf("%s: not seen in time; events: %+v", what, evs)
			}
		}
	}
	count := func(evs []daemon.Event, id, state string) int {
		n := 0
		for _, e := range evs {
			if e.ID == id && e.State == state {
				n++
			}
		}
		return n
	}

	start := func() (*exec.Cmd, *bytes.Buffer) {
		cmd := exec.Command(bin, "-config", conf)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
		return cmd, &stderr
	}

	first, firstLog := start()
	waitOnline(t, broker.URL(), "den")
	ids := make([]string, 10)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%d", i)
		text, ttl := fmt.Sprintf("Item %d.", i), 300
		switch {
		case i == 0:
			text = "The washing machine has finished. Please empty it before the evening."
		case i >= 7:
			ttl = 2 // expires while mynahd is down
		}
		payload := fmt.Sprintf(`{"id":%q,"text":%q,"ttl":%d}`, ids[i], text, ttl)
		mqtttest.Publish(t, broker.URL(), "mynah/den/say", []byte(payload), false)
	}
	sent := time.Now()
	waitEvents("all queued, the first playing", func(evs []daemon.Event) bool {
		for _, id := range ids {
			if count(evs, id, daemon.EventQueued) == 0 {
				return false
			}
		}
		return count(evs, "r0", daemon.EventStarted) == 1
	})
	// Every say was acknowledged only after its spool write; give the
	// last writes (a disk sync each, shared) a moment, then pull the plug.
	time.Sleep(300 * time.Millisecond)
	if err := first.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	first.Wait()
	mu.Lock()
	for _, id := range ids {
		if n := count(evs, id, daemon.EventFinished); n != 0 {
			t.Errorf("%s finished before the kill: the test did not kill a full queue", id)
		}
	}
	mu.Unlock()

	// The spool on disk holds all ten: what the kill interrupted.
	store, err := cache.Open(spool, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("open the cache after SIGKILL: %v\nmynahd said:\n%s", err, firstLog)
	}
	spooled, err := store.SpoolList()
	store.Close()
	if err != nil || len(spooled) != len(ids) {
		t.Fatalf("spool after SIGKILL: %d records (%v), want %d", len(spooled), err, len(ids))
	}

	time.Sleep(time.Until(sent.Add(2500 * time.Millisecond))) // r7-r9 expire
	second, secondLog := start()
	waitEvents("every request ended", func(evs []daemon.Event) bool {
		for i, id := range ids {
			want := daemon.EventFinished
			if i >= 7 {
				want = daemon.EventDropped
			}
			if count(evs, id, want) == 0 {
				return false
			}
		}
		return true
	})
	// Anything spoken twice would show up within the next moments.
	time.Sleep(1500 * time.Millisecond)
	mu.Lock()
	var order []string
	for _, e := range evs {
		if e.State == daemon.EventFinished {
			order = append(order, e.ID)
		}
	}
	for i, id := range ids {
		fin, drop := count(evs, id, daemon.EventFinished), count(evs, id, daemon.EventDropped)
		switch {
		case i < 7 && (fin != 1 || drop != 0):
			t.Errorf("%s: finished %d times, dropped %d, want finished once", id, fin, drop)
		case i >= 7 && (fin != 0 || drop != 1):
			t.Errorf("%s: finished %d times, dropped %d, want dropped once (expired)", id, fin, drop)
		}
	}
	for _, e := range evs {
		if e.State == daemon.EventDropped && e.Reason != daemon.ReasonExpired {
			t.Errorf("dropped %s: reason %q, want expired", e.ID, e.Reason)
		}
	}
	mu.Unlock()
	if want := ids[:7]; !slices.Equal(order, want) {
		t.Errorf("spoken in order %v, want %v", order, want)
	}

	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := second.Wait(); err != nil {
		t.Errorf("second mynahd: %v\n%s", err, secondLog)
	}
	store, err = cache.Open(spool, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if left, err := store.SpoolList(); err != nil || len(left) != 0 {
		t.Errorf("spool after everything was spoken and answered: %d records (%v), want none", len(left), err)
	}
}
