package daemon

import (
	"slices"
)

const cmdReload = "voices/reload"

// ReloadVoices rereads the engine's voices (a voice copied into its
// directory, replaced or removed) and announces the result: the voice
// select's options in a new discovery payload, voices in the state, and a
// done event for voices/reload with what changed. mynahd calls it when
// the voices directory changes; mynah/<node>/voices/reload does the same
// on demand (and is always answered; a reload of the watch that finds
// nothing changed announces nothing). It returns at once; reloads asked
// for while one runs are folded into one more.
func (d *Daemon) ReloadVoices() { d.reloadVoices(false) }

func (d *Daemon) reloadVoices(asked bool) {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.reloadAsked = d.reloadAsked || asked
	if d.reloading {
		d.reloadAgain = true
		d.mu.Unlock()
		return
	}
	d.reloading = true
	d.background.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.background.Done()
		for again := true; again; {
			d.mu.Lock()
			asked := d.reloadAsked
			d.reloadAsked = false
			d.mu.Unlock()
			d.reloadOnce(asked)
			d.mu.Lock()
			again, d.reloadAgain = d.reloadAgain, false
			if !again {
				d.reloading = false
			}
			d.mu.Unlock()
		}
	}()
}

func (d *Daemon) reloadOnce(asked bool) {
	var changes VoiceChanges
	if r, ok := d.opts.Engine.(VoiceReloader); ok {
		var err error
		if changes, err = r.ReloadVoices(); err != nil {
			d.emitFailed("", "", cmdReload, ReasonSynthesis, err)
			return
		}
	}
	voices := d.opts.Engine.Voices()
	d.mu.Lock()
	same := slices.Equal(voices, d.voices)
	d.voices = voices
	if d.voice != "" && !slices.Contains(voices, d.voice) {
		d.log.Warn("the voice chosen with voice/set is gone: back to the default voice", "voice", d.voice)
		d.voice = ""
	}
	d.mu.Unlock()
	if !asked && same && !changes.Any() {
		return
	}
	d.log.Info("voices reloaded", "voices", voices, "added", changes.Added, "changed", changes.Changed, "removed", changes.Removed)
	d.emit(Event{State: EventDone, Command: cmdReload, Voices: &changes})
	signal(d.discoveryDue) // the select's options, then the state
}
