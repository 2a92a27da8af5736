package render

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of ClientOptions.
const (
	// DefaultTimeout is how long a Fetch waits for an answer to one try.
	// A render node synthesizes one sentence in well under a second on a
	// small board; past 3 s it is gone, busy or its answer was lost.
	DefaultTimeout = 3 * time.Second
	// DefaultQuiet is how long Fetch fails at once after a Fetch went
	// unanswered while no render node was online (ClientOptions.Quiet).
	DefaultQuiet = 30 * time.Second
)

// tries is how many times Fetch publishes a request: once, and once more
// (with the same id) when no usable answer came within the timeout, since
// a render node that drops loses its in-flight requests (mosquitto#2662)
// and the broker hands the next try to another node.
const tries = 2

// rememberedIDs is how many finished ids a Client remembers, to tell a
// late or second answer (refused answered) from one never asked for
// (refused unknown_id).
const rememberedIDs = 1024

// Log attribute keys.
const (
	logKeyID     = "id"
	logKeyReason = "reason"
	logKeyErr    = "err"
	logKeyTry    = "try"
	logKeyVoice  = "voice"
	logKeyReply  = "reply"
)

// ClientOptions configure NewClient; nil means defaults.
type ClientOptions struct {
	// Timeout is how long one try waits for an answer (default
	// DefaultTimeout). A Fetch that gets none takes at most two of them.
	Timeout time.Duration
	// MaxRecordBytes refuses answers that say their record is bigger
	// (default and most MaxRecordBytes). It bounds what one Fetch holds:
	// the chunks, then for a moment the joined record too.
	MaxRecordBytes int
	// Logger receives refused answers and failed tries (debug); nil
	// discards them.
	Logger *slog.Logger
	// OnNodes, if set, is called when a render node comes online or goes,
	// or publishes a catalog (Catalog may have changed). It
	// runs on the transport's goroutine: it returns quickly.
	OnNodes func()
	// Quiet: after a Fetch got no answer to any try while no render node
	// was online, Fetch fails at once (ErrNoRenderer, counted Skipped)
	// for this long, or until a node says it is online, so a speaker
	// whose render nodes are all down synthesizes each sentence without
	// first waiting two timeouts (default DefaultQuiet; negative: never).
	Quiet time.Duration
}

// ClientStats are a Client's counters since NewClient.
type ClientStats struct {
	Requests     uint64 // Fetch calls that sent a request
	Answers      uint64 // verified records returned
	ErrorAnswers uint64 // error answers taken (returned, or retried on)
	Retries      uint64 // second tries
	Timeouts     uint64 // tries that got no usable answer within Timeout
	NoRenderer   uint64 // Fetch calls that failed with ErrNoRenderer
	Duplicates   uint64 // chunks that came twice (dropped)
	// Skipped counts Fetch calls that failed at once: no render node
	// online, and the last ask unanswered (ClientOptions.Quiet).
	Skipped uint64
	// Routed counts tries sent to one node's own topic (its sentence's
	// owner, or the next in rank) rather than the shared one.
	Routed uint64
	// Refused counts refused answer chunks by Refused* reason.
	Refused map[string]uint64
}

// Answer is a verified phrase record.
type Answer struct {
	ID     string
	Key    string // the record's phrase key, as the render node computed it
	Voice  string
	Record []byte // the phrase record (audio.DecodePhrase checks it further)
	Tries  int    // 1, or 2 when the retry was answered
}

// Client fetches phrase records from render nodes. It subscribes to its
// reply topic once, in NewClient. Its methods are safe for concurrent
// use, and concurrent Fetches are independent.
type Client struct {
	t         Transport
	reply     string
	timeout   time.Duration
	quiet     time.Duration
	onNodes   func()
	maxRecord int
	log       *slog.Logger
	idPrefix  string

	mu      sync.Mutex
	waiting map[string]*fetch
	done    idRing
	nextID  uint64
	stats   ClientStats
	nodes   map[string]*nodeState // the render nodes seen (NodeFilters)
	// unanswered is when the last Fetch got no answer while no render
	// node was online; zero once one is (ClientOptions.Quiet).
	unanswered time.Time
}

