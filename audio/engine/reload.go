package engine

import (
	"fmt"
	"hash/fnv"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// voiceSet remembers what the voices directory held at the last look, so
// that ReloadVoices can tell new, replaced and removed voices apart.
type voiceSet struct {
	mu       sync.Mutex
	seen     map[string]uint64 // name → fingerprint of its files
	rejected map[string]string // name → why its config does not read
}

// maxFingerprintFiles bounds the files fingerprinted per voice; a voice
// directory holds a handful.
const maxFingerprintFiles = 256

// fingerprint hashes the names, sizes and modification times of a voice's
// files: copying a new model over the old one changes it.
func fingerprint(p voicePath) uint64 {
	h := fnv.New64a()
	add := func(path string, info fs.FileInfo) {
		fmt.Fprintf(h, "%s\x00%d\x00%d\x00", path, info.Size(), info.ModTime().UnixNano())
	}
	if p.kind == kindPiper && strings.HasSuffix(p.path, ".onnx") {
		for _, f := range []string{p.path, p.path + ".json"} {
			if info, err := os.Stat(f); err == nil {
				add(f, info)
			}
		}
		return h.Sum64()
	}
	n := 0
	filepath.WalkDir(p.path, func(path string, d fs.DirEntry, err error) error {
		if err != nil || n >= maxFingerprintFiles {
			return filepath.SkipDir
		}
		if info, err := d.Info(); err == nil && !d.IsDir() {
			add(path, info)
			n++
		}
		return nil
	})
	return h.Sum64()
}

// initVoiceSet records the voices installed at Open.
func (vs *Engine) initVoiceSet(paths map[string]voicePath) {
	vs.set.seen = make(map[string]uint64, len(paths))
	for name, p := range paths {
		vs.set.seen[name] = fingerprint(p)
	}
	vs.set.rejected = map[string]string{}
}

// ReloadVoices rereads the voices directory. A new voice is offered once
// its config reads; one whose files changed is let go from the warm
// sessions (closed when idle) so that the next request loads the new
// files; one removed is let go the same way. The default voice is never
// let go for removal: it stays loaded until the process restarts.
func (vs *Engine) ReloadVoices() (VoiceChanges, error) {
	paths, err := vs.scan()
	if err != nil {
		return VoiceChanges{}, fmt.Errorf("reload voices: %w", err)
	}
	var ch VoiceChanges
	vs.set.mu.Lock()
	defer vs.set.mu.Unlock()
	for _, name := range slices.Sorted(maps.Keys(paths)) {
		p := paths[name]
		fp := fingerprint(p)
		old, known := vs.set.seen[name]
		if known && old == fp {
			continue
		}
		vs.set.seen[name] = fp
		_, wasRejected := vs.set.rejected[name]
		delete(vs.set.rejected, name)
		if _, err := describe(name, p, nil); err != nil {
			if ch.Rejected == nil {
				ch.Rejected = map[string]string{}
			}
			ch.Rejected[name] = err.Error()
			vs.set.rejected[name] = err.Error()
			vs.log.Warn("voice not offered: its config does not read", "voice", name, "err", err)
		} else if known && !wasRejected {
			ch.Changed = append(ch.Changed, name)
		} else {
			ch.Added = append(ch.Added, name)
		}
		if known && vs.sessions.Evict(name) {
			vs.log.Info("voice files changed: the next use loads them", "voice", name)
		}
		if p.kind == kindPiper && ch.Rejected[name] == "" {
			// Before its first use, so that it loads its optimized copy.
			vs.optim.enqueue(name)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(vs.set.seen)) {
		if _, ok := paths[name]; ok {
			continue
		}
		delete(vs.set.seen, name)
		delete(vs.set.rejected, name)
		ch.Removed = append(ch.Removed, name)
		if name == vs.def {
			vs.log.Warn("the default voice was removed from the voices directory; it stays loaded until mynahd restarts", "voice", name)
			continue
		}
		if vs.sessions.Evict(name) {
			vs.log.Info("voice removed: closed once idle", "voice", name)
		}
	}
	if ch.Any() {
		vs.log.Info("voices reloaded", "added", ch.Added, "changed", ch.Changed, "removed", ch.Removed, "rejected", len(ch.Rejected))
	}
	return ch, nil
}
