package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/ort"
)

// voiceSet is the daemon's Engine: the Piper voices installed in one
// directory, loaded on first use and kept warm in a session LRU, with the
// phrase cache in front of synthesis. A voice is a subdirectory
// holding one NAME.onnx + NAME.onnx.json (its name is the directory's), or
// such a pair directly in the directory (its name is NAME). Names come from
// the directory listing only, so a request can never make mynahd open a
// path of its choosing.
type voiceSet struct {
	rt      *ort.Runtime
	dir     string
	def     string
	preload []string // voices.sessions.preload, loaded by Preload after def
	opts    *voice.PiperOptions
	log     *slog.Logger

	// store, when set, is the cache file: the audio of sentences already
	// spoken, and the cloned speakers.
	store *cache.Store
	// sessions keeps loaded voices warm (LRU bounded as voices.sessions
	// says, the default voice and voices.sessions.pinned pinned, idle ones
	// closed under memory pressure); concurrent first uses load a voice
	// once.
	sessions *cache.Sessions[*loadedVoice]
	// loading, when set, is called as a load starts: tests hold a load
	// there to make callers meet it.
	loading func(name string)
	// precision is voices.precision, precisions its per-voice overrides;
	// provider is onnx.provider ("" for auto), which a variant's gate
	// record must match for auto to take it.
	precision  string
	precisions map[string]string
	provider   string
	// cpu is this CPU's class: auto takes an int8 variant only where its
	// weight format is exact (bundle.GateRecord.UsableOn).
	cpu cpuclass.Class
	// keeper gives memory back after speech (memory.go); releaseFailed
	// is its note that the cache file's pages could not be released.
	keeper        *memoryKeeper
	releaseFailed bool
}

var _ daemon.Engine = (*voiceSet)(nil)

// newVoiceSet opens the voices in dir. def is the default voice ("" is the
// first installed); the names in sc.Preload and sc.Pinned must be
// installed.
func newVoiceSet(rt *ort.Runtime, dir, def string, sc SessionsConfig, opts *voice.PiperOptions, log *slog.Logger) (*voiceSet, error) {
	if opts == nil {
		opts = &voice.PiperOptions{}
	}
	vs := &voiceSet{rt: rt, dir: dir, def: def, opts: opts, log: log, cpu: cpuclass.Host()}
	names := vs.Voices()
	if len(names) == 0 {
		return nil, fmt.Errorf("no voices in %s (a voice is a directory with NAME.onnx and NAME.onnx.json)", dir)
	}
	if vs.def == "" {
		vs.def = names[0]
	}
	installed := strings.Join(names, ", ")
	if !slices.Contains(names, vs.def) {
		return nil, fmt.Errorf("voices.default: %w %q (installed: %s)", daemon.ErrUnknownVoice, vs.def, installed)
	}
	// Config validation cannot see the directory, so unknown names are
	// caught here, before anything is loaded.
	for _, l := range []struct {
		key   string
		names []string
	}{{"preload", sc.Preload}, {"pinned", sc.Pinned}} {
		for i, name := range l.names {
			if !slices.Contains(names, name) {
				return nil, fmt.Errorf("voices.sessions.%s[%d]: %w %q (installed: %s)", l.key, i, daemon.ErrUnknownVoice, name, installed)
			}
		}
	}
	vs.preload = slices.Clone(sc.Preload)
	so := sessionOptions(sc, vs.def, vs.load, vs.unload, log)
	// Under memory pressure the cloning voices' KV state goes first: it
	// is rebuilt in milliseconds, a voice takes a load.
	mem := so.Memory.(sessionMemory)
	mem.lowWater, mem.relieve = sc.LowWater, vs.relieveKV
	so.Memory = mem
	vs.sessions = cache.NewSessions(so)
	logMallocTuning(log)
	vs.keeper = startMemoryKeeper(vs.releaseMemory, memoryIdleRelease, memoryBusyRelease)
	return vs, nil
}

// synthesizing marks synthesis for the memory keeper; call the func it
// returns when synthesis ends.
func (vs *voiceSet) synthesizing() (done func()) {
	if vs.keeper == nil {
		return func() {}
	}
	return vs.keeper.begin()
}

// Voices lists the installed voices by name, sorted.
func (vs *voiceSet) Voices() []string {
	names, _ := vs.scan()
	return slices.Sorted(maps.Keys(names))
}

