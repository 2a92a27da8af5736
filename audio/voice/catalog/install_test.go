package catalog_test

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio/voice/catalog"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
)

// newClient returns a client on a fresh voices directory for the
// server's collection, with quick retries and a check that the staged
// files are there (the CLI tests run the real voice check).
func newClient(t *testing.T, s *catalogtest.Server, o *catalog.Options) (*catalog.Client, string) {
	t.Helper()
	dir := t.TempDir()
	var opts catalog.Options
	if o != nil {
		opts = *o
	}
	if opts.CatalogURL == "" {
		opts.CatalogURL, opts.DownloadURL = s.CatalogURL, s.BaseURL
	}
	if opts.RetryWait == 0 {
		opts.RetryWait = time.Millisecond
	}
	if opts.Check == nil {
		opts.Check = func(dir, model string) error {
			_, err := os.Stat(model + ".json")
			return err
		}
	}
	c, err := catalog.New(dir, &opts)
	if err != nil {
		t.Fatal(err)
	}
	return c, dir
}

func resolve(t *testing.T, c *catalog.Client, req string) *catalog.Voice {
	t.Helper()
	cat, _, err := c.Catalog(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	r, err := cat.Resolve(req, "")
	if err != nil {
		t.Fatal(err)
	}
	return r.Voice
}

// checkInstalled checks that dir/key is a whole voice and that nothing
// of the install is left in the state directory.
func checkInstalled(t *testing.T, dir, key string) {
	t.Helper()
	model, config := catalogtest.DemoFiles(t)
	for name, want := range map[string][]byte{key + ".onnx": model, key + ".onnx.json": config} {
		got, err := os.ReadFile(filepath.Join(dir, key, name))
		if err != nil || string(got) != string(want) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	rec := catalog.ReadRecord(filepath.Join(dir, key))
	if rec == nil || rec.Key != key || len(rec.Files[key+".onnx"].SHA256) != 64 {
		t.Errorf("record %+v", rec)
	}
	checkNoLeftovers(t, dir, key)
}

func checkNoLeftovers(t *testing.T, dir, key string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, ".mynah", "staging", key)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("staging directory left: %v", err)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(p, ".part") {
			t.Errorf("%s left", p)
		}
		return nil
	})
}

func TestCatalogInstallByKey(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	var progress []catalog.Progress
	c, dir := newClient(t, s, &catalog.Options{Progress: func(p catalog.Progress) { progress = append(progress, p) }})
	v := resolve(t, c, "en_US-lessac-medium")
	res, err := c.Install(context.Background(), v)
	if err != nil {
		t.Fatal(err)
	}
	if res.AlreadyInstalled || res.Path != filepath.Join(dir, v.Key) {
		t.Errorf("result %+v", res)
	}
	checkInstalled(t, dir, v.Key)
	if _, err := os.Stat(filepath.Join(dir, v.Key, "MODEL_CARD")); err != nil {
		t.Error(err)
	}
	if len(progress) == 0 || !progress[len(progress)-1].Complete {
		t.Errorf("progress %+v", progress)
	}
	// Again: nothing fetched.
	before := s.Gets(catalogtest.ModelURLPath(v.Key))
	res, err = c.Install(context.Background(), v)
	if err != nil || !res.AlreadyInstalled || s.Gets(catalogtest.ModelURLPath(v.Key)) != before {
		t.Errorf("second install: %+v %v", res, err)
	}
}

func TestCatalogCached(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	c, dir := newClient(t, s, nil)
	if _, info, err := c.Catalog(context.Background(), false); err != nil || info.Cached {
		t.Fatalf("%+v %v", info, err)
	}
	_, info, err := c.Catalog(context.Background(), false)
	if err != nil || !info.Cached || s.Gets("/voices.json") != 1 || info.FetchedAt.IsZero() {
		t.Fatalf("second read: %+v %v, %d fetches", info, err, s.Gets("/voices.json"))
	}
	if _, err := os.Stat(filepath.Join(dir, ".mynah", "catalog.json")); err != nil {
		t.Error(err)
	}
	// Offline: a refresh that fails falls back to the cached copy.
	s.Close()
	cat, info, err := c.Catalog(context.Background(), true)
	if err != nil || !info.Stale || info.FetchErr == nil || cat.Len() != len(catalogtest.Standard) {
		t.Errorf("offline refresh: %+v %v", info, err)
	}
}

func TestCatalogNotJSON(t *testing.T) {
	s := catalogtest.New(t)
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		io.WriteString(w, "<html><body>Sign in to continue</body></html>")
		return true
	}
	c, _ := newClient(t, s, nil)
	if _, _, err := c.Catalog(context.Background(), false); !errors.Is(err, catalog.ErrBadCatalog) {
		t.Errorf("err = %v, want ErrBadCatalog", err)
	}
}

