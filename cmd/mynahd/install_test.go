package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const installScript = "../../scripts/install.sh"

// stagedInstall runs scripts/install.sh with DESTDIR=dest and fake build
// outputs, returning its combined output and error.
func stagedInstall(t *testing.T, dest, binDir, ortLib string, args ...string) (string, error) {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Fatalf("bash not found: %v", err)
	}
	argv := append([]string{installScript, "--bin-dir", binDir, "--ort-lib", ortLib}, args...)
	cmd := exec.Command(bash, argv...)
	cmd.Env = append(os.Environ(), "DESTDIR="+dest)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// fakeBuild writes stand-ins for bin/mynahd, bin/mynah and the ONNX
// Runtime library, each holding tag.
func fakeBuild(t *testing.T, dir, tag string) (binDir, ortLib string) {
	t.Helper()
	binDir = filepath.Join(dir, "bin")
	if err := os.MkdirAll(binDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"mynahd", "mynah"} {
		if err := os.WriteFile(filepath.Join(binDir, b), []byte("#!/bin/sh\n# "+tag+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	ortLib = filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(ortLib, []byte("ort "+tag), 0o644); err != nil {
		t.Fatal(err)
	}
	return binDir, ortLib
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestInstallScript(t *testing.T) {
	dest := t.TempDir()
	binDir, ortLib := fakeBuild(t, t.TempDir(), "v1")

	out, err := stagedInstall(t, dest, binDir, ortLib)
	if err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if !strings.Contains(out, "systemctl not run") {
		t.Errorf("install with DESTDIR should say it skipped systemctl:\n%s", out)
	}
	files := map[string]os.FileMode{
		"usr/local/bin/mynahd":                    0o755,
		"usr/local/bin/mynah":                     0o755,
		"usr/local/lib/mynah/libonnxruntime.so.1": 0o644,
		"etc/systemd/system/mynahd.service":       0o644,
		"etc/mynah/mynahd.yaml":                   0o644,
	}
	for f, mode := range files {
		st, err := os.Stat(filepath.Join(dest, f))
		if err != nil {
			t.Errorf("not installed: %v", err)
			continue
		}
		if st.Mode().Perm() != mode {
			t.Errorf("%s has mode %v, want %v", f, st.Mode().Perm(), mode)
		}
	}
	if got, want := mustRead(t, filepath.Join(dest, "etc/systemd/system/mynahd.service")), mustRead(t, unitFile); !bytes.Equal(got, want) {
		t.Error("installed unit differs from systemd/mynahd.service")
	}
	conf := filepath.Join(dest, "etc/mynah/mynahd.yaml")
	if got, want := mustRead(t, conf), mustRead(t, "../../systemd/mynahd.yaml"); !bytes.Equal(got, want) {
		t.Error("installed config differs from systemd/mynahd.yaml")
	}

	// A second run (an upgrade) replaces the binaries but never the
	// user's config.
	if err := os.WriteFile(conf, []byte("node: kitchen\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	binDir, ortLib = fakeBuild(t, t.TempDir(), "v2")
	if out, err := stagedInstall(t, dest, binDir, ortLib); err != nil {
		t.Fatalf("second install: %v\n%s", err, out)
	}
	if got := string(mustRead(t, conf)); got != "node: kitchen\n" {
		t.Errorf("second install overwrote the config: %q", got)
	}
	if got := string(mustRead(t, filepath.Join(dest, "usr/local/bin/mynahd"))); !strings.Contains(got, "v2") {
		t.Errorf("second install did not replace mynahd: %q", got)
	}
	if got := string(mustRead(t, filepath.Join(dest, "usr/local/lib/mynah/libonnxruntime.so.1"))); got != "ort v2" {
		t.Errorf("second install did not replace the library: %q", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(dest, "usr/local/bin/.*.new")); len(leftovers) > 0 {
		t.Errorf("temporary files left behind: %v", leftovers)
	}

	// Uninstall removes what install put there and keeps config.
	if out, err := stagedInstall(t, dest, binDir, ortLib, "--uninstall"); err != nil {
		t.Fatalf("uninstall: %v\n%s", err, out)
	}
	for f := range files {
		_, err := os.Stat(filepath.Join(dest, f))
		if f == "etc/mynah/mynahd.yaml" {
			if err != nil {
				t.Errorf("uninstall removed the config: %v", err)
			}
		} else if !os.IsNotExist(err) {
			t.Errorf("uninstall left %s (%v)", f, err)
		}
	}
}

func TestInstallScriptPrefix(t *testing.T) {
	dest := t.TempDir()
	binDir, ortLib := fakeBuild(t, t.TempDir(), "v1")
	if out, err := stagedInstall(t, dest, binDir, ortLib, "--prefix", "/opt/mynah"); err != nil {
		t.Fatalf("install: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dest, "opt/mynah/bin/mynahd")); err != nil {
		t.Fatal(err)
	}
	unit := string(mustRead(t, filepath.Join(dest, "etc/systemd/system/mynahd.service")))
	for _, want := range []string{
		"ExecStart=/opt/mynah/bin/mynahd -config /etc/mynah/mynahd.yaml",
		"Environment=MYNAH_ORT_LIB=/opt/mynah/lib/mynah/libonnxruntime.so.1",
	} {
		if !strings.Contains(unit, want) {
			t.Errorf("unit for --prefix /opt/mynah lacks %q", want)
		}
	}
	if strings.Contains(unit, "/usr/local/") {
		t.Error("unit for --prefix /opt/mynah still names /usr/local/")
	}
}

func TestInstallScriptErrors(t *testing.T) {
	dir := t.TempDir()
	binDir, ortLib := fakeBuild(t, dir, "v1")
	tests := []struct {
		name string
		prep func()
		args []string
		want string
	}{
		{"no build", func() { os.Remove(filepath.Join(binDir, "mynahd")) }, nil, "run 'make build' first"},
		{"no library", func() { fakeBuild(t, dir, "v1"); os.Remove(ortLib) }, nil, "run 'make setup'"},
		{"relative prefix", func() { fakeBuild(t, dir, "v1") }, []string{"--prefix", "usr"}, "absolute path"},
		{"odd prefix", nil, []string{"--prefix", "/opt/my|nah"}, "--prefix /opt/my|nah"},
		{"unknown flag", nil, []string{"--force"}, "unknown argument --force"},
	}
	for _, tt := range tests {
		if tt.prep != nil {
			tt.prep()
		}
		dest := t.TempDir()
		out, err := stagedInstall(t, dest, binDir, ortLib, tt.args...)
		if err == nil || !strings.Contains(out, tt.want) {
			t.Errorf("%s: err=%v, output %q; want a failure saying %q", tt.name, err, out, tt.want)
		}
		if entries, _ := os.ReadDir(dest); len(entries) != 0 {
			t.Errorf("%s: a failed install left files in DESTDIR", tt.name)
		}
	}
}
