package daemon

import (
	"context"
	"fmt"

	"github.com/mynah-tts/mynah/audio"
)

// Chime names with a meaning of their own in a say's "chime" field.
const (
	ChimeNone    = "none"    // "chime": false
	ChimeDefault = "default" // "chime": true: the priority's chime, else DefaultChime
	// DefaultChime is the chime of "chime": true when the priority has
	// none: mynahd's built-in single tone.
	DefaultChime = "ding"
)

// Chimes holds the chimes a request may name, decoded once and kept in
// memory: playing one costs no file access.
type Chimes interface {
	// Chime returns the named chime; false when there is none by that name.
	Chime(name string) (audio.PCM, bool)
}

// chimeName says which chime r plays ("" for none).
func (d *Daemon) chimeName(r *Request) string {
	switch r.Chime {
	case ChimeNone:
		return ""
	case "":
		return d.opts.PriorityChimes[r.Priority]
	case ChimeDefault:
		if name := d.opts.PriorityChimes[r.Priority]; name != "" {
			return name
		}
		return DefaultChime
	}
	return r.Chime
}

// checkChime refuses a request that names a chime there is not.
func (d *Daemon) checkChime(r *Request) error {
	name := d.chimeName(r)
	if name == "" {
		return nil
	}
	if d.opts.Chimes != nil {
		if _, ok := d.opts.Chimes.Chime(name); ok {
			return nil
		}
	}
	return decodeErr(ReasonBadField, "chime", "no chime %q is configured (announce.chimes)", name)
}

// chimePCM returns j's chime; false when it plays none.
func (d *Daemon) chimePCM(j *job) (audio.PCM, bool) {
	name := d.chimeName(&j.req)
	if name == "" || d.opts.Chimes == nil {
		return audio.PCM{}, false
	}
	pcm, ok := d.opts.Chimes.Chime(name)
	return pcm, ok && len(pcm.Samples) > 0
}

// startChime plays r's chime into the sink while the engine synthesizes
// the first sentence: the returned channel gives the write's result (nil
// at once without a chime). It takes the request's volume, and is not the
// request's first audio: started and first_audio_ms are the speech's.
func (d *Daemon) startChime(ctx context.Context, j *job, timed bool) <-chan error {
	done := make(chan error, 1)
	pcm, ok := d.chimePCM(j)
	if !ok || timed {
		done <- nil // none, or placed with the first sentence (placeStart)
		return done
	}
	name := d.chimeName(&j.req)
	vol := d.currentVolume()
	if j.req.Volume != nil {
		vol = *j.req.Volume
	}
	go func() {
		if err := d.opts.Sink.Write(ctx, audio.ApplyVolume(pcm, vol)); err != nil {
			done <- &jobError{ReasonAudio, fmt.Errorf("write chime %s: %w", name, err)}
			return
		}
		done <- nil
	}()
	return done
}
