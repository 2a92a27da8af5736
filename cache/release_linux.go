package cache

import (
	"fmt"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/sys/unix"
)

// ReleaseMapped drops this process's mapping of the file's pages from its
// RSS (madvise MADV_DONTNEED); the pages stay in the kernel's page cache
// and come back on the next read through the map. bbolt reads the file
// only through its read-only map, and a commit that rewrites a page
// copies its neighbouring values through it, so the pages of a busy cache
// pile up in RSS: about 40 MB after 200 varied requests (README
// "## Memory"). Inside a read transaction bbolt cannot remap, so the range
// released is bbolt's own. It returns the bytes of map covered.
func (s *Store) ReleaseMapped() (int64, error) {
	var size int64
	err := s.view(func(tx *bolt.Tx) error {
		info := s.db.Info()
		size = tx.Size()
		if info == nil || info.Data == 0 || size <= 0 {
			size = 0
			return nil
		}
		// bbolt's map is page aligned; the length is rounded up by the kernel.
		if _, _, errno := unix.Syscall(unix.SYS_MADVISE, info.Data, uintptr(size), unix.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("release mapped cache %s: madvise: %w", s.file, errno)
		}
		return nil
	})
	return size, err
}
