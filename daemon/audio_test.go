package daemon

import (
	"sync"
	"testing"
)

// A lost audio device is a warning event and the state's audio object;
// its return clears the state.
func TestAudioChanged(t *testing.T) {
	var mu sync.Mutex
	st := AudioStatus{Available: true, Since: t0}
	h := newHarness(t, func(o *Options) {
		o.Audio = func() AudioStatus { mu.Lock(); defer mu.Unlock(); return st }
	}).start()
	waitFor(t, "first state", func() bool { return h.lastState().Audio != nil })

	mu.Lock()
	st = AudioStatus{Error: "no such device", Since: t0}
	mu.Unlock()
	h.d.AudioChanged(st)
	waitFor(t, "warning", func() bool {
		for _, e := range h.events() {
			if e.State == EventWarning && e.Reason == ReasonAudioUnavailable && e.Error == "no such device" {
				return true
			}
		}
		return false
	})
	waitFor(t, "state says unavailable", func() bool {
		s := h.lastState()
		return s.Audio != nil && !s.Audio.Available && s.Audio.Error == "no such device" &&
			s.LastError != nil && s.LastError.Reason == ReasonAudioUnavailable
	})

	mu.Lock()
	st = AudioStatus{Available: true, Since: t0}
	mu.Unlock()
	h.d.AudioChanged(st)
	waitFor(t, "state says available", func() bool { s := h.lastState(); return s.Audio != nil && s.Audio.Available })
}
