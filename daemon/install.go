package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Installer installs voices of a catalog into the engine's voices
// (mynahd: the Piper voice catalog, with voices.download on).
type Installer interface {
	// Installable reports whether Install can install the voice named
	// exactly name (a catalog key), installed already or not. It is
	// called on the MQTT handler's goroutine with the daemon's lock held:
	// it must answer from memory, never from the network.
	Installable(name string) bool
	// Install installs the voice name asks for (a key; for voice/install
	// also whatever else the catalog resolves, an alias or a language)
	// and returns its name once the engine offers it; a voice installed
	// already returns at once. However many calls wait for one voice, it
	// is downloaded once. A call whose ctx ends first returns ctx's
	// error, and the install goes on: the voice is there for the next
	// request. progress, when not nil, hears of the download while this
	// call waits; it must not block. A name the catalog lacks wraps
	// ErrUnknownVoice, its message naming the nearest names; other
	// failures are reported as ReasonDownload unless they carry a
	// reason of their own.
	Install(ctx context.Context, name string, progress func(InstallProgress)) (string, error)
}

// InstallProgress is one file's download, in a downloading event.
type InstallProgress struct {
	File  string `json:"file"`
	Bytes int64  `json:"bytes"`
	Total int64  `json:"total"` // -1 when unknown
}

const cmdInstall = "voice/install"

// maxInstallBytes bounds a voice/install payload: a name and an id in
// JSON, with room for white space.
const maxInstallBytes = 512

// awaitVoiceLocked holds r, whose voice is not installed but that the
// Installer can install, outside the queue while the voice is installed,
// so that the queue plays other requests meanwhile. The voice there in
// time, r is queued like any other request; else it fails
// voice_downloading (ErrVoiceDownloading) and the install goes on. A
// spooled r keeps its record meanwhile, as a queued one does; replayed
// says r came back from the spool after a restart. d.mu is held.
func (d *Daemon) awaitVoiceLocked(r Request, replayed bool) {
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		ctx, cancel := context.WithTimeout(d.bgCtx, d.opts.DownloadTimeout)
		_, err := d.opts.Installer.Install(ctx, r.Voice, nil)
		timedOut := err != nil && errors.Is(err, context.DeadlineExceeded) && d.bgCtx.Err() == nil
		cancel()
		var voices []string
		if err == nil {
			voices = d.opts.Engine.Voices()
		}
		d.mu.Lock()
		defer d.mu.Unlock()
		switch {
		case d.closed:
			d.emitDropped(&r, ReasonShutdown) // a spooled one is spoken after the restart
		case timedOut:
			d.failRequest(&r, ReasonVoiceDownloading, fmt.Errorf("%w: %q is not installed after %s; it goes on downloading, ask again soon",
				ErrVoiceDownloading, r.Voice, d.opts.DownloadTimeout))
		case err != nil:
			d.failRequest(&r, ReasonOf(err, ReasonDownload), fmt.Errorf("install voice %q: %w", r.Voice, err))
		default:
			// The next say of this voice finds it at once, and the
			// voice select offers it.
			d.setVoicesLocked(voices)
			signal(d.discoveryDue)
			if !d.pushLocked(r, replayed) {
				d.release(&r) // spooled before its duplicate was known
			}
			return
		}
		d.markState()
	}()
}

// awaitsInstall reports whether r names a voice that is not installed
// but that the Installer can install. d.mu is held.
func (d *Daemon) awaitsInstall(r *Request) bool {
	return r.Voice != "" && !slices.Contains(d.voices, r.Voice) && d.opts.Installer != nil && d.opts.Installer.Installable(r.Voice)
}

// installVoice runs a voice/install command: the voice is installed on
// a goroutine of its own, with downloading events while it downloads,
// and answered by a done event naming the voice, or a failed one. An id
// in the payload marks those answers, and makes them terminal (sent
// again until the broker has them).
func (d *Daemon) installVoice(payload []byte) {
	name, id, err := ParseInstallPayload(payload)
	if err != nil {
		reason := ReasonBadName
		if de := (*DecodeError)(nil); errors.As(err, &de) {
			reason = de.Reason
		}
		d.emitFailed(id, "", cmdInstall, reason, err)
		return
	}
	if d.opts.Installer == nil {
		d.emitFailed(id, "", cmdInstall, ReasonNotSupported, errors.New("voice downloads are off (voices.download: false): install it with mynah voice install"))
		return
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return
	}
	d.background.Add(1)
	d.mu.Unlock()
	go func() {
		defer d.background.Done()
		progress := func(p InstallProgress) {
			d.emit(Event{ID: id, State: EventDownloading, Command: cmdInstall, Voice: name, Download: &p})
		}
		key, err := d.opts.Installer.Install(d.bgCtx, name, progress)
		if err != nil {
			if d.bgCtx.Err() != nil {
				return // shutting down: cut, not failed
			}
			d.emitFailed(id, "", cmdInstall, ReasonOf(err, ReasonDownload), fmt.Errorf("install voice %q: %w", name, err))
			return
		}
		d.log.Info("voice installed", "voice", key, "asked", name)
		signal(d.discoveryDue) // the select's options, then the state
		d.emit(Event{ID: id, State: EventDone, Command: cmdInstall, Voice: key})
	}()
}

// ParseInstallPayload reads a voice/install payload: the voice as plain
// text (a catalog key, an alias or a language), or a JSON object
// {"name": "...", "id": "..."} whose id marks the answers. Both must be
// names (ValidateName). The id is returned even when the name is bad, so
// the failure can be answered under it.
func ParseInstallPayload(payload []byte) (name, id string, err error) {
	if len(payload) > maxInstallBytes {
		return "", "", decodeErr(ReasonTooLarge, "", "payload is %d bytes, over the limit of %d", len(payload), maxInstallBytes)
	}
	text := string(trimPayload(payload))
	if strings.HasPrefix(text, "{") {
		var v struct {
			Name *string `json:"name"`
			ID   *string `json:"id"`
		}
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			return "", "", decodeErr(ReasonInvalidJSON, "", "%v", err)
		}
		if v.ID != nil {
			if err := ValidateName(*v.ID); err != nil {
				return "", "", decodeErr(ReasonBadName, "id", "id: %v", err)
			}
			id = *v.ID
		}
		if v.Name == nil {
			return "", id, decodeErr(ReasonBadName, "name", "the JSON object has no \"name\" string: name the voice to install")
		}
		text = strings.TrimSpace(*v.Name)
	}
	if err := ValidateName(text); err != nil {
		return "", id, decodeErr(ReasonBadName, "name", "voice: %v", err)
	}
	return text, id, nil
}
