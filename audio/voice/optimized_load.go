package voice

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// How a Piper voice's model becomes a session with the optimized-model
// cache (optimized.go). By default the load that finds no entry builds
// it: ONNX Runtime optimizes the graph and writes it, and the voice is
// ready once that is done. With PiperOptions.OptimizeLater the load
// takes the model as the file has it instead, which is ready in a
// fraction of that time, and leaves the entry to OptimizePiper, run by
// whoever can wait for it (the engine in the background, `mynah voice
// install` after the files are in place). Why the file's own graph: the
// dear part of building is the lifted graph (onnx.LiftConv1D) at level
// "all", whose convolutions' weights are reordered for x86's blocked
// kernels; the graph as written loads at that level about as fast as the
// entry, and speaks the same samples within the lift's rounding
// (TestLiftedConvolutionsSpeakAlike). BenchmarkFirstLoad has the figures.

// modelSource is where a voice's session came from.
type modelSource int

const (
	// fromFile: the model file, with no entry to have (no cache, or
	// options whose sessions are not kept) or none that could be kept.
	fromFile modelSource = iota
	// fromEntry: the cache's entry.
	fromEntry
	// deferredEntry: the model file as written, the entry left for
	// OptimizePiper.
	deferredEntry
)

// cacheEntry is the entry of one model file under one set of options.
type cacheEntry struct {
	cache        *optimizedCache
	path         string // the model file, absolute
	st           os.FileInfo
	key, madeFor string
}

// entry names the entry for the model at path under so and rw; false
// when there is none to have: no cache (c is nil), a model that cannot be
// stat'ed, or options whose sessions are not kept (optimizedKeys).
func (c *optimizedCache) entry(rt *ort.Runtime, path string, so *ort.SessionOptions, rw rewrites) (cacheEntry, bool) {
	if c == nil {
		return cacheEntry{}, false
	}
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	st, err := os.Stat(path)
	if err != nil {
		return cacheEntry{}, false
	}
	key, madeFor := optimizedKeys(rt, path, st, so, rw)
	return cacheEntry{cache: c, path: path, st: st, key: key, madeFor: madeFor}, key != ""
}

// present reports whether e's files are in place and its sidecar is of
// this version of the source and runtime: what OptimizePiper needs to
// leave the entry be. The rest (the checksums, whether ONNX Runtime
// takes it) is checked by the load that opens it, which removes an
// entry it cannot use, so that the next OptimizePiper builds it again.
func (e cacheEntry) present() bool {
	base := filepath.Join(e.cache.dir, e.key)
	meta, err := readOptimizedMeta(base + ".json")
	if err != nil || meta.Source != e.path || meta.SourceSize != e.st.Size() ||
		meta.SourceMtime != e.st.ModTime().UnixNano() || meta.MadeFor != e.madeFor {
		return false
	}
	st, err := os.Stat(base + ".ort")
	return err == nil && st.Mode().IsRegular() && st.Size() == meta.ORTSize
}

// openModelFile opens the model file at path as a session: from the
// optimized-model cache when it holds the file's entry (cache may be
// nil); else by readModelFile, keeping what ONNX Runtime made of it in
// the cache for the next time, or, when later is set, as the file has
// it, its entry left for OptimizePiper. The returned model carries the
// file's sha256 and size only. Nothing the cache does fails the load: an
// entry that cannot be used is rebuilt, one that cannot be kept is not,
// each with a warning.
func openModelFile(rt *ort.Runtime, path string, so *ort.SessionOptions, rw rewrites, cache *optimizedCache, later bool) (*ort.Session, *onnx.Model, modelSource, error) {
	e, ok := cache.entry(rt, path, so, rw)
	if !ok {
		sess, model, _, err := readModelFile(rt, path, so, rw, "")
		return sess, model, fromFile, err
	}
	sess, model, err := cache.open(rt, e.key, e.madeFor, e.path, e.st, so)
	if err == nil {
		return sess, model, fromEntry, nil
	}
	if !errors.Is(err, errNoEntry) {
		cache.log.Warn("optimized model unusable, rebuilt from the model file", "model", e.path, "err", err)
	}
	if later {
		sess, model, _, err := readModelFile(rt, e.path, so, rewrites{keep1D: true}, "")
		return sess, model, deferredEntry, err
	}
	sess, model, keepErr, err := e.build(rt, so, rw)
	if err != nil {
		return nil, nil, fromFile, err
	}
	if keepErr != nil {
		cache.log.Warn("optimized model not kept", "dir", cache.dir, "err", keepErr)
	}
	return sess, model, fromFile, nil
}

