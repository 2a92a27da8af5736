package ort

import "fmt"

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
// outputs the caller read from the model it was made from (this package
// does not parse the format). ONNX Runtime works on data in place,
// weights included, instead of copying it: data must stay unchanged until
// the session is closed, after which free (if not nil) is called; on an
// error free is not called. opts.SaveOptimized is ignored.
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
	}
	r.busy.RLock()
	defer r.busy.RUnlock()
	if r.isClosed() {
		return nil, fmt.Errorf("new session: runtime: %w", ErrClosed)
	}
	s, err := r.build(data, cloneInfos(inputs), cloneInfos(outputs), so)
	if err != nil {
		return nil, fmt.Errorf("new session: %w", err)
	}
	s.free = free
	return s, nil
}
