package daemon

// Groups: several daemons (members) take one announcement from
// mynah/group/<group>/say and start it at one instant, play_at.
//
// A group say that carries play_at is played at it. One without: every
// member that takes it proposes now+Options.GroupLead on the group's sync
// topic, mynah/group/<group>/sync, and every member plays at the first
// proposal the broker delivers for that id. The broker delivers the
// messages of one topic to every subscriber in the order it took them
// (Mosquitto does; a clustered broker may not: there, send play_at with
// the request), so the members agree whichever of them saw the request
// first, and whatever order they received the request in. A member that
// learns of the agreement before the request itself keeps it until the
// request comes.
//
// A group say without an id (plain text from mosquitto_pub or a notify
// action) gets a random id on each member, so its agreement goes by the
// payload instead: "text-" and the first 16 hex digits of its SHA-256.
// The same text sent again later is a new agreement: one this member
// played whose instant is over agreementStale past is made anew. One it
// never played is kept: a request that comes long after its members'
// agreement is that announcement delivered late (a member back from an
// outage gets what its session queued), and is dropped late rather than
// played alone.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// Defaults of the group options.
const (
	DefaultGroupLead = 500 * time.Millisecond
	DefaultMaxLate   = 50 * time.Millisecond
	// MaxGroups bounds Options.Groups.
	MaxGroups = 16
	// maxAgreements bounds the play_at agreements kept (the oldest go
	// first), agreementTTL how long one is kept.
	maxAgreements  = 1024
	agreementTTL   = 10 * time.Minute
	agreementStale = 5 * time.Second
)

// Values of Event.Clock.
const (
	ClockDAC    = "dac"
	ClockSystem = "system"
)

// GroupTopic is a group's command topic: mynah/group/<group>/<command>.
func GroupTopic(group, command string) string { return "mynah/group/" + group + "/" + command }

// Commands a group's topics take, besides its sync topic.
const (
	groupSay    = "say"
	groupStop   = "stop"
	groupVolume = "volume/set"
	groupSync   = "sync"
)

// ValidateGroup checks a group name: 1..64 bytes of A-Z a-z 0-9 _ -, one
// MQTT topic level without wildcards.
func ValidateGroup(group string) error { return validateLevel("group", group) }

// groupFilters are the subscriptions of the daemon's groups.
func (d *Daemon) groupFilters() []string {
	var out []string
	for _, g := range d.opts.Groups {
		for _, c := range []string{groupSay, groupStop, groupVolume, groupSync} {
			out = append(out, GroupTopic(g, c))
		}
	}
	return out
}

// groupCommand splits mynah/group/<group>/<command> for a group of the
// daemon's.
func (d *Daemon) groupCommand(topic string) (group, command string, ok bool) {
	rest, ok := strings.CutPrefix(topic, "mynah/group/")
	if !ok {
		return "", "", false
	}
	group, command, ok = strings.Cut(rest, "/")
	if !ok {
		return "", "", false
	}
	for _, g := range d.opts.Groups {
		if g == group {
			return group, command, true
		}
	}
	return "", "", false
}

// syncMessage is a play_at proposal on a group's sync topic.
type syncMessage struct {
	ID     string  `json:"id"`
	PlayAt float64 `json:"play_at"` // Unix milliseconds
	Node   string  `json:"node"`    // who proposed it
}

// decodeSync reads a sync payload; it is outside input like any other.
func decodeSync(payload []byte, now time.Time) (syncMessage, time.Time, error) {
	var m syncMessage
	if len(payload) > 1024 {
		return m, time.Time{}, fmt.Errorf("sync payload is %d bytes, over the limit of 1024", len(payload))
	}
	if err := json.Unmarshal(payload, &m); err != nil {
		return m, time.Time{}, fmt.Errorf("sync payload: %w", err)
	}
	if err := ValidateName(m.ID); err != nil {
		return m, time.Time{}, fmt.Errorf("sync payload: id: %w", err)
	}
	if m.PlayAt <= 0 || m.PlayAt >= 1e15 || math.IsNaN(m.PlayAt) {
		return m, time.Time{}, fmt.Errorf("sync payload: play_at %g is not an instant in Unix milliseconds", m.PlayAt)
	}
	at := unixMillis(m.PlayAt)
	if at.Sub(now) > MaxPlayAhead {
		return m, time.Time{}, fmt.Errorf("sync payload: play_at is %.1f s ahead, over the limit of %v", at.Sub(now).Seconds(), MaxPlayAhead)
	}
	return m, at, nil
}

