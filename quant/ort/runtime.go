package ort

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
)

// Runtime is an open handle on the process's ONNX Runtime library. ONNX
// Runtime keeps one environment per process, so Runtimes share it: Open may
// be called by several components (with the same library) and each Close
// releases one reference; the library is unloaded when the last Runtime
// closes. A Runtime is safe for concurrent use.
type Runtime struct {
	path     string
	version  string
	log      *slog.Logger
	building func(build func())

	// busy is held shared by NewSession while it works with the library,
	// so that Close cannot unload it underneath.
	busy sync.RWMutex

	mu             sync.Mutex
	closed         bool
	sessions       map[*Session]struct{}
	loggedFallback bool
}

// Open finds and loads ONNX Runtime (see FindLibrary) and returns a handle
// on it. A second Open with the same library shares the environment; one
// with a different library fails with ErrLibraryConflict until every
// Runtime is closed. A file that is not an ONNX Runtime library fails with
// ErrBadLibrary; without cgo Open fails with ErrUnsupported.
func Open(opts *Options) (*Runtime, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if !cgoEnabled {
		return nil, fmt.Errorf("open onnx runtime: %w", ErrUnsupported)
	}
	path, err := FindLibrary(o.LibraryPath)
	if err != nil {
		return nil, fmt.Errorf("open onnx runtime: %w", err)
	}
	// Compare libraries by their real file so that a symlink and its target
	// count as the same library.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	version, err := loadLibrary(path)
	if err != nil {
		return nil, fmt.Errorf("open onnx runtime: %w", err)
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	log.Debug("onnx runtime loaded", "library", path, "version", version)
	building := o.Building
	if building == nil {
		building = func(build func()) { build() }
	}
	return &Runtime{path: path, version: version, log: log, building: building, sessions: make(map[*Session]struct{})}, nil
}

// Version is the ONNX Runtime release, e.g. "1.30.0".
func (r *Runtime) Version() string { return r.version }

// LibraryPath is the library file that was loaded.
func (r *Runtime) LibraryPath() string { return r.path }

// Close closes the sessions still open on this Runtime and releases its
// reference to the library. It returns the first error; a second Close
// returns nil.
func (r *Runtime) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	open := make([]*Session, 0, len(r.sessions))
	for s := range r.sessions {
		open = append(open, s)
	}
	r.mu.Unlock()

	var first error
	for _, s := range open {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.busy.Lock()
	defer r.busy.Unlock()
	if err := releaseLibrary(); err != nil && first == nil {
		first = fmt.Errorf("close onnx runtime: %w", err)
	}
	return first
}

// NewSessionFromFile reads a model file (at most MaxModelBytes) and calls
// NewSession. Callers that verify or parse the model in Go first should read
// it themselves and call NewSession with the same bytes.
func (r *Runtime) NewSessionFromFile(path string, opts *SessionOptions) (*Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > MaxModelBytes {
		return nil, fmt.Errorf("new session: %s is %d bytes, over MaxModelBytes (%d): %w",
			path, fi.Size(), MaxModelBytes, ErrModelTooLarge)
	}
	model, err := io.ReadAll(io.LimitReader(f, MaxModelBytes+1))
	if err != nil {
		return nil, fmt.Errorf("new session: read %s: %w", path, err)
	}
	if len(model) > MaxModelBytes {
		return nil, fmt.Errorf("new session: %s is over MaxModelBytes (%d): %w", path, MaxModelBytes, ErrModelTooLarge)
	}
	s, err := r.NewSession(model, opts)
	if err != nil {
		return nil, fmt.Errorf("%w (model %s)", err, path)
	}
	return s, nil
}

// NewSession creates a session from an ONNX model held in memory. The bytes
// are not kept: the caller may drop them once it returns. Inputs and
// outputs are read from the model's protobuf in Go (Session.Outputs says
// how that can differ from ONNX Runtime's view).
//
// The model is handed to ONNX Runtime, whose parser runs in C++: a hostile
// or corrupt file can crash the process. Check size, digest and structure in
// Go (package quant/onnx) before calling this with a file from outside.
//
// With ProviderAuto, a GPU provider that fails is skipped and the CPU is
// used; the first such fallback on a Runtime is logged at Info level, later
// ones at Debug. An explicit provider that fails is an error wrapping
// ErrProviderUnavailable.
func (r *Runtime) NewSession(model []byte, opts *SessionOptions) (*Session, error) {
	so, err := opts.normalize()
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	switch {
	case len(model) == 0:
		return nil, fmt.Errorf("new session: model is empty: %w", ErrInvalidModel)
	case len(model) > MaxModelBytes:
		return nil, fmt.Errorf("new session: model is %d bytes, over MaxModelBytes (%d): %w",
			len(model), MaxModelBytes, ErrModelTooLarge)
	}
	r.busy.RLock()
	defer r.busy.RUnlock()
	if r.isClosed() {
		return nil, fmt.Errorf("new session: runtime: %w", ErrClosed)
	}
	inputs, outputs, err := modelIO(model)
	if err != nil {
		if IsORTFormat(model) {
			// An ONNX protobuf can start with these bytes too, so only a
			// model that does not parse is taken for one.
			return nil, fmt.Errorf("new session: %w (the model looks like ONNX Runtime's own format: load it with NewSessionORT)", err)
		}
		return nil, fmt.Errorf("new session: %w", err)
	}
	s, err := r.build(model, inputs, outputs, so, nil)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	return s, nil
}

func (r *Runtime) isClosed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.closed
}

