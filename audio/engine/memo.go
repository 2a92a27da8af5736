package engine

import (
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// What a voice directory says of itself (its kind, its description) is
// read from its config files, which a request must not parse again: a
// Wyoming request looks its voice up in Describe, and each parse of a
// bundle manifest cost more than the cached phrase it answered (half the
// CPU of ten concurrent cache hits). fileMemo keeps each answer with the
// files it was read from and reads again only when one of them changed
// (its modification time or size), or the directory did (a file added,
// renamed or removed).

// fileDep is one file an answer was read from, as it was then.
type fileDep struct {
	path   string
	mod    time.Time
	size   int64
	exists bool
}

func depOf(path string) fileDep {
	st, err := os.Stat(path)
	if err != nil {
		return fileDep{path: path}
	}
	return fileDep{path: path, mod: st.ModTime(), size: st.Size(), exists: true}
}

func (d fileDep) fresh() bool { return depOf(d.path) == d }

// memoEntry is one remembered answer.
type memoEntry[T any] struct {
	deps []fileDep
	v    T
	err  error
}

// fileMemo remembers answers by key (a voice's path).
type fileMemo[T any] struct {
	mu sync.Mutex
	m  map[string]memoEntry[T]
}

// get returns the answer for key, read again by read when a file it
// depends on changed. read returns the answer and the files it read.
func (fm *fileMemo[T]) get(key string, read func() (T, []string, error)) (T, error) {
	fm.mu.Lock()
	e, ok := fm.m[key]
	fm.mu.Unlock()
	if ok && allFresh(e.deps) {
		return e.v, e.err
	}
	v, files, err := read()
	deps := make([]fileDep, len(files))
	for i, f := range files {
		deps[i] = depOf(f)
	}
	fm.mu.Lock()
	if fm.m == nil {
		fm.m = make(map[string]memoEntry[T])
	}
	fm.m[key] = memoEntry[T]{deps: deps, v: v, err: err}
	fm.mu.Unlock()
	return v, err
}

// forget drops every answer not under one of keep.
func (fm *fileMemo[T]) forget(keep map[string]bool) {
	fm.mu.Lock()
	defer fm.mu.Unlock()
	for k := range fm.m {
		if !keep[k] {
			delete(fm.m, k)
		}
	}
}

func allFresh(deps []fileDep) bool {
	for _, d := range deps {
		if !d.fresh() {
			return false
		}
	}
	return true
}

// kindFiles are the files voiceKind reads for the voice at path: the
// directory (its entries), the manifest, and a Piper voice's configs.
func kindFiles(path string) []string {
	files := []string{path, filepath.Join(path, bundle.ManifestName)}
	if model, err := voice.FindPiper(path); err == nil {
		files = append(files, model, model+".json")
	}
	return files
}
