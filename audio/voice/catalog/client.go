package catalog

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The Piper voices collection at a pinned release (v1.0.0, the release
// wyoming-piper and Piper's own downloader name). A pinned release keeps
// every key's files and digests fixed; a mirror copies this layout.
const (
	DefaultDownloadURL = "https://huggingface.co/rhasspy/piper-voices/resolve/v1.0.0/"
	DefaultCatalogURL  = DefaultDownloadURL + "voices.json"
)

// Defaults of Options.
const (
	DefaultMaxFileBytes  = 2 << 30
	DefaultMaxRedirects  = 5
	DefaultCatalogMaxAge = 24 * time.Hour
	DefaultStallTimeout  = time.Minute
	DefaultAttempts      = 3
	DefaultRetryWait     = time.Second
	DefaultProgressEvery = 500 * time.Millisecond
)

// Options configure a Client. A nil *Options means the defaults.
type Options struct {
	// CatalogURL is the voices.json to read: http(s):// or file:///path.
	// "" is DefaultCatalogURL.
	CatalogURL string
	// DownloadURL is the base the catalog's file paths are relative to:
	// the collection, a mirror, or file:///dir for an offline copy. ""
	// is DefaultDownloadURL.
	DownloadURL string
	// MaxCatalogBytes bounds the catalog; 0 is DefaultMaxCatalogBytes.
	MaxCatalogBytes int64
	// MaxFileBytes bounds one file, whatever the catalog says; 0 is
	// DefaultMaxFileBytes.
	MaxFileBytes int64
	// MaxRedirects bounds the redirects one request follows; 0 is
	// DefaultMaxRedirects, negative follows none.
	MaxRedirects int
	// CatalogMaxAge is how long a cached catalog is used without asking
	// the server again; 0 is DefaultCatalogMaxAge.
	CatalogMaxAge time.Duration
	// StallTimeout fails a request that receives nothing for this long
	// (ErrStalled); 0 is DefaultStallTimeout. A whole download has no
	// time limit of its own: a slow link may take long, the context
	// decides.
	StallTimeout time.Duration
	// Attempts is how many times one file is tried (a dropped connection
	// or a stall resumes where it stopped); 0 is DefaultAttempts.
	Attempts int
	// RetryWait is the pause before another attempt; 0 is
	// DefaultRetryWait.
	RetryWait time.Duration
	// Progress, when set, is called from Install's goroutine as a file
	// starts, at most every ProgressEvery while it downloads, and when it
	// is complete.
	Progress func(Progress)
	// ProgressEvery spaces Progress calls; 0 is DefaultProgressEvery.
	ProgressEvery time.Duration
	// Check validates a downloaded voice before it is moved into place:
	// dir is the staging directory, model the KEY.onnx in it. An error
	// installs nothing. nil checks only sizes and digests.
	Check func(dir, model string) error
	// Logger receives warnings (a stale catalog used offline); nil
	// discards them.
	Logger *slog.Logger
}

func (o *Options) withDefaults() Options {
	var r Options
	if o != nil {
		r = *o
	}
	def := func(v *int64, d int64) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	if r.CatalogURL == "" {
		r.CatalogURL = DefaultCatalogURL
	}
	if r.DownloadURL == "" {
		r.DownloadURL = DefaultDownloadURL
	}
	def(&r.MaxCatalogBytes, DefaultMaxCatalogBytes)
	def(&r.MaxFileBytes, DefaultMaxFileBytes)
	if r.MaxRedirects == 0 {
		r.MaxRedirects = DefaultMaxRedirects
	}
	defDur(&r.CatalogMaxAge, DefaultCatalogMaxAge)
	defDur(&r.StallTimeout, DefaultStallTimeout)
	if r.Attempts <= 0 {
		r.Attempts = DefaultAttempts
	}
	defDur(&r.RetryWait, DefaultRetryWait)
	defDur(&r.ProgressEvery, DefaultProgressEvery)
	if r.Logger == nil {
		r.Logger = slog.New(slog.DiscardHandler)
	}
	return r
}

// Progress reports one file's download.
type Progress struct {
	Voice string // the key
	File  string // the file's name in the voice directory
	Done  int64  // bytes on disk
	Total int64  // the file's size; -1 when unknown (a direct URL)
	// Resumed is the bytes that were already on disk when this attempt
	// began.
	Resumed int64
	// Rate is bytes per second over this attempt; 0 until measured.
	Rate     float64
	Complete bool
}

// Client reads the catalog and installs voices into one voices
// directory. Its state lives in DIR/.mynah (the cached catalog, the
// locks, the downloads in progress), which the engine and mynahd's
// voice watch ignore (no voice lies directly in it).
type Client struct {
	dir  string
	opts Options
	http *http.Client
}

// stateDir is the client's own directory inside the voices directory.
const stateDir = ".mynah"

// New returns a Client for the voices directory dir. The URLs must be
// http://, https:// or file:/// (a local path, no host).
func New(dir string, opts *Options) (*Client, error) {
	o := opts.withDefaults()
	for _, u := range []struct{ field, v string }{{"catalog URL", o.CatalogURL}, {"download URL", o.DownloadURL}} {
		if err := checkURL(u.v); err != nil {
			return nil, fmt.Errorf("%s: %w", u.field, err)
		}
	}
	if dir == "" {
		return nil, errors.New("catalog: no voices directory")
	}
	transport := http.DefaultTransport.(*http.Transport).Clone()
	transport.RegisterProtocol("file", http.NewFileTransport(http.Dir("/")))
	maxRedirects := o.MaxRedirects
	client := &http.Client{
		Transport: transport,
		CheckRedirect: func(req *http.Request, via []*http.Request) error {
			if len(via) > maxRedirects {
				return fmt.Errorf("stopped after %d redirects", len(via)-1)
			}
			if s := req.URL.Scheme; s != "http" && s != "https" {
				return fmt.Errorf("redirect to %s:// refused", s)
			}
			return nil
		},
	}
	return &Client{dir: dir, opts: o, http: client}, nil
}

// Dir is the voices directory.
func (c *Client) Dir() string { return c.dir }

func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil {
		return err
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return fmt.Errorf("%q has no host", s)
		}
	case "file":
		if (u.Host != "" && u.Host != "localhost") || !strings.HasPrefix(u.Path, "/") {
			return fmt.Errorf("%q: a file URL names an absolute local path, file:///dir/voices.json", s)
		}
	default:
		return fmt.Errorf("%q: want http://, https:// or file:///", s)
	}
	return nil
}

