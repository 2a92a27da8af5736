//go:build !unix

package catalog

import (
	"context"
	"errors"
)

// lock has no file lock to take here; see lock_unix.go.
func (c *Client) lock(ctx context.Context, key string) (unlock func(), err error) {
	return nil, errors.New("voice installs need file locks, which this system lacks")
}

func freeBytes(dir string) (int64, bool) { return 0, false }
