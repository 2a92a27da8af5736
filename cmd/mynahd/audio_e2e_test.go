package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/audiotest"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// noDeviceConfig is an ALSA config whose default device cannot be opened:
// to PortAudio the sound card is not there.
const noDeviceConfig = "pcm.!default {\n\ttype hw\n\tcard 63\n}\n"

// A sound card that is not there at start: mynahd serves anyway, says so
// in its state (Home Assistant's problem sensor) and fails requests at
// once with reason audio; when the card appears (the ALSA config swapped
// in, so PortAudio's device list changes) it plays without a restart.
func TestAudioDeviceComesBack(t *testing.T) {
	bin := buildMynahd(t)
	broker := mqtttest.StartMosquitto(t)
	home, dir := t.TempDir(), t.TempDir()
	raw := filepath.Join(home, "out.raw")
	env, err := audiotest.CaptureEnv(home, raw)
	if err != nil {
		t.Fatal(err)
	}
	asoundrc := filepath.Join(home, ".asoundrc")
	if err := os.WriteFile(asoundrc, []byte(noDeviceConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "mynahd.yaml")
	os.WriteFile(conf, []byte("node: den\nmqtt:\n  broker: "+broker.URL()+"\nvoices:\n  dir: "+dir+"\nonnx:\n  optimized_dir: "+dir+"/optimized\ncache:\n  file: \"\"\nlog:\n  level: warn\n"), 0o600)
	cmd := exec.Command(bin, "-config", conf)
	cmd.Env = env
	out, err := os.Create(filepath.Join(dir, "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	logs := func() string { b, _ := os.ReadFile(out.Name()); return string(b) }

	state := mqtttest.Subscribe(t, broker.URL(), "mynah/den/state")
	audioIs := func(available bool) {
		t.Helper()
		deadline := time.After(wait)
		for {
			select {
			case m := <-state:
				var s daemon.State
				if json.Unmarshal(m.Payload, &s) == nil && s.Audio != nil && s.Audio.Available == available {
					return
				}
			case <-deadline:
				t.Fatalf("state never said audio available=%v; mynahd said:\n%s", available, logs())
			}
		}
	}
	audioIs(false)
	ev := watchEvents(t, broker.URL(), "den")
	mqtttest.Publish(t, broker.URL(), "mynah/den/say", []byte(`{"id":"a1","text":"Is anyone there?"}`), false)
	start := time.Now()
	if e := ev.next(func(e daemon.Event) bool { return e.ID == "a1" && e.State != daemon.EventQueued }); e.State != daemon.EventFailed || e.Reason != daemon.ReasonAudio {
		t.Errorf("say without a device: %+v, want failed with reason audio", e)
	} else if took := time.Since(start); took > 5*time.Second {
		t.Logf("the failure took %v (it should not wait for the device)", took)
	}

	// The card appears.
	if err := audiotest.WriteCaptureConfig(home, raw); err != nil {
		t.Fatal(err)
	}
	audioIs(true)
	mqtttest.Publish(t, broker.URL(), "mynah/den/say", []byte(`{"id":"a2","text":"Here I am."}`), false)
	if e := ev.next(func(e daemon.Event) bool { return e.ID == "a2" && terminal(e) }); e.State != daemon.EventFinished {
		t.Fatalf("say once the device is back: %+v\n%s", e, logs())
	}
	if st, err := os.Stat(raw); err != nil || st.Size() == 0 {
		t.Errorf("nothing reached the device: %v", err)
	}
}
