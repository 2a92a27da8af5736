package render

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"strings"
	"sync"
	"time"
)

// Defaults of ServerOptions.
const (
	// DefaultConcurrency: synthesis is CPU-bound, and one render at a
	// time already keeps a small board's cores busy.
	DefaultConcurrency = 1
	// DefaultQueue is how many requests wait for a renderer; more are
	// dropped (busy) and their requesters' retries go to other nodes.
	DefaultQueue = 8
	// DefaultMaxWait: a request that waited longer has been asked again
	// (the requester's retry, with DefaultTimeout, went out at 3 s) and
	// is given up on by its requester at 6 s.
	DefaultMaxWait = tries * DefaultTimeout
)

// RenderFunc renders one request into its phrase record and phrase key
// (lower-case hex). An error is answered as an error answer whose reason
// is the error's (a Reason method anywhere in its chain, as
// daemon.Reasoner has; wrap ErrUnknownVoice for a voice this node lacks),
// else ReasonSynthesis. ctx ends when Serve's does.
type RenderFunc func(ctx context.Context, r Request) (key string, record []byte, err error)

// ServerOptions configure NewServer; nil means defaults.
type ServerOptions struct {
	// Concurrency is how many renders run at once (default
	// DefaultConcurrency).
	Concurrency int
	// Queue is how many requests may wait for a renderer (default
	// DefaultQueue).
	Queue int
	// MaxWait drops a request that waited longer for a renderer
	// (default DefaultMaxWait).
	MaxWait time.Duration
	// ChunkSize is the record bytes per answer message, 1..MaxChunkData
	// (default MaxChunkData). A record that needs over MaxChunks of them
	// is answered too_large.
	ChunkSize int
	// Logger receives dropped requests (debug) and failed answers
	// (warn); nil discards them.
	Logger *slog.Logger
	// Node, when set, is this render node's name (ValidateNode): Serve
	// also takes the requests sent to it alone, on its NodeRequest topic,
	// which requesters use for the sentences it owns (Owners). Its
	// status and catalog topics are the caller's to publish.
	Node string
	// NodeOnly serves Node's own request topic alone, not the shared
	// one: a group member answering its fellows (Client.FetchFrom), not
	// a render node.
	NodeOnly bool
}

// ServerStats are a Server's counters.
type ServerStats struct {
	Requests      uint64 // messages on the request topic
	Answers       uint64 // records answered (every chunk published)
	ErrorAnswers  uint64 // error answers published
	PublishErrors uint64 // answers cut short by a failed publish
	// Dropped counts requests that got no answer, by Dropped*
	// reason.
	Dropped map[string]uint64
}

// Server answers render requests. A Server serves once.
type Server struct {
	render      RenderFunc
	concurrency int
	maxWait     time.Duration
	chunkSize   int
	filters     []string // ServeFilter, and the node's own request topic
	log         *slog.Logger
	queue       chan job
	now         func() time.Time // time.Now; tests replace it

	mu       sync.Mutex
	started  bool
	serving  bool
	inflight map[string]bool // reply + "\x00" + id, queued or rendering
	stats    ServerStats
}

// job is one request waiting for a renderer; err is its decode error
// (answered bad_request).
type job struct {
	req Request
	err error
	at  time.Time
}

