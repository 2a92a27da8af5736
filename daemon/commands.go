package daemon

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
)

// handle is the Transport's message handler. It runs on the MQTT client's
// goroutine, so it only decodes, takes d.mu briefly and queues events; it
// never publishes or waits.
func (d *Daemon) handle(m Message) {
	ack := m.Ack
	if ack == nil {
		ack = func() {}
	}
	if m.Topic == d.topics.say && !m.Retained {
		d.say(m.Payload, "", "", m.Redelivered, ack) // acknowledges once spooled
		return
	}
	group, gcmd, isGroup := d.groupCommand(m.Topic)
	if isGroup && gcmd == groupSay && !m.Retained {
		d.say(m.Payload, "", group, m.Redelivered, ack)
		return
	}
	owner, command, isOwner := d.topics.owner(m.Topic)
	if isOwner && command == cmdSay && !m.Retained {
		d.say(m.Payload, owner, "", m.Redelivered, ack)
		return
	}
	// Control commands act at once and are not spooled: a stop or a
	// volume change replayed after a restart would be wrong.
	defer ack()
	if m.Topic == d.topics.haStatus {
		// Home Assistant (re)started and asks devices to announce
		// themselves: a broker without persistence may have lost the
		// retained discovery.
		if strings.TrimSpace(string(m.Payload)) == "online" {
			d.Connected()
		}
		return
	}
	if m.Retained {
		// A retained command would replay on every reconnect: "say the door
		// is open" forever.
		d.stats.retainedIgnored.Add(1)
		d.log.Debug("ignoring retained command", "topic", m.Topic)
		return
	}
	if isGroup {
		switch gcmd {
		case groupStop:
			d.stop()
		case groupVolume:
			d.setVolume(m.Payload)
		case groupSync:
			d.groupSynced(group, m.Payload)
		default:
			d.log.Debug("ignoring message on unknown group topic", "topic", m.Topic)
		}
		return
	}
	switch m.Topic {
	case d.topics.stop:
		d.stop()
	case d.topics.volume:
		d.setVolume(m.Payload)
	case d.topics.voice:
		d.setVoice(m.Payload)
	case d.topics.purge:
		d.purge(m.Payload)
	case d.topics.enroll:
		d.enroll(m.Payload, "")
	case d.topics.forget:
		d.forget(m.Payload, "")
	case d.topics.reload:
		d.reloadVoices(true)
	case d.topics.install:
		d.installVoice(m.Payload)
	default:
		if isOwner {
			if err := ValidateName(owner); err != nil {
				id := ""
				if command == cmdEnroll {
					id = peekID(m.Payload)
				}
				d.emitFailed(id, "", command, ReasonBadName, fmt.Errorf("owner: %w", err))
				return
			}
			switch command {
			case cmdEnroll:
				d.enroll(m.Payload, owner)
			case cmdForget:
				d.forget(m.Payload, owner)
			}
			return
		}
		d.log.Debug("ignoring message on unknown topic", "topic", m.Topic)
	}
}

func (d *Daemon) say(payload []byte, owner, group string, redelivered bool, ack func()) {
	d.stats.received.Add(1)
	r, err := DecodeSay(payload, d.now(), &d.decode)
	r.Group = group
	if group != "" && r.idGenerated {
		r.textKey = textKey(payload)
	}
	if owner != "" {
		if oerr := ValidateName(owner); oerr != nil {
			err, owner = &DecodeError{Reason: ReasonBadName, Field: "owner", Err: oerr}, ""
		}
	}
	r.Owner = owner
	if err != nil {
		reason := ReasonInvalidJSON
		if de := (*DecodeError)(nil); errors.As(err, &de) {
			reason = de.Reason
		}
		d.refuse(&r, reason, err)
		ack()
		return
	}
	if !r.PlayAt.IsZero() && d.now().Sub(r.PlayAt) > d.opts.MaxLate {
		d.refuse(&r, ReasonLate, fmt.Errorf("play_at was %.3f s ago, later than the %v a request may start late (groups.max_late)", d.now().Sub(r.PlayAt).Seconds(), d.opts.MaxLate))
		ack()
		return
	}
	r.redelivered = redelivered
	if r.TTL == 0 {
		r.TTL = d.opts.DefaultTTL
	}
	if d.opts.Spool != nil {
		r.spool = newSpoolState(&r)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		// Not acknowledged: the broker keeps it for the next start.
		d.log.Debug("ignoring say during shutdown", "id", r.ID)
		return
	}
	install := false
	if r.Voice != "" && !slices.Contains(d.voices, r.Voice) {
		if d.opts.Installer == nil || !d.opts.Installer.Installable(r.Voice) {
			d.refuse(&r, ReasonUnknownVoice, fmt.Errorf("%w %q", ErrUnknownVoice, r.Voice))
			ack()
			return
		}
		install = true
	}
	if err := d.checkChime(&r); err != nil {
		d.refuse(&r, ReasonBadField, err)
		ack()
		return
	}
	d.agreeLocked(&r)
	if install {
		d.awaitVoiceLocked(r, false)
		if r.spool == nil {
			ack()
			return
		}
		d.spool(&r, payload, ack)
		return
	}
	if !d.pushLocked(r, false) || r.spool == nil {
		ack()
		return
	}
	// Spooled even when the queue pushed it out at once: its dropped
	// event's release waits for the write, so the record cannot outlive it.
	d.spool(&r, payload, ack)
}