func TestCatalogTooLarge(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	c, _ := newClient(t, s, &catalog.Options{CatalogURL: s.CatalogURL, DownloadURL: s.BaseURL, MaxCatalogBytes: 100})
	if _, _, err := c.Catalog(context.Background(), false); !errors.Is(err, catalog.ErrTooLarge) {
		t.Errorf("err = %v, want ErrTooLarge", err)
	}
}

func TestCatalogInstallResumesAfterDrop(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	ranges := s.DropFirst(t, key)
	c, dir := newClient(t, s, nil)
	if _, err := c.Install(context.Background(), resolve(t, c, key)); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, key)
	if r := ranges(); len(r) != 2 || r[0] != "" || r[1] != "bytes="+strconv.Itoa(len(model)/2)+"-" {
		t.Errorf("requests' ranges %q", r)
	}
}

// An install that gives up leaves its .part file; the next one resumes
// from it.
func TestCatalogInstallResumesNextTime(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	var drop = true
	var rangeSeen string
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != catalogtest.ModelURLPath(key) {
			return false
		}
		if !drop {
			rangeSeen = r.Header.Get("Range")
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(model)))
		w.Write(model[:1000])
		w.(http.Flusher).Flush()
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close()
		}
		return true
	}
	c, dir := newClient(t, s, &catalog.Options{Attempts: 1})
	v := resolve(t, c, key)
	if _, err := c.Install(context.Background(), v); err == nil || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want an unexpected EOF", err)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Fatal("half a voice installed")
	}
	part := filepath.Join(dir, ".mynah", "staging", key, key+".onnx.part")
	if st, err := os.Stat(part); err != nil || st.Size() != 1000 {
		t.Fatalf("part: %v", err)
	}
	drop = false
	if _, err := c.Install(context.Background(), v); err != nil {
		t.Fatal(err)
	}
	if rangeSeen != "bytes=1000-" {
		t.Errorf("range %q", rangeSeen)
	}
	checkInstalled(t, dir, key)
}

func TestCatalogInstallWrongMD5(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != catalogtest.ModelURLPath(key) {
			return false
		}
		bad := append([]byte(nil), model...)
		bad[len(bad)/3] ^= 0x40 // same size, one byte flipped
		w.Write(bad)
		return true
	}
	c, dir := newClient(t, s, nil)
	_, err := c.Install(context.Background(), resolve(t, c, key))
	if !errors.Is(err, catalog.ErrChecksum) {
		t.Fatalf("err = %v, want ErrChecksum", err)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("voice installed despite the checksum")
	}
	checkNoLeftovers(t, dir, key)
}

func TestCatalogInstall404(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	if err := os.Remove(filepath.Join(s.Root, filepath.FromSlash(catalogtest.FilePath(key, key+".onnx")))); err != nil {
		t.Fatal(err)
	}
	c, dir := newClient(t, s, nil)
	_, err := c.Install(context.Background(), resolve(t, c, key))
	var se *catalog.StatusError
	if !errors.Is(err, catalog.ErrHTTPStatus) || !errors.As(err, &se) || se.Code != 404 {
		t.Fatalf("err = %v, want a 404", err)
	}
	if s.Gets(catalogtest.ModelURLPath(key)) != 1 {
		t.Errorf("a 404 was retried: %d requests", s.Gets(catalogtest.ModelURLPath(key)))
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("voice installed")
	}
}

func TestCatalogInstallStalls(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	model, _ := catalogtest.DemoFiles(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != catalogtest.ModelURLPath(key) {
			return false
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(model)))
		w.Write(model[:4096])
		w.(http.Flusher).Flush()
		select { // then nothing more
		case <-release:
		case <-r.Context().Done():
		}
		return true
	}
	var last catalog.Progress
	c, _ := newClient(t, s, &catalog.Options{Attempts: 2, StallTimeout: 200 * time.Millisecond, ProgressEvery: time.Nanosecond,
		Progress: func(p catalog.Progress) { last = p }})
	_, err := c.Install(context.Background(), resolve(t, c, key))
	if !errors.Is(err, catalog.ErrStalled) {
		t.Fatalf("err = %v, want ErrStalled", err)
	}
	if last.File != key+".onnx" || last.Done != 4096 || last.Total != int64(len(model)) {
		t.Errorf("last progress %+v", last)
	}
	if s.Gets(catalogtest.ModelURLPath(key)) != 2 {
		t.Errorf("%d attempts, want 2", s.Gets(catalogtest.ModelURLPath(key)))
	}
}

func TestCatalogInstallCancelled(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	ctx, cancel := context.WithCancel(context.Background())
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == catalogtest.ModelURLPath(key) {
			cancel()
			<-r.Context().Done()
			return true
		}
		return false
	}
	c, _ := newClient(t, s, nil)
	if _, err := c.Install(ctx, resolve(t, c, key)); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestCatalogInstallDiskFull(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	restore := catalog.SetPartWriterHook(func(w io.Writer) io.Writer { return &fullDisk{w: w, room: 3000} })
	defer restore()
	c, dir := newClient(t, s, nil)
	_, err := c.Install(context.Background(), resolve(t, c, key))
	if !errors.Is(err, catalog.ErrDiskFull) || !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("err = %v, want ErrDiskFull", err)
	}
	if n := s.Gets("/"+catalogtest.FilePath(key, key+".onnx.json")) + s.Gets(catalogtest.ModelURLPath(key)); n != 1 {
		t.Errorf("disk full retried: %d requests", n)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("voice installed")
	}
	checkNoLeftovers(t, dir, key)
}

