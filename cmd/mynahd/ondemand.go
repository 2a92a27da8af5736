package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/wyoming"
)

// catalogRetry spaces the attempts to read the catalog when it could not
// be read at start (the network not up yet, say).
const catalogRetry = time.Minute

// voiceInstaller installs catalog voices on demand (voices.download): the
// daemon's Installer, and the Wyoming adapter's. Each voice is downloaded
// once however many requests wait for it; the download runs on the
// installer's own context, so a request that stops waiting leaves it
// going, and Close ends it. Once a voice is installed the engine rereads
// its voices before any waiting request goes on.
type voiceInstaller struct {
	client  *catalog.Client
	engine  *engine.Engine
	timeout time.Duration // voices.download_timeout, for Wyoming's requests
	log     *slog.Logger

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu sync.Mutex
	// installed, when set, hears of every voice installed (the daemon's
	// ReloadVoices: the voice select and the state offer it, whether or
	// not voices.watch is on).
	installed  func()
	cat        *catalog.Catalog // nil until read
	loading    bool
	lastLoad   time.Time
	flights    map[string]*flight // by key
	nextWaiter int
}

// flight is one voice's install and who waits for it.
type flight struct {
	done    chan struct{}
	err     error                                // set before done closes
	waiters map[int]func(daemon.InstallProgress) // progress of the calls waiting
}

var (
	_ daemon.Installer       = (*voiceInstaller)(nil)
	_ wyoming.VoiceInstaller = wyomingVoices{}
)

// openInstaller returns the installer when voices.download is on (nil
// when off: nothing is ever fetched then). The catalog is read now, from
// its cache in voices.dir when that is recent, within
// voices.download_timeout; when that fails mynahd starts all the same
// and tries again when a voice is asked for.
func openInstaller(ctx context.Context, cfg config.Config, eng *engine.Engine, log *slog.Logger) (*voiceInstaller, error) {
	if !cfg.Voices.Download {
		return nil, nil
	}
	in := &voiceInstaller{engine: eng, timeout: cfg.Voices.DownloadTimeout, log: log, flights: map[string]*flight{}}
	c, err := catalog.New(cfg.Voices.Dir, &catalog.Options{
		CatalogURL:    cfg.Voices.CatalogURL,
		DownloadURL:   cfg.Voices.DownloadURL,
		Progress:      in.progress,
		ProgressEvery: time.Second,
		Check:         checkStagedVoice,
		Logger:        log,
	})
	if err != nil {
		return nil, fmt.Errorf("voices.download: %w", err)
	}
	in.client = c
	in.ctx, in.cancel = context.WithCancel(context.Background())
	lctx, cancel := context.WithTimeout(ctx, cfg.Voices.DownloadTimeout)
	defer cancel()
	in.load(lctx)
	return in, nil
}

// checkStagedVoice is the check a downloaded voice passes before it is
// moved into place, as mynah voice install checks it.
func checkStagedVoice(dir, model string) error {
	_, err := voice.CheckPiperFiles(model)
	return err
}

// Close ends the downloads in progress (a partial file stays, and the
// next install resumes it) and waits for them.
func (in *voiceInstaller) Close() {
	if in == nil {
		return
	}
	in.cancel()
	in.wg.Wait()
}

// load reads the catalog into memory.
func (in *voiceInstaller) load(ctx context.Context) *catalog.Catalog {
	cat, info, err := in.client.Catalog(ctx, false)
	in.mu.Lock()
	defer in.mu.Unlock()
	in.lastLoad = time.Now()
	if err != nil {
		in.log.Warn("voice catalog not read: catalog voices are installed once it is", "err", err)
		return in.cat
	}
	in.cat = cat
	in.log.Info("voice catalog read", "voices", cat.Len(), "url", info.URL, "cached", info.Cached, "fetched_at", info.FetchedAt)
	return cat
}

// catalog is the catalog in memory, or nil; when it could not be read,
// it asks for it again in the background, at most every catalogRetry.
func (in *voiceInstaller) catalog() *catalog.Catalog {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.cat == nil && !in.loading && time.Since(in.lastLoad) >= catalogRetry && in.ctx.Err() == nil {
		in.loading = true
		in.wg.Go(func() {
			ctx, cancel := context.WithTimeout(in.ctx, in.timeout)
			defer cancel()
			in.load(ctx)
			in.mu.Lock()
			in.loading = false
			in.mu.Unlock()
		})
	}
	return in.cat
}

// Installable reports whether name is a key of the catalog in memory.
func (in *voiceInstaller) Installable(name string) bool {
	cat := in.catalog()
	if cat == nil {
		return false
	}
	_, ok := cat.Voice(name)
	return ok
}

