package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/ort"
)

// Engine turns requests into speech for every front end (mynahd's MQTT
// daemon, mynah say): the voices installed in one directory, loaded on
// first use and kept warm in a session LRU, with the phrase cache in
// front of synthesis and the cloned speakers beside it. A voice is a
// subdirectory holding one NAME.onnx + NAME.onnx.json, a style-vector or
// pipeline bundle (voice.json; its name is the directory's), or such a
// pair directly in the directory (its name is NAME). Names come from the
// directory listing only, so a request can never make it open a path of
// its choosing.
type Engine struct {
	rt      *ort.Runtime
	dir     string
	def     string
	preload []string // Sessions.Preload, loaded by Preload after def
	opts    *voice.PiperOptions
	log     *slog.Logger
	now     func() time.Time

	// store, when set, is the cache file: the audio of sentences already
	// spoken, and the cloned speakers.
	store *cache.Store
	// remote, when set, is asked for a phrase-cache miss before it is
	// synthesized (Options.Remote).
	remote Remote
	// remoteRenderBy: remote is asked only for requests that name
	// RenderBy (Options.RemoteRenderBy).
	remoteRenderBy bool
	remoteVoices   func() []RemoteVoice // Options.RemoteVoices
	flights        flights              // syntheses in progress, by phrase key
	slots          *scheduler           // synthesis slots (Options.MaxParallel)
	kinds          fileMemo[string]     // voiceKind by path (memo.go)
	infos          fileMemo[VoiceInfo]  // describe by path and kind
	hot            *hotPhrases          // decoded audio of recent hits (Options.HotBytes)
	// sessions keeps loaded voices warm (LRU bounded as Sessions says,
	// the default voice and Sessions.Pinned pinned, idle ones closed
	// under memory pressure); concurrent first uses load a voice once.
	sessions *sessionLRU[*loadedVoice]
	// loading, when set, is called as a load starts: tests hold a load
	// there to make callers meet it.
	loading func(name string)
	// optim, when set (Options.OptimizeInBackground), builds the
	// optimized models of the Piper voices loaded without theirs and
	// switches them over (optimize.go); optimizing and optimized, when
	// set, are called as each of its builds starts and after it ends:
	// tests hold and wait for builds there.
	optim      *optimizer
	optimizing func(name string)
	optimized  func(name string, err error)
	// precision is Options.Precision, precisions its per-voice overrides;
	// provider is the execution provider ("" for auto), which a variant's
	// gate record must match for auto to take it.
	precision  string
	precisions map[string]string
	provider   string
	// cpu is this CPU's class: auto takes an int8 variant only where its
	// weight format is exact (bundle.GateRecord.UsableOn).
	cpu cpuclass.Class
	// keeper gives memory back after speech (keeper.go), when
	// Options.ReleaseMemory is set.
	keeper *memoryKeeper
	// set is what the voices directory held at the last look (reload.go).
	set voiceSet
	// noNormalize and emoji are Options.NoNormalize and Options.Emoji.
	noNormalize bool
	emoji       text.Emoji
}