// fullDisk takes room bytes, then fails as a full file system does.
type fullDisk struct {
	w    io.Writer
	room int
}

func (f *fullDisk) Write(b []byte) (int, error) {
	if len(b) > f.room {
		n, _ := f.w.Write(b[:f.room])
		f.room = 0
		return n, &fs.PathError{Op: "write", Path: "part", Err: syscall.ENOSPC}
	}
	f.room -= len(b)
	return f.w.Write(b)
}

func TestCatalogInstallConcurrent(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	gate := make(chan struct{})
	s.Intercept = func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path == catalogtest.ModelURLPath(key) {
			<-gate // hold the first download until both installs run
		}
		return false
	}
	c, dir := newClient(t, s, nil)
	v := resolve(t, c, key)
	// A second client on the same directory: as a second process would.
	c2, err := catalog.New(dir, &catalog.Options{CatalogURL: s.CatalogURL, DownloadURL: s.BaseURL})
	if err != nil {
		t.Fatal(err)
	}
	results := make([]*catalog.Result, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i, cl := range []*catalog.Client{c, c2} {
		wg.Go(func() { results[i], errs[i] = cl.Install(context.Background(), v) })
	}
	time.Sleep(50 * time.Millisecond)
	close(gate)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if results[0].AlreadyInstalled == results[1].AlreadyInstalled {
		t.Errorf("already installed: %v %v", results[0].AlreadyInstalled, results[1].AlreadyInstalled)
	}
	if n := s.Gets(catalogtest.ModelURLPath(key)); n != 1 {
		t.Errorf("%d downloads, want 1", n)
	}
	checkInstalled(t, dir, key)
}

func TestCatalogInstallFileMirror(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	root := s.Root
	s.Close() // offline: only the directory is left
	c, dir := newClient(t, s, &catalog.Options{CatalogURL: "file://" + root + "/voices.json", DownloadURL: "file://" + root})
	key := "de_DE-thorsten-medium"
	if _, err := c.Install(context.Background(), resolve(t, c, "de-thorsten-medium")); err != nil {
		t.Fatal(err)
	}
	checkInstalled(t, dir, key)
}

func TestCatalogInstallURL(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_GB-alan-medium"
	c, dir := newClient(t, s, nil)
	res, err := c.InstallURL(context.Background(), s.URL+catalogtest.ModelURLPath(key))
	if err != nil {
		t.Fatal(err)
	}
	if res.Record.Source != "url" {
		t.Errorf("record %+v", res.Record)
	}
	checkInstalled(t, dir, key)
	if _, err := c.InstallURL(context.Background(), s.URL+"/voice.bin"); !errors.Is(err, catalog.ErrInvalidVoice) {
		t.Errorf("non-.onnx URL: %v", err)
	}
}

func TestCatalogInstallCheckFails(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	c, dir := newClient(t, s, &catalog.Options{CatalogURL: s.CatalogURL, DownloadURL: s.BaseURL,
		Check: func(string, string) error { return errors.New("not a Piper voice") }})
	if _, err := c.Install(context.Background(), resolve(t, c, key)); !errors.Is(err, catalog.ErrInvalidVoice) {
		t.Fatalf("err = %v, want ErrInvalidVoice", err)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("voice installed")
	}
	checkNoLeftovers(t, dir, key)
}

func TestCatalogRemove(t *testing.T) {
	s := catalogtest.New(t, catalogtest.Standard...)
	key := "en_US-lessac-medium"
	c, dir := newClient(t, s, nil)
	if _, err := c.Install(context.Background(), resolve(t, c, key)); err != nil {
		t.Fatal(err)
	}
	if err := c.Remove(context.Background(), key); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, key)); !errors.Is(err, fs.ErrNotExist) {
		t.Error("voice still there")
	}
	for _, name := range []string{key, "../etc", ".mynah"} {
		if err := c.Remove(context.Background(), name); !errors.Is(err, catalog.ErrNotInstalled) && !errors.Is(err, catalog.ErrInvalidVoice) {
			t.Errorf("Remove(%q) = %v", name, err)
		}
	}
}

func TestCatalogNewRejectsURLs(t *testing.T) {
	for _, u := range []string{"ftp://host/voices.json", "file://host/x", "file:relative", "http:///x"} {
		if _, err := catalog.New(t.TempDir(), &catalog.Options{CatalogURL: u}); err == nil {
			t.Errorf("%q accepted", u)
		}
	}
}
