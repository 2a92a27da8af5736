package main

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// The README promises that every accepted request ends with exactly one
// finished, failed or dropped event (a copy marked redelivered may follow
// it), whatever happens to the broker, the daemon or its files. These
// tests do the things that broke that promise before.

// eventLog collects the events of a node from a subscription. A message
// with the very bytes of one received before is the broker's copy, not
// the daemon's: QoS 1 is at least once, and a broker killed and restarted
// sends again what its saved state still had queued for the subscriber,
// though it sent it before the kill (two answers of the daemon differ at
// least in their time, to the microsecond). Those copies are counted,
// not logged.
type eventLog struct {
	mu         sync.Mutex
	evs        []daemon.Event
	seen       map[string]bool
	brokerDups int
}

func collectEvents(ch <-chan daemon.Message) *eventLog {
	l := &eventLog{seen: map[string]bool{}}
	go func() {
		for m := range ch {
			var e daemon.Event
			if json.Unmarshal(m.Payload, &e) != nil {
				continue
			}
			l.mu.Lock()
			if l.seen[string(m.Payload)] {
				l.brokerDups++
			} else {
				l.seen[string(m.Payload)] = true
				l.evs = append(l.evs, e)
			}
			l.mu.Unlock()
		}
	}()
	return l
}

// duplicates is how many of the broker's copies were set aside.
func (l *eventLog) duplicates() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.brokerDups
}

func (l *eventLog) snapshot() []daemon.Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]daemon.Event(nil), l.evs...)
}

func terminal(e daemon.Event) bool {
	switch e.State {
	case daemon.EventFinished, daemon.EventFailed, daemon.EventDropped:
		return e.ID != ""
	}
	return false
}

// answers counts terminal events per id: all of them, and those not
// marked redelivered.
func (l *eventLog) answers() (all, first map[string]int) {
	all, first = map[string]int{}, map[string]int{}
	for _, e := range l.snapshot() {
		if terminal(e) {
			all[e.ID]++
			if !e.Redelivered {
				first[e.ID]++
			}
		}
	}
	return all, first
}

// waitAnswered waits until every id has a terminal event, then a little
// longer for any second one to show.
func (l *eventLog) waitAnswered(t *testing.T, ids []string, timeout time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(timeout); ; time.Sleep(50 * time.Millisecond) {
		all, _ := l.answers()
		var missing []string
		for _, id := range ids {
			if all[id] == 0 {
				missing = append(missing, id)
			}
		}
		if len(missing) == 0 {
			break
		}
		if time.Now().After(deadline) {
			var seen []string // what the unanswered had instead
			for _, e := range l.snapshot() {
				if slices.Contains(missing[:min(len(missing), 10)], e.ID) {
					seen = append(seen, e.ID+":"+e.State)
				}
			}
			t.Fatalf("%d of %d requests got no terminal event within %v: %v (their events: %v)",
				len(missing), len(ids), timeout, missing[:min(len(missing), 10)], seen)
		}
	}
	time.Sleep(2 * time.Second)
}

// checkExactlyOnce fails for every id without exactly one terminal event
// (copies marked redelivered aside) and returns how many redelivered
// copies there were.
func (l *eventLog) checkExactlyOnce(t *testing.T, ids []string) (redelivered int) {
	t.Helper()
	all, first := l.answers()
	bad := 0
	for _, id := range ids {
		if first[id] > 1 || all[id] == 0 {
			if bad++; bad <= 10 {
				var those []string
				for _, e := range l.snapshot() {
					if e.ID == id && terminal(e) {
						those = append(those, fmt.Sprintf("%s/%s at %s redelivered=%v", e.State, e.Reason, e.Time.Format("15:04:05.000000"), e.Redelivered))
					}
				}
				t.Errorf("%s: %d terminal events (%d not marked redelivered), want exactly one: %v", id, all[id], first[id], those)
			}
		}
		redelivered += all[id] - first[id]
	}
	if bad > 10 {
		t.Errorf("... %d ids in all", bad)
	}
	return redelivered
}