// scan maps voice names to their paths and kinds.
func (vs *voiceSet) scan() (map[string]voicePath, error) {
	entries, err := os.ReadDir(vs.dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]voicePath)
	for _, e := range entries {
		path := filepath.Join(vs.dir, e.Name())
		switch {
		case e.IsDir():
			if kind, err := voiceKind(path); err == nil {
				out[e.Name()] = voicePath{path, kind}
			}
		case strings.HasSuffix(e.Name(), ".onnx"):
			if _, err := os.Stat(path + ".json"); err == nil {
				out[strings.TrimSuffix(e.Name(), ".onnx")] = voicePath{path, kindPiper}
			}
		}
	}
	return out, nil
}

// voicePath is where a voice lies and what engine it needs.
type voicePath struct {
	path, kind string
}

// Default is the voice used when a request names none.
func (vs *voiceSet) Default() string { return vs.def }

// load reads the named voice from disk: the session cache's Load.
func (vs *voiceSet) load(ctx context.Context, name string) (*loadedVoice, int64, error) {
	if vs.loading != nil {
		vs.loading(name)
	}
	start := time.Now()
	paths, err := vs.scan()
	if err != nil {
		return nil, 0, err
	}
	p, ok := paths[name]
	if !ok {
		return nil, 0, fmt.Errorf("%w %q", daemon.ErrUnknownVoice, name)
	}
	v, err := vs.loadKind(name, p.kind, p.path)
	if err != nil {
		return nil, 0, err
	}
	info := v.info
	loadMS := float64(time.Since(start).Microseconds()) / 1000
	vs.log.Info("voice loaded", "voice", name, "engine", p.kind, "precision", v.precision, "load_ms", loadMS, "bytes", info.SizeBytes,
		"provider", info.Provider, "rate", info.SampleRate, "speakers", len(info.Speakers))
	return v, info.SizeBytes, nil
}

// unload closes a voice the session cache let go of (evicted, closed under
// memory pressure, or at shutdown): the session cache's Close.
func (vs *voiceSet) unload(v *loadedVoice) error {
	vs.log.Info("voice unloaded", "voice", v.name)
	return v.close()
}

// Preload loads the default voice, then voices.sessions.preload, so that
// their first requests do not wait; each load logs one line with its time.
// Only a failure of the default voice is an error: another voice that
// fails to load is logged and skipped.
func (vs *voiceSet) Preload(ctx context.Context) (voice.Info, error) {
	v, release, err := vs.sessions.Get(ctx, vs.def)
	if err != nil {
		return voice.Info{}, err
	}
	defer release()
	for _, name := range vs.preload {
		if name == vs.def {
			continue
		}
		if err := vs.sessions.Preload(ctx, name); err != nil {
			if ctx.Err() != nil {
				return voice.Info{}, err
			}
			vs.log.Warn("preload voice failed, skipping it", "voice", name, "err", err)
		}
	}
	return v.info, nil
}

