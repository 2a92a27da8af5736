package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"
)

// voicesQuiet is how long voices.dir must be still after a change before
// the voices are reread: copying a model takes a while, and a half-copied
// file must not be offered.
const voicesQuiet = 2 * time.Second

// watchVoices calls reload whenever voices.dir changes (a voice copied in,
// replaced or removed: the directory and each voice directory in it are
// watched), once the directory has been quiet for quiet. It runs until
// ctx ends; the returned channel closes when it has stopped.
func watchVoices(ctx context.Context, dir string, quiet time.Duration, reload func(), log *slog.Logger) (<-chan struct{}, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	watched := map[string]bool{} // the voice directories
	watch := func(path string) {
		if err := w.Add(path); err != nil {
			log.Warn("cannot watch for voice changes", "dir", path, "err", err)
			return
		}
		watched[path] = true
	}
	if err := w.Add(dir); err != nil {
		w.Close()
		return nil, err
	}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if e.IsDir() && !hidden(e.Name()) {
				watch(filepath.Join(dir, e.Name()))
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer w.Close()
		timer := time.NewTimer(time.Hour)
		timer.Stop()
		for {
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				if filepath.Dir(ev.Name) == dir {
					if hidden(filepath.Base(ev.Name)) {
						continue // .mynah: mynah voice install's catalog, locks and staging
					}
					// In voices.dir itself only voice directories and
					// NAME.onnx pairs count: a cache file kept there
					// must not reread the voices on every write.
					st, err := os.Stat(ev.Name)
					isDir := err == nil && st.IsDir()
					if isDir && !watched[ev.Name] {
						watch(ev.Name) // a new voice directory
					}
					if !isDir && !watched[ev.Name] && !strings.HasSuffix(ev.Name, ".onnx") && !strings.HasSuffix(ev.Name, ".onnx.json") {
						continue
					}
					if err != nil {
						delete(watched, ev.Name) // removed or renamed away
					}
				}
				timer.Reset(quiet)
			case err, ok := <-w.Errors:
				if !ok {
					return
				}
				log.Warn("watching voices.dir", "err", err)
				timer.Reset(quiet) // events may be lost: look again
			case <-timer.C:
				reload()
			}
		}
	}()
	return done, nil
}

// hidden reports a name in voices.dir that is never a voice: a dot
// directory or file, such as .mynah, where mynah voice install keeps the
// catalog, its locks and the voices it is still downloading (a voice
// appears by one rename out of it, which is seen).
func hidden(name string) bool { return strings.HasPrefix(name, ".") }
