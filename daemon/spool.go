package daemon

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// The spool makes "accepted" mean "will be spoken, crash or not", and
// "answered" mean "the answer reaches the broker, crash or not". A say
// command is queued at once (a cached phrase starts playing in about a
// millisecond, before a disk sync could finish) and written to the spool
// on its own goroutine; the MQTT message is acknowledged only once that
// write is durable, so a crash before it leaves the message with the
// broker, which sends it again. When the request is finished, failed or
// dropped, its record is replaced by its terminal event (after the first
// write has completed), and that record is deleted once the broker has
// acknowledged the event (outbox.go). At start, Run replays what the
// spool holds before it subscribes: terminal events are published again,
// marked redelivered; unexpired requests are queued again in arrival
// order, the expired ones get dropped events. A request that was playing
// when the daemon died is spoken again from its start.
//
// Shutdown does not drop spooled requests: they stay on disk and are
// spoken after the restart, if still within their ttl. Every accepted
// request therefore ends with exactly one finished, failed or dropped
// event, across restarts; a copy marked redelivered may follow it when a
// crash or a lost connection hid the broker's acknowledgement.
//
// A request whose id was made up by the daemon cannot be recognized when
// the broker sends its message again, so a crash between the spool write
// and the acknowledgement (a window of one network round trip) can speak
// it twice; requests with an id are spoken once (the replayed id enters
// the duplicate filter before the broker's copy arrives).

// The first byte of a spool record says what it holds.
const (
	spoolRecordVersion = 1 // an accepted request (encodeSpoolRecord)
	spoolRecordEvent   = 2 // its terminal event, waiting for the broker (JSON)
)

// maxSpoolRecord bounds a record: the largest say payload the daemon
// accepts plus the id and owner.
const maxSpoolRecord = 1 << 20

// errBadSpoolRecord reports a spool record this version cannot read.
var errBadSpoolRecord = errors.New("bad spool record")

// spoolState follows one request's spool record.
type spoolState struct {
	key      string
	received time.Time
	done     chan struct{} // closed when Put has returned
	ok       bool          // Put succeeded; read after done
	once     sync.Once     // the record is settled or released once
}

func newSpoolState(r *Request) *spoolState {
	return &spoolState{key: spoolKey(r), received: r.Received, done: make(chan struct{})}
}

// spoolKey names a request's record. The id alone is not unique over
// time: a publisher may reuse it once the duplicate window has passed.
func spoolKey(r *Request) string {
	return strconv.FormatInt(r.Received.UnixNano(), 36) + "-" + r.ID
}

// spooledID is the request id in a record's key, for reporting a record
// that cannot be read: the key without spoolKey's receive time. A key of
// another form (an older daemon's, or one the prefix does not match) is
// reported as it is.
func spooledID(key string, received time.Time) string {
	if at, id, ok := strings.Cut(key, "-"); ok && id != "" && at == strconv.FormatInt(received.UnixNano(), 36) {
		return id
	}
	return key
}

// encodeSpoolRecord stores what replay needs beyond the payload: the id
// (the daemon's own, when the payload had none) and the owner.
//
//	version (1) | flags (bit 0: id generated) | uvarint len, id | uvarint len, owner | payload
func encodeSpoolRecord(r *Request, payload []byte) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen16+len(r.ID)+len(r.Owner)+len(payload))
	var flags byte
	if r.idGenerated {
		flags |= spoolIDGenerated
	}
	if r.Group != "" {
		flags |= spoolGroup
	}
	b = append(b, spoolRecordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = binary.AppendUvarint(b, uint64(len(r.Owner)))
	b = append(b, r.Owner...)
	if r.Group != "" {
		b = binary.AppendUvarint(b, uint64(len(r.Group)))
		b = append(b, r.Group...)
	}
	return append(b, payload...)
}

// Flags of a spool record: the id was made up, a group field follows the
// owner (a group announcement; records of mynahd before groups have none).
const (
	spoolIDGenerated = 1 << iota
	spoolGroup
)

// spooledRequest is a decoded spool record.
type spooledRequest struct {
	id          string
	idGenerated bool
	owner       string
	group       string
	payload     []byte
}

