package main

// Render nodes (render.mode): a serve node answers other nodes' sentence
// requests through the broker; a remote node asks them first for every
// phrase it has not cached (package daemon/render, engine.Remote).

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/render"
)

// remoteRenderer is the engine's Remote of a remote node: the render
// client, once the broker is connected (before, every miss is
// synthesized here).
type remoteRenderer struct {
	mu     sync.Mutex
	client *render.Client
	// changed is called when the render nodes' catalogs change (the
	// daemon's ReloadVoices: the voice list takes in their voices).
	changed func()
}

// onChange sets what is called when the render nodes' catalogs change.
func (r *remoteRenderer) onChange(f func()) {
	r.mu.Lock()
	r.changed = f
	r.mu.Unlock()
}

func (r *remoteRenderer) nodesChanged() {
	r.mu.Lock()
	f := r.changed
	r.mu.Unlock()
	if f != nil {
		f()
	}
}

// voices implements engine.Options.RemoteVoices: the render nodes'
// catalogs.
func (r *remoteRenderer) voices() []engine.RemoteVoice {
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	if c == nil {
		return nil
	}
	var out []engine.RemoteVoice
	for _, v := range c.Catalog() {
		out = append(out, engine.RemoteVoice{Name: v.Name, Language: v.Language, SampleRate: v.SampleRate, Speakers: v.Speakers})
	}
	return out
}

var errNotConnected = errors.New("render: not connected to the broker yet")

func (r *remoteRenderer) set(c *render.Client) {
	r.mu.Lock()
	r.client = c
	r.mu.Unlock()
}

// Render implements engine.Remote.
func (r *remoteRenderer) Render(ctx context.Context, q engine.RemoteRequest) ([]byte, error) {
	r.mu.Lock()
	c := r.client
	r.mu.Unlock()
	if c == nil {
		return nil, errNotConnected
	}
	req := render.Request{Voice: q.Voice, Speaker: q.Speaker, Rate: q.Rate, Text: q.Text, Normalize: q.Normalized}
	if q.Key != (cache.PhraseKey{}) {
		req.Key = q.Key.String() // none for a voice this node has no files of
	}
	var a render.Answer
	var err error
	if q.Node != "" {
		a, err = c.FetchFrom(ctx, q.Node, req)
	} else {
		a, err = c.Fetch(ctx, req)
	}
	if err != nil {
		return nil, err
	}
	return a.Record, nil
}

// groupRenders reports whether this node's group announcements are
// rendered once per group: a member not in render.mode remote asks the
// member that leads an announcement (whose play_at proposal the group
// took) for each sentence, and answers its fellows when it leads. A
// remote node asks the render nodes instead, which render once for the
// whole fleet.
func groupRenders(cfg config.Config) bool {
	return len(cfg.Groups.Names) > 0 && cfg.Render.Mode != config.RenderRemote
}

// serveFunc answers a render request with the engine: from its phrase
// cache, or by synthesis. A request whose key this node's voice does not
// give is answered with this node's key and no record (the server says
// key_mismatch), a voice not installed here with render.ErrUnknownVoice.
func serveFunc(voices *engine.Engine) render.RenderFunc {
	return func(ctx context.Context, r render.Request) (string, []byte, error) {
		q := engine.RemoteRequest{Voice: r.Voice, Speaker: r.Speaker, Rate: r.Rate, Text: r.Text, Normalized: r.Normalize}
		if r.Key != "" {
			k, err := parsePhraseKey(r.Key)
			if err != nil {
				return "", nil, err
			}
			q.Key = k
		}
		key, record, err := voices.RenderPhrase(ctx, q)
		switch {
		case errors.Is(err, engine.ErrRemoteKey):
			return key.String(), nil, nil
		case errors.Is(err, engine.ErrUnknownVoice):
			return "", nil, fmt.Errorf("%w: %v", render.ErrUnknownVoice, err)
		case err != nil:
			return "", nil, err
		}
		return key.String(), record, nil
	}
}

func parsePhraseKey(s string) (cache.PhraseKey, error) {
	var k cache.PhraseKey
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(k) {
		return k, fmt.Errorf("phrase key %q: want %d hex digits", s, 2*len(k))
	}
	copy(k[:], b)
	return k, nil
}

// startRender starts what render.mode asks for once the daemon's broker
// connection is up: a remote node's client on that connection, or a
// serve node's server on a connection of its own with a clean session
// (a persistent member offline would go on getting its share of the
// requests, mosquitto#1747). The returned stop ends the server and its
// connection.
func startRender(ctx context.Context, cfg config.Config, broker string, client *mqtt.Client, voices *engine.Engine, remote *remoteRenderer, log *slog.Logger) (stop func(), err error) {
	stopGroup, err := startGroupRender(ctx, cfg, client, voices, remote, log)
	if err != nil {
		return nil, err
	}
	stopMode, err := startRenderMode(ctx, cfg, broker, client, voices, remote, log)
	if err != nil {
		stopGroup()
		return nil, err
	}
	return func() { stopMode(); stopGroup() }, nil
}