func unixMillis(ms float64) time.Time { return time.UnixMicro(int64(math.Round(ms * 1000))) }

func toUnixMillis(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// agreements are the play_at instants the members of a group agreed on,
// by group and id.
type agreements struct {
	mu    sync.Mutex
	byKey map[string]*agreement
	order []string // keys, oldest first
}

// agreement is one request's play_at: decided once the first proposal is
// back from the broker.
type agreement struct {
	created  time.Time
	proposed time.Time     // this member's proposal; zero = none sent
	at       time.Time     // the instant agreed on; zero until decided
	decided  chan struct{} // closed when at is set
	by       string        // the member whose proposal was taken ("": none, or unknown)
	used     bool          // a request of this member took it
}

func agreementKey(group, id string) string { return group + "\x00" + id }

// get returns the agreement of key, making it if there is none.
func (a *agreements) get(key string, now time.Time) *agreement {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.byKey == nil {
		a.byKey = map[string]*agreement{}
	}
	if e, ok := a.byKey[key]; ok && (!e.used || e.at.IsZero() || now.Sub(e.at) <= agreementStale) {
		return e
	}
	if _, ok := a.byKey[key]; ok {
		// Played long ago: this is the same text (or id) sent again.
		i := slices.Index(a.order, key)
		a.order = slices.Delete(a.order, i, i+1)
		delete(a.byKey, key)
	}
	for len(a.order) > 0 && (len(a.order) >= maxAgreements || now.Sub(a.byKey[a.order[0]].created) > agreementTTL) {
		delete(a.byKey, a.order[0])
		a.order = a.order[1:]
	}
	e := &agreement{created: now, decided: make(chan struct{})}
	a.byKey[key] = e
	a.order = append(a.order, key)
	return e
}

// propose records this member's proposal; it reports false when the
// instant is decided or proposed already (nothing to send).
func (a *agreements) propose(e *agreement, at time.Time) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !e.at.IsZero() || !e.proposed.IsZero() {
		return false
	}
	e.proposed = at
	return true
}

// decide settles e at at, proposed by member by, unless it is settled;
// it reports whether this call settled it.
func (a *agreements) decide(e *agreement, at time.Time, by string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if !e.at.IsZero() {
		return false
	}
	e.at, e.by = at, by
	close(e.decided)
	return true
}

// leader returns the member whose proposal e took.
func (a *agreements) leader(e *agreement) string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return e.by
}

// use marks e as taken by a request of this member.
func (a *agreements) use(e *agreement) {
	a.mu.Lock()
	defer a.mu.Unlock()
	e.used = true
}

// state returns e's agreed and proposed instants.
func (a *agreements) state(e *agreement) (at, proposed time.Time) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return e.at, e.proposed
}

// agreeLocked starts the agreement on r's play_at: a group request
// without one takes the instant already agreed, or proposes now+lead.
// d.mu is held; the proposal is published off the handler.
func (d *Daemon) agreeLocked(r *Request) {
	if r.Group == "" || !r.PlayAt.IsZero() {
		return
	}
	now := d.now()
	e := d.agreed.get(agreementKey(r.Group, r.agreementID()), now)
	d.agreed.use(e)
	if at, _ := d.agreed.state(e); !at.IsZero() {
		r.PlayAt, r.agreedAt = at, true
		return
	}
	at := now.Add(d.opts.GroupLead)
	if !d.agreed.propose(e, at) {
		return
	}
	payload, err := json.Marshal(syncMessage{ID: r.agreementID(), PlayAt: toUnixMillis(at), Node: d.opts.Node})
	if err != nil {
		return // cannot happen: strings and a finite number
	}
	topic := GroupTopic(r.Group, groupSync)
	d.background.Add(1)
	go func() {
		defer d.background.Done()
		ctx, cancel := context.WithTimeout(d.bgCtx, d.opts.GroupLead)
		defer cancel()
		if err := d.opts.Transport.Publish(ctx, topic, payload, false); err != nil {
			d.log.Warn("play_at proposal not sent: this member plays at its own", "group", r.Group, "id", r.ID, "err", err)
		}
	}()
}

