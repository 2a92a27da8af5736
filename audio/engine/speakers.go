package engine

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/mynah-tts/mynah/cache"
)

// Enroll makes a cloned speaker: a cloning voice's speaker encoder makes
// the embedding, the cache file keeps it (fp16 or int8, with the
// encoder's digest), replacing one of the same owner and name. The
// reference audio is only ever in memory. It returns the speaker and
// those evicted to keep the most recent ones.
func (vs *Engine) Enroll(ctx context.Context, e Enrollment) (SpeakerInfo, []SpeakerInfo, error) {
	if vs.store == nil {
		return SpeakerInfo{}, nil, fmt.Errorf("%w: cloned speakers live in the cache file, and there is none", ErrNoCloning)
	}
	name := e.Voice
	if name == "" {
		var err error
		if name, err = vs.cloningVoice(); err != nil {
			return SpeakerInfo{}, nil, err
		}
	}
	v, release, err := vs.sessions.Get(ctx, name) // an unknown name is ErrUnknownVoice
	if err != nil {
		return SpeakerInfo{}, nil, err
	}
	defer release()
	if v.pipeline == nil {
		return SpeakerInfo{}, nil, fmt.Errorf("%w: %q is a %s voice", ErrNoCloning, name, v.kind)
	}
	emb, err := v.pipeline.Enroll(ctx, e.Audio)
	if err != nil {
		return SpeakerInfo{}, nil, err
	}
	now := vs.now()
	evicted, err := vs.store.PutSpeaker(cache.Speaker{
		Owner: e.Owner, Name: e.Name, Embedding: emb.Vector, Prompt: emb.Prompt,
		EncoderDigest: emb.EncoderDigest, Created: now, Used: now,
	})
	if err != nil {
		return SpeakerInfo{}, nil, fmt.Errorf("store speaker: %w", err)
	}
	gone := make([]SpeakerInfo, len(evicted))
	for i, r := range evicted {
		gone[i] = SpeakerInfo{Owner: r.Owner, Name: r.Name}
	}
	return SpeakerInfo{Owner: e.Owner, Name: e.Name, Voice: name, Created: now}, gone, nil
}

// Forget removes owner's cloned speaker name; false if there was none.
func (vs *Engine) Forget(owner, name string) (bool, error) {
	if vs.store == nil {
		return false, nil
	}
	return vs.store.ForgetSpeaker(owner, name)
}

// Speakers lists the cloned speakers. Their voice is the installed voice
// whose encoder made them, if one is loaded.
func (vs *Engine) Speakers() []SpeakerInfo {
	if vs.store == nil {
		return nil
	}
	list := vs.store.ListSpeakers()
	out := make([]SpeakerInfo, len(list))
	for i, s := range list {
		out[i] = SpeakerInfo{Owner: s.Owner, Name: s.Name, Voice: vs.encoderVoice(s.EncoderDigest), Created: s.Created}
	}
	return out
}

// cloningVoice is the voice enrollment uses when the command names none:
// the default voice if it can clone, else the first installed voice that
// can.
func (vs *Engine) cloningVoice() (string, error) {
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
	return "", fmt.Errorf("%w: no voice here can; install a pipeline bundle (mynah voice demo --kind cloning)", ErrNoCloning)
}

// encoderVoice names the loaded voice whose speaker encoder has digest;
// "" when none is loaded.
func (vs *Engine) encoderVoice(digest string) string {
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
func (vs *Engine) relieveKV(shortfall int64) int64 {
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
