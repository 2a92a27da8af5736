package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// householdACL is the Mosquitto ACL the README documents: mynahd and Home
// Assistant see everything, every other user only their own owner topics
// (and the events).
const householdACL = `user mynahd
topic readwrite mynah/#
topic readwrite homeassistant/#

user homeassistant
topic readwrite homeassistant/#
topic write mynah/+/say
topic write mynah/+/stop
topic write mynah/+/volume/set
topic write mynah/+/voice/set
topic write mynah/+/cache/purge
topic write mynah/+/speaker/#
topic read mynah/+/status
topic read mynah/+/state
topic read mynah/+/event
topic read mynah/+/speakers

pattern readwrite mynah/+/u/%u/#
pattern read mynah/+/event`

// referenceWAV speaks text with a demo voice speaker: a reference
// recording of a low (heron) or high (wren) voice.
func referenceWAV(t *testing.T, speaker, text string) []byte {
	t.Helper()
	dir := t.TempDir()
	path, err := demo.Write(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := voice.LoadPiper(enginetest.OpenRuntime(t), path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var all audio.PCM
	err = v.Synthesize(context.Background(), voice.Request{Text: text, Speaker: speaker}, func(c voice.Chunk) error {
		all.Rate, all.Channels = c.PCM.Rate, c.PCM.Channels
		all.Samples = append(all.Samples, c.PCM.Samples...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return audio.EncodeWAV(all)
}

// TestCloningOverMQTT runs the cloning kit through mynahd and a Mosquitto
// that enforces the documented ACL with four users: enrollment per owner,
// owner isolation (use, list, forget), shared speakers, eviction of the
// least recently used speaker, sessions, persistence across a restart, and
// the reference recording never reaching the disk.
func TestCloningOverMQTT(t *testing.T) {
	users := map[string]string{"mynahd": "d-pw", "homeassistant": "ha-pw", "anna": "a-pw", "ben": "b-pw"}
	broker := mqtttest.StartMosquittoWith(t, &mqtttest.MosquittoOptions{Users: users, ACL: householdACL})
	as := func(user string) string { return broker.URLAs(user, users[user]) }

	cfg := testConfig(t, broker.URL(), "null")
	cfg.MQTT.Username = "mynahd"
	cfg.MQTT.PasswordFile = filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(cfg.MQTT.PasswordFile, []byte("d-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg.Cache.MaxSpeakers = 3
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp) // where a careless enrollment would spill the recording
	clone := filepath.Join(cfg.Voices.Dir, demo.CloneName)
	if err := os.MkdirAll(clone, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := demo.WriteCloning(clone, nil); err != nil {
		t.Fatal(err)
	}
	low := referenceWAV(t, "heron", "The quick brown fox jumps over the lazy dog. We were home before dark.")
	high := referenceWAV(t, "wren", "The quick brown fox jumps over the lazy dog. We were home before dark.")

	_, stop := startDaemon(t, cfg)
	waitOnline(t, as("homeassistant"), cfg.Node)
	ev := watchEvents(t, as("homeassistant"), cfg.Node)
	answer := func(match func(daemon.Event) bool) daemon.Event { return ev.next(match) }
	byID := func(id string) func(daemon.Event) bool {
		return func(e daemon.Event) bool {
			return e.ID == id && (e.State == daemon.EventDone || e.State == daemon.EventFailed || e.State == daemon.EventFinished)
		}
	}
	enroll := func(user, topic, id, name string, wav []byte) daemon.Event {
		t.Helper()
		payload, _ := json.Marshal(map[string]string{"id": id, "name": name, "audio": base64.StdEncoding.EncodeToString(wav)})
		mqtttest.Publish(t, as(user), "mynah/kitchen/"+topic, payload, false)
		return answer(byID(id))
	}
	say := func(user, topic, id, speaker string, extra string) daemon.Event {
		t.Helper()
		payload := fmt.Sprintf(`{"id":%q,"text":"Dinner is ready.","voice":%q,"speaker":%q%s}`, id, demo.CloneName, speaker, extra)
		mqtttest.Publish(t, as(user), "mynah/kitchen/"+topic, []byte(payload), false)
		return answer(byID(id))
	}

	if e := enroll("anna", "u/anna/speaker/enroll", "e1", "dad", low); e.State != daemon.EventDone || e.Owner != "anna" {
		t.Fatalf("anna enrolls dad: %+v", e)
	}
	if e := enroll("ben", "u/ben/speaker/enroll", "e2", "kid", high); e.State != daemon.EventDone {
		t.Fatalf("ben enrolls kid: %+v", e)
	}
	if e := enroll("homeassistant", "speaker/enroll", "e3", "radio", high); e.State != daemon.EventDone || e.Owner != "" {
		t.Fatalf("shared enrollment: %+v", e)
	}

	// Use: anna's dad for anna only; the shared radio for everyone.
	if e := say("anna", "u/anna/say", "s1", "dad", ""); e.State != daemon.EventFinished || e.Cache != daemon.CacheMiss {
		t.Errorf("anna with her speaker: %+v, want finished, a miss", e)
	}
	if e := say("ben", "u/ben/say", "s2", "dad", ""); e.Reason != daemon.ReasonUnknownSpeaker {
		t.Errorf("ben with anna's speaker: %+v, want failed unknown_speaker", e)
	}
	if e := say("homeassistant", "say", "s3", "dad", ""); e.Reason != daemon.ReasonUnknownSpeaker {
		t.Errorf("the shared topic with anna's speaker: %+v, want failed unknown_speaker", e)
	}
	// The phrase cache keys cloned audio by the embedding: the same text
	// with another speaker is a miss.
	if e := say("ben", "u/ben/say", "s4", "radio", ""); e.State != daemon.EventFinished || e.Cache != daemon.CacheMiss {
		t.Errorf("ben with the shared speaker: %+v, want finished, a miss", e)
	}
	// The broker's ACL: ben cannot speak as anna at all.
	mqtttest.Publish(t, as("ben"), "mynah/kitchen/u/anna/say", []byte(`{"id":"s5","text":"Hi.","voice":"mynah-clone","speaker":"dad"}`), false)

	// A repeat hits; a session is not cached.
	if e := say("anna", "u/anna/say", "s6", "dad", ""); e.Cache != daemon.CacheHit {
		t.Errorf("repeat with dad: cache %q, want hit", e.Cache)
	}
	for _, id := range []string{"s8", "s9"} {
		if e := say("anna", "u/anna/say", id, "dad", `,"session":"dinner"`); e.State != daemon.EventFinished || e.Cache != daemon.CacheMiss {
			t.Errorf("session request %s: %+v, want finished uncached", id, e)
		}
	}

	// Lists: anna reads her own; ben cannot read hers.
	annaList := mqtttest.Subscribe(t, as("anna"), "mynah/kitchen/u/anna/speakers")
	select {
	case m := <-annaList:
		var infos []daemon.SpeakerInfo
		if err := json.Unmarshal(m.Payload, &infos); err != nil || len(infos) != 1 || infos[0].Name != "dad" {
			t.Errorf("anna's list %s (%v)", m.Payload, err)
		}
	case <-time.After(wait):
		t.Error("anna got no speaker list")
	}
	benPeek := mqtttest.Subscribe(t, as("ben"), "mynah/kitchen/u/anna/speakers")
	select {
	case m := <-benPeek:
		t.Errorf("ben read anna's list: %s", m.Payload)
	case <-time.After(time.Second):
	}

	// Forget: ben cannot forget anna's speaker through his topic, and the
	// broker drops his attempt on hers.
	mqtttest.Publish(t, as("ben"), "mynah/kitchen/u/ben/speaker/forget", []byte("dad"), false)
	if e := answer(func(e daemon.Event) bool { return e.Command == "speaker/forget" }); e.State != daemon.EventFailed || e.Reason != daemon.ReasonUnknownSpeaker {
		t.Errorf("ben forgets dad: %+v", e)
	}
	mqtttest.Publish(t, as("ben"), "mynah/kitchen/u/anna/speaker/forget", []byte("dad"), false)
	if e := say("anna", "u/anna/say", "s10", "dad", ""); e.State != daemon.EventFinished {
		t.Errorf("dad after ben's attempts to forget him: %+v", e)
	}

	// A fourth speaker evicts the least recently used (ben's kid: dad and
	// radio were used since).
	if e := enroll("anna", "u/anna/speaker/enroll", "e4", "mum", high); e.State != daemon.EventDone {
		t.Fatalf("anna enrolls mum: %+v", e)
	}
	if e := answer(func(e daemon.Event) bool { return e.State == daemon.EventEvicted }); e.Owner != "ben" || e.Speaker != "kid" {
		t.Errorf("evicted %+v, want ben's kid", e)
	}
	if e := say("ben", "u/ben/say", "s11", "kid", ""); e.Reason != daemon.ReasonUnknownSpeaker {
		t.Errorf("an evicted speaker: %+v", e)
	}

	// anna forgets mum at once.
	mqtttest.Publish(t, as("anna"), "mynah/kitchen/u/anna/speaker/forget", []byte("mum"), false)
	if e := answer(func(e daemon.Event) bool { return e.Command == "speaker/forget" }); e.State != daemon.EventDone || e.Speaker != "mum" {
		t.Errorf("anna forgets mum: %+v", e)
	}

	// The recordings never touched the disk: no file in the state, voice
	// or temp directories holds any stretch of their samples.
	stop()
	for _, ref := range [][]byte{low, high} {
		needle := ref[len(ref)/2 : len(ref)/2+256]
		for _, dir := range []string{filepath.Dir(cfg.Cache.File), cfg.Voices.Dir, tmp} {
			filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				if data, _ := os.ReadFile(path); bytes.Contains(data, needle) {
					t.Errorf("%s holds a piece of a reference recording", path)
				}
				return nil
			})
		}
	}

	// After a restart the kept speakers are still there, in use order.
	startDaemon(t, cfg)
	waitOnline(t, as("homeassistant"), cfg.Node)
	ev = watchEvents(t, as("homeassistant"), cfg.Node)
	for _, c := range []struct{ user, topic, speaker string }{
		{"anna", "u/anna/say", "dad"}, {"ben", "u/ben/say", "radio"},
	} {
		id := "after-" + c.speaker
		if e := say(c.user, c.topic, id, c.speaker, ""); e.State != daemon.EventFinished {
			t.Errorf("%s after the restart: %+v", c.speaker, e)
		}
	}
	shared := mqtttest.Subscribe(t, as("homeassistant"), "mynah/kitchen/speakers")
	select {
	case m := <-shared:
		var infos []daemon.SpeakerInfo
		_ = json.Unmarshal(m.Payload, &infos)
		var names []string
		for _, i := range infos {
			names = append(names, i.Name)
		}
		if !slices.Equal(names, []string{"radio"}) {
			t.Errorf("shared list after restart: %s", m.Payload)
		}
	case <-time.After(wait):
		t.Error("no shared speaker list after the restart")
	}
}