// Install installs the catalog voice name resolves to (a key, an alias, a
// voice name or a language, as mynah voice install takes them).
func (in *voiceInstaller) Install(ctx context.Context, name string, progress func(daemon.InstallProgress)) (string, error) {
	cat := in.catalog()
	if cat == nil {
		return "", errors.New("the voice catalog could not be read (see mynahd's log); it is tried again in a minute")
	}
	r, err := cat.Resolve(name, "")
	if err != nil {
		if errors.Is(err, catalog.ErrNotFound) || errors.Is(err, catalog.ErrAmbiguous) {
			return "", fmt.Errorf("%w: %w", daemon.ErrUnknownVoice, err)
		}
		return "", err
	}
	v := r.Voice
	if slices.Contains(in.engine.Voices(), v.Key) {
		return v.Key, nil
	}
	in.mu.Lock()
	f := in.flights[v.Key]
	if f == nil {
		f = &flight{done: make(chan struct{}), waiters: map[int]func(daemon.InstallProgress){}}
		in.flights[v.Key] = f
		in.wg.Go(func() { in.run(v, f) })
	}
	waiter := in.nextWaiter
	in.nextWaiter++
	if progress != nil {
		f.waiters[waiter] = progress
	}
	in.mu.Unlock()
	defer func() {
		in.mu.Lock()
		delete(f.waiters, waiter)
		in.mu.Unlock()
	}()
	select {
	case <-f.done:
		return v.Key, f.err
	case <-ctx.Done():
		return v.Key, ctx.Err()
	}
}

// run installs v and lets the engine see it.
func (in *voiceInstaller) run(v *catalog.Voice, f *flight) {
	start := time.Now()
	in.log.Info("installing voice", "voice", v.Key, "bytes", v.Size())
	res, err := in.client.Install(in.ctx, v)
	if err == nil {
		// The engine offers the voice before any waiting request goes
		// on: the rename made it whole, the reread makes it known.
		if _, rerr := in.engine.ReloadVoices(); rerr != nil {
			in.log.Warn("voices not reread after an install", "err", rerr)
		}
		if !slices.Contains(in.engine.Voices(), v.Key) {
			err = fmt.Errorf("installed in %s, but the engine does not offer it (see mynahd's log)", res.Path)
		}
	}
	if err != nil {
		in.log.Warn("voice not installed", "voice", v.Key, "err", err)
	} else {
		in.log.Info("voice installed", "voice", v.Key, "path", res.Path, "already", res.AlreadyInstalled, "ms", time.Since(start).Milliseconds())
	}
	in.mu.Lock()
	f.err = err
	delete(in.flights, v.Key)
	installed := in.installed
	in.mu.Unlock()
	close(f.done)
	if err == nil && installed != nil {
		installed()
	}
}

// onInstalled sets what hears of every voice installed.
func (in *voiceInstaller) onInstalled(f func()) {
	in.mu.Lock()
	in.installed = f
	in.mu.Unlock()
}

// progress hands the catalog's progress to the calls waiting for the
// voice.
func (in *voiceInstaller) progress(p catalog.Progress) {
	in.mu.Lock()
	var waiters []func(daemon.InstallProgress)
	if f := in.flights[p.Voice]; f != nil {
		for _, k := range slices.Sorted(maps.Keys(f.waiters)) {
			waiters = append(waiters, f.waiters[k])
		}
	}
	in.mu.Unlock()
	for _, w := range waiters {
		w(daemon.InstallProgress{File: p.File, Bytes: p.Done, Total: p.Total})
	}
}

// available is the catalog's voices that are not installed, for
// Wyoming's info: from memory, never fetched for a describe.
func (in *voiceInstaller) available(installed []string) []wyoming.VoiceInfo {
	cat := in.catalog()
	if cat == nil {
		return nil
	}
	var out []wyoming.VoiceInfo
	for _, v := range cat.Voices() {
		if slices.Contains(installed, v.Key) {
			continue
		}
		out = append(out, wyoming.VoiceInfo{
			Name:         v.Key,
			Description:  fmt.Sprintf("%s (Piper, %s, %s, not installed)", v.Key, v.Language.NameEnglish, v.Quality),
			Languages:    []string{v.Language.Code},
			Speakers:     speakerNames(v),
			NotInstalled: true,
		})
	}
	return out
}

// speakerNames are a multi-speaker voice's speakers in id order.
func speakerNames(v *catalog.Voice) []string {
	if len(v.SpeakerIDMap) < 2 {
		return nil
	}
	names := slices.Collect(maps.Keys(v.SpeakerIDMap))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(v.SpeakerIDMap[a], v.SpeakerIDMap[b]), cmp.Compare(a, b))
	})
	return names
}

// InstallVoice installs a voice Wyoming's info listed as not installed,
// waiting up to voices.download_timeout.
func (w wyomingVoices) InstallVoice(ctx context.Context, name string) error {
	if w.installer == nil {
		return fmt.Errorf("%w %q", daemon.ErrUnknownVoice, name)
	}
	wctx, cancel := context.WithTimeout(ctx, w.installer.timeout)
	defer cancel()
	_, err := w.installer.Install(wctx, name, nil)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return fmt.Errorf("%w: %q is not installed after %s; it goes on downloading, ask again soon",
			wyoming.ErrVoiceDownloading, name, w.installer.timeout)
	}
	return err
}
