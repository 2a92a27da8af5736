//go:build unix

package catalog

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockWait is how often a waiting install tries the lock again.
const lockWait = 50 * time.Millisecond

// lock takes DIR/.mynah/locks/KEY.lock exclusively (flock, which belongs
// to the open file: two installs in one process exclude each other as two
// processes do), waiting while another holds it, until ctx ends.
func (c *Client) lock(ctx context.Context, key string) (unlock func(), err error) {
	dir := filepath.Join(c.dir, stateDir, "locks")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, diskFull(err)
	}
	name := filepath.Join(dir, key+".lock")
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, diskFull(err)
	}
	waited := false
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() { f.Close() }, nil // closing releases the lock
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, &os.PathError{Op: "flock", Path: name, Err: err}
		}
		if !waited {
			waited = true
			c.opts.Logger.Info("waiting for another install of the voice", "voice", key, "lock", name)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another install of %s: %w", key, ctx.Err())
		case <-time.After(lockWait):
		}
	}
}

// freeBytes is the room left to an unprivileged user on dir's file
// system.
func freeBytes(dir string) (int64, bool) {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true
}
