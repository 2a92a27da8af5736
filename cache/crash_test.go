package cache

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// A child process writes, reads, pins, deletes and evicts phrases in a
// loop, with frequent flushes; it is killed with SIGKILL at 20 random
// moments. After every kill the file passes bbolt's consistency check and
// the structural walk, opens without being moved aside, and every phrase in
// it passes the checksum embedded in its value.
func TestCrashSafetySIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	seed := uint64(time.Now().UnixNano())
	t.Logf("delay seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	for round := range 20 {
		c := startChild(t, "phrases", path, fmt.Sprint("MYNAH_CACHE_SEED=", round))
		c.waitReady(t)
		time.Sleep(time.Duration(rng.IntN(150)) * time.Millisecond)
		c.kill()
		if out := c.stderr.String(); out != "" {
			t.Fatalf("round %d: child failed: %s", round, out)
		}

		mustBeSound(t, path)
		s, err := Open(path, nil)
		if err != nil {
			t.Fatalf("round %d: reopen: %v", round, err)
		}
		if r := s.Recovery(); r != nil {
			t.Fatalf("round %d: the file a crash left was moved aside: %s", round, r.Reason)
		}
		n := checkAllSealed(t, s)
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		t.Logf("round %d: %d phrases intact", round, n)
		if t.Failed() {
			return
		}
	}
}

// A child process spools requests and deletes some, printing each put and
// delete after the call returned (and each delete also before it starts);
// it is killed with SIGKILL. Every request whose put returned is there
// after the restart unless a delete of it started, none whose delete
// returned is there, none is there twice, and the order is the arrival
// order.
func TestSpoolSurvivesSIGKILL(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 9))
	acked, deleting, deleted := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for round := range 5 {
		c := startChild(t, "spool", path, fmt.Sprint("MYNAH_CACHE_SEED=r", round))
		c.waitReady(t)
		time.Sleep(time.Duration(20+rng.IntN(100)) * time.Millisecond)
		c.kill()
		for _, line := range c.output() {
			switch verb, id, _ := strings.Cut(line, " "); verb {
			case "put":
				acked[id] = true
			case "deleting": // may or may not have happened
				deleting[id] = true
			case "del":
				deleted[id] = true
			}
		}
		s, err := Open(path, &Options{MaxSpoolEntries: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		list, err := s.SpoolList()
		if err != nil {
			t.Fatal(err)
		}
		s.Close()
		present := map[string]bool{}
		for i, e := range list {
			if present[e.ID] {
				t.Fatalf("round %d: %s spooled twice", round, e.ID)
			}
			present[e.ID] = true
			if string(e.Payload) != "say "+e.ID {
				t.Fatalf("round %d: %s has payload %q", round, e.ID, e.Payload)
			}
			if i > 0 && e.Received.Before(list[i-1].Received) {
				t.Fatalf("round %d: %s listed after a later request", round, e.ID)
			}
		}
		for id := range acked {
			if !deleting[id] && !present[id] {
				t.Fatalf("round %d: %s was acknowledged but is gone after the crash", round, id)
			}
		}
		for id := range deleted {
			if present[id] {
				t.Fatalf("round %d: %s was deleted but is back after the crash", round, id)
			}
		}
		t.Logf("round %d: %d acknowledged, %d deleted, %d spooled", round, len(acked), len(deleted), len(list))
	}
	if len(acked) < 5 {
		t.Fatalf("only %d puts acknowledged in 5 rounds: the test exercised nothing", len(acked))
	}
	mustBeSound(t, path)
}
