package main

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// An alert chimes before it speaks (the built-in two_tone by default), a
// request can name a chime file of announce.chimes or turn the chime off,
// and what reaches the device is exactly the chime, then the speech.
func TestChimesBeforeSpeech(t *testing.T) {
	broker := mqtttest.StartMosquitto(t)
	dir := t.TempDir()
	wav := filepath.Join(dir, "out.wav")
	cfg := testConfig(t, broker.URL(), "wav:"+wav)
	cfg.Cache.File = "" // every sentence synthesized: the same audio each time
	// A doorbell: two short beeps at 16 kHz, converted at start to the
	// voice's rate.
	bell := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 4000)}
	for i := range bell.Samples {
		if (i/400)%2 == 0 {
			bell.Samples[i] = 6000
		}
	}
	bellPath := filepath.Join(dir, "doorbell.wav")
	if err := os.WriteFile(bellPath, audio.EncodeWAV(bell), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg.Announce.Chimes = map[string]string{"doorbell": bellPath}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	url, stop := startDaemon(t, cfg)
	waitOnline(t, url, cfg.Node)
	log := collectEvents(mqtttest.Subscribe(t, url, "mynah/kitchen/event"))
	for _, p := range []string{
		`{"id":"plain","text":"Dinner is ready."}`,
		`{"id":"alert","text":"Dinner is ready.","priority":"alert"}`,
		`{"id":"door","text":"Dinner is ready.","chime":"doorbell"}`,
		`{"id":"quiet","text":"Dinner is ready.","priority":"alert","chime":false}`,
	} {
		mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(p), false)
	}
	mqtttest.Publish(t, url, "mynah/kitchen/say", []byte(`{"id":"bad","text":"x","chime":"fanfare"}`), false)
	log.waitAnswered(t, []string{"plain", "alert", "door", "quiet", "bad"}, wait)
	for _, e := range log.snapshot() {
		want := daemon.EventFinished
		if e.ID == "bad" {
			want = daemon.EventFailed
		}
		if terminal(e) && (e.State != want || (e.ID == "bad" && e.Reason != daemon.ReasonBadField)) {
			t.Errorf("%s: %+v", e.ID, e)
		}
	}
	stop()

	got := readWAV(t, wav).Samples
	rate := readWAV(t, wav).Rate
	twoTone, err := audio.Chime(audio.ChimeTwoTone, rate)
	if err != nil {
		t.Fatal(err)
	}
	door, err := audio.Convert(bell, rate, 1)
	if err != nil {
		t.Fatal(err)
	}
	// Four requests of the same speech; two chimes among them, in the
	// order the queue played them.
	count := func(pcm []int16) int { // times pcm occurs in got
		n := 0
		for i := 0; i+len(pcm) <= len(got); i++ {
			if slices.Equal(got[i:i+len(pcm)], pcm) {
				n++
				i += len(pcm) - 1
			}
		}
		return n
	}
	// Once each: the alert that turned its chime off played none.
	if n := count(twoTone.Samples); n != 1 {
		t.Errorf("the two-tone chime played %d times, want once (the alert; not the one with chime false)", n)
	}
	if n := count(door.Samples); n != 1 {
		t.Errorf("the doorbell chime played %d times, want once", n)
	}
	if n := len(got) - len(twoTone.Samples) - len(door.Samples); n%4 != 0 {
		t.Errorf("%d samples of speech for four equal requests", n)
	}
}