// refuse reports a say that is not queued.
func (d *Daemon) refuse(r *Request, reason string, err error) {
	e := d.failedEvent(r.ID, r.Owner, "", reason, err)
	e.Group = r.Group
	d.emit(e)
}

// pushLocked queues r, reports what happened as events, and says whether
// r was new (not a duplicate). d.mu is held.
func (d *Daemon) pushLocked(r Request, replayed bool) bool {
	res := d.queue.push(r, r.Received)
	if res.duplicate {
		d.stats.duplicates.Add(1)
		d.log.Debug("ignoring duplicate id", "id", r.ID)
		if replayed {
			d.release(&r)
		}
		return false
	}
	if res.accepted {
		d.stats.queued.Add(1)
		d.emit(Event{ID: r.ID, State: EventQueued, Owner: r.Owner, Replayed: replayed})
	}
	for _, x := range res.dropped {
		d.emitDropped(&x.req, x.reason)
	}
	if res.accepted && r.Interrupt {
		d.cutLocked(ReasonInterrupted)
	}
	signal(d.work)
	d.markState()
	return true
}

// stop drops everything queued and cuts what is playing.
func (d *Daemon) stop() {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.queue.clear() {
		d.emitDropped(&r, ReasonStopped)
	}
	d.cutLocked(ReasonStopped)
	d.markState()
}

// cutLocked stops the playing request at once: its context ends, which
// makes the worker call Sink.Abort. The first reason wins.
func (d *Daemon) cutLocked(reason string) {
	if j := d.current; j != nil && j.cutReason == "" {
		j.cutReason = reason
		j.cancel()
	}
}

func (d *Daemon) setVolume(payload []byte) {
	v, err := ParseVolume(payload)
	if err != nil {
		d.emitFailed("", "", "volume/set", ReasonBadVolume, err)
		return
	}
	d.volume.Store(math.Float64bits(v))
	d.log.Info("volume set", "volume", v)
	d.markState()
}

// setVoice runs a voice/set command. The voice becomes the default only
// once the engine has checked it (loaded it, typically): a voice whose
// files are gone must be refused now, not fail every request after it.
// The checks run off the MQTT handler, one at a time, in order; a
// voice/set that arrives while another waits replaces it (a Home
// Assistant select clicked through several voices loads only the last).
func (d *Daemon) setVoice(payload []byte) {
	name := string(trimPayload(payload))
	if err := ValidateName(name); err != nil {
		d.emitFailed("", "", "voice/set", ReasonBadName, err)
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if !slices.Contains(d.voices, name) {
		d.emitFailed("", "", "voice/set", ReasonUnknownVoice, fmt.Errorf("%w %q", ErrUnknownVoice, name))
		return
	}
	if d.closed {
		return
	}
	d.voiceWanted = name
	if d.voiceChecking {
		return
	}
	d.voiceChecking = true
	d.background.Add(1)
	go d.checkVoices()
}

// checkVoices checks the voices voice/set asks for until none waits.
func (d *Daemon) checkVoices() {
	defer d.background.Done()
	for {
		d.mu.Lock()
		name := d.voiceWanted
		d.voiceWanted = ""
		if name == "" {
			d.voiceChecking = false
			d.mu.Unlock()
			return
		}
		d.mu.Unlock()

		ctx, cancel := context.WithTimeout(d.bgCtx, voiceCheckTimeout)
		err := d.opts.Engine.CheckVoice(ctx, name)
		cancel()
		if err != nil {
			if d.bgCtx.Err() != nil {
				return // shutting down: the check was cut, not failed
			}
			d.emitFailed("", "", "voice/set", speakerReason(err), fmt.Errorf("voice %q: %w", name, err))
			continue
		}
		d.mu.Lock()
		gone := !slices.Contains(d.voices, name)
		if !gone {
			d.voice = name
		}
		d.mu.Unlock()
		if gone {
			// A reload took it away while it loaded: the select no
			// longer offers it.
			d.emitFailed("", "", "voice/set", ReasonUnknownVoice, fmt.Errorf("%w %q", ErrUnknownVoice, name))
			continue
		}
		d.log.Info("default voice set", "voice", name)
		d.markState()
	}
}
