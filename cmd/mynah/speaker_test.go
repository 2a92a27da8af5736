package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// answerEnrolls plays mynahd's part over a real broker: it checks what
// mynah enroll sends and answers with a done event, or a failed one for
// the speaker name "refuse".
func answerEnrolls(t *testing.T, url, topic string, wantWAV []byte) {
	t.Helper()
	in := mqtttest.Subscribe(t, url, topic)
	go func() {
		for m := range in {
			var p struct{ ID, Name, Audio string }
			if err := json.Unmarshal(m.Payload, &p); err != nil {
				t.Errorf("enroll payload: %v", err)
				return
			}
			wav, err := base64.StdEncoding.DecodeString(p.Audio)
			if err != nil || !bytes.Equal(wav, wantWAV) {
				t.Errorf("the recording did not arrive intact (%v)", err)
			}
			e := daemon.Event{ID: p.ID, State: daemon.EventDone, Command: "speaker/enroll", Speaker: p.Name}
			if p.Name == "refuse" {
				e.State, e.Reason, e.Error = daemon.EventFailed, daemon.ReasonBadAudio, "no voice found in the reference"
			}
			b, _ := json.Marshal(e)
			mqtttest.Publish(t, url, "mynah/den/event", b, false)
		}
	}()
}

// writeReference writes a 2 s reference recording into dir.
func writeReference(t *testing.T, dir string) (wav []byte, path string) {
	t.Helper()
	wav = audio.EncodeWAV(audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 32000)})
	path = filepath.Join(dir, "dad.wav")
	if err := os.WriteFile(path, wav, 0o600); err != nil {
		t.Fatal(err)
	}
	return wav, path
}

func TestEnrollCommand(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	wav, ref := writeReference(t, dir)
	answerEnrolls(t, broker.URL(), "mynah/den/u/anna/speaker/enroll", wav)
	base := []string{"enroll", "--broker", broker.URL(), "--node", "den", "--owner", "anna", "--timeout", "20s"}

	out, stderr, err := mynah(t, append(base, "--name", "dad", ref)...)
	if err != nil || !strings.Contains(out, `enrolled "dad" (owner anna) from 2.0 s`) {
		t.Fatalf("enroll: %v\n%s%s", err, out, stderr)
	}
	_, _, err = mynah(t, append(base, "--name", "refuse", ref)...)
	if err == nil || !strings.Contains(err.Error(), "bad_audio") || exitCode(err) != 1 {
		t.Errorf("refused enrollment: %v, want the daemon's reason and exit 1", err)
	}

	// Mistakes found before anything is sent.
	notWAV := filepath.Join(dir, "notes.txt")
	os.WriteFile(notWAV, []byte("not a recording"), 0o600)
	if _, _, err := mynah(t, append(base, "--name", "dad", notWAV)...); err == nil || !strings.Contains(err.Error(), "wav") {
		t.Errorf("a text file as reference: %v", err)
	}
	for _, args := range [][]string{
		append(base, ref),                                // no name
		append(base, "--name", "../x", ref),              // bad name
		{"enroll", "--owner", "a/b", "--name", "x", ref}, // bad owner
		append(base, "--name", "dad"),                    // no file
	} {
		if _, _, err := mynah(t, args...); exitCode(err) != 2 {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}

	// Nobody answers: a clear timeout, not a hang.
	start := time.Now()
	_, _, err = mynah(t, "enroll", "--broker", broker.URL(), "--node", "nobody", "--timeout", "1s", "--name", "dad", ref)
	if err == nil || !strings.Contains(err.Error(), "no answer from mynahd") || time.Since(start) > 20*time.Second {
		t.Errorf("no daemon: %v", err)
	}
	// No broker at all.
	if _, _, err := mynah(t, "enroll", "--broker", "tcp://127.0.0.1:1", "--timeout", "1s", "--name", "dad", ref); err == nil || !strings.Contains(err.Error(), "is mynahd running") {
		t.Errorf("no broker: %v", err)
	}
}

// On the device, the speaker commands need no flags: the broker and node
// come from mynahd's config (--config, else $MYNAH_CONFIG); flags win.
func TestSpeakerCommandsReadMynahdConfig(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	wav, ref := writeReference(t, dir)
	answerEnrolls(t, broker.URL(), "mynah/den/speaker/enroll", wav)
	conf := filepath.Join(dir, "mynahd.yaml")
	if err := os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker.URL()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	if out, stderr, err := mynah(t, "enroll", "--config", conf, "--timeout", "20s", "--name", "dad", ref); err != nil || !strings.Contains(out, `enrolled "dad" (shared)`) {
		t.Fatalf("enroll --config: %v\n%s%s", err, out, stderr)
	}
	t.Setenv("MYNAH_CONFIG", conf)
	if out, stderr, err := mynah(t, "enroll", "--timeout", "20s", "--name", "dad", ref); err != nil || !strings.Contains(out, "enrolled") {
		t.Fatalf("enroll with $MYNAH_CONFIG: %v\n%s%s", err, out, stderr)
	}
	// A flag wins over the config: nobody answers on node "attic".
	_, _, err := mynah(t, "enroll", "--node", "attic", "--timeout", "1s", "--name", "dad", ref)
	if err == nil || !strings.Contains(err.Error(), `node "attic"`) {
		t.Errorf("--node over the config: %v", err)
	}

	// A config that is wrong or missing is a usage error naming it.
	bad := filepath.Join(dir, "bad.yaml")
	os.WriteFile(bad, []byte("mqtt:\n  brokr: x\n"), 0o600)
	missing := filepath.Join(dir, "missing.yaml")
	for _, c := range []string{bad, missing} {
		if _, _, err := mynah(t, "speakers", "--config", c); exitCode(err) != 2 || !strings.Contains(err.Error(), c) {
			t.Errorf("--config %s: %v, want a usage error naming the file", c, err)
		}
	}
	// An embedded broker on a port chosen at start cannot be found.
	port0 := filepath.Join(dir, "port0.yaml")
	os.WriteFile(port0, []byte("mqtt:\n  embedded_listen: 127.0.0.1:0\n"), 0o600)
	if _, _, err := mynah(t, "speakers", "--config", port0); exitCode(err) != 2 || !strings.Contains(err.Error(), "--broker") {
		t.Errorf("embedded broker on port 0: %v", err)
	}
}