// TestEveryRequestAnsweredAcrossBrokerKill: says stream in at QoS 1 while
// the broker is SIGKILLed and restarted, then a flood of 1,000 follows.
// Every request gets exactly one terminal event at a subscriber with a
// persistent session, although some were decided while the broker was
// gone and the flood makes the events outrun the broker.
func TestEveryRequestAnsweredAcrossBrokerKill(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	cfg.MQTT.Keepalive = 2 * time.Second
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	evs := collectEvents(mqtttest.SubscribeSession(t, url, "mynah/kitchen/event", "faults-watcher"))

	var ids []string
	say := func(id, payload string) {
		ids = append(ids, id)
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(payload), false)
	}
	// Short ttls: while the first play, the rest expire or are pushed out,
	// so answers keep being decided while the broker is down.
	for i := range 40 {
		say(fmt.Sprintf("s%d", i), fmt.Sprintf(`{"id":"s%d","text":"Item %d.","ttl":%d}`, i, i%7, 1+i%3))
	}
	broker.Flush(t) // every say and the watcher's session are on disk
	broker.Kill()
	time.Sleep(1500 * time.Millisecond)
	broker.Restart(t)
	waitOnline(t, url, cfg.Node)
	for i := range 1000 {
		say(fmt.Sprintf("f%d", i), fmt.Sprintf(`{"id":"f%d","text":"Flood %d.","ttl":2}`, i, i%5))
	}
	evs.waitAnswered(t, ids, 2*time.Minute)
	n := evs.checkExactlyOnce(t, ids)
	t.Logf("%d requests, each answered once; %d redelivered copies; %d copies the broker sent twice", len(ids), n, evs.duplicates())
	if c := lastState(t, url, cfg.Node).Counters; c.EventsLost != 0 {
		t.Errorf("counters %+v: terminal events let go", c)
	}
}

// killRun is one mynahd process of a kill-and-restart test.
type killRun struct {
	cmd    *exec.Cmd
	stderr lockedBuffer
}

func startMynahd(t testing.TB, bin, conf string) *killRun {
	t.Helper()
	r := &killRun{cmd: exec.Command(bin, "-config", conf)}
	r.cmd.Stderr = &r.stderr
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	return r
}

// queueAndKill starts mynahd, queues n requests behind a long one and
// kills it with SIGKILL once all are queued (so spooled and acknowledged).
func queueAndKill(t *testing.T, bin, conf, url string, evs *eventLog, n int) []string {
	t.Helper()
	run := startMynahd(t, bin, conf)
	waitOnline(t, url, "den")
	var ids []string
	for i := range n {
		id := fmt.Sprintf("k%d", i)
		text := fmt.Sprintf("Item %d.", i)
		if i == 0 {
			text = "The washing machine has finished. Please empty it before the evening."
		}
		ids = append(ids, id)
		mqtttest.Publish(t, url, "mynah/den/say", fmt.Appendf(nil, `{"id":%q,"text":%q,"ttl":300}`, id, text), false)
	}
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		queued := map[string]bool{}
		for _, e := range evs.snapshot() {
			if e.State == daemon.EventQueued {
				queued[e.ID] = true
			}
		}
		if len(queued) == n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d queued\n%s", len(queued), n, &run.stderr)
		}
	}
	time.Sleep(300 * time.Millisecond) // the last spool writes and acknowledgements
	run.cmd.Process.Signal(syscall.SIGKILL)
	run.cmd.Wait()
	if all, _ := evs.answers(); len(all) != 0 {
		t.Fatalf("answers before the kill: %v (the test did not kill a full queue)", all)
	}
	return ids
}