// agreementID is what r's members agree on play_at by: its id, or for a
// request whose id each member made up, its payload's digest.
func (r *Request) agreementID() string {
	if r.textKey != "" {
		return r.textKey
	}
	return r.ID
}

// textKey returns the agreement id of a group say without an id.
func textKey(payload []byte) string {
	sum := sha256.Sum256(payload)
	return "text-" + hex.EncodeToString(sum[:8])
}

// groupSynced takes a proposal from a group's sync topic: the first for
// an id is the one every member plays at.
func (d *Daemon) groupSynced(group string, payload []byte) {
	m, at, err := decodeSync(payload, d.now())
	if err != nil {
		d.log.Info("ignoring a bad play_at proposal", "group", group, "err", err)
		return
	}
	e := d.agreed.get(agreementKey(group, m.ID), d.now())
	by := m.Node
	if ValidateName(by) != nil {
		by = ""
	}
	if d.agreed.decide(e, at, by) {
		d.log.Debug("play_at agreed", "group", group, "id", m.ID, "play_at", at, "by", m.Node)
	}
}

// playAt returns the instant j is to start at: its own play_at, or for
// a group request the one its members agree on. It waits for the
// agreement until the member's own proposal is due; if none came back
// from the broker by then, it plays at its own.
func (d *Daemon) playAt(j *job) time.Time {
	r := &j.req
	if !r.PlayAt.IsZero() || r.Group == "" {
		return r.PlayAt
	}
	e := d.agreed.get(agreementKey(r.Group, r.agreementID()), d.now())
	at, proposed := d.agreed.state(e)
	if !at.IsZero() {
		return at
	}
	if proposed.IsZero() {
		// Taken from the spool without an agreement: its members played
		// it long ago, so it is late now.
		return r.Received.Add(d.opts.GroupLead)
	}
	wait := time.NewTimer(max(0, proposed.Sub(d.now())))
	defer wait.Stop()
	select {
	case <-e.decided:
		at, _ = d.agreed.state(e)
		return at
	case <-wait.C:
	case <-j.ctx.Done():
	}
	d.log.Warn("no play_at agreement came back from the broker: playing at this member's own", "group", r.Group, "id", r.ID)
	return proposed
}

// leaderWait bounds how long a group request waits for its agreement
// before its synthesis starts, to learn whom to ask for the sentences
// (renderBy). The agreement is normally back within a broker round trip.
const leaderWait = 100 * time.Millisecond

// renderBy returns the member whose play_at proposal j's group took,
// when that is another member: it synthesizes the announcement anyway,
// so this member asks it for each sentence first (Speech.RenderBy) and
// the group synthesizes each sentence once. until is when to stop
// waiting for the leader's first sentence: half way to play_at, so that
// a leader gone since its proposal leaves time to synthesize here. It
// waits for the agreement at most leaderWait (and a quarter of the
// lead); "" when none came, or when this member leads or the request
// carried its own play_at.
func (d *Daemon) renderBy(j *job) (leader string, until time.Time) {
	r := &j.req
	if r.Group == "" || !r.PlayAt.IsZero() && !r.agreedAt {
		return "", time.Time{}
	}
	e := d.agreed.get(agreementKey(r.Group, r.agreementID()), d.now())
	wait := time.NewTimer(min(leaderWait, d.opts.GroupLead/4))
	defer wait.Stop()
	select {
	case <-e.decided:
	case <-wait.C:
		return "", time.Time{}
	case <-j.ctx.Done():
		return "", time.Time{}
	}
	by := d.agreed.leader(e)
	if by == d.opts.Node || by == "" {
		return "", time.Time{}
	}
	at, _ := d.agreed.state(e)
	now := d.now()
	return by, now.Add(max(0, at.Sub(now)/2))
}
