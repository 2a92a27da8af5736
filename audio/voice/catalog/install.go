package catalog

import (
	"context"
	"crypto/md5"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// An install happens in DIR/.mynah/staging/KEY: each file is downloaded
// to NAME.part (resumed with an HTTP Range request where an earlier
// attempt, or an earlier process, stopped), checked, renamed to NAME;
// once every file is there and Options.Check passes, the directory is
// renamed to DIR/KEY. Only the rename makes the voice visible, so the
// engine's scan and mynahd's voice watch see no voice or a whole one. One
// process at a time installs or removes a key: it holds
// DIR/.mynah/locks/KEY.lock (flock); another waits, then finds the voice
// installed and downloads nothing.

// RecordName is the file an install writes into the voice directory: where
// the voice came from and its files' digests.
const RecordName = "mynah-install.json"

// Record is the content of RecordName.
type Record struct {
	Key         string                `json:"key"`
	Source      string                `json:"source"` // catalog or url
	CatalogURL  string                `json:"catalog_url,omitempty"`
	DownloadURL string                `json:"download_url"`
	InstalledAt time.Time             `json:"installed_at"`
	Files       map[string]FileRecord `json:"files"`
}

// FileRecord is one installed file.
type FileRecord struct {
	URL       string `json:"url"`
	SizeBytes int64  `json:"size_bytes"`
	MD5       string `json:"md5"`
	SHA256    string `json:"sha256"`
}

// Result is what Install did.
type Result struct {
	Key  string
	Path string // DIR/KEY
	// AlreadyInstalled: the voice was there (perhaps put there by a
	// concurrent install this one waited for); nothing was fetched.
	AlreadyInstalled bool
	Record           *Record
}

// fileSpec is one file to fetch.
type fileSpec struct {
	name string // in the voice directory
	url  string
	size int64  // -1: unknown
	md5  string // "": none to compare (a direct URL)
}

// Install installs the catalog voice v (from this client's catalog) into
// DIR/KEY. A voice already installed under the key is left as it is.
func (c *Client) Install(ctx context.Context, v *Voice) (*Result, error) {
	var files []fileSpec
	for _, p := range v.installFiles() {
		f := v.Files[p]
		u, err := c.fileURL(p)
		if err != nil {
			return nil, fmt.Errorf("install %s: %w", v.Key, err)
		}
		if f.SizeBytes > c.opts.MaxFileBytes {
			return nil, fmt.Errorf("install %s: %s: %w: the catalog says %d bytes, limit %d", v.Key, p, ErrTooLarge, f.SizeBytes, c.opts.MaxFileBytes)
		}
		files = append(files, fileSpec{name: path.Base(p), url: u, size: f.SizeBytes, md5: f.MD5})
	}
	rec := &Record{Key: v.Key, Source: "catalog", CatalogURL: c.opts.CatalogURL, DownloadURL: c.opts.DownloadURL}
	return c.install(ctx, v.Key, files, rec)
}

// KeyFromURL is the voice key a direct model URL installs as: its file
// name without .onnx.
func KeyFromURL(modelURL string) (string, error) {
	u, err := url.Parse(modelURL)
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalidVoice, err)
	}
	base := path.Base(u.Path)
	key, ok := strings.CutSuffix(base, ".onnx")
	if !ok || !ValidKey(key) {
		return "", fmt.Errorf("%w: %q does not end in NAME.onnx with a NAME of letters, digits, '.', '_', '-'", ErrInvalidVoice, modelURL)
	}
	return key, nil
}

// InstallURL installs the Piper voice whose model is at modelURL
// (http(s):// or file:///, ending in NAME.onnx) with its NAME.onnx.json
// beside it, as DIR/NAME. No catalog vouches for these files: their
// sha256 is recorded, and Options.Check is all that judges them.
func (c *Client) InstallURL(ctx context.Context, modelURL string) (*Result, error) {
	if err := checkURL(modelURL); err != nil {
		return nil, fmt.Errorf("install %s: %w", modelURL, err)
	}
	key, err := KeyFromURL(modelURL)
	if err != nil {
		return nil, err
	}
	u, _ := url.Parse(modelURL)
	cfg := *u
	cfg.Path += ".json"
	cfg.RawPath = ""
	files := []fileSpec{
		{name: key + ".onnx.json", url: cfg.String(), size: -1},
		{name: key + ".onnx", url: modelURL, size: -1},
	}
	return c.install(ctx, key, files, &Record{Key: key, Source: "url", DownloadURL: modelURL})
}

