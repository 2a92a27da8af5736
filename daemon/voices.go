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
	voiceChanged := d.setVoicesLocked(voices)
	d.mu.Unlock()
	if !asked && same && !changes.Any() {
		if voiceChanged {
			d.markState()
		}
		return
	}
	d.log.Info("voices reloaded", "voices", voices, "added", changes.Added, "changed", changes.Changed, "removed", changes.Removed)
	d.emit(Event{State: EventDone, Command: cmdReload, Voices: &changes})
	signal(d.discoveryDue) // the select's options, then the state
}

// setVoicesLocked takes voices as the engine's list and keeps the default
// voice one of them, since Home Assistant's voice select refuses a state
// that is not one of its options (it logs "Invalid option" and goes on
// showing the old one). The voice gone (its directory renamed or
// removed), the default becomes Options.DefaultVoice, or that gone too
// the first voice left; with no voice left it is "" and the select is
// removed (discoveryPayload); voices back, the default again. A default
// left to the engine (Options.DefaultVoice and the voice "") stays so.
// It says whether the default voice changed. d.mu is held.
func (d *Daemon) setVoicesLocked(voices []string) bool {
	d.voices = voices
	if slices.Contains(voices, d.voice) || d.voice == "" && d.opts.DefaultVoice == "" {
		return false
	}
	was := d.voice
	switch {
	case slices.Contains(voices, d.opts.DefaultVoice):
		d.voice = d.opts.DefaultVoice
	case len(voices) > 0:
		d.voice = voices[0]
	default:
		d.voice = ""
	}
	switch {
	case d.voice == was: // still none
		return false
	case d.voice == "":
		d.log.Warn("the default voice is gone and no voice is left: requests fail until one is installed", "voice", was)
	case was == "":
		d.log.Info("voices installed again: default voice set", "voice", d.voice)
	default:
		d.log.Warn("the default voice is gone: falling back", "voice", was, "fallback", d.voice)
	}
	return true
}
