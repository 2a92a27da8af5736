//go:build linux

package main

import (
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
)

// Disk full as a person meets it: the voices directory is a small tmpfs,
// so the kernel, not an injected error, says ENOSPC. The demo voice's
// model (about 126 kB) does not fit in 64 kB; its config (about 5 kB)
// and the cached catalog do.

// diskFullMount mounts a tmpfs of size ("64k") on a fresh directory and
// unmounts it when the test ends. Mounting needs root (CAP_SYS_ADMIN);
// where it is refused the test is skipped, saying so. CI runs as root.
func diskFullMount(t *testing.T, size string) string {
	t.Helper()
	dir := t.TempDir()
	if err := unix.Mount("tmpfs", dir, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "size="+size+",mode=0755"); err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			t.Skipf("mount -t tmpfs %s: %v (uid %d): mounting needs root with CAP_SYS_ADMIN, which this environment does not grant; CI runs as root", dir, err, os.Geteuid())
		}
		t.Fatalf("mount -t tmpfs -o size=%s %s: %v", size, dir, err)
	}
	// Registered after TempDir's cleanup, so it runs first.
	t.Cleanup(func() {
		if err := unix.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v (a file left open in it?)", dir, err)
			unix.Unmount(dir, unix.MNT_DETACH)
		}
	})
	return dir
}

// diskFullFree is the room left on dir's file system.
func diskFullFree(t *testing.T, dir string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * int64(st.Bsize)
}

// diskFullEnv serves the standard collection and returns the flags that
// install from it into a tmpfs of size.
func diskFullEnv(t *testing.T, size string) (s *catalogtest.Server, dir string, flags []string) {
	t.Helper()
	dir = diskFullMount(t, size)
	s, _, _ = voiceEnv(t) // its config and environment; the voices go to the tmpfs
	return s, dir, []string{"--voices", dir, "--catalog-url", s.CatalogURL, "--download-url", s.BaseURL}
}

// diskFullCheckClean checks that a failed install left nothing that
// takes room: no voice directory, no staging directory, no .part, and no
// file but the allowed ones (paths relative to dir: the cached catalog,
// the test's own filler). The lock files are empty and stay. The room
// used on the file system is exactly what the files left take, so no
// deleted file is held open either. free0 is the room before the
// install.
func diskFullCheckClean(t *testing.T, dir, key string, free0 int64, allowed ...string) {
	t.Helper()
	if _, err := os.Lstat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("voice directory %s left (err %v)", key, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, ".mynah", "staging", key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging directory of %s left (err %v)", key, err)
	}
	var used int64
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		used += info.Sys().(*syscall.Stat_t).Blocks * 512
		switch {
		case strings.HasSuffix(p, ".part"):
			t.Errorf("%s left (%d bytes)", rel, info.Size())
		case strings.HasPrefix(rel, filepath.Join(".mynah", "locks")+string(filepath.Separator)) && info.Size() == 0:
		case !slices.Contains(allowed, rel):
			t.Errorf("%s left (%d bytes)", rel, info.Size())
		}
		return nil
	})
	if free := diskFullFree(t, dir); free0-free != used {
		t.Errorf("%d bytes in use on the voices file system, the files left take %d: a deleted file still open?", free0-free, used)
	}
}

// diskFullCheckError checks what a person is told: an error that is
// ErrDiskFull, says "disk full" in words, and exits non-zero.
func diskFullCheckError(t *testing.T, err error, errOut string) {
	t.Helper()
	if !errors.Is(err, catalog.ErrDiskFull) {
		t.Fatalf("err = %v, want ErrDiskFull\n%s", err, errOut)
	}
	if !strings.Contains(err.Error(), "disk full") {
		t.Errorf("error %q does not say disk full", err)
	}
	if code := exitCode(err); code == 0 {
		t.Errorf("exit status %d", code)
	}
}

// The catalog's sizes say the voice does not fit: the install refuses
// before downloading anything.
func TestVoiceInstallDiskFullRefusedUpFront(t *testing.T) {
	s, dir, flags := diskFullEnv(t, "64k")
	key := "en_US-lessac-medium"
	free0 := diskFullFree(t, dir)
	_, errOut, err := install(t, flags, key)
	diskFullCheckError(t, err, errOut)
	if !strings.Contains(err.Error(), "the voice needs ") || !strings.Contains(err.Error(), dir+" has ") {
		t.Errorf("error %q does not say how much room the voice needs and has", err)
	}
	for _, file := range []string{key + ".onnx.json", key + ".onnx", "MODEL_CARD"} {
		if n := s.Gets("/" + catalogtest.FilePath(key, file)); n != 0 {
			t.Errorf("%s fetched %d times; the check comes first", file, n)
		}
	}
	diskFullCheckClean(t, dir, key, free0, filepath.Join(".mynah", "catalog.json"))
}

// A direct URL gives no sizes to check: the config fits, the model's
// write fails with ENOSPC midway, and the partial download is deleted
// rather than kept for a resume that cannot succeed.
func TestVoiceInstallDiskFullDuringURLDownload(t *testing.T) {
	s, dir, flags := diskFullEnv(t, "64k")
	key := "en_GB-alan-medium"
	free0 := diskFullFree(t, dir)
	_, errOut, err := install(t, flags, s.URL+catalogtest.ModelURLPath(key))
	diskFullCheckError(t, err, errOut)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("error %q is not the write's ENOSPC with what to do", err)
	}
	if n := s.Gets(catalogtest.ModelURLPath(key)); n != 1 {
		t.Errorf("model fetched %d times; a full disk is not retried", n)
	}
	diskFullCheckClean(t, dir, key, free0)
}

// The voice fits when checked, then something else fills the disk
// before the model arrives (here the server, as the model is asked
// for): the write fails with ENOSPC and nothing of the voice stays.
func TestVoiceInstallDiskFullAfterCheck(t *testing.T) {
	s, dir, flags := diskFullEnv(t, "1m")
	key := "en_US-lessac-medium"
	filler := filepath.Join(dir, "filler")
	var (
		mu      sync.Mutex
		filled  bool
		fillErr error
	)
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path != catalogtest.ModelURLPath(key) || filled {
			return false
		}
		filled = true
		var st unix.Statfs_t
		if fillErr = unix.Statfs(dir, &st); fillErr == nil {
			// Leave 16 kB: the model's first writes succeed.
			fillErr = os.WriteFile(filler, make([]byte, int64(st.Bavail)*int64(st.Bsize)-16<<10), 0o644)
		}
		return false
	}
	free0 := diskFullFree(t, dir)
	_, errOut, err := install(t, flags, key)
	mu.Lock()
	if !filled || fillErr != nil {
		t.Fatalf("fill the disk (model asked for: %v): %v", filled, fillErr)
	}
	mu.Unlock()
	diskFullCheckError(t, err, errOut)
	if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "free some space") {
		t.Errorf("error %q is not the write's ENOSPC with what to do", err)
	}
	if !strings.Contains(errOut, key+".onnx.json: ") {
		t.Errorf("the config was not downloaded before the disk filled:\n%s", errOut)
	}
	diskFullCheckClean(t, dir, key, free0, filepath.Join(".mynah", "catalog.json"), "filler")
}
