package daemon

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"unicode/utf8"
)

// The spool makes "accepted" mean "will be spoken, crash or not". A say
// command is queued at once (a cached phrase starts playing in about a
// millisecond, before a disk sync could finish) and written to the spool
// on its own goroutine; the MQTT message is acknowledged only once that
// write is durable, so a crash before it leaves the message with the
// broker, which sends it again. When the request is finished, failed or
// dropped, its record is deleted, after its write has completed. At
// start, Run replays what the spool holds before it subscribes: the
// unexpired requests are queued again in arrival order, the expired ones
// get dropped events. A request that was playing when the daemon died is
// spoken again from its start.
//
// Shutdown does not drop spooled requests: they stay on disk and are
// spoken after the restart, if still within their ttl. Every accepted
// request therefore ends with exactly one finished, failed or dropped
// event, across restarts.
//
// A request whose id was made up by the daemon cannot be recognized when
// the broker sends its message again, so a crash between the spool write
// and the acknowledgement (a window of one network round trip) can speak
// it twice; requests with an id are spoken once (the replayed id enters
// the duplicate filter before the broker's copy arrives).

// spoolRecordVersion is the first byte of a spool record.
const spoolRecordVersion = 1

// maxSpoolRecord bounds a record: the largest say payload the daemon
// accepts plus the id and owner.
const maxSpoolRecord = 1 << 20

// errBadSpoolRecord reports a spool record this version cannot read.
var errBadSpoolRecord = errors.New("bad spool record")

// spoolState follows one request's spool record.
type spoolState struct {
	key  string
	done chan struct{} // closed when Put has returned
	ok   bool          // Put succeeded; read after done
	once sync.Once     // the record is released once
}

// spoolKey names a request's record. The id alone is not unique over
// time: a publisher may reuse it once the duplicate window has passed.
func spoolKey(r *Request) string {
	return strconv.FormatInt(r.Received.UnixNano(), 36) + "-" + r.ID
}

// encodeSpoolRecord stores what replay needs beyond the payload: the id
// (the daemon's own, when the payload had none) and the owner.
//
//	version (1) | flags (bit 0: id generated) | uvarint len, id | uvarint len, owner | payload
func encodeSpoolRecord(r *Request, payload []byte) []byte {
	b := make([]byte, 0, 2+2*binary.MaxVarintLen16+len(r.ID)+len(r.Owner)+len(payload))
	var flags byte
	if r.idGenerated {
		flags |= 1
	}
	b = append(b, spoolRecordVersion, flags)
	b = binary.AppendUvarint(b, uint64(len(r.ID)))
	b = append(b, r.ID...)
	b = binary.AppendUvarint(b, uint64(len(r.Owner)))
	b = append(b, r.Owner...)
	return append(b, payload...)
}

// spooledRequest is a decoded spool record.
type spooledRequest struct {
	id          string
	idGenerated bool
	owner       string
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
	case b[1]&^1 != 0:
		return bad("unknown flags %#x", b[1])
	}
	s.idGenerated = b[1]&1 != 0
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
		if err != nil {
			d.stats.spoolErrors.Add(1)
			d.log.Warn("request not spooled: a crash now would lose it", "id", r.ID, "err", err)
		}
		ack()
	}()
}

// release deletes a request's spool record once it is finished, failed or
// dropped (not at shutdown: see the comment at the top of this file). It
// never blocks the caller, which may hold d.mu.
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
	var queued, expired, failed int
	for _, rec := range recs {
		st := &spoolState{key: rec.Key, done: make(chan struct{}), ok: true}
		close(st.done)
		r, err := d.decodeSpooled(rec)
		r.spool = st
		if err != nil {
			failed++
			d.emitFailed(r.ID, r.Owner, "", ReasonSpool, fmt.Errorf("spooled request unreadable, removed: %w", err))
			d.release(&r)
			continue
		}
		if now.After(r.Expires()) {
			expired++
			d.emitDropped(&r, ReasonExpired)
			continue
		}
		d.mu.Lock()
		d.pushLocked(r, true)
		d.mu.Unlock()
		queued++
	}
	d.log.Info("spooled requests replayed", "queued", queued, "expired", expired, "unreadable", failed)
}

// decodeSpooled turns a spool record back into the request it was. On
// error the returned request carries what could be read, for the event.
func (d *Daemon) decodeSpooled(rec SpoolRecord) (Request, error) {
	s, err := decodeSpoolRecord(rec.Record)
	if err != nil {
		return Request{ID: rec.Key, Received: rec.Received}, err
	}
	r, err := DecodeSay(s.payload, rec.Received, &d.decode)
	r.ID, r.idGenerated, r.Owner = s.id, s.idGenerated, s.owner
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