// Options configures an Engine. Runtime and Dir are required.
type Options struct {
	Runtime *ort.Runtime
	// Dir holds the installed voices.
	Dir string
	// Default is the voice for requests that name none; "" is the first
	// installed.
	Default string
	// Sessions bounds the warm voices.
	Sessions SessionOptions
	// Piper configures every voice's sessions, sentence silence and
	// logging (the style and pipeline kinds take the same settings).
	Piper *voice.PiperOptions
	// Precision is the variant to load: "auto" ("" too) takes the
	// smallest whose gate passed and that is exact on this CPU; or fp32,
	// fp16, int8, nbits. Precisions overrides it per voice name.
	Precision  string
	Precisions map[string]string
	// Provider is the execution provider variants were gated for; "" for
	// auto.
	Provider string
	// CPU is this CPU's class; zero is cpuclass.Host().
	CPU cpuclass.Class
	// Store is the cache file: the phrase cache and the cloned speakers.
	// nil: every sentence is synthesized, and no speaker can be cloned.
	Store *cache.Store
	// ReleaseMemory, when set, is called after speech (the engine idle a
	// second, and every 2 s during a long burst) to give memory back to
	// the kernel; mynahd trims the C heap there.
	ReleaseMemory func()
	Logger        *slog.Logger
	// Now is the clock of enrollments (default time.Now).
	Now func() time.Time
	// NoNormalize speaks every text as written: numbers, units and
	// Markdown are left for the front end (Request.NoNormalize does it for
	// one request). By default text.Normalize reads them first.
	NoNormalize bool
	// Emoji is what Normalize does with emoji ("" drops them).
	Emoji text.Emoji
	// OptimizeInBackground, with Piper.OptimizedDir, keeps the build of
	// ONNX Runtime's optimized copy of a Piper voice out of the voice's
	// first load: a voice whose copy is not there loads as its file has
	// it (voice.PiperOptions.OptimizeLater), the copy is built in the
	// background, one voice at a time, on one thread at the lowest CPU
	// priority, and the voice is switched to it between requests (one
	// that started keeps the session it started with). Voices that
	// ReloadVoices finds new or changed are built the same way before
	// they are asked for. mynahd sets it; a process that speaks once and
	// exits (mynah say) is faster building the copy at load.
	OptimizeInBackground bool
	// Remote, with Store, is asked for every phrase-cache miss before the
	// sentence is synthesized here (mynahd's render.mode remote); its
	// answer is stored in the phrase cache. nil: misses are synthesized.
	Remote Remote
	// RemoteRenderBy asks Remote only for the sentences of a request that
	// names Request.RenderBy (a group announcement's leader), and only
	// that node (RemoteRequest.Node), instead of for every miss.
	RemoteRenderBy bool
	// RemoteVoices, with Remote (asked for every miss) and Store, lists
	// the voices the render nodes have (their catalogs): one not
	// installed here is spoken all the same, every sentence rendered
	// there (or fetched from the phrase cache), a satellite without voice
	// files. It is called on every Voices and Speak.
	RemoteVoices func() []RemoteVoice
	// MaxParallel bounds the sentences synthesized at once, over every
	// caller (schedule.go): 0 is one per CPU. Phrase-cache hits and
	// rendered sentences take no slot.
	MaxParallel int
	// HotBytes bounds the decoded audio of the most recent phrase-cache
	// hits kept in memory while requests come, so a phrase asked again
	// in a burst (ten satellites at once) is neither read nor decoded
	// (0: none; mynahd gives DefaultHotBytes with Wyoming on). With
	// ReleaseMemory it is let go, with the voices' arenas, once the
	// engine is idle.
	HotBytes int64
}

// SessionOptions bound the voices kept loaded (mynahd's voices.sessions).
type SessionOptions struct {
	// MaxCount bounds the voices kept loaded (0: DefaultMaxSessions);
	// MaxBytes their summed model sizes (0: no bound).
	MaxCount int
	MaxBytes int64
	// Preload are loaded by Preload after the default voice; Pinned are
	// never evicted once loaded (the default voice always is).
	Preload, Pinned []string
	// LowWater is the memory pressure at which idle unpinned voices are
	// closed: less than this left below the cgroup's limit, else below
	// MemoryBudget of anonymous memory; 0 turns the check off.
	LowWater, MemoryBudget int64
	// CheckInterval is how often memory pressure is checked while no
	// voice is requested (0: no timer).
	CheckInterval time.Duration
}