// CatalogInfo says where a catalog came from.
type CatalogInfo struct {
	URL       string
	FetchedAt time.Time
	// Cached: read from the cache, not fetched now. Stale: cached and
	// older than CatalogMaxAge, used because fetching failed (FetchErr).
	Cached, Stale bool
	FetchErr      error
}

// cachedCatalog is DIR/.mynah/catalog.json: the catalog as fetched and
// when.
type cachedCatalog struct {
	URL       string          `json:"url"`
	FetchedAt time.Time       `json:"fetched_at"`
	Catalog   json.RawMessage `json:"catalog"`
}

func (c *Client) cachePath() string { return filepath.Join(c.dir, stateDir, "catalog.json") }

// Catalog returns the catalog: the cached copy when it is of the same URL
// and younger than CatalogMaxAge (unless refresh), else fetched and
// cached. When fetching fails and a cached copy of the same URL exists,
// that copy is used (an offline device keeps its last catalog), with a
// warning and Stale set.
func (c *Client) Catalog(ctx context.Context, refresh bool) (*Catalog, CatalogInfo, error) {
	cached, cerr := c.readCache()
	if cerr == nil && !refresh && time.Since(cached.FetchedAt) < c.opts.CatalogMaxAge {
		if cat, err := Parse(cached.Catalog); err == nil {
			return cat, CatalogInfo{URL: cached.URL, FetchedAt: cached.FetchedAt, Cached: true}, nil
		}
	}
	cat, raw, err := c.fetchCatalog(ctx)
	if err != nil {
		if cerr == nil && ctx.Err() == nil {
			if old, perr := Parse(cached.Catalog); perr == nil {
				c.opts.Logger.Warn("catalog not fetched; using the cached copy", "url", c.opts.CatalogURL, "fetched_at", cached.FetchedAt, "err", err)
				return old, CatalogInfo{URL: cached.URL, FetchedAt: cached.FetchedAt, Cached: true, Stale: true, FetchErr: err}, nil
			}
		}
		return nil, CatalogInfo{}, err
	}
	info := CatalogInfo{URL: c.opts.CatalogURL, FetchedAt: time.Now().UTC()}
	if err := c.writeCache(cachedCatalog{URL: info.URL, FetchedAt: info.FetchedAt, Catalog: raw}); err != nil {
		c.opts.Logger.Warn("catalog not cached", "path", c.cachePath(), "err", err)
	}
	return cat, info, nil
}

