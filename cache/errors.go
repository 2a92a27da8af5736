package cache

import "errors"

// Errors of the bbolt store. Test for them with errors.Is: a returned error
// wraps one of these and, where there is one, the underlying cause (for a
// full disk, errors.Is(err, syscall.ENOSPC) holds too).
var (
	// ErrLocked is returned by Open when another process holds the cache
	// file's lock for longer than Options.Timeout: usually a running mynahd.
	// Inspect a running daemon's cache with Options.ReadOnly, or change it
	// through the daemon (MQTT cache/purge).
	ErrLocked = errors.New("cache file is locked by another process")

	// ErrCorrupt is returned by a read-only Open, or by Check, when the file
	// fails bbolt's consistency check or mynah's schema validation. A
	// read-write Open never returns it: it moves the file aside and starts
	// a fresh one (see Store.Recovery).
	ErrCorrupt = errors.New("cache file is corrupt")

	// ErrWriteFailed wraps an error of the disk or of bbolt while committing
	// a write (disk full, Options.MaxFileBytes reached, I/O error). Nothing
	// of the failed batch was stored; the caller goes on without the cache.
	ErrWriteFailed = errors.New("cache write failed")

	// ErrBudget is returned when a phrase cannot be stored within
	// Options.MaxBytes (pinned phrases fill the budget) or is larger than
	// Options.MaxPhraseBytes.
	ErrBudget = errors.New("cache budget exceeded")

	// ErrSpoolFull is returned by SpoolPut when Options.MaxSpoolEntries
	// requests are already spooled.
	ErrSpoolFull = errors.New("spool is full")

	// ErrInvalid is returned for arguments outside the documented limits
	// (an empty or over-long spool id or voice name, an oversized spool
	// payload, a zero receive time, an unknown purge scope, a speaker name
	// or owner that breaks the naming rules, a speaker embedding that is
	// empty, too long, not finite or all zero).
	ErrInvalid = errors.New("invalid cache argument")

	// ErrNotFound is returned by Pin and Unpin for a phrase that is not
	// cached.
	ErrNotFound = errors.New("phrase not cached")

	// ErrReadOnly is returned by every write on a Store opened with
	// Options.ReadOnly.
	ErrReadOnly = errors.New("cache opened read-only")

	// ErrEncoderChanged is returned by Speaker.CheckEncoder when the speaker
	// was enrolled with another speaker encoder than the installed one:
	// its embedding means nothing to the new encoder's voice. Re-enroll the
	// speaker with a new recording (the reference audio is never kept).
	ErrEncoderChanged = errors.New("speaker enrolled with another speaker encoder")

	// ErrClosed is returned by every method called after Close.
	ErrClosed = errors.New("cache closed")
)