// NewServer checks opts and returns a Server that renders with render.
func NewServer(render RenderFunc, opts *ServerOptions) (*Server, error) {
	if render == nil {
		return nil, fmt.Errorf("%w: nil RenderFunc", ErrInvalidOptions)
	}
	var o ServerOptions
	if opts != nil {
		o = *opts
	}
	for _, d := range []struct {
		name string
		v    *int
		def  int
		max  int
	}{
		{"Concurrency", &o.Concurrency, DefaultConcurrency, 64},
		{"Queue", &o.Queue, DefaultQueue, 1024},
		{"ChunkSize", &o.ChunkSize, MaxChunkData, MaxChunkData},
	} {
		switch {
		case *d.v < 0 || *d.v > d.max:
			return nil, fmt.Errorf("%w: %s %d is outside 0..%d", ErrInvalidOptions, d.name, *d.v, d.max)
		case *d.v == 0:
			*d.v = d.def
		}
	}
	switch {
	case o.MaxWait < 0:
		return nil, fmt.Errorf("%w: MaxWait is negative (%v)", ErrInvalidOptions, o.MaxWait)
	case o.MaxWait == 0:
		o.MaxWait = DefaultMaxWait
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	filters := []string{ServeFilter}
	switch {
	case o.NodeOnly && o.Node == "":
		return nil, fmt.Errorf("%w: NodeOnly without a Node", ErrInvalidOptions)
	case o.NodeOnly:
		filters = nil
	}
	if o.Node != "" {
		if err := ValidateNode(o.Node); err != nil {
			return nil, fmt.Errorf("%w: Node: %w", ErrInvalidOptions, err)
		}
		filters = append(filters, NodeTopic(o.Node, NodeRequest))
	}
	s := &Server{
		filters:     filters,
		render:      render,
		concurrency: o.Concurrency,
		maxWait:     o.MaxWait,
		chunkSize:   o.ChunkSize,
		log:         o.Logger,
		queue:       make(chan job, o.Queue),
		inflight:    make(map[string]bool),
		now:         time.Now,
	}
	s.stats.Dropped = make(map[string]uint64)
	return s, nil
}

// Serve is NewServer(render, opts) and its Serve(ctx, t).
func Serve(ctx context.Context, t Transport, render RenderFunc, opts *ServerOptions) error {
	s, err := NewServer(render, opts)
	if err != nil {
		return err
	}
	return s.Serve(ctx, t)
}

// Serve subscribes ServeFilter (and the node's own request topic) on t and answers requests until ctx ends,
// then waits for the renders in progress (their ctx ends too; they are
// not answered) and returns nil. It fails only when it cannot subscribe,
// or (ErrServing) when the Server has served before.
//
// Transport has no unsubscribe: after Serve returns the broker still
// hands this node its share of the requests, which are dropped
// (DroppedStopped) and retried by their requesters on another node. So
// the connection should end with Serve; use a clean session for it, or
// the broker keeps giving an offline node its share (mosquitto#1747).
func (s *Server) Serve(ctx context.Context, t Transport) error {
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return ErrServing
	}
	s.started, s.serving = true, true
	s.mu.Unlock()

	if err := t.Subscribe(s.filters, s.handle); err != nil {
		s.stop()
		return fmt.Errorf("render serve: subscribe %s: %w", strings.Join(s.filters, ", "), err)
	}
	var wg sync.WaitGroup
	for range s.concurrency {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-s.queue:
					s.serveOne(ctx, t, j)
				}
			}
		})
	}
	<-ctx.Done()
	s.stop()
	wg.Wait()
	for {
		select {
		case j := <-s.queue:
			s.release(j.req, DroppedStopped)
		default:
			return nil
		}
	}
}

// Stats returns a copy of the counters.
func (s *Server) Stats() ServerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.stats
	st.Dropped = maps.Clone(s.stats.Dropped)
	return st
}

func (s *Server) stop() {
	s.mu.Lock()
	s.serving = false
	s.mu.Unlock()
}

// handle queues one request. It runs on the transport's goroutine and
// never blocks: a full queue drops the request (busy).
func (s *Server) handle(_ string, payload []byte) {
	r, err := DecodeRequest(payload)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stats.Requests++
	k := r.Reply + "\x00" + r.ID
	switch {
	case !s.serving:
		s.stats.Dropped[DroppedStopped]++
	case err != nil && !r.answerable():
		s.stats.Dropped[DroppedMalformed]++
		s.log.Debug("render request dropped", logKeyReason, DroppedMalformed, logKeyErr, err)
	case s.inflight[k]:
		// The requester's retry of a request this node still has: the
		// first answer serves both.
		s.stats.Dropped[DroppedDuplicate]++
	default:
		select {
		case s.queue <- job{req: r, err: err, at: s.now()}:
			s.inflight[k] = true
		default:
			s.stats.Dropped[DroppedBusy]++
			s.log.Debug("render request dropped", logKeyID, r.ID, logKeyReason, DroppedBusy)
		}
	}
}

