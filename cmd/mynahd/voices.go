package main

import (
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/mynah-tts/mynah/audio/engine"
	"github.com/mynah-tts/mynah/audio/text"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/cache"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/cmd/internal/version"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/wyoming"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/systemd"
)

// openVoices opens the speech engine on voices.dir; with no default voice
// configured it makes sure the demo voice is there, building it on first
// start. The voices stay loaded as voices.sessions says; a name in its
// preload or pinned list that is not installed is an error here, before
// any load.
func openVoices(rt *ort.Runtime, cfg config.Config, store *cache.Store, remote *remoteRenderer, notify *systemd.Notifier, log *slog.Logger) (*engine.Engine, error) {
	def := cfg.Voices.Default
	if def == "" {
		def = demo.Name
		dir := filepath.Join(cfg.Voices.Dir, demo.Name)
		if _, err := voice.FindPiper(dir); err != nil {
			log.Info("building the demo voice", "dir", dir)
			_ = notify.Status("building the demo voice")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return nil, fmt.Errorf("demo voice: %w", err)
			}
			if _, err := demo.Write(dir, nil); err != nil {
				return nil, fmt.Errorf("demo voice: %w", err)
			}
		}
	}
	provider := cfg.ONNX.Provider
	if provider == string(ort.ProviderAuto) {
		provider = ""
	}
	sc := cfg.Voices.Sessions
	releaser := &memory.Releaser{Store: store, Log: log.With("component", "memory")}
	// A remote node asks the render nodes for every miss; a member of a
	// group asks an announcement's leader (groupRenders).
	var asks engine.Remote
	var remoteVoices func() []engine.RemoteVoice
	renderBy := false
	switch {
	case store == nil:
	case cfg.Render.Mode == config.RenderRemote:
		asks, remoteVoices = remote, remote.voices
	case groupRenders(cfg):
		asks, renderBy = remote, true
	}
	return engine.Open(&engine.Options{
		Runtime: rt,
		Dir:     cfg.Voices.Dir,
		Default: def,
		Sessions: engine.SessionOptions{MaxCount: sc.MaxCount, MaxBytes: sc.MaxBytes, Preload: sc.Preload, Pinned: sc.Pinned,
			LowWater: sc.LowWater, MemoryBudget: sc.MemoryBudget, CheckInterval: sc.CheckInterval},
		Piper: &voice.PiperOptions{
			Session:         sessionOptions(cfg.ONNX),
			KeepConv1D:      !cfg.ONNX.LiftConv1D,
			KeepLeakyRelu:   !cfg.ONNX.BlockLeakyRelu,
			OptimizedDir:    cfg.ONNX.OptimizedDir,
			SentenceSilence: silence(cfg.Audio.SentenceSilence),
			Logger:          log.With("component", "voice"),
		},
		Precision:     cfg.Voices.Precision,
		Precisions:    cfg.Voices.Precisions,
		Provider:      provider,
		Store:         store,
		ReleaseMemory: releaser.Release,
		Logger:        log.With("component", "voices"),
		NoNormalize:   !cfg.Text.Normalize,
		Emoji:         text.Emoji(cfg.Text.Emoji),
		// READY and a voice's first request never wait for its
		// optimized copy: it is built in the background.
		OptimizeInBackground: true,
		Remote:               asks,
		RemoteRenderBy:       renderBy,
		RemoteVoices:         remoteVoices,
		MaxParallel:          cfg.Wyoming.MaxParallel,
		HotBytes:             hotBytes(cfg),
	})
}

// sessionOptions are the voices' ONNX Runtime settings from the onnx
// section. The arena, when on, is kept while the engine speaks and given
// back once it is idle (engine: Piper voices by one small run, the other
// kinds after every run).
func sessionOptions(c config.ONNX) *ort.SessionOptions {
	return &ort.SessionOptions{Provider: ort.Provider(c.Provider), IntraOpThreads: c.Threads, CPUArena: c.Arena}
}

// The engine speaks the daemon's words (package speech), so it is the
// daemon's Engine as it is.
var _ daemon.Engine = (*engine.Engine)(nil)

// speakerBook is the engine's cloned speakers as the daemon's
// SpeakerStore.
type speakerBook struct{ *engine.Engine }

var _ daemon.SpeakerStore = speakerBook{}

func (b speakerBook) List() ([]daemon.SpeakerInfo, error) { return b.Speakers(), nil }

// wyomingVoices is the engine as the Wyoming server sees it: the voices
// described from their files (so a describe never waits for a load), and
// Speak as it is.
type wyomingVoices struct {
	*engine.Engine
	// installer, when voices.download is on, adds the catalog's voices
	// not installed to info, and installs them on first use.
	installer *voiceInstaller
}

var _ wyoming.Engine = wyomingVoices{}

func (w wyomingVoices) Voices() []wyoming.VoiceInfo {
	list := w.Describe()
	out := make([]wyoming.VoiceInfo, len(list))
	for i, v := range list {
		kind := map[string]string{"piper": "Piper", "style_vector": "style-vector", "pipeline": "voice cloning"}[v.Kind]
		out[i] = wyoming.VoiceInfo{Name: v.Name, Languages: v.Languages, Speakers: v.Speakers, Version: version.String(),
			Description: fmt.Sprintf("%s (%s, %d Hz)", v.Name, kind, v.SampleRate), Default: v.Name == w.Default()}
	}
	if w.installer != nil {
		names := make([]string, len(list))
		for i, v := range list {
			names[i] = v.Name
		}
		out = append(out, w.installer.available(names)...)
	}
	return out
}

// CutSentences is the splitter the engine's voices use, for text still
// arriving.
func (w wyomingVoices) CutSentences(s string) (done, rest string) { return text.Complete(s, nil) }

// hotBytes is the engine's Options.HotBytes: decoded phrases kept for a
// burst of Wyoming satellites asking the same thing; none on a node that
// takes requests one at a time (MQTT), whose memory budget has no room.
func hotBytes(cfg config.Config) int64 {
	if cfg.Wyoming.Listen == "" {
		return 0
	}
	return engine.DefaultHotBytes
}
