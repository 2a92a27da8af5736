package main

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// TestInputEdgeCasesOverMosquitto: what real publishers send that once
// went wrong, through Mosquitto and the whole daemon. A byte-order mark
// before a JSON say; text that starts with { without being JSON; markup
// with nothing to say; voice/set of a voice whose files were deleted; an
// enrollment recorded to a pipe, in base64 with white space; an
// enrollment too large, which must still name its request.
func TestInputEdgeCasesOverMosquitto(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	cfg := testConfig(t, broker.URL(), "null")
	spare := filepath.Join(cfg.Voices.Dir, "spare")
	if err := os.MkdirAll(spare, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := demo.Write(spare, nil); err != nil {
		t.Fatal(err)
	}
	url, _ := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	ev := watchEvents(t, url, cfg.Node)
	publish := func(topic string, payload []byte) { mqtttest.Publish(t, url, "mynah/kitchen/"+topic, payload, false) }
	end := func(id string) func(daemon.Event) bool {
		return func(e daemon.Event) bool {
			return e.ID == id && (e.State == daemon.EventFinished || e.State == daemon.EventFailed || e.State == daemon.EventDropped)
		}
	}

	for _, c := range []struct {
		payload, id, state, reason string
	}{
		{"\ufeff{\"id\":\"bom-rate\",\"text\":\"Hello.\",\"rate\":99}", "bom-rate", daemon.EventFailed, daemon.ReasonBadRate},
		{"\ufeff{\"id\":\"bom-ok\",\"text\":\"Hello.\"}", "bom-ok", daemon.EventFinished, ""},
		{`{"id":"markup","text":"<speak><break time='100000s'/></speak>"}`, "markup", daemon.EventFailed, daemon.ReasonEmpty},
	} {
		publish("say", []byte(c.payload))
		if e := ev.next(end(c.id)); e.State != c.state || e.Reason != c.reason {
			t.Errorf("%q: %s %q, want %s %q", c.payload, e.State, e.Reason, c.state, c.reason)
		}
	}
	// Plain text, so the daemon names them: the next end is theirs.
	publish("say", []byte("<speak><break time='100000s'/></speak>"))
	if e := ev.next(func(e daemon.Event) bool { return e.State != daemon.EventQueued }); e.State != daemon.EventFailed || e.Reason != daemon.ReasonEmpty {
		t.Errorf("markup alone as plain text: %+v, want failed empty", e)
	}
	publish("say", []byte("{name} is at the door."))
	if e := ev.next(func(e daemon.Event) bool { return e.State != daemon.EventQueued && e.State != daemon.EventStarted }); e.State != daemon.EventFinished {
		t.Errorf("text starting with {: %+v, want it spoken", e)
	}

	// The spare voice was installed at start; its files go, then it is
	// asked for. The default must not change to a voice that cannot speak.
	if err := os.RemoveAll(spare); err != nil {
		t.Fatal(err)
	}
	publish("voice/set", []byte("spare"))
	if e := ev.next(func(e daemon.Event) bool { return e.Command == "voice/set" }); e.State != daemon.EventFailed || e.Reason != daemon.ReasonUnknownVoice {
		t.Errorf("voice/set of a deleted voice: %+v, want failed unknown_voice", e)
	}
	publish("say", []byte(`{"id":"after-set","text":"Still the same voice."}`))
	if e := ev.next(end("after-set")); e.State != daemon.EventFinished {
		t.Errorf("a say after the refused voice/set: %+v", e)
	}

	// ffmpeg writing to a pipe leaves 0xFFFFFFFF sizes; the base64 is
	// wrapped and indented. The decode takes it: what refuses it is the
	// lack of a cloning voice here, not the audio.
	ref := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 16000)}
	for i := range ref.Samples {
		ref.Samples[i] = int16(i%200*100 - 10000)
	}
	wav := audio.EncodeWAV(ref)
	binary.LittleEndian.PutUint32(wav[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(wav[40:], 0xFFFFFFFF)
	b64 := base64.StdEncoding.EncodeToString(wav)
	var wrapped strings.Builder
	for i := 0; i < len(b64); i += 76 {
		wrapped.WriteString("\n    " + b64[i:min(i+76, len(b64))])
	}
	payload, _ := json.Marshal(map[string]string{"id": "pipe", "name": "dad", "audio": wrapped.String() + "\n"})
	publish("speaker/enroll", append([]byte("\ufeff"), payload...))
	if e := ev.next(end("pipe")); e.Reason != daemon.ReasonNotSupported {
		t.Errorf("enrollment from a pipe: %+v, want failed not_supported (no cloning voice), not bad_audio", e)
	}

	big := `{"id":"big","name":"dad","audio":"` + strings.Repeat("A", daemon.MaxEnrollBytes) + `"}`
	publish("speaker/enroll", []byte(big))
	if e := ev.next(func(e daemon.Event) bool { return e.Command == "speaker/enroll" }); e.Reason != daemon.ReasonTooLarge || e.ID != "big" {
		t.Errorf("too large an enrollment: %+v, want failed too_large with its id", e)
	}
}
