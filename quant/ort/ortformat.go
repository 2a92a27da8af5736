package ort

import (
	"fmt"
	"os"
	"path/filepath"
)

// ortFormatID is the file identifier of ONNX Runtime's own model format,
// a flatbuffer: bytes 4 to 8 of every such file.
const ortFormatID = "ORTM"

// IsORTFormat reports whether data starts like a model in ONNX Runtime's
// own format (as SessionOptions.SaveOptimized writes it).
func IsORTFormat(data []byte) bool {
	return len(data) >= 8 && string(data[4:8]) == ortFormatID
}

// NewSessionORT creates a session from a model in ONNX Runtime's own
// format, as SessionOptions.SaveOptimized wrote it, with the inputs and
// outputs the caller read from the model it was made from
// (Session.Inputs and Outputs of the session that wrote it: this package
// does not parse the format, and ONNX Runtime checks the names only when
// a run uses them, so a wrong name fails Run, not NewSessionORT).
//
// ONNX Runtime works on data in place, weights included, instead of
// copying it: data must stay unchanged, and outside the Go heap (a
// mapping, C memory: ONNX Runtime keeps a pointer the garbage collector
// does not see), until the session is closed. free, if not nil, is called
// exactly once, by Session.Close or Runtime.Close once the session is
// destroyed; on an error it is not called, and data is the caller's
// again. opts.SaveOptimized is ignored.
//
// ONNX Runtime checks the flatbuffer's structure, but not its numbers: a
// file from outside must be checked by its digest first.
func (r *Runtime) NewSessionORT(data []byte, inputs, outputs []TensorInfo, free func(), opts *SessionOptions) (*Session, error) {
	so, err := opts.normalize()
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	so.SaveOptimized, so.ortFormat = "", true
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("new session: model is empty: %w", ErrInvalidModel)
	case !IsORTFormat(data):
		return nil, fmt.Errorf("new session: not an ONNX Runtime format model: %w", ErrInvalidModel)
	case len(data) > MaxModelBytes:
		return nil, fmt.Errorf("new session: model is %d bytes, over MaxModelBytes (%d): %w",
			len(data), MaxModelBytes, ErrModelTooLarge)
	case len(inputs) == 0 || len(outputs) == 0:
		return nil, fmt.Errorf("new session: %d inputs and %d outputs given, a model has at least one of each: %w",
			len(inputs), len(outputs), ErrInvalidModel)
	}
	for _, t := range append(append([]TensorInfo(nil), inputs...), outputs...) {
		if t.Name == "" {
			return nil, fmt.Errorf("new session: a tensor without a name: %w", ErrInvalidModel)
		}
		if t.Type == Undefined || int(t.Type) >= len(elementTypeNames) {
			return nil, fmt.Errorf("new session: tensor %q has element type %s: %w", t.Name, t.Type, ErrInvalidModel)
		}
	}
	r.busy.RLock()
	defer r.busy.RUnlock()
	if r.isClosed() {
		return nil, fmt.Errorf("new session: runtime: %w", ErrClosed)
	}
	// free goes in with the session, not after: Runtime.Close may close
	// the session as soon as build has registered it.
	s, err := r.build(data, cloneInfos(inputs), cloneInfos(outputs), so, free)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	return s, nil
}

// checkSaveOptimized tells why ONNX Runtime could not write
// SessionOptions.SaveOptimized to path, where Go can see it beforehand.
func checkSaveOptimized(path string) error {
	dir := filepath.Dir(path)
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return fmt.Errorf("save optimized model to %s: %w (create the directory first)", path, err)
	case !st.IsDir():
		return fmt.Errorf("save optimized model to %s: %s is not a directory", path, dir)
	}
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return fmt.Errorf("save optimized model to %s: it is a directory; SaveOptimized names a file", path)
	}
	return nil
}