// Open opens the voices in o.Dir. The names in Default, Sessions.Preload
// and Sessions.Pinned must be installed; nothing is loaded yet (Preload
// does).
func Open(o *Options) (*Engine, error) {
	if o == nil || o.Runtime == nil || o.Dir == "" {
		return nil, errors.New("engine: Options.Runtime and Options.Dir are required")
	}
	opts, log := o.Piper, o.Logger
	if opts == nil {
		opts = &voice.PiperOptions{}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	vs := &Engine{rt: o.Runtime, dir: o.Dir, def: o.Default, opts: opts, log: log, now: o.Now, store: o.Store,
		precision: o.Precision, precisions: o.Precisions, provider: o.Provider, cpu: o.CPU,
		noNormalize: o.NoNormalize, emoji: o.Emoji, remote: o.Remote, remoteRenderBy: o.RemoteRenderBy, remoteVoices: o.RemoteVoices,
		slots: newScheduler(cmp.Or(max(o.MaxParallel, 0), runtime.NumCPU())), hot: newHotPhrases(o.HotBytes)}
	if vs.now == nil {
		vs.now = time.Now
	}
	if vs.cpu == "" {
		vs.cpu = cpuclass.Host()
	}
	sc := o.Sessions
	paths, err := vs.scan()
	if err != nil {
		return nil, fmt.Errorf("voices.dir: %w", err)
	}
	vs.initVoiceSet(paths)
	names := vs.Voices()
	if len(names) == 0 {
		return nil, fmt.Errorf("no voices in %s (a voice is a directory with NAME.onnx and NAME.onnx.json)", o.Dir)
	}
	if vs.def == "" {
		vs.def = names[0]
	}
	installed := strings.Join(names, ", ")
	if !slices.Contains(names, vs.def) {
		return nil, fmt.Errorf("voices.default: %w %q (installed: %s)", ErrUnknownVoice, vs.def, installed)
	}
	// Config validation cannot see the directory, so unknown names are
	// caught here, before anything is loaded.
	for _, l := range []struct {
		key   string
		names []string
	}{{"preload", sc.Preload}, {"pinned", sc.Pinned}} {
		for i, name := range l.names {
			if !slices.Contains(names, name) {
				return nil, fmt.Errorf("voices.sessions.%s[%d]: %w %q (installed: %s)", l.key, i, ErrUnknownVoice, name, installed)
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
	vs.sessions = newSessionLRU(so)
	if o.OptimizeInBackground && opts.OptimizedDir != "" {
		vs.optim = startOptimizer(vs.optimizeVoice, vs.optimizeDone)
	}
	if o.ReleaseMemory != nil {
		release := o.ReleaseMemory
		vs.keeper = startMemoryKeeper(func(idle bool) {
			if idle {
				vs.releaseVoiceMemory()
				vs.hot.clear() // idle memory is the budget's: keep none
			}
			release()
		}, memoryIdleRelease, memoryBusyRelease)
	}
	return vs, nil
}

// memoryReleaser is a loaded voice that can give back memory it keeps
// between runs (a Piper voice's ONNX Runtime arena).
type memoryReleaser interface {
	releaseMemory() error
}

// releaseVoiceMemory has the loaded voices give back what they keep
// between runs: the memory keeper calls it once the engine is idle,
// before Options.ReleaseMemory returns the freed pages to the kernel. A
// voice closed meanwhile is skipped.
func (vs *Engine) releaseVoiceMemory() {
	var voices []*loadedVoice
	vs.sessions.Each(func(_ string, v *loadedVoice) { voices = append(voices, v) })
	for _, v := range voices {
		r, ok := v.model.(memoryReleaser)
		if !ok {
			continue
		}
		if err := r.releaseMemory(); err != nil && !errors.Is(err, ort.ErrClosed) {
			vs.log.Debug("voice memory not released", "voice", v.name, "err", err)
		}
	}
}

// synthesizing marks synthesis for the memory keeper; call the func it
// returns when synthesis ends.
func (vs *Engine) synthesizing() (done func()) {
	if vs.keeper == nil {
		return func() {}
	}
	return vs.keeper.begin()
}

// Voices lists the installed voices by name, sorted: those in the
// directory, less those ReloadVoices found with a config that does not
// read, and the render nodes' voices (Options.RemoteVoices).
func (vs *Engine) Voices() []string {
	names, _ := vs.scan()
	vs.set.mu.Lock()
	for name := range vs.set.rejected {
		delete(names, name)
	}
	vs.set.mu.Unlock()
	out := slices.Collect(maps.Keys(names))
	for _, v := range vs.catalogVoices() {
		if _, ok := names[v.Name]; !ok && !slices.Contains(out, v.Name) {
			out = append(out, v.Name)
		}
	}
	slices.Sort(out)
	return out
}

// scan maps voice names to their paths and kinds.
func (vs *Engine) scan() (map[string]voicePath, error) {
	entries, err := os.ReadDir(vs.dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]voicePath)
	for _, e := range entries {
		path := filepath.Join(vs.dir, e.Name())
		switch {
		case e.IsDir():
			kind, err := vs.kinds.get(path, func() (string, []string, error) {
				kind, err := voiceKind(path)
				return kind, kindFiles(path), err
			})
			if err == nil {
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
func (vs *Engine) Default() string { return vs.def }

// load reads the named voice from disk: the session cache's Load.
func (vs *Engine) load(ctx context.Context, name string) (*loadedVoice, int64, error) {
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
		return nil, 0, fmt.Errorf("%w %q", ErrUnknownVoice, name)
	}
	v, err := vs.loadKind(name, p.kind, p.path)
	if err != nil {
		return nil, 0, err
	}
	if deferredOptimizing(v) {
		vs.optim.enqueue(name)
	}
	info := v.info
	loadMS := float64(time.Since(start).Microseconds()) / 1000
	vs.log.Info("voice loaded", "voice", name, "engine", p.kind, "precision", v.precision, "load_ms", loadMS, "bytes", info.SizeBytes,
		"provider", info.Provider, "optimized", info.Optimized, "rate", info.SampleRate, "speakers", len(info.Speakers))
	return v, info.SizeBytes, nil
}

// unload closes a voice the session cache let go of (evicted, closed under
// memory pressure, or at shutdown): the session cache's Close.
func (vs *Engine) unload(v *loadedVoice) error {
	vs.log.Info("voice unloaded", "voice", v.name)
	return v.model.close()
}

// Preload loads the default voice, then voices.sessions.preload, so that
// their first requests do not wait; each load logs one line with its time.
// Only a failure of the default voice is an error: another voice that
// fails to load is logged and skipped.
func (vs *Engine) Preload(ctx context.Context) (voice.Info, error) {
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

// Speak says s.Text, calling emit once per sentence in order. With a phrase cache, each sentence is
// looked up before it is synthesized and stored after it was handed on, so
// "The washing machine has finished. It is 7 pm." reuses the first sentence
// whatever the time. Sentence n is emitted before n+1 is synthesized (the
// daemon plays n meanwhile).
func (vs *Engine) Speak(ctx context.Context, s Request, emit func(Chunk) error) error {
	defer vs.synthesizing()()
	name := s.Voice
	if name == "" {
		name = vs.def
	}
	if rv, ok := vs.remoteVoice(name); ok {
		return vs.speakRemote(ctx, rv, s, emit)
	}
	v, release, err := vs.sessions.Get(ctx, name)
	if err != nil {
		return err
	}
	defer release()
	p, sentences, norm, err := vs.read(ctx, v, s)
	if err != nil {
		return err
	}
	_, cacheable := p.spec()
	useCache := vs.store != nil && cacheable && !s.NoCache
	var ask *RemoteRequest
	if useCache && vs.remote != nil && (!vs.remoteRenderBy || s.RenderBy != "") {
		ask = &RemoteRequest{Voice: name, Speaker: s.Speaker, Rate: s.Rate, Normalized: norm != normalizeOff}
		if vs.remoteRenderBy {
			ask.Node = s.RenderBy
		}
	}
	sp := &speaking{req: s, plan: p, norm: norm, useCache: useCache, ask: ask, silence: v.silence, voice: name, emit: emit}
	// Each sentence is cut into runs when it comes to it (plan.runs): a
	// long text's first audio waits for its first sentence alone.
	for si, sentence := range sentences {
		runs := p.runs(sentence)
		for ri, run := range runs {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := vs.speakRun(ctx, sp, run, si == len(sentences)-1 && ri == len(runs)-1); err != nil {
				return err
			}
		}
	}
	return nil
}

// speaking is one Speak call's state as its runs are made.
type speaking struct {
	req      Request
	plan     plan
	norm     string // the reading rules (phrase key)
	useCache bool
	// ask is the render request template, nil when no render node or
	// leader is asked (cleared when a leader did not answer).
	ask     *RemoteRequest
	silence time.Duration // the voice's pause after a sentence
	voice   string
	emit    func(Chunk) error
	chunks  int           // emitted so far: the next chunk's Index
	stored  time.Duration // of this request's audio, in the phrase cache
}

// speakRun makes and emits the next chunk of sp (one run of one of its
// sentences; last: the request's last): from the phrase cache, a render
// node or synthesis, storing what it synthesized while the request's
// stored audio allows.
func (vs *Engine) speakRun(ctx context.Context, sp *speaking, run string, last bool) error {
	i := sp.chunks
	sp.chunks++
	start := time.Now()
	askCtx, cancel := ctx, context.CancelFunc(func() {})
	if i == 0 && sp.ask != nil && sp.ask.Node != "" && !sp.req.RenderUntil.IsZero() {
		askCtx, cancel = context.WithDeadline(ctx, sp.req.RenderUntil)
	}
	m, err := vs.sentence(ctx, askCtx, sp.plan, run, sp.norm, sp.useCache, sp.ask, i == 0)
	cancel()
	if err != nil {
		return fmt.Errorf("sentence %d: %w", i+1, err)
	}
	if sp.ask != nil && sp.ask.Node != "" && !m.hit && !m.rendered {
		sp.ask = nil // the leader did not answer: the rest is made here
	}
	c := Chunk{Index: i, Last: last, PCM: m.pcm, Cached: m.hit, Rendered: m.rendered, Took: time.Since(start), Unknown: m.unknown}
	if !c.Last || sp.req.Continued {
		c.Silence = sp.silence
	}
	err = sp.emit(c)
	if err == nil && m.flight != nil && sp.stored+m.pcm.Duration() <= maxCachedRequestAudio {
		vs.keep(m.key, sp.voice, m.pcm)
		sp.stored += m.pcm.Duration()
	}
	if m.flight != nil {
		vs.flights.leave(m.key, m.flight)
	}
	return err
}

// maxCachedRequestAudio is the most of one request's synthesized audio
// Speak stores in the phrase cache; the rest of a longer request is
// spoken uncached. The cache is for the announcements that come back, and
// those are short: the longest text at the slowest rate is about half an
// hour of speech, several times the default 64 MiB cache, and storing it
// would push out every phrase that does repeat (and, while bbolt rewrites
// its pages, fill the process's RSS with the file's).
const maxCachedRequestAudio = 2 * time.Minute

// CheckVoice makes sure a voice can speak now (mynahd's voice/set): the voice must still
// be installed (a warm session outlives its deleted files, but only until
// it is evicted) and must load; it then stays warm for the requests that
// follow.
func (vs *Engine) CheckVoice(ctx context.Context, name string) error {
	paths, err := vs.scan()
	if err != nil {
		return fmt.Errorf("check voice: %w", err)
	}
	if _, ok := paths[name]; !ok {
		if _, remote := vs.remoteVoice(name); remote {
			return nil
		}
		return fmt.Errorf("%w %q: its files are gone from %s", ErrUnknownVoice, name, vs.dir)
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
func (vs *Engine) PinPhrases(ctx context.Context, texts []string) error {
	if vs.store == nil {
		return nil
	}
	defer vs.synthesizing()()
	v, release, err := vs.sessions.Get(ctx, vs.def)
	if err != nil {
		return err
	}
	defer release()
	p, err := v.model.prepare(ctx, Request{})
	if err != nil {
		return err
	}
	want := make(map[cache.PhraseKey]bool)
	for _, phrase := range texts {
		said, norm, err := vs.normalize(v, phrase, false)
		if err != nil {
			return fmt.Errorf("pinned phrase %q: %w", phrase, err)
		}
		sentences, err := p.split(said)
		if err != nil {
			return fmt.Errorf("pinned phrase %q: %w", phrase, err)
		}
		sentences = allRuns(p, sentences)
		for _, sentence := range sentences {
			m, err := vs.sentence(ctx, ctx, p, sentence, norm, true, nil, false)
			if err != nil {
				return fmt.Errorf("pinned phrase %q: %w", sentence, err)
			}
			key := m.key
			want[key] = true
			if !m.hit {
				err := vs.storePinned(key, m)
				if m.flight != nil {
					vs.flights.leave(key, m.flight)
				}
				if err != nil {
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

// storePinned stores a pinned phrase's audio made by sentence.
func (vs *Engine) storePinned(key cache.PhraseKey, m made) error {
	data, err := audio.EncodePhrase(m.pcm)
	if err != nil {
		return err
	}
	return vs.store.PutPhrase(key, vs.def, data)
}

// made is one sentence's audio as sentence made it.
type made struct {
	key      cache.PhraseKey // zero without the phrase cache
	pcm      audio.PCM
	hit      bool // from the phrase cache
	rendered bool // from a render node (stored in the phrase cache already)
	unknown  int  // phonemes the voice had no id for (0 on a hit)
	// flight, when set, is this call's synthesis under key, which others
	// share until the caller leaves it (after storing the audio).
	flight *flight
}

// sentence makes one sentence's audio under plan p (its text read by
// the rules norm names): from the phrase
// cache when useCache and it is there, else from a render node when ask
// is set (Options.Remote), asked within askCtx, else synthesized. Speak
// and PinPhrases share it.
func (vs *Engine) sentence(ctx, askCtx context.Context, p plan, sentence, norm string, useCache bool, ask *RemoteRequest, first bool) (made, error) {
	var m made
	if useCache {
		m.key = phraseKey(p, sentence, norm)
		if pcm, hit := vs.cached(m.key); hit {
			m.pcm, m.hit = pcm, true
			return m, nil
		}
		if ask != nil {
			r := *ask
			r.Text, r.Key = sentence, m.key
			if pcm, ok := vs.fromRemote(askCtx, r); ok {
				m.pcm, m.rendered = pcm, true
				return m, nil
			}
		}
	}
	var err error
	if !useCache {
		m.pcm, m.unknown, err = vs.synthesize(ctx, p, sentence, first)
		return m, err
	}
	m.pcm, m.unknown, m.flight, err = vs.synthesizeOnce(ctx, p, m.key, sentence, first)
	if err != nil && m.flight != nil {
		vs.flights.leave(m.key, m.flight)
		m.flight = nil
	}
	return m, err
}

// synthesize synthesizes one sentence under plan p holding a synthesis
// slot (schedule.go); first says it is its request's first.
func (vs *Engine) synthesize(ctx context.Context, p plan, sentence string, first bool) (audio.PCM, int, error) {
	release, err := vs.slots.acquire(ctx, first, utf8.RuneCountInString(sentence))
	if err != nil {
		return audio.PCM{}, 0, err
	}
	defer release()
	return p.synthesize(ctx, sentence)
}

// cached returns a sentence's audio from the phrase cache. A damaged record
// is deleted and reported as a miss, so it is synthesized again; a broken
// cache is a miss too: speech never waits on it.
func (vs *Engine) cached(key cache.PhraseKey) (audio.PCM, bool) {
	if pcm, ok, gone := vs.hot.get(key, vs.store); ok || gone {
		return pcm, ok
	}
	data, stamp, ok, err := vs.store.GetPhraseStamp(key)
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
	vs.hot.put(key, stamp, pcm)
	return pcm, true
}

// keep stores a synthesized sentence; a failed write is logged (the store
// counts it) and speech goes on uncached.
func (vs *Engine) keep(key cache.PhraseKey, voiceName string, pcm audio.PCM) {
	data, err := audio.EncodePhrase(pcm)
	if err == nil {
		err = vs.store.PutPhrase(key, voiceName, data)
	}
	if err != nil {
		vs.log.Warn("phrase not cached", "err", err)
	}
}

// Close releases every loaded voice.
func (vs *Engine) Close() error {
	if vs.keeper != nil {
		vs.keeper.close()
	}
	// Before the sessions: a build that is running ends with a switch.
	vs.optim.close()
	return vs.sessions.Close()
}
