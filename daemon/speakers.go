package daemon

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/speech"
)

// Speakers are voices cloned from reference recordings. A speaker belongs
// to the owner on whose topic it was enrolled (mynah/<node>/u/<owner>/...);
// one enrolled on mynah/<node>/speaker/enroll is shared. A request may use
// its owner's speakers and the shared ones; a request on the plain say
// topic only the shared ones. The broker's ACL decides who may publish on
// an owner's topics, so the daemon trusts the topic.
//
// The reference audio lives only in memory, for the time it takes to
// compute the embedding: it is never written to disk.

// Limits of speaker/enroll.
const (
	// MaxEnrollBytes bounds an enroll payload: 30 s of 48 kHz stereo
	// 16-bit WAV in base64 fits with room to spare.
	MaxEnrollBytes = 8 << 20
	// MaxReferenceBytes bounds the decoded WAV file.
	MaxReferenceBytes = 6 << 20
	// MaxReferenceDuration bounds the reference audio's declared length,
	// checked before any sample is read; the voice's encoder may accept
	// less (typically 1–30 s) and says so.
	MaxReferenceDuration = 60 * time.Second
	// maxPendingEnrolls bounds enrollments waiting for the encoder; more
	// fail with reason busy.
	maxPendingEnrolls = 4
)

// Enrollment is a speaker/enroll command and SpeakerInfo an enrolled
// speaker (package speech's types, which the engine speaks too).
type (
	Enrollment  = speech.Enrollment
	SpeakerInfo = speech.SpeakerInfo
)

// SpeakerStore computes, keeps and forgets speakers. Enroll may take a
// while (it runs the speaker encoder) and is called off the MQTT handler,
// at most one at a time.
type SpeakerStore interface {
	// Enroll stores the speaker (replacing one of the same owner and
	// name) and returns it with the speakers evicted to make room.
	Enroll(ctx context.Context, e Enrollment) (SpeakerInfo, []SpeakerInfo, error)
	// Forget removes owner's speaker name; false if there was none.
	Forget(owner, name string) (bool, error)
	// List returns every kept speaker.
	List() ([]SpeakerInfo, error)
}

// enrollPayload is the JSON of speaker/enroll.
type enrollPayload struct {
	ID    *string `json:"id"`
	Name  *string `json:"name"`
	Voice *string `json:"voice"`
	Audio *string `json:"audio"` // base64 (standard, padding optional) of a WAV file
}

// DecodeEnroll parses a speaker/enroll payload: a JSON object with name,
// audio (a WAV file in base64, white space ignored) and optionally id and
// voice. A leading byte-order mark is ignored. The WAV is read by the
// strict parser with MaxReferenceBytes and MaxReferenceDuration, taking
// the header a recorder writing to a pipe leaves (sizes 0 or 0xFFFFFFFF:
// the audio runs to the end). Errors are *DecodeError (reasons too_large,
// invalid_json, bad_field, bad_name, bad_audio); the returned Enrollment
// carries the payload's id whenever it has a valid one, whatever the
// error.
func DecodeEnroll(payload []byte) (Enrollment, error) {
	e, err := decodeEnroll(payload)
	if err != nil && e.ID == "" {
		e.ID = peekID(payload)
	}
	return e, err
}

func decodeEnroll(payload []byte) (Enrollment, error) {
	var e Enrollment
	if len(payload) > MaxEnrollBytes {
		return e, decodeErr(ReasonTooLarge, "", "payload is %d bytes, over the limit of %d (MaxEnrollBytes)", len(payload), MaxEnrollBytes)
	}
	trimmed := trimPayload(payload)
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return e, decodeErr(ReasonInvalidJSON, "", `want a JSON object {"name": ..., "audio": "<base64 WAV>"}`)
	}
	var p enrollPayload
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	if err := dec.Decode(&p); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return e, decodeErr(ReasonBadField, te.Field, "%s must be a string", te.Field)
		}
		return e, decodeErr(ReasonInvalidJSON, "", "%v", err)
	}
	if dec.More() {
		return e, decodeErr(ReasonInvalidJSON, "", "data after the JSON object")
	}
	if p.ID != nil {
		if err := ValidateName(*p.ID); err != nil {
			return e, &DecodeError{Reason: ReasonBadName, Field: "id", Err: err}
		}
		e.ID = *p.ID
	}
	if p.Name == nil {
		return e, decodeErr(ReasonBadField, "name", "name is required")
	}
	if err := ValidateName(*p.Name); err != nil {
		return e, &DecodeError{Reason: ReasonBadName, Field: "name", Err: err}
	}
	e.Name = *p.Name
	if p.Voice != nil && *p.Voice != "" {
		if err := ValidateName(*p.Voice); err != nil {
			return e, &DecodeError{Reason: ReasonBadName, Field: "voice", Err: err}
		}
		e.Voice = *p.Voice
	}
	if p.Audio == nil {
		return e, decodeErr(ReasonBadField, "audio", "audio (a WAV file in base64) is required")
	}
	wav, err := decodeBase64(*p.Audio)
	if err != nil {
		return e, decodeErr(ReasonBadAudio, "audio", "not base64: %v", err)
	}
	pcm, err := audio.DecodeWAV(wav, &audio.WAVOptions{MaxBytes: MaxReferenceBytes, MaxDuration: MaxReferenceDuration, Streaming: true})
	if err != nil {
		return e, &DecodeError{Reason: ReasonBadAudio, Field: "audio", Err: err}
	}
	if len(pcm.Samples) == 0 {
		return e, decodeErr(ReasonBadAudio, "audio", "the WAV file holds no audio")
	}
	e.Audio = pcm
	return e, nil
}

