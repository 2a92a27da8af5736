package voice

// reasonedError is a sentinel error that also names the reason a front end
// reports it with: the words of mynahd's events (README, "reason"), which
// the daemon reads through its Reasoner interface, so that it needs no
// copy of this package's errors. A front end without those words uses the
// message.
type reasonedError struct{ msg, reason string }

func reasoned(msg, reason string) *reasonedError { return &reasonedError{msg, reason} }

func (e *reasonedError) Error() string { return e.msg }

// Reason is the event reason: unknown_speaker, bad_audio or reenroll.
func (e *reasonedError) Reason() string { return e.reason }
