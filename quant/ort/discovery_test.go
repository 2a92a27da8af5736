package ort

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// touch creates an empty file (and its directories) and returns its path.
func touch(t *testing.T, path string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestFindLibrarySearchOrder(t *testing.T) {
	root := t.TempDir()
	configured := touch(t, filepath.Join(root, "configured", "libonnxruntime.so.1"))
	env := touch(t, filepath.Join(root, "env", "libonnxruntime.so.1"))
	project := touch(t, filepath.Join(root, "project", ".ort", "libonnxruntime.so.1"))
	nested := filepath.Join(root, "project", "quant", "ort")
	if err := os.MkdirAll(nested, 0o755); err != nil {
		t.Fatal(err)
	}
	installed := touch(t, filepath.Join(root, "opt", "mynah", ".ort", "libonnxruntime.so.1"))
	exeDir := filepath.Join(root, "opt", "mynah", "bin")
	sys := filepath.Join(root, "usr", "lib")
	sysLib := touch(t, filepath.Join(sys, "libonnxruntime.so"))
	empty := filepath.Join(root, "empty")
	if err := os.MkdirAll(empty, 0o755); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name string
		s    librarySearch
		want string
	}{
		{"configured beats env", librarySearch{configured: configured, env: env, cwd: nested}, configured},
		{"env beats project", librarySearch{env: env, cwd: nested}, env},
		{"project found walking up from a subpackage", librarySearch{cwd: nested, exeDir: exeDir, systemDirs: []string{sys}}, project},
		{"project in the working directory itself", librarySearch{cwd: filepath.Join(root, "project")}, project},
		{"installed tree: parent of the executable", librarySearch{cwd: empty, exeDir: exeDir, systemDirs: []string{sys}}, installed},
		{"system directory last", librarySearch{cwd: empty, systemDirs: []string{sys}}, sysLib},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.find()
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("found %s, want %s", got, tc.want)
			}
		})
	}
}

func TestFindLibraryExplicitPathMustExist(t *testing.T) {
	root := t.TempDir()
	fallback := touch(t, filepath.Join(root, ".ort", "libonnxruntime.so.1"))
	missing := filepath.Join(root, "nope", "libonnxruntime.so.1")
	tests := []struct {
		name    string
		s       librarySearch
		mention string
	}{
		{"missing configured path", librarySearch{configured: missing, cwd: root}, "configured"},
		{"missing env path", librarySearch{env: missing, cwd: root}, "$" + EnvLibrary},
		{"configured directory", librarySearch{configured: root, cwd: root}, "is a directory"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tc.s.find()
			if err == nil {
				t.Fatalf("found %s (fell through past the explicit path; %s exists)", got, fallback)
			}
			if !errors.Is(err, ErrLibraryNotFound) {
				t.Errorf("error %v does not wrap ErrLibraryNotFound", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not mention %q", err, tc.mention)
			}
			explicit := tc.s.configured + tc.s.env
			if !strings.Contains(err.Error(), explicit) {
				t.Errorf("error %q does not name %s", err, explicit)
			}
		})
	}
}

func TestFindLibraryNothingFound(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "a", "b")
	exeDir := filepath.Join(root, "bin")
	sys := []string{filepath.Join(root, "usr", "lib"), filepath.Join(root, "usr", "local", "lib")}
	_, err := librarySearch{cwd: cwd, exeDir: exeDir, systemDirs: sys}.find()
	if !errors.Is(err, ErrLibraryNotFound) {
		t.Fatalf("got %v, want ErrLibraryNotFound", err)
	}
	msg := err.Error()
	for _, want := range []string{
		filepath.Join(cwd, ".ort", "libonnxruntime.so.1"),
		filepath.Join(root, "a", ".ort", "libonnxruntime.so.1"),
		filepath.Join(root, ".ort", "libonnxruntime.so.1"),
		"/.ort/libonnxruntime.so.1", // the walk reaches the filesystem root
		filepath.Join(exeDir, ".ort", "libonnxruntime.so.1"),
		filepath.Join(sys[0], "libonnxruntime.so.1"),
		filepath.Join(sys[1], "libonnxruntime.so"),
		"scripts/setup.sh",
		EnvLibrary,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not mention %s:\n%s", want, msg)
		}
	}
	// The executable's parent and the walk from cwd both reach root's .ort:
	// it must be listed once.
	if n := strings.Count(msg, filepath.Join(root, ".ort", "libonnxruntime.so.1")+","); n > 1 {
		t.Errorf("a path is listed %d times:\n%s", n, msg)
	}
}

// FindLibrary itself reads the process: configured, then the environment,
// then the working directory.
func TestFindLibraryFromProcess(t *testing.T) {
	root := t.TempDir()
	configured := touch(t, filepath.Join(root, "c.so"))
	env := touch(t, filepath.Join(root, "e.so"))
	project := touch(t, filepath.Join(root, "proj", ".ort", "libonnxruntime.so.1"))
	sub := filepath.Join(root, "proj", "sub")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)

	t.Setenv(EnvLibrary, env)
	if got, err := FindLibrary(configured); err != nil || got != configured {
		t.Errorf("FindLibrary(configured) = %q, %v; want %s", got, err, configured)
	}
	if got, err := FindLibrary(""); err != nil || got != env {
		t.Errorf("FindLibrary with $%s = %q, %v; want %s", EnvLibrary, got, err, env)
	}
	t.Setenv(EnvLibrary, "")
	if got, err := FindLibrary(""); err != nil || got != project {
		t.Errorf("FindLibrary from a subdirectory = %q, %v; want %s", got, err, project)
	}
	// A relative configured path is resolved against the working directory.
	if got, err := FindLibrary("../.ort/libonnxruntime.so.1"); err != nil || got != project {
		t.Errorf("FindLibrary(relative) = %q, %v; want %s", got, err, project)
	}
}

func TestSystemLibraryDirs(t *testing.T) {
	dirs := systemLibraryDirs()
	if len(dirs) < 3 || dirs[0] != "/usr/local/lib" || dirs[1] != "/usr/lib" {
		t.Fatalf("system dirs %v: want /usr/local/lib, /usr/lib, then multiarch", dirs)
	}
	if ma := multiarch(); ma != "" && dirs[2] != "/usr/lib/"+ma {
		t.Errorf("third dir %s, want /usr/lib/%s", dirs[2], ma)
	}
}