// decodeBase64 takes standard base64 with or without padding, ignoring
// white space anywhere: base64 tools wrap at 76 columns, and scripts that
// paste their output into JSON leave the line breaks, the indentation and
// a trailing newline.
func decodeBase64(s string) ([]byte, error) {
	clean := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case ' ', '\t', '\n', '\r', '\f', '\v':
		default:
			clean = append(clean, c)
		}
	}
	for len(clean) > 0 && clean[len(clean)-1] == '=' {
		clean = clean[:len(clean)-1]
	}
	out := make([]byte, base64.RawStdEncoding.DecodedLen(len(clean)))
	n, err := base64.RawStdEncoding.Decode(out, clean)
	return out[:n], err
}

// enroll runs a speaker/enroll command on its own goroutine: the encoder
// may take most of a second on a small CPU.
func (d *Daemon) enroll(payload []byte, owner string) {
	const command = "speaker/enroll"
	if d.opts.Speakers == nil {
		d.emitFailed(peekID(payload), owner, command, ReasonNotSupported, errors.New("no voice here can clone speakers"))
		return
	}
	if d.enrolling.Add(1) > maxPendingEnrolls {
		d.enrolling.Add(-1)
		d.emitFailed(peekID(payload), owner, command, ReasonBusy, fmt.Errorf("%d enrollments are already waiting", maxPendingEnrolls))
		return
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		defer d.enrolling.Add(-1)
		d.enrollMu.Lock()
		defer d.enrollMu.Unlock()
		e, err := DecodeEnroll(payload)
		if err != nil {
			d.emitFailed(e.ID, owner, command, decodeReason(err), err)
			return
		}
		e.Owner = owner
		ctx, cancel := context.WithTimeout(d.bgCtx, time.Minute)
		defer cancel()
		info, evicted, err := d.opts.Speakers.Enroll(ctx, e)
		e.Audio = audio.PCM{} // the reference goes as soon as it is used
		if err != nil {
			d.emitFailed(e.ID, owner, command, speakerReason(err), err)
			return
		}
		d.log.Info("speaker enrolled", "owner", owner, "speaker", info.Name, "voice", info.Voice)
		d.emit(Event{ID: e.ID, State: EventDone, Command: command, Owner: owner, Speaker: info.Name})
		owners := []string{owner}
		for _, x := range evicted {
			d.log.Info("speaker evicted", "owner", x.Owner, "speaker", x.Name)
			d.emit(Event{State: EventEvicted, Owner: x.Owner, Speaker: x.Name})
			owners = append(owners, x.Owner)
		}
		d.publishSpeakerLists(owners...)
	}()
}

// forget runs a speaker/forget command; the payload is the speaker's name.
func (d *Daemon) forget(payload []byte, owner string) {
	const command = "speaker/forget"
	if d.opts.Speakers == nil {
		d.emitFailed("", owner, command, ReasonNotSupported, errors.New("no voice here can clone speakers"))
		return
	}
	name := string(trimPayload(payload))
	if err := ValidateName(name); err != nil {
		d.emitFailed("", owner, command, ReasonBadName, err)
		return
	}
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		ok, err := d.opts.Speakers.Forget(owner, name)
		switch {
		case err != nil:
			d.emitFailed("", owner, command, ReasonCache, err)
		case !ok:
			d.emitFailed("", owner, command, ReasonUnknownSpeaker, fmt.Errorf("%w %q", ErrUnknownSpeaker, name))
		default:
			d.log.Info("speaker forgotten", "owner", owner, "speaker", name)
			d.emit(Event{State: EventDone, Command: command, Owner: owner, Speaker: name})
			d.publishSpeakerLists(owner)
		}
	}()
}

// publishSpeakerLists sends the retained speaker list of each owner (""
// = the shared list on mynah/<node>/speakers): the names only, so that
// an automation can offer them. With the documented ACL an owner can read
// only their own list.
func (d *Daemon) publishSpeakerLists(owners ...string) {
	all, err := d.opts.Speakers.List()
	if err != nil {
		d.log.Warn("list speakers", "err", err)
		return
	}
	slices.Sort(owners)
	for _, owner := range slices.Compact(owners) {
		list := []SpeakerInfo{}
		for _, s := range all {
			if s.Owner == owner {
				list = append(list, s)
			}
		}
		b, err := json.Marshal(list)
		if err != nil {
			continue
		}
		topic := d.topics.base + "/speakers"
		if owner != "" {
			topic = d.topics.ownerPrefix + owner + "/speakers"
		}
		d.outboxRetained(topic, b)
	}
}

// publishAllSpeakerLists sends every owner's list, at start and after
// every (re)connect.
func (d *Daemon) publishAllSpeakerLists() {
	if d.opts.Speakers == nil {
		return
	}
	all, err := d.opts.Speakers.List()
	if err != nil {
		d.log.Warn("list speakers", "err", err)
		return
	}
	owners := []string{""}
	for _, s := range all {
		owners = append(owners, s.Owner)
	}
	d.publishSpeakerLists(owners...)
}

func decodeReason(err error) string {
	if de := (*DecodeError)(nil); errors.As(err, &de) {
		return de.Reason
	}
	return ReasonInvalidJSON
}

// speakerReason maps a SpeakerStore or Engine error to an event reason:
// its own (Reasoner), else synthesis.
func speakerReason(err error) string { return ReasonOf(err, ReasonSynthesis) }