// TestSpoolSurvivesTheCacheFile: the queue spool lives in a file of its
// own, so a cache file that is locked by another process (as good as
// read-only) or damaged loses no accepted request; a damaged spool
// record is reported with its id.
func TestSpoolSurvivesTheCacheFile(t *testing.T) {
	bin := buildMynahd(t)
	for _, tc := range []struct {
		name string
		// before runs before the first start, between runs after the
		// kill; reason is the warning the restart must publish.
		before, between func(t *testing.T, dir string)
		reason          string
		lost            string // an id the restart reports failed with reason spool
	}{
		{name: "cache locked", reason: daemon.ReasonCacheUnavailable, before: func(t *testing.T, dir string) {
			holder, err := cache.Open(filepath.Join(dir, "cache.db"), &cache.Options{Timeout: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { holder.Close() })
		}},
		{name: "cache meta pages damaged", reason: daemon.ReasonCacheCorrupt, between: func(t *testing.T, dir string) {
			damageMetaPages(t, filepath.Join(dir, "cache.db"))
		}},
		{name: "spool record damaged", reason: daemon.ReasonSpoolCorrupt, lost: "broken-1", between: func(t *testing.T, dir string) {
			addBrokenSpoolRecord(t, filepath.Join(dir, "spool.db"), "broken-1")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			broker := mqtttest.StartMosquitto(t)
			dir := t.TempDir()
			conf := filepath.Join(dir, "mynahd.yaml")
			if err := os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker.URL()+"\nvoices:\n  dir: "+dir+
				"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: "+dir+"/cache.db\naudio:\n  device: \"null\"\nlog:\n  level: info\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(t, dir)
			}
			evs := collectEvents(mqtttest.SubscribeSession(t, broker.URL(), "mynah/den/event", "spool-watcher"))
			ids := queueAndKill(t, bin, conf, broker.URL(), evs, 7)
			if tc.between != nil {
				tc.between(t, dir)
			}
			second := startMynahd(t, bin, conf)
			evs.waitAnswered(t, ids, wait)
			evs.checkExactlyOnce(t, ids)
			var warned, lost bool
			for _, e := range evs.snapshot() {
				warned = warned || e.State == daemon.EventWarning && e.Reason == tc.reason
				lost = lost || e.ID == tc.lost && e.State == daemon.EventFailed && e.Reason == daemon.ReasonSpool
				if terminal(e) && e.ID != tc.lost && e.State != daemon.EventFinished {
					t.Errorf("%s: %s %s, want finished", e.ID, e.State, e.Reason)
				}
			}
			if !warned {
				t.Errorf("no warning event %s\n%s", tc.reason, &second.stderr)
			}
			if tc.lost != "" && !lost {
				t.Errorf("the damaged record %s was not reported failed (spool)", tc.lost)
			}
		})
	}
}

// damageMetaPages overwrites the magic of both bbolt meta pages: bbolt
// cannot open the file at all.
func damageMetaPages(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ps := os.Getpagesize()
	for _, off := range []int64{16, int64(ps) + 16} {
		if _, err := f.WriteAt([]byte{0xde, 0xad, 0xbe, 0xef}, off); err != nil {
			t.Fatal(err)
		}
	}
}