// NewClient subscribes to node's reply topic (ReplyTopic) on t. node is
// the requester's node name, unique among the requesters of a broker:
// two Clients with one reply topic would see (and refuse) each other's
// answers.
func NewClient(t Transport, node string, opts *ClientOptions) (*Client, error) {
	var o ClientOptions
	if opts != nil {
		o = *opts
	}
	reply, err := ReplyTopic(node)
	if err != nil {
		return nil, fmt.Errorf("%w: node: %w", ErrInvalidOptions, err)
	}
	switch {
	case o.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout is negative (%v)", ErrInvalidOptions, o.Timeout)
	case o.Timeout == 0:
		o.Timeout = DefaultTimeout
	}
	switch {
	case o.MaxRecordBytes < 0 || o.MaxRecordBytes > MaxRecordBytes:
		return nil, fmt.Errorf("%w: MaxRecordBytes %d is outside 0..%d", ErrInvalidOptions, o.MaxRecordBytes, MaxRecordBytes)
	case o.MaxRecordBytes == 0:
		o.MaxRecordBytes = MaxRecordBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Quiet == 0 {
		o.Quiet = DefaultQuiet
	}
	// A prefix per Client, so that ids made up by a restarted node (same
	// reply topic) never match answers meant for its previous run.
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	c := &Client{
		t:         t,
		reply:     reply,
		timeout:   o.Timeout,
		quiet:     o.Quiet,
		onNodes:   o.OnNodes,
		maxRecord: o.MaxRecordBytes,
		log:       o.Logger.With(logKeyReply, reply),
		idPrefix:  hex.EncodeToString(b),
		waiting:   make(map[string]*fetch),
		done:      newIDRing(rememberedIDs),
		nodes:     make(map[string]*nodeState),
	}
	c.stats.Refused = make(map[string]uint64)
	if err := t.Subscribe(append([]string{reply}, NodeFilters...), c.handle); err != nil {
		return nil, fmt.Errorf("render client: subscribe %s: %w", reply, err)
	}
	return c, nil
}

// Reply returns the Client's reply topic.
func (c *Client) Reply() string { return c.reply }

// Stats returns a copy of the counters.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Refused = maps.Clone(c.stats.Refused)
	return s
}

// Fetch asks the render nodes for r's phrase record and returns it once
// it is reassembled and verified: the voice is r's, the key is r.Key when
// r has one, size and CRC-32C match. r.ID is made up when empty, r.Reply
// is set to the Client's reply topic and a zero r.Rate means 1.
//
// The first try goes to the sentence's owner among the live render nodes
// that have the voice (Owners), the second to the next in rank; a try
// with no node left for it goes to the shared RequestTopic, as every try
// does while the Client knows no render node. With no usable answer
// within the timeout Fetch asks once more with the
// same id (an answer to either try is taken), and then fails with an
// error wrapping ErrNoRenderer that says what happened. An error answer
// is returned as an *AnswerError (wrapped), not as ErrNoRenderer; one
// whose reason says another node may do better (unknown_voice,
// key_mismatch) is retried first if a try is left. Answers that fail a
// check are refused, counted and never returned. ctx bounds the whole
// Fetch; its error is returned as is (wrapped).
func (c *Client) Fetch(ctx context.Context, r Request) (Answer, error) {
	return c.fetch(ctx, r, "")
}

// FetchFrom is Fetch of one node alone: one try, on node's own request
// topic (NodeTopic), whether or not the Client knows the node as a
// render node — a group member asks the member that leads an
// announcement, which synthesizes it anyway. No answer within the
// timeout fails with ErrNoRenderer; there is no quiet period.
func (c *Client) FetchFrom(ctx context.Context, node string, r Request) (Answer, error) {
	if err := ValidateNode(node); err != nil {
		return Answer{}, fmt.Errorf("render fetch: %w: %w", ErrInvalidRequest, err)
	}
	return c.fetch(ctx, r, node)
}

