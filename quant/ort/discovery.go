package ort

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
)

// EnvLibrary is the environment variable FindLibrary consults after the
// configured path. It exists for people who run the binaries by hand; the
// daemon's config file has its own field.
const EnvLibrary = "MYNAH_ORT_LIB"

// projectLibrary is where scripts/setup.sh puts the library, relative to the
// project (or install) root.
const projectLibrary = ".ort/libonnxruntime.so.1"

// systemLibraryNames are the names a distribution or a hand install uses.
var systemLibraryNames = []string{"libonnxruntime.so.1", "libonnxruntime.so"}

// librarySearch is what FindLibrary looks at, separated from the process so
// tests can point every source at a temporary directory.
type librarySearch struct {
	configured string
	env        string // value of EnvLibrary; "" when unset
	cwd        string // start of the upward walk; "" to skip
	exeDir     string // directory of the running executable; "" to skip
	systemDirs []string
}

// FindLibrary returns the path of libonnxruntime to load. It tries, in order:
//
//  1. configured (the config file's value), if not empty;
//  2. $MYNAH_ORT_LIB, if set;
//  3. .ort/libonnxruntime.so.1 in the working directory or any directory
//     above it (so `go test` in a subpackage finds the project's copy), then
//     in the executable's directory and its parent (an installed tree);
//  4. libonnxruntime.so.1 and libonnxruntime.so in /usr/local/lib, /usr/lib,
//     /usr/lib/<multiarch>, /usr/lib64 and /lib/<multiarch>.
//
// An explicit path (1 or 2) that does not exist is an error naming it, never
// a silent fall-through to another library. When nothing is found the error
// wraps ErrLibraryNotFound and lists every path tried. The result is
// absolute.
func FindLibrary(configured string) (string, error) {
	s := librarySearch{
		configured: configured,
		env:        os.Getenv(EnvLibrary),
		systemDirs: systemLibraryDirs(),
	}
	if wd, err := os.Getwd(); err == nil {
		s.cwd = wd
	}
	if exe, err := os.Executable(); err == nil {
		s.exeDir = filepath.Dir(exe)
	}
	return s.find()
}

func (s librarySearch) find() (string, error) {
	if s.configured != "" {
		return explicitLibrary(s.configured, "configured")
	}
	if s.env != "" {
		return explicitLibrary(s.env, "$"+EnvLibrary)
	}
	var tried []string
	try := func(p string) bool {
		tried = append(tried, p)
		return isFile(p)
	}
	if s.cwd != "" {
		for dir := s.cwd; ; {
			if p := filepath.Join(dir, projectLibrary); try(p) {
				return p, nil
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
	}
	if s.exeDir != "" {
		for _, dir := range []string{s.exeDir, filepath.Dir(s.exeDir)} {
			if p := filepath.Join(dir, projectLibrary); try(p) {
				return p, nil
			}
		}
	}
	for _, dir := range s.systemDirs {
		for _, name := range systemLibraryNames {
			if p := filepath.Join(dir, name); try(p) {
				return p, nil
			}
		}
	}
	return "", fmt.Errorf("%w (tried %s); run scripts/setup.sh or set %s to the path of libonnxruntime.so",
		ErrLibraryNotFound, strings.Join(dedupe(tried), ", "), EnvLibrary)
}

// explicitLibrary checks a path the user chose. It must exist: falling back
// to some other library would run a build the user did not ask for (a CPU
// build where they configured their CUDA one).
func explicitLibrary(path, source string) (string, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("onnx runtime library %q (%s): %w", path, source, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("onnx runtime library %q (%s) does not exist: %w", path, source, ErrLibraryNotFound)
	case err != nil:
		return "", fmt.Errorf("onnx runtime library %q (%s): %w", path, source, err)
	case fi.IsDir():
		return "", fmt.Errorf("onnx runtime library %q (%s) is a directory, not a file: %w", path, source, ErrLibraryNotFound)
	}
	return abs, nil
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// systemLibraryDirs lists where packaged or hand-installed libraries live;
// /usr/local/lib first because a hand install there is usually newer than a
// distribution package.
func systemLibraryDirs() []string {
	dirs := []string{"/usr/local/lib", "/usr/lib"}
	ma := multiarch()
	if ma != "" {
		dirs = append(dirs, "/usr/lib/"+ma)
	}
	dirs = append(dirs, "/usr/lib64")
	if ma != "" {
		dirs = append(dirs, "/lib/"+ma)
	}
	return dirs
}

// multiarch is Debian's multiarch tuple for this architecture.
func multiarch() string {
	switch runtime.GOARCH {
	case "amd64":
		return "x86_64-linux-gnu"
	case "arm64":
		return "aarch64-linux-gnu"
	case "arm":
		return "arm-linux-gnueabihf"
	case "386":
		return "i386-linux-gnu"
	case "riscv64":
		return "riscv64-linux-gnu"
	}
	return ""
}

func dedupe(list []string) []string {
	seen := make(map[string]bool, len(list))
	out := list[:0:0]
	for _, s := range list {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