// decodeSpoolRecord reads a record written by encodeSpoolRecord. The file
// may be damaged or come from another version: every length is checked,
// and names must be valid as they were when the request was accepted.
func decodeSpoolRecord(b []byte) (spooledRequest, error) {
	var s spooledRequest
	bad := func(format string, args ...any) (spooledRequest, error) {
		return spooledRequest{}, fmt.Errorf("%w: "+format, append([]any{errBadSpoolRecord}, args...)...)
	}
	switch {
	case len(b) > maxSpoolRecord:
		return bad("%d bytes, over the limit of %d", len(b), maxSpoolRecord)
	case len(b) < 2:
		return bad("%d bytes is too short", len(b))
	case b[0] != spoolRecordVersion:
		return bad("version %d, want %d", b[0], spoolRecordVersion)
	case b[1]&^(spoolIDGenerated|spoolGroup) != 0:
		return bad("unknown flags %#x", b[1])
	}
	s.idGenerated = b[1]&spoolIDGenerated != 0
	rest := b[2:]
	field := func() (string, bool) {
		n, w := binary.Uvarint(rest)
		if w <= 0 || n > MaxNameBytes || n > uint64(len(rest)-w) {
			return "", false
		}
		v := string(rest[w : w+int(n)])
		rest = rest[w+int(n):]
		return v, utf8.ValidString(v)
	}
	var ok bool
	if s.id, ok = field(); !ok || s.id == "" {
		return bad("id missing or damaged")
	}
	if err := ValidateName(s.id); err != nil && !s.idGenerated {
		return bad("id: %v", err)
	}
	if s.owner, ok = field(); !ok {
		return bad("owner damaged")
	}
	if s.owner != "" {
		if err := ValidateName(s.owner); err != nil {
			return bad("owner: %v", err)
		}
	}
	if b[1]&spoolGroup != 0 {
		if s.group, ok = field(); !ok {
			return bad("group damaged")
		}
		if err := ValidateGroup(s.group); err != nil {
			return bad("group: %v", err)
		}
	}
	s.payload = rest
	return s, nil
}

// spool writes an accepted request to the spool and acknowledges its
// message once the write returned, on a goroutine of its own so the MQTT
// handler never waits for the disk. A failed write is logged and counted;
// the request still plays (nothing better can be done with it) and the
// message is acknowledged so the broker does not send it again.
func (d *Daemon) spool(r *Request, payload []byte, ack func()) {
	st := r.spool
	rec := encodeSpoolRecord(r, payload)
	received, expires := r.Received, r.Expires()
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		err := d.opts.Spool.Put(st.key, rec, received, expires)
		st.ok = err == nil
		close(st.done)
		if first := d.spoolWritten(err); err != nil {
			d.stats.spoolErrors.Add(1)
			// A flood or a dead disk fails every write: one warning for
			// the outage (spoolWritten), the rest at debug level.
			level := slog.LevelDebug
			if first {
				level = slog.LevelWarn
			}
			d.log.Log(context.Background(), level, "request not spooled: a crash now would lose it", "id", r.ID, "err", err)
		}
		ack()
	}()
}

// settle replaces a request's spool record by p's terminal event once the
// record's first write has returned, and closes p.settled after. The
// event then survives a crash until the broker acknowledges it. When the
// write fails the request's record is deleted (it must not be spoken
// again) and the event waits in memory only. It never blocks the caller,
// which may hold d.mu.
func (d *Daemon) settle(st *spoolState, p *pending) {
	p.settled, p.key = make(chan struct{}), st.key
	rec := encodeEventRecord(p.e)
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		defer close(p.settled)
		defer d.spoolDrained()
		<-st.done
		if !st.ok {
			return
		}
		err := d.opts.Spool.Put(st.key, rec, st.received, time.Time{})
		if err == nil {
			p.durable = true
			return
		}
		d.stats.spoolErrors.Add(1)
		d.log.Warn("terminal event not spooled: a crash before the broker has it would lose it", "id", p.e.ID, "err", err)
		if err := d.opts.Spool.Delete(st.key); err != nil {
			d.stats.spoolErrors.Add(1)
			d.log.Warn("spooled request not removed: it may be spoken again after a restart", "id", p.e.ID, "err", err)
		}
	}()
}

