package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
)

// speakerBook is the daemon's SpeakerStore: a cloning voice's speaker
// encoder makes the embedding, the cache file keeps it (fp16 or int8, with
// the encoder's digest). The reference audio is only ever in memory.
type speakerBook struct {
	vs    *voiceSet
	store *cache.Store
	now   func() time.Time
}

var _ daemon.SpeakerStore = speakerBook{}

// Enroll implements daemon.SpeakerStore.
func (b speakerBook) Enroll(ctx context.Context, e daemon.Enrollment) (daemon.SpeakerInfo, []daemon.SpeakerInfo, error) {
	name := e.Voice
	if name == "" {
		var err error
		if name, err = b.vs.cloningVoice(); err != nil {
			return daemon.SpeakerInfo{}, nil, err
		}
	}
	v, release, err := b.vs.sessions.Get(ctx, name) // an unknown name is ErrUnknownVoice
	if err != nil {
		return daemon.SpeakerInfo{}, nil, err
	}
	defer release()
	if v.pipeline == nil {
		return daemon.SpeakerInfo{}, nil, fmt.Errorf("%w: %q is a %s voice", daemon.ErrNoCloning, name, v.kind)
	}
	emb, err := v.pipeline.Enroll(ctx, e.Audio)
	if err != nil {
		return daemon.SpeakerInfo{}, nil, err
	}
	now := b.now()
	evicted, err := b.store.PutSpeaker(cache.Speaker{
		Owner: e.Owner, Name: e.Name, Embedding: emb.Vector, Prompt: emb.Prompt,
		EncoderDigest: emb.EncoderDigest, Created: now, Used: now,
	})
	if err != nil {
		return daemon.SpeakerInfo{}, nil, fmt.Errorf("store speaker: %w", err)
	}
	gone := make([]daemon.SpeakerInfo, len(evicted))
	for i, r := range evicted {
		gone[i] = daemon.SpeakerInfo{Owner: r.Owner, Name: r.Name}
	}
	return daemon.SpeakerInfo{Owner: e.Owner, Name: e.Name, Voice: name, Created: now}, gone, nil
}

// Forget implements daemon.SpeakerStore.
func (b speakerBook) Forget(owner, name string) (bool, error) {
	return b.store.ForgetSpeaker(owner, name)
}

// List implements daemon.SpeakerStore. The voice is the installed voice
// whose encoder made the speaker, if one is loaded.
func (b speakerBook) List() ([]daemon.SpeakerInfo, error) {
	list := b.store.ListSpeakers()
	out := make([]daemon.SpeakerInfo, len(list))
	for i, s := range list {
		out[i] = daemon.SpeakerInfo{Owner: s.Owner, Name: s.Name, Voice: b.vs.encoderVoice(s.EncoderDigest), Created: s.Created}
	}
	return out, nil
}

// cloningVoice is the voice enrollment uses when the command names none:
// the default voice if it can clone, else the first installed voice that
// can.
func (vs *voiceSet) cloningVoice() (string, error) {
	paths, err := vs.scan()
	if err != nil {
		return "", err
	}
	if p, ok := paths[vs.def]; ok && p.kind == kindPipeline {
		return vs.def, nil
	}
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		if paths[name].kind == kindPipeline {
			return name, nil
		}
	}
	return "", fmt.Errorf("%w: no voice here can; install a pipeline bundle (mynah voice demo --kind cloning)", daemon.ErrNoCloning)
}

// encoderVoice names the loaded voice whose speaker encoder has digest;
// "" when none is loaded.
func (vs *voiceSet) encoderVoice(digest string) string {
	name := ""
	vs.sessions.Each(func(key string, v *loadedVoice) {
		if v.pipeline != nil && v.pipeline.EncoderDigest() == digest && name == "" {
			name = key
		}
	})
	return name
}

// relieveKV frees the cloning voices' KV caches (session state first,
// then speaker prefixes) until shortfall bytes are freed, and returns what
// was freed.
func (vs *voiceSet) relieveKV(shortfall int64) int64 {
	var freed int64
	vs.sessions.Each(func(_ string, v *loadedVoice) {
		if v.pipeline != nil && freed < shortfall {
			freed += v.pipeline.EvictKV(shortfall - freed)
		}
	})
	if freed > 0 {
		vs.log.Info("memory low: freed cloning state", "bytes", freed)
	}
	return freed
}