// build makes the session on the first provider of so's plan that works
// and registers it, with free (nil for none) for Close to call once the
// session is destroyed; r.busy is held shared. On an error free is not
// called.
func (r *Runtime) build(model []byte, inputs, outputs []TensorInfo, so SessionOptions, free func()) (*Session, error) {
	var (
		b        *backendSession
		used     Provider
		failures []string
		err      error
		once     sync.Once // a Building that calls build again must not make a second session
	)
	plan := so.providerPlan()
	r.building(func() {
		once.Do(func() {
			for i, p := range plan {
				b, err = newBackendSession(model, inputs, outputs, so, p)
				if err == nil {
					used = p
					return
				}
				if i == len(plan)-1 || so.Provider != ProviderAuto {
					return
				}
				failures = append(failures, err.Error())
			}
		})
	})
	if err == nil && b == nil {
		err = errors.New("Options.Building did not build the session")
	}
	if err != nil {
		return nil, err
	}
	if len(failures) > 0 {
		r.logFallback(used, failures)
	}
	meta, err := b.metadata()
	if err != nil {
		b.destroy()
		return nil, fmt.Errorf("model metadata: %w", err)
	}
	s := &Session{rt: r, provider: used, inputs: inputs, outputs: outputs, meta: meta, b: b, arena: so.CPUArena, free: free}

	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		b.destroy()
		return nil, fmt.Errorf("runtime: %w", ErrClosed)
	}
	r.sessions[s] = struct{}{}
	return s, nil
}

// logFallback reports that ProviderAuto settled for a lesser provider: once
// per Runtime at Info (a CPU-only box is normal, not a warning), afterwards
// at Debug so a daemon loading ten models does not repeat itself.
func (r *Runtime) logFallback(used Provider, failures []string) {
	r.mu.Lock()
	first := !r.loggedFallback
	r.loggedFallback = true
	r.mu.Unlock()
	level := slog.LevelDebug
	if first {
		level = slog.LevelInfo
	}
	r.log.Log(context.Background(), level, "onnx runtime: gpu provider unavailable, falling back",
		"provider", string(used), "failed", failures)
}

func (r *Runtime) forget(s *Session) {
	r.mu.Lock()
	delete(r.sessions, s)
	r.mu.Unlock()
}