// Speak implements daemon.Engine. With a phrase cache, each sentence is
// looked up before it is synthesized and stored after it was handed on, so
// "The washing machine has finished. It is 7 pm." reuses the first sentence
// whatever the time. Sentence n is emitted before n+1 is synthesized (the
// daemon plays n meanwhile).
func (vs *voiceSet) Speak(ctx context.Context, s daemon.Speech, emit func(daemon.Chunk) error) error {
	defer vs.synthesizing()()
	name := s.Voice
	if name == "" {
		name = vs.def
	}
	v, release, err := vs.sessions.Get(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	p, err := v.prepare(ctx, s)
	if err != nil {
		return err
	}
	sentences, err := p.sentences(v, s.Text)
	if errors.Is(err, text.ErrEmptyText) {
		return fmt.Errorf("%w: %w", daemon.ErrNothingToSay, err)
	}
	if err != nil {
		return err
	}
	useCache := vs.store != nil && p.cacheable && !s.NoCache
	var stored time.Duration // of this request's audio, in the phrase cache
	for i, sentence := range sentences {
		if err := ctx.Err(); err != nil {
			return err
		}
		var (
			key cache.PhraseKey
			pcm audio.PCM
			hit bool
		)
		if useCache {
			key = p.key(sentence)
			pcm, hit = vs.cached(key)
		}
		if !hit {
			if pcm, err = p.synth(ctx, sentence); err != nil {
				return fmt.Errorf("sentence %d: %w", i+1, err)
			}
		}
		c := daemon.Chunk{Index: i, Last: i == len(sentences)-1, PCM: pcm, Cached: hit}
		if !c.Last {
			c.Silence = v.silence
		}
		if err := emit(c); err != nil {
			return err
		}
		if useCache && !hit && stored+pcm.Duration() <= maxCachedRequestAudio {
			vs.keep(key, name, pcm)
			stored += pcm.Duration()
		}
	}
	return nil
}

// maxCachedRequestAudio is the most of one request's synthesized audio
// Speak stores in the phrase cache; the rest of a longer request is
// spoken uncached. The cache is for the announcements that come back, and
// those are short: the longest text at the slowest rate is about half an
// hour of speech, several times the default 64 MiB cache, and storing it
// would push out every phrase that does repeat (and, while bbolt rewrites
// its pages, fill the process's RSS with the file's).
const maxCachedRequestAudio = 2 * time.Minute

// CheckVoice implements daemon.Engine for voice/set: the voice must still
// be installed (a warm session outlives its deleted files, but only until
// it is evicted) and must load; it then stays warm for the requests that
// follow.
func (vs *voiceSet) CheckVoice(ctx context.Context, name string) error {
	paths, err := vs.scan()
	if err != nil {
		return fmt.Errorf("check voice: %w", err)
	}
	if _, ok := paths[name]; !ok {
		return fmt.Errorf("%w %q: its files are gone from %s", daemon.ErrUnknownVoice, name, vs.dir)
	}
	_, release, err := vs.sessions.Get(ctx, name)
	if err != nil {
		return err
	}
	release()
	return nil
}

// PinPhrases makes sure every sentence of texts, as the default voice says
// it with its default speaker and settings, is in the phrase cache and
// pinned (never evicted), and releases pins no longer configured. mynahd
// calls it at start, before READY, so "Good morning." plays from the cache
// the first time it is asked for.
func (vs *voiceSet) PinPhrases(ctx context.Context, texts []string) error {
	if vs.store == nil {
		return nil
	}
	defer vs.synthesizing()()
	v, release, err := vs.sessions.Get(ctx, vs.def)
	if err != nil {
		return err
	}
	defer release()
	p, err := v.prepare(ctx, daemon.Speech{})
	if err != nil {
		return err
	}
	want := make(map[cache.PhraseKey]bool)
	for _, text := range texts {
		sentences, err := p.sentences(v, text)
		if err != nil {
			return fmt.Errorf("pinned phrase %q: %w", text, err)
		}
		for _, sentence := range sentences {
			key := p.key(sentence)
			want[key] = true
			if _, hit := vs.cached(key); !hit {
				pcm, err := p.synth(ctx, sentence)
				if err != nil {
					return fmt.Errorf("pinned phrase %q: %w", sentence, err)
				}
				data, err := audio.EncodePhrase(pcm)
				if err != nil {
					return fmt.Errorf("pinned phrase %q: %w", sentence, err)
				}
				if err := vs.store.PutPhrase(key, vs.def, data); err != nil {
					return fmt.Errorf("pinned phrase %q: %w", sentence, err)
				}
			}
			if err := vs.store.Pin(key); err != nil {
				return fmt.Errorf("pinned phrase %q: %w", sentence, err)
			}
		}
	}
	for _, key := range vs.store.Pinned() {
		if !want[key] {
			if err := vs.store.Unpin(key); err != nil {
				return err
			}
		}
	}
	return nil
}

// sentences cuts text into the plan's model runs.
func (p *plan) sentences(v *loadedVoice, text string) ([]string, error) {
	if p.split != nil {
		return p.split(text)
	}
	return v.split(text)
}

// key names one sentence's audio under the plan's settings.
func (p *plan) key(sentence string) cache.PhraseKey {
	spec := p.spec
	spec.Text = sentence
	return spec.Key()
}

// cached returns a sentence's audio from the phrase cache. A damaged record
// is deleted and reported as a miss, so it is synthesized again; a broken
// cache is a miss too: speech never waits on it.
func (vs *voiceSet) cached(key cache.PhraseKey) (audio.PCM, bool) {
	data, ok, err := vs.store.GetPhrase(key)
	if err != nil {
		vs.log.Warn("phrase cache read failed", "err", err)
		return audio.PCM{}, false
	}
	if !ok {
		return audio.PCM{}, false
	}
	pcm, err := audio.DecodePhrase(data)
	if err != nil {
		vs.log.Warn("damaged phrase record deleted", "key", key.String(), "err", err)
		if err := vs.store.DeletePhrase(key); err != nil {
			vs.log.Warn("phrase cache delete failed", "err", err)
		}
		return audio.PCM{}, false
	}
	return pcm, true
}

// keep stores a synthesized sentence; a failed write is logged (the store
// counts it) and speech goes on uncached.
func (vs *voiceSet) keep(key cache.PhraseKey, voiceName string, pcm audio.PCM) {
	data, err := audio.EncodePhrase(pcm)
	if err == nil {
		err = vs.store.PutPhrase(key, voiceName, data)
	}
	if err != nil {
		vs.log.Warn("phrase not cached", "err", err)
	}
}

// Close releases every loaded voice.
func (vs *voiceSet) Close() error {
	if vs.keeper != nil {
		vs.keeper.close()
	}
	return vs.sessions.Close()
}