// fetch is Fetch, or FetchFrom(node) when node is set.
func (c *Client) fetch(ctx context.Context, r Request, node string) (Answer, error) {
	if r.Rate == 0 {
		r.Rate = 1
	}
	switch r.Reply {
	case "":
		r.Reply = c.reply
	case c.reply:
	default:
		return Answer{}, fmt.Errorf("render fetch: %w: reply %s is not this client's %s", ErrInvalidRequest, quoteShort(r.Reply), c.reply)
	}
	c.mu.Lock()
	if r.ID == "" {
		c.nextID++
		r.ID = c.idPrefix + "-" + strconv.FormatUint(c.nextID, 36)
	}
	c.mu.Unlock()
	payload, err := EncodeRequest(r)
	if err != nil {
		return Answer{}, fmt.Errorf("render fetch: %w", err)
	}
	if since, quiet := c.quietNow(); quiet && node == "" {
		c.count(&c.stats.Skipped)
		return Answer{}, fmt.Errorf("render fetch %s: %w (no render node online, and none answered %v ago)", r.ID, ErrNoRenderer, since.Round(time.Millisecond))
	}

	f := &fetch{id: r.ID, voice: r.Voice, key: r.Key, signal: make(chan struct{}, 1), refused: make(map[string]int)}
	c.mu.Lock()
	if c.waiting[r.ID] != nil {
		c.mu.Unlock()
		return Answer{}, fmt.Errorf("render fetch %s: %w", r.ID, ErrIDInUse)
	}
	c.waiting[r.ID] = f
	c.stats.Requests++
	c.mu.Unlock()
	defer c.finish(f)

	log := c.log.With(logKeyID, r.ID, logKeyVoice, r.Voice)
	var targets []string
	if node != "" {
		targets = []string{NodeTopic(node, NodeRequest)}
	} else {
		targets = c.targets(r)
	}
	var (
		timedOut  int
		pubErr    error
		answerErr *AnswerError // a retriable error answer of an earlier try
	)
	for try := 1; try <= len(targets); try++ {
		if try > 1 {
			c.count(&c.stats.Retries)
		}
		if targets[try-1] != RequestTopic {
			c.count(&c.stats.Routed)
		}
		if err := c.t.Publish(ctx, targets[try-1], payload); err != nil {
			if ctx.Err() != nil {
				return Answer{}, fmt.Errorf("render fetch %s: %w", r.ID, ctx.Err())
			}
			// Nothing to wait for on this try; an answer to an earlier
			// one is still taken while the next waits.
			pubErr = err
			log.Debug("render request not sent", logKeyTry, try, logKeyErr, err)
			continue
		}
		a, ea, err := c.wait(ctx, f)
		switch {
		case err != nil:
			return Answer{}, fmt.Errorf("render fetch %s: %w", r.ID, err)
		case a != nil:
			a.Tries = try
			return *a, nil
		case ea == nil:
			timedOut++
			log.Debug("render try timed out", logKeyTry, try)
		case try < len(targets) && retriable(ea.reason):
			answerErr = ea
			log.Debug("render node cannot render this; asking again", logKeyTry, try, logKeyErr, ea)
		default:
			return Answer{}, fmt.Errorf("render fetch %s: %w", r.ID, ea)
		}
	}
	// An error answer that came while a record was being reassembled,
	// and the record never completed.
	if ea := c.takeError(f); ea != nil {
		return Answer{}, fmt.Errorf("render fetch %s: %w", r.ID, ea)
	}
	c.count(&c.stats.NoRenderer)
	if timedOut == len(targets) && node == "" {
		c.markUnanswered()
	}
	return Answer{}, c.noRenderer(f, len(targets), timedOut, pubErr, answerErr)
}

