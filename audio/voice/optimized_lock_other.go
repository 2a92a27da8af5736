//go:build !unix

package voice

import "errors"

// lockDir has no directory lock to take here; see optimized_lock_unix.go.
// The entries' checksums still keep a load from using a pair of files
// that two stores mixed.
func lockDir(dir string, exclusive bool) (unlock func(), err error) {
	return nil, errors.New("no directory locks on this system")
}
