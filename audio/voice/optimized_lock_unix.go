//go:build unix

package voice

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockDir takes an advisory lock (flock) on the directory dir, shared or
// exclusive, waiting for it, and returns its release. flock locks belong
// to the open file, so two loads in one process exclude each other as two
// processes do.
func lockDir(dir string, exclusive bool) (unlock func(), err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, err
	}
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	for {
		err = unix.Flock(int(f.Fd()), how)
		if err != unix.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, &os.PathError{Op: "flock", Path: dir, Err: err}
	}
	return func() { f.Close() }, nil // closing the file releases the lock
}
