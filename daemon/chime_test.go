package daemon

import (
	"testing"

	"github.com/mynah-tts/mynah/audio"
)

// chimeSet is a Chimes of fixed tones: each chime's samples are its value.
type chimeSet map[string]int16

func (c chimeSet) Chime(name string) (audio.PCM, bool) {
	v, ok := c[name]
	if !ok {
		return audio.PCM{}, false
	}
	pcm := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 320)}
	for i := range pcm.Samples {
		pcm.Samples[i] = v
	}
	return pcm, true
}

var _ Chimes = chimeSet(nil)

func TestChimes(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.Chimes = chimeSet{"ding": 7, "two_tone": 9, "door": 11}
		o.PriorityChimes = map[Priority]string{PriorityAlert: "two_tone"}
	}).start()
	// say returns the writes of one request.
	say := func(id, payload string) []audio.PCM {
		t.Helper()
		before := len(h.sink.written())
		h.send("say", payload)
		h.waitEvent(id, EventFinished)
		return h.sink.written()[before:]
	}
	cases := []struct {
		id, payload string
		chime       int16 // 0: none
	}{
		{"n", `{"id":"n","text":"Dinner."}`, 0},
		{"a", `{"id":"a","text":"Smoke in the kitchen.","priority":"alert"}`, 9},
		{"q", `{"id":"q","text":"Smoke.","priority":"alert","chime":false}`, 0},
		{"t", `{"id":"t","text":"Hello.","chime":true}`, 7},
		{"d", `{"id":"d","text":"Someone is at the door.","chime":"door"}`, 11},
	}
	for _, c := range cases {
		writes := say(c.id, c.payload)
		if len(writes) == 0 {
			t.Fatalf("%s: nothing written", c.id)
		}
		first := writes[0].Samples[0]
		switch {
		case c.chime == 0 && first != 1000:
			t.Errorf("%s: first write %d, want the speech (no chime)", c.id, first)
		case c.chime != 0 && (first != c.chime || len(writes) < 2 || writes[1].Samples[0] != 1000):
			t.Errorf("%s: writes begin %d, want chime %d then the speech", c.id, first, c.chime)
		}
	}
	// The request's volume applies to its chime; first audio is the
	// speech's.
	writes := say("v", `{"id":"v","text":"Quiet.","chime":"door","volume":0.5}`)
	if got := writes[0].Samples[0]; got != 5 && got != 6 {
		t.Errorf("chime at volume 0.5: %d, want about half of 11", got)
	}
	h.send("say", `{"id":"x","text":"Hi.","chime":"fanfare"}`)
	if e := h.waitEvent("x", EventFailed); e.Reason != ReasonBadField {
		t.Errorf("an unknown chime: %+v", e)
	}
}