// build reads the model file into a session (readModelFile) with ONNX
// Runtime writing its optimized model, and stores that as e. The session
// is returned whatever became of the entry; keepErr says why it was not
// kept, where that is worth a warning. Nothing is kept, silently, when
// auto found a GPU (ONNX Runtime saves only what the CPU provider
// optimized) or the file changed while it was read (the key of one
// version would be paired with the digest of another).
func (e cacheEntry) build(rt *ort.Runtime, so *ort.SessionOptions, rw rewrites) (sess *ort.Session, model *onnx.Model, keepErr, err error) {
	tmp, keepErr := e.cache.tempPath(e.key)
	if keepErr != nil {
		sess, model, _, err = readModelFile(rt, e.path, so, rw, "")
		return sess, model, keepErr, err
	}
	defer os.Remove(tmp) // gone once stored
	sess, model, keepErr, err = readModelFile(rt, e.path, so, rw, tmp)
	if err != nil || keepErr != nil || sess.Provider() != ort.ProviderCPU {
		return sess, model, keepErr, err
	}
	if fi, err := os.Stat(e.path); err != nil || !sameFileVersion(e.st, fi) || model.Size != e.st.Size() {
		return sess, model, nil, nil
	}
	meta := optimizedMeta{Source: e.path, SourceSize: e.st.Size(), SourceMtime: e.st.ModTime().UnixNano(),
		SourceSHA256: model.Digest, MadeFor: e.madeFor, Inputs: sess.Inputs(), Outputs: sess.Outputs()}
	return sess, model, e.cache.store(e.key, tmp, meta), nil
}

// sameFileVersion reports whether a and b are stats of the same file,
// unchanged.
func sameFileVersion(a, b os.FileInfo) bool {
	return os.SameFile(a, b) && a.Size() == b.Size() && a.ModTime().Equal(b.ModTime())
}

// OptimizePiper builds the optimized-model cache's entry
// (PiperOptions.OptimizedDir) for the voice at path as LoadPiper with
// opts loads it, unless the entry is there: what LoadPiper leaves undone
// with OptimizeLater, and what `mynah voice install` does so that a new
// voice's first load is as fast as its later ones. The session it builds
// to have ONNX Runtime write the entry is closed before it returns. It
// does nothing without OptimizedDir or for options whose sessions are
// not kept (a GPU provider), and ignores OptimizeLater. It runs on the
// calling goroutine's thread with opts.Session's threads: a caller that
// wants it out of the way of speech runs it on one thread, at a low
// priority.
func OptimizePiper(rt *ort.Runtime, path string, opts *PiperOptions) error {
	o := opts.withDefaults()
	if o.OptimizedDir == "" {
		return nil
	}
	modelPath, err := FindPiper(path)
	if err != nil {
		return fmt.Errorf("optimize voice: %w", err)
	}
	if modelPath, err = piperVariantModel(modelPath, o.Precision); err != nil {
		return fmt.Errorf("optimize voice: %w", err)
	}
	cache := &optimizedCache{dir: o.OptimizedDir, log: o.Logger}
	e, ok := cache.entry(rt, modelPath, o.Session, o.rewrites())
	if !ok || e.present() {
		return nil
	}
	sess, _, keepErr, err := e.build(rt, o.Session, o.rewrites())
	if err != nil {
		return fmt.Errorf("optimize voice: %w", err)
	}
	sess.Close()
	if keepErr != nil {
		return fmt.Errorf("optimize voice %s: optimized model not kept in %s: %w", modelPath, o.OptimizedDir, keepErr)
	}
	return nil
}