func (c *Client) readCache() (cachedCatalog, error) {
	var cc cachedCatalog
	f, err := os.Open(c.cachePath())
	if err != nil {
		return cc, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, c.opts.MaxCatalogBytes*2+4096))
	if err != nil {
		return cc, err
	}
	if err := json.Unmarshal(data, &cc); err != nil {
		return cc, err
	}
	if cc.URL != c.opts.CatalogURL {
		return cc, errors.New("cached catalog is of another URL")
	}
	return cc, nil
}

func (c *Client) writeCache(cc cachedCatalog) error {
	data, err := json.Marshal(cc)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(c.cachePath()), 0o755); err != nil {
		return err
	}
	return writeFileAtomic(c.cachePath(), data)
}

// fetchCatalog gets and parses the catalog.
func (c *Client) fetchCatalog(ctx context.Context) (*Catalog, []byte, error) {
	u := c.opts.CatalogURL
	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	timer := time.AfterFunc(c.opts.StallTimeout, func() { stop(fmt.Errorf("%w: nothing received for %v", ErrStalled, c.opts.StallTimeout)) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch catalog: %w", err)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, nil, fmt.Errorf("fetch catalog: %w", causeOf(ctx, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, fmt.Errorf("fetch catalog: %w", &StatusError{URL: u, Status: resp.Status, Code: resp.StatusCode})
	}
	if resp.ContentLength > c.opts.MaxCatalogBytes {
		return nil, nil, fmt.Errorf("fetch catalog %s: %w: %d bytes, limit %d", u, ErrTooLarge, resp.ContentLength, c.opts.MaxCatalogBytes)
	}
	data, err := io.ReadAll(io.LimitReader(&stallReader{r: resp.Body, timer: timer, d: c.opts.StallTimeout}, c.opts.MaxCatalogBytes+1))
	if err != nil {
		return nil, nil, fmt.Errorf("fetch catalog %s: %w", u, causeOf(ctx, err))
	}
	if int64(len(data)) > c.opts.MaxCatalogBytes {
		return nil, nil, fmt.Errorf("fetch catalog %s: %w: more than %d bytes", u, ErrTooLarge, c.opts.MaxCatalogBytes)
	}
	cat, err := Parse(data)
	if err != nil {
		return nil, nil, fmt.Errorf("catalog %s: %w", u, err)
	}
	return cat, data, nil
}

// causeOf prefers the reason a request's context was cancelled (a
// stall) over the transport's "context canceled".
func causeOf(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrStalled) {
		return cause
	}
	return err
}

// stallReader restarts the stall timer on every read that returns data.
type stallReader struct {
	r     io.Reader
	timer *time.Timer
	d     time.Duration
}

func (s *stallReader) Read(p []byte) (int, error) {
	n, err := s.r.Read(p)
	if n > 0 {
		s.timer.Reset(s.d)
	}
	return n, err
}

// writeFileAtomic writes data to path by a synced temp file and a rename.
func writeFileAtomic(path string, data []byte) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