// addBrokenSpoolRecord adds a spool entry whose value is too short to
// hold its expiry time: the file fails its record check at the next open.
func addBrokenSpoolRecord(t *testing.T, path, id string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket([]byte("spool"))
		if b == nil {
			return fmt.Errorf("no spool bucket in %s", path)
		}
		key := binary.BigEndian.AppendUint64(nil, uint64(time.Now().UnixNano()))
		return b.Put(append(key, id...), []byte{1, 2, 3})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestUnwritableSpoolIsReported: a spool file that cannot be created
// (its directory is not one; as on a read-only mount) leaves speech
// working, and says so in a warning event and the state.
func TestUnwritableSpoolIsReported(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	notDir := filepath.Join(t.TempDir(), "not-a-directory")
	if err := os.WriteFile(notDir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Queue.SpoolFile = filepath.Join(notDir, "spool.db")
	ev := watchEvents(t, broker.URL(), cfg.Node)
	startDaemon(t, cfg)
	if w := ev.next(state(daemon.EventWarning)); w.Reason != daemon.ReasonSpoolUnavailable || !strings.Contains(w.Error, "crash") {
		t.Errorf("warning %+v, want spool_unavailable saying what it means", w)
	}
	waitOnline(t, broker.URL(), cfg.Node)
	mqtttest.Publish(t, broker.URL(), "mynah/kitchen/say", []byte(`{"id":"r1","text":"Still speaking."}`), false)
	ev.next(stateID(daemon.EventFinished, "r1"))
	s := lastState(t, broker.URL(), cfg.Node)
	if s.Spool == nil || s.Spool.Available || !strings.Contains(s.Spool.Error, "not a directory") {
		t.Errorf("state spool %+v: want available false with the error", s.Spool)
	}
	if s.Cache == nil || !s.Cache.Available {
		t.Errorf("state cache %+v: the cache file is fine", s.Cache)
	}
}

// TestAnswerSurvivesBrokerOutageAndCrash: a request finishes while the
// broker is down, and mynahd is killed before the broker comes back. The
// answer was kept in the spool: the next mynahd sends it, marked
// redelivered, and does not speak the request again.
func TestAnswerSurvivesBrokerOutageAndCrash(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mynahd.yaml")
	if err := os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker.URL()+"\n  keepalive: 2s\nvoices:\n  dir: "+dir+
		"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: "+dir+"/cache.db\naudio:\n  device: \"null\"\nlog:\n  level: info\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	evs := collectEvents(mqtttest.SubscribeSession(t, broker.URL(), "mynah/den/event", "crash-watcher"))
	first := startMynahd(t, bin, conf)
	waitOnline(t, broker.URL(), "den")
	mqtttest.Publish(t, broker.URL(), "mynah/den/say", []byte(`{"id":"late","text":"The washing machine has finished. Please empty it."}`), false)
	for deadline := time.Now().Add(wait); ; time.Sleep(20 * time.Millisecond) {
		started := false
		for _, e := range evs.snapshot() {
			started = started || e.ID == "late" && e.State == daemon.EventStarted
		}
		if started {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("never started\n%s", &first.stderr)
		}
	}
	broker.Flush(t)
	broker.Kill()
	// The request ends while the broker is gone; its answer goes to the
	// spool file.
	spool := filepath.Join(dir, "spool.db")
	for deadline := time.Now().Add(wait); !strings.Contains(first.stderr.String(), "spoken"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("never finished\n%s", &first.stderr)
		}
	}
	time.Sleep(300 * time.Millisecond) // the answer's spool write
	first.cmd.Process.Signal(syscall.SIGKILL)
	first.cmd.Wait()

	broker.Restart(t)
	second := startMynahd(t, bin, conf)
	evs.waitAnswered(t, []string{"late"}, wait)
	var answers []daemon.Event
	for _, e := range evs.snapshot() {
		if terminal(e) {
			answers = append(answers, e)
		}
	}
	if len(answers) != 1 || answers[0].State != daemon.EventFinished || !answers[0].Redelivered || answers[0].Sentences == nil {
		t.Fatalf("answers %+v, want one finished, redelivered, with the first run's figures\n%s", answers, &second.stderr)
	}
	if strings.Contains(second.stderr.String(), `msg=spoken`) {
		t.Errorf("the request was spoken again after the restart\n%s", &second.stderr)
	}
	second.cmd.Process.Signal(syscall.SIGTERM)
	second.cmd.Wait()
	store, err := cache.Open(spool, &cache.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	if left, _ := store.SpoolList(); len(left) != 0 {
		t.Errorf("%d spool records after the answer was delivered", len(left))
	}
}
