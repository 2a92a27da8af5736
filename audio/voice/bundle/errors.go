package bundle

import "errors"

// Errors returned by this package. Callers test them with errors.Is; the
// wrapping message names the field, file, role or tensor and the limit.
var (
	// ErrNoManifest means the directory has no voice.json. Callers that
	// also accept plain Piper voices fall back to them on this error.
	ErrNoManifest = errors.New("no voice.json in directory")

	// ErrInvalidManifest means voice.json is not a valid manifest: bad
	// JSON, an unknown key, a missing or out-of-range field, an unsafe
	// path, or a role that names no entry of "files".
	ErrInvalidManifest = errors.New("invalid voice manifest")

	// ErrFileMismatch means a file of the bundle is missing, not a regular
	// file, too large, or has another size or sha256 than the manifest
	// says.
	ErrFileMismatch = errors.New("bundle file does not match manifest")

	// ErrUnsafePath means a file's path, once opened, would leave the
	// bundle directory (a symlink pointing outside it).
	ErrUnsafePath = errors.New("bundle path escapes the bundle directory")

	// ErrModelMismatch means a model's real inputs or outputs differ from
	// what the manifest declares for its role: a missing name, another
	// element type, another rank or a fixed dimension that disagrees.
	ErrModelMismatch = errors.New("model does not match manifest")
	// ErrNoVariant means a precision was asked for that the bundle has no
	// (passed) variant of.
	ErrNoVariant = errors.New("no such precision variant")
)
