package bundle_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// styleFiles are stand-in contents for styleManifest's files, with voice
// files of the right size for a 2-row, 4-dim table.
func styleFiles() (*bundle.Manifest, map[string][]byte) {
	m := styleManifest()
	m.Style.Rows, m.Style.Dim = 2, 4
	return m, map[string][]byte{
		"model.onnx":       []byte("not really a model"),
		"voices/amber.bin": bytes.Repeat([]byte{1}, 32),
		"voices/jade.bin":  bytes.Repeat([]byte{2}, 32),
	}
}

func TestLoadVerifiesFiles(t *testing.T) {
	m, files := styleFiles()
	dir := writeBundle(t, m, files, true)
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, bundle.ManifestName))
	sum := sha256.Sum256(data)
	if b.Digest != hex.EncodeToString(sum[:]) || b.Dir != dir {
		t.Errorf("digest %s dir %s", b.Digest, b.Dir)
	}
	f, err := b.RoleFile(bundle.RoleModel)
	if err != nil {
		t.Fatal(err)
	}
	sum = sha256.Sum256(files["model.onnx"])
	if f.Key != "model" || f.Rel != "model.onnx" || f.Path != filepath.Join(dir, "model.onnx") ||
		f.Size != int64(len(files["model.onnx"])) || f.SHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("model file %+v", f)
	}
	got, err := b.ReadFile(f)
	if err != nil || !bytes.Equal(got, files["model.onnx"]) {
		t.Fatalf("ReadFile: %q, %v", got, err)
	}
	if names := b.VoiceNames(); strings.Join(names, ",") != "amber,jade" {
		t.Errorf("voices %v", names)
	}
	v, ok := b.Voice("jade")
	if !ok || v.Size != 32 {
		t.Errorf("voice jade %+v %v", v, ok)
	}
	if _, ok := b.Voice("nope"); ok {
		t.Error("unknown voice found")
	}
}

func TestLoadRejects(t *testing.T) {
	cases := []struct {
		name string
		// edit changes the written bundle; it gets the directory.
		edit func(t *testing.T, dir string)
		is   error
		want string
	}{
		{"digest mismatch", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "model.onnx"), []byte("not really a modeL"))
		}, bundle.ErrFileMismatch, "files.model (model.onnx) has sha256 "},
		{"size mismatch", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, "model.onnx"), []byte("truncated"))
		}, bundle.ErrFileMismatch, "is 9 bytes, the manifest says 18"},
		{"missing file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "voices", "jade.bin"))
		}, bundle.ErrFileMismatch, "voices.jade (voices/jade.bin)"},
		{"directory instead of file", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, "model.onnx"))
			os.Mkdir(filepath.Join(dir, "model.onnx"), 0o755)
		}, bundle.ErrFileMismatch, "not a regular file"},
		{"symlink out of the bundle", func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "amber.bin")
			rewrite(t, outside, bytes.Repeat([]byte{1}, 32))
			os.Remove(filepath.Join(dir, "voices", "amber.bin"))
			if err := os.Symlink(outside, filepath.Join(dir, "voices", "amber.bin")); err != nil {
				t.Fatal(err)
			}
		}, bundle.ErrUnsafePath, "voices.amber (voices/amber.bin) leads outside the bundle"},
		{"symlinked directory out of the bundle", func(t *testing.T, dir string) {
			outside := t.TempDir()
			rewrite(t, filepath.Join(outside, "amber.bin"), bytes.Repeat([]byte{1}, 32))
			rewrite(t, filepath.Join(outside, "jade.bin"), bytes.Repeat([]byte{2}, 32))
			os.RemoveAll(filepath.Join(dir, "voices"))
			if err := os.Symlink(outside, filepath.Join(dir, "voices")); err != nil {
				t.Fatal(err)
			}
		}, bundle.ErrUnsafePath, "leads outside the bundle"},
		{"no manifest", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, bundle.ManifestName))
		}, bundle.ErrNoManifest, "no voice.json"},
		{"manifest is a directory", func(t *testing.T, dir string) {
			os.Remove(filepath.Join(dir, bundle.ManifestName))
			os.Mkdir(filepath.Join(dir, bundle.ManifestName), 0o755)
		}, bundle.ErrInvalidManifest, "not a regular file"},
		{"manifest too large", func(t *testing.T, dir string) {
			rewrite(t, filepath.Join(dir, bundle.ManifestName), bytes.Repeat([]byte(" "), bundle.MaxManifestBytes+1))
		}, bundle.ErrInvalidManifest, "over MaxManifestBytes"},
		{"manifest symlink out", func(t *testing.T, dir string) {
			outside := filepath.Join(t.TempDir(), "voice.json")
			data, _ := os.ReadFile(filepath.Join(dir, bundle.ManifestName))
			rewrite(t, outside, data)
			os.Remove(filepath.Join(dir, bundle.ManifestName))
			os.Symlink(outside, filepath.Join(dir, bundle.ManifestName))
		}, bundle.ErrUnsafePath, "voice.json"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, files := styleFiles()
			dir := writeBundle(t, m, files, true)
			c.edit(t, dir)
			_, err := bundle.Load(dir)
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.is, c.want)
			}
		})
	}
}

// TestLoadDigestMismatchNamesBoth: without sizes in the manifest the digest
// is what catches a changed file, and the error gives both digests.
func TestLoadDigestMismatchNamesBoth(t *testing.T) {
	m, files := styleFiles()
	dir := writeBundle(t, m, files, false)
	want := manifestIn(t, dir).Voices["amber"].SHA256
	changed := bytes.Repeat([]byte{9}, 32)
	rewrite(t, filepath.Join(dir, "voices", "amber.bin"), changed)
	sum := sha256.Sum256(changed)
	_, err := bundle.Load(dir)
	if !errors.Is(err, bundle.ErrFileMismatch) {
		t.Fatalf("err = %v", err)
	}
	for _, s := range []string{"voices.amber", "voices/amber.bin", hex.EncodeToString(sum[:]), want} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

func TestLoadVoiceSizeFromTable(t *testing.T) {
	m, files := styleFiles()
	files["voices/jade.bin"] = bytes.Repeat([]byte{2}, 28) // one float short
	dir := writeBundle(t, m, files, false)
	_, err := bundle.Load(dir)
	if !errors.Is(err, bundle.ErrFileMismatch) || !strings.Contains(err.Error(), "is 28 bytes, want 32 (style rows × dim × 4)") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoadSymlinkInsideIsFine(t *testing.T) {
	m, files := styleFiles()
	dir := writeBundle(t, m, files, true)
	if err := os.Rename(filepath.Join(dir, "model.onnx"), filepath.Join(dir, "real.onnx")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("real.onnx", filepath.Join(dir, "model.onnx")); err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Load(dir); err != nil {
		t.Fatal(err)
	}
}

func TestReadFileNoticesChange(t *testing.T) {
	m, files := styleFiles()
	dir := writeBundle(t, m, files, false)
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := b.File("model")
	rewrite(t, filepath.Join(dir, "model.onnx"), []byte("not really a MODEL"))
	if _, err := b.ReadFile(f); !errors.Is(err, bundle.ErrFileMismatch) || !strings.Contains(err.Error(), "changed since load") {
		t.Fatalf("err = %v", err)
	}
}

func rewrite(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func manifestIn(t *testing.T, dir string) *bundle.Manifest {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, bundle.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	m, err := bundle.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
