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
	"sync"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/quant/ort"
)

// voiceSet is the daemon's Engine: the Piper voices installed in one
// directory, loaded on first use and kept. A voice is a subdirectory
// holding one NAME.onnx + NAME.onnx.json (its name is the directory's), or
// such a pair directly in the directory (its name is NAME). Names come from
// the directory listing only, so a request can never make mynahd open a
// path of its choosing.
type voiceSet struct {
	rt   *ort.Runtime
	dir  string
	def  string
	opts *voice.PiperOptions
	log  *slog.Logger

	mu     sync.Mutex
	loaded map[string]*voice.Piper
}

var _ daemon.Engine = (*voiceSet)(nil)

func newVoiceSet(rt *ort.Runtime, dir, def string, opts *voice.PiperOptions, log *slog.Logger) (*voiceSet, error) {
	vs := &voiceSet{rt: rt, dir: dir, def: def, opts: opts, log: log, loaded: make(map[string]*voice.Piper)}
	names := vs.Voices()
	if len(names) == 0 {
		return nil, fmt.Errorf("no voices in %s (a voice is a directory with NAME.onnx and NAME.onnx.json)", dir)
	}
	if vs.def == "" {
		vs.def = names[0]
	}
	if !slices.Contains(names, vs.def) {
		return nil, fmt.Errorf("voices.default: %w %q (installed: %s)", daemon.ErrUnknownVoice, vs.def, strings.Join(names, ", "))
	}
	return vs, nil
}

// Voices lists the installed voices by name, sorted.
func (vs *voiceSet) Voices() []string {
	names, _ := vs.scan()
	return slices.Sorted(maps.Keys(names))
}

// scan maps voice names to their paths.
func (vs *voiceSet) scan() (map[string]string, error) {
	entries, err := os.ReadDir(vs.dir)
	if err != nil {
		return nil, err
	}
	out := make(map[string]string)
	for _, e := range entries {
		path := filepath.Join(vs.dir, e.Name())
		switch {
		case e.IsDir():
			if _, err := voice.FindPiper(path); err == nil {
				out[e.Name()] = path
			}
		case strings.HasSuffix(e.Name(), ".onnx"):
			if _, err := os.Stat(path + ".json"); err == nil {
				out[strings.TrimSuffix(e.Name(), ".onnx")] = path
			}
		}
	}
	return out, nil
}

// Default is the voice used when a request names none.
func (vs *voiceSet) Default() string { return vs.def }

// Load returns the named voice, loading it on first use.
func (vs *voiceSet) Load(name string) (*voice.Piper, error) {
	if name == "" {
		name = vs.def
	}
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if v, ok := vs.loaded[name]; ok {
		return v, nil
	}
	paths, err := vs.scan()
	if err != nil {
		return nil, err
	}
	path, ok := paths[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", daemon.ErrUnknownVoice, name)
	}
	v, err := voice.LoadPiper(vs.rt, path, vs.opts)
	if err != nil {
		return nil, err
	}
	info := v.Info()
	vs.log.Info("voice loaded", "voice", name, "provider", info.Provider, "rate", info.SampleRate, "speakers", len(info.Speakers))
	vs.loaded[name] = v
	return v, nil
}

// Speak implements daemon.Engine.
func (vs *voiceSet) Speak(ctx context.Context, s daemon.Speech, emit func(daemon.Chunk) error) error {
	v, err := vs.Load(s.Voice)
	if err != nil {
		return err
	}
	return v.Synthesize(ctx, voice.Request{Text: s.Text, Speaker: s.Speaker, Rate: s.Rate}, func(c voice.Chunk) error {
		return emit(daemon.Chunk{Index: c.Index, Last: c.Last, PCM: c.PCM, Silence: c.Silence})
	})
}

// Close releases every loaded voice.
func (vs *voiceSet) Close() error {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	var errs []error
	for name, v := range vs.loaded {
		errs = append(errs, v.Close())
		delete(vs.loaded, name)
	}
	return errors.Join(errs...)
}