// quietNow reports whether Fetch should fail at once (ClientOptions.Quiet),
// and how long ago the last ask went unanswered.
func (c *Client) quietNow() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.unanswered.IsZero() || c.quiet < 0 {
		return 0, false
	}
	since := time.Since(c.unanswered)
	if since >= c.quiet || c.anyOnline() {
		c.unanswered = time.Time{}
		return 0, false
	}
	return since, true
}

// markUnanswered starts a quiet period if no render node is online.
func (c *Client) markUnanswered() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.anyOnline() {
		c.unanswered = time.Now()
	}
}

// anyOnline reports whether a render node says it is online; c.mu is
// held.
func (c *Client) anyOnline() bool {
	for _, n := range c.nodes {
		if n.online {
			return true
		}
	}
	return false
}

// wait waits for one try's outcome: a record, an error answer, or
// neither within the timeout (nil, nil, nil).
func (c *Client) wait(ctx context.Context, f *fetch) (*Answer, *AnswerError, error) {
	t := time.NewTimer(c.timeout)
	defer t.Stop()
	for {
		select {
		case <-f.signal:
			c.mu.Lock()
			a, ea := f.answer, f.errAnswer
			if a == nil && ea != nil && f.asm == nil {
				f.errAnswer = nil
			} else {
				ea = nil // a record may still complete: wait for it
			}
			c.mu.Unlock()
			if a != nil || ea != nil {
				return a, ea, nil
			}
		case <-t.C:
			c.count(&c.stats.Timeouts)
			return nil, nil, nil
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
	}
}

func (c *Client) takeError(f *fetch) *AnswerError {
	c.mu.Lock()
	defer c.mu.Unlock()
	ea := f.errAnswer
	f.errAnswer = nil
	return ea
}

// noRenderer builds the error of a Fetch that got nothing usable.
func (c *Client) noRenderer(f *fetch, tried, timedOut int, pubErr error, answerErr *AnswerError) error {
	var what []string
	if timedOut > 0 {
		what = append(what, fmt.Sprintf("%d of %d tries unanswered within %v", timedOut, tried, c.timeout))
	}
	c.mu.Lock()
	if len(f.refused) > 0 {
		var rs []string
		for _, k := range slices.Sorted(maps.Keys(f.refused)) {
			rs = append(rs, fmt.Sprintf("%s %d", k, f.refused[k]))
		}
		what = append(what, "answers refused: "+strings.Join(rs, ", "))
	}
	c.mu.Unlock()
	if pubErr != nil {
		what = append(what, fmt.Sprintf("publish: %v", pubErr))
	}
	msg := strings.Join(what, "; ")
	if answerErr != nil {
		return fmt.Errorf("render fetch %s: %w (%s; and earlier: %w)", f.id, ErrNoRenderer, msg, answerErr)
	}
	return fmt.Errorf("render fetch %s: %w (%s)", f.id, ErrNoRenderer, msg)
}

// retriable reports whether an error answer's reason says another render
// node may do better.
func retriable(reason string) bool {
	return reason == ReasonUnknownVoice || reason == ReasonKeyMismatch
}

// finish ends f's wait: its id is remembered as answered.
func (c *Client) finish(f *fetch) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.waiting[f.id] == f {
		delete(c.waiting, f.id)
		c.done.add(f.id)
	}
}

func (c *Client) count(n *uint64) {
	c.mu.Lock()
	*n++
	c.mu.Unlock()
}

// targets returns the topics of r's tries: the owners' own request
// topics, in rank, then the shared one.
func (c *Client) targets(r Request) []string {
	c.mu.Lock()
	var live []string
	for name, n := range c.nodes {
		if n.online && (n.voices == nil || n.voices[r.Voice]) {
			live = append(live, name)
		}
	}
	c.mu.Unlock()
	out := make([]string, tries)
	owners := Owners(routingKey(r), live)
	for i := range out {
		out[i] = RequestTopic
		if i < len(owners) {
			out[i] = NodeTopic(owners[i], NodeRequest)
		}
	}
	return out
}