// fileURL is the download URL of a catalog path (already checked by
// safePath).
func (c *Client) fileURL(p string) (string, error) {
	base, err := url.Parse(c.opts.DownloadURL)
	if err != nil {
		return "", err
	}
	return base.JoinPath(strings.Split(p, "/")...).String(), nil
}

func (c *Client) install(ctx context.Context, key string, files []fileSpec, rec *Record) (res *Result, err error) {
	fail := func(err error) (*Result, error) { return nil, fmt.Errorf("install %s: %w", key, err) }
	if !ValidKey(key) {
		return fail(fmt.Errorf("%w: %q is not a voice directory name", ErrInvalidVoice, key))
	}
	unlock, err := c.lock(ctx, key)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	final := filepath.Join(c.dir, key)
	if _, err := os.Lstat(final); err == nil {
		return &Result{Key: key, Path: final, AlreadyInstalled: true, Record: readRecord(final)}, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fail(err)
	}
	staging := filepath.Join(c.dir, stateDir, "staging", key)
	if err := c.prepareStaging(staging, files); err != nil {
		return fail(diskFull(err))
	}
	// A checksum failure or a full disk leaves nothing behind; anything
	// else (a dropped connection, a stall, a cancel) keeps the .part
	// files for the next install to resume.
	defer func() {
		if errors.Is(err, ErrChecksum) || errors.Is(err, ErrDiskFull) || errors.Is(err, ErrInvalidVoice) {
			os.RemoveAll(staging)
		}
	}()
	if err := c.checkRoom(staging, files); err != nil {
		return fail(err)
	}
	rec.Files = map[string]FileRecord{}
	for _, f := range files {
		fr, err := c.fetchFile(ctx, key, staging, f)
		if err != nil {
			return fail(err)
		}
		rec.Files[f.name] = fr
	}
	if c.opts.Check != nil {
		if err := c.opts.Check(staging, filepath.Join(staging, key+".onnx")); err != nil {
			return fail(fmt.Errorf("%w: %w", ErrInvalidVoice, err))
		}
	}
	rec.InstalledAt = time.Now().UTC()
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return fail(err)
	}
	if err := writeFileAtomic(filepath.Join(staging, RecordName), append(data, '\n')); err != nil {
		return fail(diskFull(err))
	}
	os.Remove(filepath.Join(staging, sourceName))
	if err := syncDir(staging); err != nil {
		return fail(diskFull(err))
	}
	if err := os.Rename(staging, final); err != nil {
		return fail(diskFull(err))
	}
	if err := syncDir(c.dir); err != nil {
		return fail(diskFull(err))
	}
	return &Result{Key: key, Path: final, Record: rec}, nil
}

// sourceName, in a staging directory, names the files it is filling
// (their URLs and digests): .part files fetched from another source are
// not resumed.
const sourceName = ".source"

func (c *Client) prepareStaging(staging string, files []fileSpec) error {
	want, _ := json.Marshal(files2source(files))
	if have, err := os.ReadFile(filepath.Join(staging, sourceName)); err != nil || string(have) != string(want) {
		if err := os.RemoveAll(staging); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(staging, 0o755); err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(staging, sourceName), want)
}

func files2source(files []fileSpec) [][3]string {
	out := make([][3]string, len(files))
	for i, f := range files {
		out[i] = [3]string{f.name, f.url, f.md5}
	}
	return out
}

// checkRoom fails early when the file system holding staging has less
// free room than the files still to fetch.
func (c *Client) checkRoom(staging string, files []fileSpec) error {
	var need int64
	for _, f := range files {
		if f.size < 0 {
			continue
		}
		have := int64(0)
		if st, err := os.Stat(filepath.Join(staging, f.name+".part")); err == nil {
			have = st.Size()
		}
		need += max(f.size-have, 0)
	}
	free, ok := freeBytes(staging)
	if ok && need > free {
		return fmt.Errorf("%w: the voice needs %d more bytes, %s has %d free (free some space there and install again)", ErrDiskFull, need, c.dir, free)
	}
	return nil
}

