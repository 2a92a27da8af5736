package ort

import "errors"

// Errors returned by this package. Callers test for them with errors.Is; the
// returned errors wrap them with context (the path, the input name, the limit).
var (
	// ErrUnsupported is returned by every entry point of a binary built
	// without cgo: ONNX Runtime is a C library and can only be loaded through
	// cgo.
	ErrUnsupported = errors.New("built without cgo; ONNX Runtime needs cgo")

	// ErrLibraryNotFound means no libonnxruntime.so was found. The wrapping
	// error lists every path that was tried.
	ErrLibraryNotFound = errors.New("onnx runtime library not found")

	// ErrBadLibrary means the file exists but could not be loaded as ONNX
	// Runtime: not a shared library, a library without OrtGetApiBase, or a
	// release too old for the API version onnxruntime_go was built against.
	ErrBadLibrary = errors.New("not a usable onnx runtime library")

	// ErrLibraryConflict means a Runtime is already open with a different
	// library. ONNX Runtime's environment is process-global: one process can
	// use one library at a time.
	ErrLibraryConflict = errors.New("a different onnx runtime library is already loaded")

	// ErrClosed is returned by methods of a Runtime or Session after Close.
	ErrClosed = errors.New("closed")

	// ErrInvalidOptions means an Options or SessionOptions field is out of
	// range; the wrapping error names the field.
	ErrInvalidOptions = errors.New("invalid options")

	// ErrProviderUnavailable means an explicitly requested execution provider
	// (cuda, tensorrt) could not be used. With ProviderAuto this never
	// surfaces: the session falls back to the CPU.
	ErrProviderUnavailable = errors.New("execution provider unavailable")

	// ErrModelTooLarge means the model is larger than MaxModelBytes.
	ErrModelTooLarge = errors.New("model too large")

	// ErrInvalidModel means ONNX Runtime refused the model bytes (empty,
	// truncated, not a model, an operator it does not know, ...).
	ErrInvalidModel = errors.New("onnx runtime rejected the model")

	// ErrUnsupportedModel means the model loaded but uses an input or output
	// this package cannot exchange: a non-tensor value (sequence, map) or an
	// element type without a Tensor field (string, bfloat16, ...).
	ErrUnsupportedModel = errors.New("model input or output not supported")

	// ErrInputMismatch means Run was given tensors that do not fit the model:
	// an unknown or missing name, a wrong element type, a wrong rank or fixed
	// dimension, or a data length that does not match the shape.
	ErrInputMismatch = errors.New("tensor does not match the model")
)