// Nodes returns the live render nodes the Client knows, sorted, and the
// catalog each published (nil voices: none yet).
func (c *Client) Nodes() map[string][]string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]string)
	for name, n := range c.nodes {
		if !n.online {
			continue
		}
		var vs []string
		if n.voices != nil {
			vs = slices.Sorted(maps.Keys(n.voices))
		}
		out[name] = vs
	}
	return out
}

// node takes a render node's status or catalog. A status other than
// StatusOnline (its will says "offline") takes the node out of every
// ranking; an empty retained payload forgets it. A catalog that does not
// decode is ignored (the node is asked for any voice).
func (c *Client) node(topic string, payload []byte) {
	name, leaf, ok := nodeOf(topic)
	if !ok || leaf != NodeStatus && leaf != NodeVoices {
		return
	}
	var voices map[string]bool
	var cat Catalog
	if leaf == NodeVoices && len(payload) > 0 {
		var err error
		if cat, err = DecodeCatalog(payload); err != nil {
			c.log.Debug("render node catalog ignored", "node", name, logKeyErr, err)
			return
		}
		voices = make(map[string]bool, len(cat.Voices))
		for _, v := range cat.Voices {
			voices[v.Name] = true
		}
	}
	if c.changed(name, leaf, payload, voices, cat.Voices) && c.onNodes != nil {
		c.onNodes()
	}
}

// changed applies a node's status or catalog and reports whether the
// live nodes or their catalogs changed.
func (c *Client) changed(name, leaf string, payload []byte, voices map[string]bool, catalog []CatalogVoice) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.nodes[name]
	if n == nil {
		if len(payload) == 0 || len(c.nodes) >= MaxNodes {
			return false
		}
		n = &nodeState{}
		c.nodes[name] = n
	}
	was := n.online
	switch leaf {
	case NodeStatus:
		if len(payload) == 0 {
			delete(c.nodes, name)
			return true
		}
		n.online = string(payload) == StatusOnline
		if n.online {
			c.unanswered = time.Time{}
		}
		return n.online != was
	default: // NodeVoices
		n.voices, n.catalog = voices, catalog
		return true
	}
}