// release ends a job; dropped, if not "", counts it as dropped.
func (s *Server) release(r Request, dropped string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inflight, r.Reply+"\x00"+r.ID)
	if dropped != "" {
		s.stats.Dropped[dropped]++
	}
}

// serveOne renders one job and answers it.
func (s *Server) serveOne(ctx context.Context, t Transport, j job) {
	r := j.req
	if s.now().Sub(j.at) > s.maxWait {
		s.release(r, DroppedStale)
		s.log.Debug("render request dropped", logKeyID, r.ID, logKeyReason, DroppedStale)
		return
	}
	if ctx.Err() != nil {
		s.release(r, DroppedStopped)
		return
	}
	chunks, isErr := s.answer(ctx, j)
	if chunks == nil {
		s.release(r, DroppedStopped)
		return
	}
	// Released before the answer goes out: a requester that asks again
	// once it has the answer (after an unknown_voice, say) is a new
	// request, not a duplicate of this one.
	s.release(r, "")
	for _, ch := range chunks {
		if !s.publish(ctx, t, r, ch) {
			return
		}
	}
	s.mu.Lock()
	if isErr {
		s.stats.ErrorAnswers++
	} else {
		s.stats.Answers++
	}
	s.mu.Unlock()
}

// answer renders j and returns its answer's chunks, which are one error
// answer if isErr; none when Serve is stopping (the requester asks again
// elsewhere).
func (s *Server) answer(ctx context.Context, j job) (chunks []Chunk, isErr bool) {
	r := j.req
	fail := func(err error, reason string) ([]Chunk, bool) {
		s.log.Debug("render failed", logKeyID, r.ID, logKeyVoice, r.Voice, logKeyReason, reason, logKeyErr, err)
		return []Chunk{errorChunk(r.ID, r.Voice, err, reason)}, true
	}
	if j.err != nil {
		return fail(j.err, ReasonBadRequest)
	}
	key, record, err := s.render(ctx, r)
	switch {
	case ctx.Err() != nil:
		return nil, false
	case err != nil:
		return fail(err, reasonOf(err, ReasonSynthesis))
	case validateKey(key) != nil:
		return fail(fmt.Errorf("render gave a bad phrase key: %w", validateKey(key)), ReasonSynthesis)
	case r.Key != "" && key != r.Key:
		return fail(fmt.Errorf("voice %s here gives phrase key %s, not the asked %s (another model or version)", r.Voice, key, r.Key), ReasonKeyMismatch)
	}
	chunks, err = SplitRecord(r.ID, r.Voice, key, record, s.chunkSize)
	if err != nil {
		reason := ReasonSynthesis
		if errors.Is(err, ErrTooLarge) {
			reason = ReasonTooLarge
		}
		return fail(err, reason)
	}
	return chunks, false
}

// publish sends one answer message and says whether it went.
func (s *Server) publish(ctx context.Context, t Transport, r Request, ch Chunk) bool {
	payload, err := EncodeChunk(ch)
	if err == nil {
		err = t.Publish(ctx, r.Reply, payload)
	}
	if err != nil {
		s.mu.Lock()
		s.stats.PublishErrors++
		s.mu.Unlock()
		if ctx.Err() == nil {
			s.log.Warn("render answer not sent", logKeyID, r.ID, logKeyReply, r.Reply, logKeyErr, err)
		}
		return false
	}
	return true
}
