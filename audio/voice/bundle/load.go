package bundle

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Bundle is a loaded bundle whose files have been verified.
type Bundle struct {
	// Dir is the bundle directory, absolute.
	Dir      string
	Manifest *Manifest
	// Digest is the sha256 (hex) of voice.json. The manifest holds every
	// file's digest, so this one changes whenever any file does: a cache
	// that keys on it never serves audio of a replaced model.
	Digest string

	files  map[string]File // by files key
	voices map[string]File // by voices key
}

// File is a verified file of a bundle.
type File struct {
	Key    string // key in "files" or "voices"
	Rel    string // path relative to the bundle directory, slash-separated
	Path   string // absolute path
	Size   int64
	SHA256 string
}

// Load reads dir/voice.json, parses it, and verifies every file of
// "files" and "voices": a regular file of at most MaxFileBytes, of the
// manifest's size when it gives one (a voice file must be rows × dim × 4
// bytes), with the manifest's sha256. Files are opened through an os.Root
// on dir, so a symlink that leads outside the directory is refused
// (ErrUnsafePath). A directory without voice.json gives ErrNoManifest.
// The files of "variants" are verified by WithPrecision, the chosen
// variant's only: a damaged variant makes that variant unavailable, not
// the voice.
func Load(dir string) (*Bundle, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	root, err := os.OpenRoot(abs)
	if err != nil {
		return nil, fmt.Errorf("load bundle: %w", err)
	}
	defer root.Close()
	data, err := readManifest(root)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", abs, err)
	}
	m, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("load bundle %s: %w", abs, err)
	}
	sum := sha256.Sum256(data)
	b := &Bundle{
		Dir:      abs,
		Manifest: m,
		Digest:   hex.EncodeToString(sum[:]),
		files:    make(map[string]File, len(m.Files)),
		voices:   make(map[string]File, len(m.Voices)),
	}
	for _, key := range sortedKeys(m.Files) {
		f, err := verify(root, abs, "files."+key, key, m.Files[key], 0)
		if err != nil {
			return nil, fmt.Errorf("load bundle %s: %w", abs, err)
		}
		b.files[key] = f
	}
	for _, key := range sortedKeys(m.Voices) {
		f, err := verify(root, abs, "voices."+key, key, m.Voices[key], m.Style.VoiceBytes())
		if err != nil {
			return nil, fmt.Errorf("load bundle %s: %w", abs, err)
		}
		b.voices[key] = f
	}
	return b, nil
}