// startGroupRender starts a group member's side of rendering its group
// announcements once (groupRenders): a render client on the daemon's
// connection to ask leaders, and a server of this node's own render
// topic alone (not the render nodes' shared one) to answer as leader.
// A serve node answers its own topic already.
func startGroupRender(ctx context.Context, cfg config.Config, client *mqtt.Client, voices *engine.Engine, remote *remoteRenderer, log *slog.Logger) (stop func(), err error) {
	if !groupRenders(cfg) {
		return func() {}, nil
	}
	if err := render.ValidateNode(cfg.Node); err != nil {
		log.Warn("group announcements are synthesized by every member: the node name is not a render topic level", "node", cfg.Node, "err", err)
		return func() {}, nil
	}
	c, err := render.NewClient(client.RenderTransport(), cfg.Node, &render.ClientOptions{Timeout: cfg.Render.Timeout, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("render: %w", err)
	}
	remote.set(c)
	if cfg.Render.Mode == config.RenderServe {
		return func() {}, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := render.Serve(sctx, client.RenderTransport(), serveFunc(voices), &render.ServerOptions{Node: cfg.Node, NodeOnly: true, Logger: log}); err != nil {
			log.Error("group render stopped", "err", err)
		}
	})
	log.Info("group announcements: asking their leader for each sentence, answering as leader", "topic", render.NodeTopic(cfg.Node, render.NodeRequest))
	return func() { cancel(); wg.Wait() }, nil
}

// startRenderMode starts what render.mode asks for (see startRender).
func startRenderMode(ctx context.Context, cfg config.Config, broker string, client *mqtt.Client, voices *engine.Engine, remote *remoteRenderer, log *slog.Logger) (stop func(), err error) {
	switch cfg.Render.Mode {
	case config.RenderRemote:
		c, err := render.NewClient(client.RenderTransport(), cfg.Node, &render.ClientOptions{Timeout: cfg.Render.Timeout, Logger: log,
			OnNodes: remote.nodesChanged})
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		remote.set(c)
		log.Info("asking render nodes for every phrase not cached", "reply", c.Reply(), "timeout", cfg.Render.Timeout)
		return func() {}, nil
	case config.RenderServe:
		if err := render.ValidateNode(cfg.Node); err != nil {
			return nil, fmt.Errorf("render.mode serve: node %q: %w", cfg.Node, err)
		}
		conn, err := connectMQTT(ctx, cfg, broker, asRender, log)
		if err != nil {
			return nil, fmt.Errorf("render: %w", err)
		}
		sctx, cancel := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := render.Serve(sctx, conn.RenderTransport(), serveFunc(voices), &render.ServerOptions{Node: cfg.Node, Logger: log}); err != nil {
				log.Error("render node stopped", "err", err)
			}
		})
		wg.Go(func() { publishCatalog(sctx, conn, cfg.Node, voices.Describe, catalogCheck, log) })
		log.Info("serving render requests", "filter", render.ServeFilter, "own", render.NodeTopic(cfg.Node, render.NodeRequest))
		return func() {
			cancel()
			wg.Wait()
			cctx, ccancel := context.WithTimeout(context.Background(), closeTimeout)
			defer ccancel()
			if err := conn.Close(cctx); err != nil {
				log.Warn("render mqtt close", "err", err)
			}
		}, nil
	}
	return func() {}, nil
}

// catalogCheck is how often a serve node looks for changed voices to
// republish its catalog: a voice installed or removed reaches the
// requesters' rankings within it.
const catalogCheck = 30 * time.Second

// publishCatalog publishes this render node's voices, retained, on its
// catalog topic, and again whenever they change, until ctx ends. A
// failed publish is tried again at the next check.
func publishCatalog(ctx context.Context, conn *mqtt.Client, node string, describe func() []engine.VoiceInfo, every time.Duration, log *slog.Logger) {
	topic := render.NodeTopic(node, render.NodeVoices)
	var last []byte
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		payload, err := render.EncodeCatalog(catalogOf(describe()))
		switch {
		case err != nil:
			log.Warn("render catalog not published", "err", err)
		case !bytes.Equal(payload, last):
			if err := conn.Publish(ctx, topic, payload, true); err != nil {
				log.Warn("render catalog not published", "topic", topic, "err", err)
			} else {
				last = payload
				log.Debug("render catalog published", "topic", topic, "bytes", len(payload))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// catalogOf is the render catalog of the installed voices.
func catalogOf(voices []engine.VoiceInfo) render.Catalog {
	var c render.Catalog
	for _, v := range voices {
		cv := render.CatalogVoice{Name: v.Name, SampleRate: v.SampleRate, Speakers: v.Speakers}
		if len(v.Languages) > 0 {
			cv.Language = v.Languages[0]
		}
		c.Voices = append(c.Voices, cv)
	}
	if len(c.Voices) > render.MaxCatalogVoices {
		c.Voices = c.Voices[:render.MaxCatalogVoices]
	}
	return c
}