// fetchFile brings one file into staging, complete and checked, trying
// up to Options.Attempts times.
func (c *Client) fetchFile(ctx context.Context, key, staging string, f fileSpec) (FileRecord, error) {
	dst := filepath.Join(staging, f.name)
	part := dst + ".part"
	if _, err := os.Stat(dst); err == nil {
		// Complete in an earlier attempt; checked again below.
		if err := os.Rename(dst, part); err != nil {
			return FileRecord{}, err
		}
	}
	var err error
	for attempt := 1; ; attempt++ {
		err = c.download(ctx, key, part, f)
		if err == nil || !retryable(ctx, err) || attempt >= c.opts.Attempts {
			break
		}
		c.opts.Logger.Warn("download interrupted; resuming", "url", f.url, "attempt", attempt, "err", err)
		select {
		case <-ctx.Done():
			return FileRecord{}, fmt.Errorf("%s: %w", f.name, ctx.Err())
		case <-time.After(c.opts.RetryWait):
		}
	}
	if err != nil {
		return FileRecord{}, fmt.Errorf("%s: %w", f.name, err)
	}
	rec, err := verify(part, f)
	if err != nil {
		os.Remove(part)
		return FileRecord{}, fmt.Errorf("%s: %w", f.name, err)
	}
	if err := os.Rename(part, dst); err != nil {
		return FileRecord{}, err
	}
	return rec, nil
}

// retryable reports whether another attempt may succeed: not after a
// cancel, an HTTP status (a 5xx aside), a checksum or size failure or a
// full disk.
func retryable(ctx context.Context, err error) bool {
	var se *StatusError
	switch {
	case ctx.Err() != nil:
		return false
	case errors.As(err, &se):
		return se.Code >= 500
	case errors.Is(err, ErrChecksum), errors.Is(err, ErrDiskFull), errors.Is(err, ErrTooLarge):
		return false
	}
	return true
}

// verify checks the downloaded file's size and md5 against f and returns
// its record with its sha256.
func verify(name string, f fileSpec) (FileRecord, error) {
	file, err := os.Open(name)
	if err != nil {
		return FileRecord{}, err
	}
	defer file.Close()
	m, s := md5.New(), sha256.New()
	n, err := io.Copy(io.MultiWriter(m, s), file)
	if err != nil {
		return FileRecord{}, err
	}
	rec := FileRecord{URL: f.url, SizeBytes: n, MD5: hex.EncodeToString(m.Sum(nil)), SHA256: hex.EncodeToString(s.Sum(nil))}
	if f.size >= 0 && n != f.size {
		return FileRecord{}, fmt.Errorf("%w: %d bytes, the catalog says %d; the file was deleted", ErrChecksum, n, f.size)
	}
	if f.md5 != "" && rec.MD5 != f.md5 {
		return FileRecord{}, fmt.Errorf("%w: md5 %s, the catalog says %s; the file was deleted (a damaged mirror, or the catalog is of another release)", ErrChecksum, rec.MD5, f.md5)
	}
	return rec, nil
}

// diskFull marks an ENOSPC (or EDQUOT) as ErrDiskFull.
func diskFull(err error) error {
	if err != nil && !errors.Is(err, ErrDiskFull) && (errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return fmt.Errorf("%w (free some space in the voices directory and install again): %w", ErrDiskFull, err)
	}
	return err
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}

func readRecord(dir string) *Record {
	data, err := os.ReadFile(filepath.Join(dir, RecordName))
	if err != nil {
		return nil
	}
	var r Record
	if json.Unmarshal(data, &r) != nil {
		return nil
	}
	return &r
}

// ReadRecord returns the install record of the voice directory dir, nil
// for a voice mynah did not install.
func ReadRecord(dir string) *Record { return readRecord(dir) }

// Remove removes the installed voice directory DIR/name (and any
// download of it in progress) under the install lock; the directory
// first moves aside in one rename, so the voice disappears at once.
func (c *Client) Remove(ctx context.Context, name string) error {
	fail := func(err error) error { return fmt.Errorf("remove %s: %w", name, err) }
	if !ValidKey(name) {
		return fail(fmt.Errorf("%w: %q is not a voice directory name", ErrInvalidVoice, name))
	}
	unlock, err := c.lock(ctx, name)
	if err != nil {
		return fail(err)
	}
	defer unlock()
	os.RemoveAll(filepath.Join(c.dir, stateDir, "staging", name))
	target := filepath.Join(c.dir, name)
	st, err := os.Lstat(target)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fail(fmt.Errorf("%w in %s (mynah voice list shows the installed ones)", ErrNotInstalled, c.dir))
	case err != nil:
		return fail(err)
	case !st.IsDir():
		return fail(fmt.Errorf("%w: %s is not a voice directory", ErrNotInstalled, target))
	}
	trash := filepath.Join(c.dir, stateDir, "trash")
	if err := os.MkdirAll(trash, 0o755); err != nil {
		return fail(err)
	}
	aside, err := os.MkdirTemp(trash, name+"-")
	if err != nil {
		return fail(err)
	}
	if err := os.Rename(target, filepath.Join(aside, name)); err != nil {
		os.Remove(aside)
		return fail(err)
	}
	return os.RemoveAll(aside)
}
