package catalog

import "errors"

// Every error of the package wraps one of these; the messages add what
// was asked for and what to do next.
var (
	// ErrNotFound: the catalog has no voice by that key, alias, name or
	// language. The message lists the nearest names.
	ErrNotFound = errors.New("no such voice in the catalog")
	// ErrAmbiguous: a voice name (without language and quality) that
	// several languages have.
	ErrAmbiguous = errors.New("voice name is ambiguous")
	// ErrChecksum: a downloaded file's size or md5 differs from the
	// catalog's. The file is deleted and nothing is installed.
	ErrChecksum = errors.New("checksum mismatch")
	// ErrHTTPStatus: the server answered with a status other than the
	// one asked for (404 for a file the mirror lacks). See StatusError.
	ErrHTTPStatus = errors.New("unexpected HTTP status")
	// ErrBadCatalog: the catalog is not JSON in the voices.json format,
	// or lists no voice that could be installed.
	ErrBadCatalog = errors.New("catalog not parseable")
	// ErrDiskFull: the voices directory's file system is full (ENOSPC),
	// or has less room than the voice needs.
	ErrDiskFull = errors.New("disk full")
	// ErrTooLarge: a catalog or file over its limit (Options).
	ErrTooLarge = errors.New("too large")
	// ErrStalled: no data arrived for Options.StallTimeout.
	ErrStalled = errors.New("download stalled")
	// ErrInvalidVoice: the downloaded voice failed Options.Check, or a
	// name or URL cannot be a voice directory.
	ErrInvalidVoice = errors.New("invalid voice")
	// ErrNotInstalled: Remove found no voice by that name.
	ErrNotInstalled = errors.New("voice not installed")
)

// StatusError is the ErrHTTPStatus of one request.
type StatusError struct {
	URL    string
	Status string // as the server sent it, "404 Not Found"
	Code   int
}

func (e *StatusError) Error() string {
	hint := ""
	if e.Code == 404 {
		hint = " (is the catalog or the download URL right for this mirror?)"
	}
	return "GET " + e.URL + ": " + e.Status + hint
}

func (e *StatusError) Unwrap() error { return ErrHTTPStatus }