// Catalog returns the voices the render nodes publish, each once (as the
// first node by name describes it), sorted by name. A node that is
// offline still counts (its catalog stays retained): its voices are the
// fleet's, asked for and failing with ErrNoRenderer while no node is up,
// rather than vanishing from a speaker's voice list at every restart. A
// node is forgotten when its status is cleared.
func (c *Client) Catalog() []CatalogVoice {
	c.mu.Lock()
	defer c.mu.Unlock()
	seen := make(map[string]bool)
	var out []CatalogVoice
	for _, name := range slices.Sorted(maps.Keys(c.nodes)) {
		for _, v := range c.nodes[name].catalog {
			if !seen[v.Name] {
				seen[v.Name] = true
				out = append(out, v)
			}
		}
	}
	slices.SortFunc(out, func(a, b CatalogVoice) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// handle takes one answer message, or a render node's status or catalog.
// It runs on the transport's goroutine: decoding and, for the last chunk,
// joining the record and one CRC over it (about a millisecond per MiB on
// a small board).
func (c *Client) handle(topic string, payload []byte) {
	if topic != c.reply {
		c.node(topic, payload)
		return
	}
	ch, err := DecodeChunk(payload)
	if err != nil {
		reason := RefusedMalformed
		if isTooLarge(err) {
			reason = RefusedTooLarge
		}
		c.mu.Lock()
		c.stats.Refused[reason]++
		c.mu.Unlock()
		c.log.Debug("render answer refused", logKeyReason, reason, logKeyErr, err)
		return
	}
	c.mu.Lock()
	f := c.waiting[ch.ID]
	var reason string
	switch {
	case f == nil && c.done.has(ch.ID):
		reason = RefusedAnswered
	case f == nil:
		reason = RefusedUnknownID
	default:
		var complete bool
		reason, complete = f.add(&ch, c)
		if complete {
			// Later answers to this id are refused as answered, even
			// before Fetch wakes up.
			delete(c.waiting, f.id)
			c.done.add(f.id)
		}
	}
	if reason != "" {
		c.stats.Refused[reason]++
		if f != nil {
			f.refused[reason]++
		}
	}
	c.mu.Unlock()
	if reason != "" {
		c.log.Debug("render answer refused", logKeyID, ch.ID, logKeyReason, reason)
	}
}

// fetch is one Fetch's state; the fields below signal are guarded by
// Client.mu.
type fetch struct {
	id, voice, key string
	// signal wakes Fetch after answer, errAnswer or asm changed.
	signal chan struct{}

	asm       *assembly
	answer    *Answer
	errAnswer *AnswerError
	refused   map[string]int
}

// assembly gathers the chunks of one answer. Its first chunk fixes
// total, size, crc32c and key; chunks that disagree are refused.
type assembly struct {
	total, size int
	crc         uint32
	key         string
	parts       [][]byte
	have, bytes int
}

// add takes a decoded chunk for f and returns why it was refused (""
// if it was not) and whether f has its answer now. c.mu is held.
func (f *fetch) add(ch *Chunk, c *Client) (refused string, complete bool) {
	if ch.Voice != "" && ch.Voice != f.voice {
		return RefusedVoice, false
	}
	if ch.IsError() {
		f.errAnswer = &AnswerError{ID: ch.ID, Message: ch.Error, reason: ch.Reason}
		c.stats.ErrorAnswers++
		f.wake()
		return "", false
	}
	if f.key != "" && ch.Key != f.key {
		return RefusedKey, false
	}
	if ch.Size > c.maxRecord {
		return RefusedTooLarge, false
	}
	a := f.asm
	if a == nil {
		a = &assembly{total: ch.Total, size: ch.Size, crc: ch.CRC32C, key: ch.Key, parts: make([][]byte, ch.Total)}
		f.asm = a
	} else {
		switch {
		case ch.Total != a.total:
			return RefusedTotal, false
		case ch.Size != a.size || ch.CRC32C != a.crc || ch.Key != a.key:
			return RefusedInconsistent, false
		}
	}
	if a.parts[ch.Seq] != nil {
		c.stats.Duplicates++
		return "", false
	}
	if a.bytes+len(ch.Data) > a.size {
		return RefusedSize, false
	}
	a.parts[ch.Seq] = ch.Data // the payload is ours (Transport)
	a.have++
	a.bytes += len(ch.Data)
	if a.have < a.total {
		return "", false
	}
	// Complete: whatever the verdict, the next chunk starts afresh.
	f.asm = nil
	defer f.wake()
	if a.bytes != a.size {
		return RefusedSize, false
	}
	record := slices.Concat(a.parts...)
	if Checksum(record) != a.crc {
		return RefusedCRC, false
	}
	f.answer = &Answer{ID: f.id, Key: a.key, Voice: f.voice, Record: record}
	c.stats.Answers++
	return "", true
}

func (f *fetch) wake() {
	select {
	case f.signal <- struct{}{}:
	default:
	}
}

// idRing remembers the last n ids added.
type idRing struct {
	ids  []string
	next int
	set  map[string]int
}

func newIDRing(n int) idRing {
	return idRing{ids: make([]string, 0, n), set: make(map[string]int, n)}
}

func (r *idRing) add(id string) {
	if len(r.ids) < cap(r.ids) {
		r.ids = append(r.ids, id)
	} else {
		old := r.ids[r.next]
		if r.set[old]--; r.set[old] <= 0 {
			delete(r.set, old)
		}
		r.ids[r.next] = id
		r.next = (r.next + 1) % len(r.ids)
	}
	r.set[id]++
}

func (r *idRing) has(id string) bool { return r.set[id] > 0 }