// encodeEventRecord is a spool record holding a terminal event.
func encodeEventRecord(e Event) []byte {
	b, _ := json.Marshal(e) // cannot fail: Event has only plain fields
	return append([]byte{spoolRecordEvent}, b...)
}

// release deletes a request's spool record without an event of its own:
// a replayed request that turned out a duplicate. It never blocks the
// caller, which may hold d.mu.
func (d *Daemon) release(r *Request) {
	st := r.spool
	if st == nil {
		return
	}
	st.once.Do(func() {
		d.background.Add(1)
		go func() {
			defer d.background.Done()
			<-st.done
			if !st.ok {
				return
			}
			if err := d.opts.Spool.Delete(st.key); err != nil {
				d.stats.spoolErrors.Add(1)
				d.log.Warn("spooled request not removed: it may be spoken again after a restart", "id", r.ID, "err", err)
			}
		}()
	})
}

// replay queues what the spool holds from before the start, in arrival
// order. Expired requests are dropped (and deleted); records that cannot
// be read are deleted with a failed event. It runs in Run before the
// subscription, so replayed requests queue ahead of new ones and their ids
// are in the duplicate filter before the broker sends any message again.
func (d *Daemon) replay() {
	recs, err := d.opts.Spool.List()
	if err != nil {
		d.stats.spoolErrors.Add(1)
		d.log.Warn("spooled requests not replayed", "err", err)
		return
	}
	if len(recs) == 0 {
		return
	}
	now := d.now()
	var queued, expired, failed, answers int
	for _, rec := range recs {
		if len(rec.Record) > 0 && rec.Record[0] == spoolRecordEvent {
			if d.resend(rec) {
				answers++
				continue
			}
		}
		st := &spoolState{key: rec.Key, received: rec.Received, done: make(chan struct{}), ok: true}
		close(st.done)
		r, err := d.decodeSpooled(rec)
		r.spool = st
		if err != nil {
			failed++
			d.failRequest(&r, ReasonSpool, fmt.Errorf("spooled request unreadable, removed: %w", err))
			continue
		}
		if now.After(r.Expires()) {
			expired++
			d.emitDropped(&r, ReasonExpired)
			continue
		}
		d.mu.Lock()
		if d.awaitsInstall(&r) {
			// Its voice was being installed when the daemon stopped:
			// it waits for the install again, as it did.
			d.awaitVoiceLocked(r, true)
		} else {
			d.pushLocked(r, true)
		}
		d.mu.Unlock()
		queued++
	}
	d.log.Info("spooled requests replayed", "queued", queued, "expired", expired, "unreadable", failed, "answers_resent", answers)
}

// resend queues a terminal event the spool kept because the broker had
// not acknowledged it before the daemon stopped, marked redelivered. It
// reports false for a record it cannot read, which replay then reports
// as an unreadable request.
func (d *Daemon) resend(rec SpoolRecord) bool {
	e, err := decodeEventRecord(rec.Record)
	if err != nil {
		return false
	}
	e.Redelivered = true
	settled := make(chan struct{})
	close(settled)
	d.enqueue(&pending{e: e, terminal: true, settled: settled, durable: true, key: rec.Key})
	return true
}

// decodeEventRecord reads a record written by encodeEventRecord: from
// disk, so possibly damaged or from another version. It must hold one
// terminal event.
func decodeEventRecord(b []byte) (Event, error) {
	var e Event
	switch {
	case len(b) > maxSpoolRecord:
		return e, fmt.Errorf("%w: %d bytes, over the limit of %d", errBadSpoolRecord, len(b), maxSpoolRecord)
	case len(b) == 0 || b[0] != spoolRecordEvent:
		return e, fmt.Errorf("%w: not an event record", errBadSpoolRecord)
	}
	if err := json.Unmarshal(b[1:], &e); err != nil {
		return Event{}, fmt.Errorf("%w: event: %v", errBadSpoolRecord, err)
	}
	if !isTerminal(&e) {
		return Event{}, fmt.Errorf("%w: event %q of id %q is not a terminal one", errBadSpoolRecord, e.State, e.ID)
	}
	return e, nil
}