func readManifest(root *os.Root) ([]byte, error) {
	f, err := root.Open(ManifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: %w", ErrNoManifest, err)
	}
	if err != nil {
		if escapes(root.Name(), ManifestName) {
			return nil, fmt.Errorf("%s: %w: %w", ManifestName, ErrUnsafePath, err)
		}
		return nil, fmt.Errorf("open %s: %w", ManifestName, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s is not a regular file", ErrInvalidManifest, ManifestName)
	}
	if st.Size() > MaxManifestBytes {
		return nil, fmt.Errorf("%w: %s is %d bytes, over MaxManifestBytes (%d)", ErrInvalidManifest, ManifestName, st.Size(), MaxManifestBytes)
	}
	// The limit holds even if the file grows between Stat and Read.
	data, err := io.ReadAll(io.LimitReader(f, MaxManifestBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	return data, nil
}

// escapes reports whether rel, with its symlinks followed, lies outside
// dir. os.Root refuses such a path without an exported error to test for,
// so the reason is established here for the message.
func escapes(dir, rel string) bool {
	realDir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return false
	}
	target, err := filepath.EvalSymlinks(filepath.Join(dir, rel))
	if err != nil {
		return false
	}
	r, err := filepath.Rel(realDir, target)
	return err != nil || !filepath.IsLocal(r)
}

// open opens rel inside root, refusing anything but a regular file of at
// most MaxFileBytes (and of want bytes when want > 0).
func open(root *os.Root, field string, ref FileRef, want int64) (*os.File, int64, error) {
	f, err := root.Open(filepath.FromSlash(ref.Path))
	if err != nil {
		if escapes(root.Name(), filepath.FromSlash(ref.Path)) {
			return nil, 0, fmt.Errorf("%w: %s (%s) leads outside the bundle: %w", ErrUnsafePath, field, ref.Path, err)
		}
		return nil, 0, fmt.Errorf("%w: %s (%s): %w", ErrFileMismatch, field, ref.Path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("%s (%s): %w", field, ref.Path, err)
	}
	size := st.Size()
	switch {
	case !st.Mode().IsRegular():
		err = fmt.Errorf("%w: %s (%s) is not a regular file", ErrFileMismatch, field, ref.Path)
	case size > MaxFileBytes:
		err = fmt.Errorf("%w: %s (%s) is %d bytes, over MaxFileBytes (%d)", ErrFileMismatch, field, ref.Path, size, int64(MaxFileBytes))
	case ref.Size > 0 && size != ref.Size:
		err = fmt.Errorf("%w: %s (%s) is %d bytes, the manifest says %d (truncated or replaced?)", ErrFileMismatch, field, ref.Path, size, ref.Size)
	case want > 0 && size != want:
		err = fmt.Errorf("%w: %s (%s) is %d bytes, want %d (style rows × dim × 4)", ErrFileMismatch, field, ref.Path, size, want)
	}
	if err != nil {
		f.Close()
		return nil, 0, err
	}
	return f, size, nil
}

// verify streams a file through sha256 and compares it with the manifest.
func verify(root *os.Root, dir, field, key string, ref FileRef, want int64) (File, error) {
	f, size, err := open(root, field, ref, want)
	if err != nil {
		return File{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, io.LimitReader(f, size+1))
	if err != nil {
		return File{}, fmt.Errorf("%s (%s): read: %w", field, ref.Path, err)
	}
	if n != size {
		return File{}, fmt.Errorf("%w: %s (%s) changed size while being read (%d, then %d bytes)", ErrFileMismatch, field, ref.Path, size, n)
	}
	got := hex.EncodeToString(h.Sum(nil))
	if got != ref.SHA256 {
		return File{}, fmt.Errorf("%w: %s (%s) has sha256 %s, the manifest says %s", ErrFileMismatch, field, ref.Path, got, ref.SHA256)
	}
	return File{Key: key, Rel: ref.Path, Path: filepath.Join(dir, filepath.FromSlash(ref.Path)), Size: size, SHA256: got}, nil
}

// File returns the verified file of a "files" key.
func (b *Bundle) File(key string) (File, bool) {
	f, ok := b.files[key]
	return f, ok
}

// RoleFile returns the verified file of a role.
func (b *Bundle) RoleFile(role string) (File, error) {
	t := b.Manifest.Role(role)
	if t == nil {
		return File{}, fmt.Errorf("bundle %s: %w: no role %q", b.Manifest.Name, ErrInvalidManifest, role)
	}
	return b.files[t.File], nil
}

// Voice returns the verified file of a "voices" key.
func (b *Bundle) Voice(name string) (File, bool) {
	f, ok := b.voices[name]
	return f, ok
}

// VoiceNames returns the keys of "voices", sorted.
func (b *Bundle) VoiceNames() []string { return sortedKeys(b.voices) }

// ReadFile reads a verified file again, through the bundle's root, and
// checks the bytes it returns against the digest: a caller hands exactly
// the verified bytes to ONNX Runtime even if the file was replaced after
// Load.
func (b *Bundle) ReadFile(f File) ([]byte, error) {
	root, err := os.OpenRoot(b.Dir)
	if err != nil {
		return nil, fmt.Errorf("read bundle file: %w", err)
	}
	defer root.Close()
	fh, size, err := open(root, f.Key, FileRef{Path: f.Rel, SHA256: f.SHA256, Size: f.Size}, 0)
	if err != nil {
		return nil, fmt.Errorf("read bundle file: %w", err)
	}
	defer fh.Close()
	data := make([]byte, size)
	if _, err := io.ReadFull(fh, data); err != nil {
		return nil, fmt.Errorf("read bundle file %s: %w", f.Rel, err)
	}
	sum := sha256.Sum256(data)
	if got := hex.EncodeToString(sum[:]); got != f.SHA256 {
		return nil, fmt.Errorf("read bundle file: %w: %s has sha256 %s, the manifest says %s (changed since load)", ErrFileMismatch, f.Rel, got, f.SHA256)
	}
	return data, nil
}

// CheckModel is Manifest.CheckModel for the bundle's manifest.
func (b *Bundle) CheckModel(role string, model ModelIO) error {
	return b.Manifest.CheckModel(role, model)
}