// decodeSpooled turns a spool record back into the request it was. On
// error the returned request carries what could be read, for the event.
func (d *Daemon) decodeSpooled(rec SpoolRecord) (Request, error) {
	s, err := decodeSpoolRecord(rec.Record)
	if err != nil {
		return Request{ID: spooledID(rec.Key, rec.Received), Received: rec.Received}, err
	}
	r, err := DecodeSay(s.payload, rec.Received, &d.decode)
	r.ID, r.idGenerated, r.Owner, r.Group = s.id, s.idGenerated, s.owner, s.group
	if r.Group != "" && r.idGenerated {
		r.textKey = textKey(s.payload)
	}
	if err != nil {
		return r, err
	}
	if r.TTL == 0 {
		r.TTL = d.opts.DefaultTTL
	}
	if !rec.Expires.IsZero() {
		// The ttl in force when it was accepted, even if the default
		// changed since.
		r.TTL = rec.Expires.Sub(rec.Received)
	}
	return r, nil
}

// spoolWritten follows the spool's health from the result of each write
// of a request: the first failure after a success (a disk gone read-only
// or full) is a warning event, the first success after failures an info
// line; the state's spool object shows the current error.
// It reports whether err begins an outage.
func (d *Daemon) spoolWritten(err error) (first bool) {
	d.spoolMu.Lock()
	was := d.spoolFailing
	d.spoolErr, d.spoolFailing = err, err != nil
	d.spoolMu.Unlock()
	switch {
	case err != nil && !was:
		d.Warn(ReasonSpoolUnavailable, fmt.Errorf("spool write failed: commands are spoken, but a crash loses those waiting: %w", err))
		return true
	case err == nil && was:
		d.log.Info("spool writable again")
		d.markState()
	}
	return false
}

// spoolDrained clears a spool-full error from the state once the queue
// has drained: the flood that filled the spool is over, and the records
// left are answers waiting for the broker, deleted as it acknowledges
// them. Should it still be full (the broker is away), the next write
// shows the error again; the outage's one warning is not repeated, as
// only a write that succeeds ends it. Other write errors (a disk gone
// read-only) stay in the state until then too. settle calls it as each
// request ends.
func (d *Daemon) spoolDrained() {
	d.mu.Lock()
	drained := d.queue.len() == 0 && d.current == nil
	d.mu.Unlock()
	if !drained {
		return
	}
	d.spoolMu.Lock()
	full := errors.Is(d.spoolErr, ErrSpoolFull)
	if full {
		d.spoolErr = nil
	}
	d.spoolMu.Unlock()
	if full {
		d.log.Info("spool has room again: the queue drained")
		d.markState()
	}
}

// spoolStatus is the state's spool object; nil without a spool.
func (d *Daemon) spoolStatus() *SpoolStatus {
	if d.opts.Spool == nil && d.opts.SpoolError == nil {
		return nil
	}
	d.spoolMu.Lock()
	defer d.spoolMu.Unlock()
	if d.spoolErr != nil {
		return &SpoolStatus{Error: d.spoolErr.Error()}
	}
	return &SpoolStatus{Available: true}
}

// SpoolLost reports what the recovery of a damaged spool file could not
// carry over: a failed event with reason spool for each record lost
// (Key and Received as Spool.List gives them: the request's id is read
// from the key), and one warning event, cause, which says what was
// carried, lost and unreadable, as whoever counted it measured. mynahd
// calls it after New, before Run.
func (d *Daemon) SpoolLost(lost []SpoolRecord, cause error) {
	for _, rec := range lost {
		d.emit(d.failedEvent(spooledID(rec.Key, rec.Received), "", "", ReasonSpool,
			fmt.Errorf("spooled request lost with the damaged spool file: %w", cause)))
	}
	d.Warn(ReasonSpoolCorrupt, cause)
}
