package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// partWriterHook, when set (by tests), wraps the writer of every .part
// file: a stand-in for a full disk.
var partWriterHook func(io.Writer) io.Writer

// download makes one attempt at fetching f into part, resuming from the
// bytes part already holds. It returns nil when part holds the whole file
// as the server has it (verify then judges it).
func (c *Client) download(ctx context.Context, key, part string, f fileSpec) (err error) {
	out, err := os.OpenFile(part, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return diskFull(err)
	}
	defer func() {
		if cerr := out.Close(); err == nil {
			err = diskFull(cerr)
		}
	}()
	st, err := out.Stat()
	if err != nil {
		return err
	}
	have := st.Size()
	if f.size >= 0 && have > f.size {
		if err := out.Truncate(0); err != nil {
			return err
		}
		have = 0
	}
	if f.size >= 0 && have == f.size {
		c.progress(Progress{Voice: key, File: filepath.Base(f.name), Done: have, Total: f.size, Resumed: have, Complete: true})
		return nil
	}

	ctx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	stall := c.opts.StallTimeout
	timer := time.AfterFunc(stall, func() { stop(fmt.Errorf("%w: nothing received from %s for %v", ErrStalled, f.url, stall)) })
	defer timer.Stop()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.url, nil)
	if err != nil {
		return err
	}
	if have > 0 {
		req.Header.Set("Range", "bytes="+strconv.FormatInt(have, 10)+"-")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return causeOf(ctx, err)
	}
	defer resp.Body.Close()
	total := f.size
	switch resp.StatusCode {
	case http.StatusPartialContent:
		start, size, ok := parseContentRange(resp.Header.Get("Content-Range"))
		if !ok || start != have {
			// Not the range asked for: start over.
			if err := out.Truncate(0); err != nil {
				return err
			}
			return fmt.Errorf("server answered a resume with range %q; starting over", resp.Header.Get("Content-Range"))
		}
		if total < 0 {
			total = size
		}
	case http.StatusOK:
		if err := out.Truncate(0); err != nil {
			return err
		}
		have = 0
		if total < 0 {
			total = resp.ContentLength
		}
	case http.StatusRequestedRangeNotSatisfiable:
		if _, size, _ := parseContentRange(resp.Header.Get("Content-Range")); f.size < 0 && size == have {
			return nil // a direct URL fetched whole before
		}
		if err := out.Truncate(0); err != nil {
			return err
		}
		return errors.New("server refused the resume; starting over")
	default:
		return &StatusError{URL: f.url, Status: resp.Status, Code: resp.StatusCode}
	}
	if total > c.opts.MaxFileBytes {
		return fmt.Errorf("%w: %s is %d bytes, limit %d", ErrTooLarge, f.url, total, c.opts.MaxFileBytes)
	}
	limit := c.opts.MaxFileBytes
	if f.size >= 0 {
		limit = f.size
	}
	if _, err := out.Seek(have, io.SeekStart); err != nil {
		return err
	}
	var w io.Writer = out
	if partWriterHook != nil {
		w = partWriterHook(out)
	}
	p := &progressWriter{c: c, p: Progress{Voice: key, File: filepath.Base(f.name), Done: have, Total: total, Resumed: have}, start: time.Now()}
	c.progress(p.p)
	body := io.LimitReader(&stallReader{r: resp.Body, timer: timer, d: stall}, limit-have+1)
	n, err := io.Copy(io.MultiWriter(w, p), body)
	if err != nil {
		return diskFull(causeOf(ctx, err))
	}
	if have+n > limit {
		if f.size >= 0 {
			return fmt.Errorf("%w: %s sends more than the catalog's %d bytes", ErrChecksum, f.url, f.size)
		}
		return fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, f.url, limit)
	}
	if total >= 0 && have+n < total {
		return fmt.Errorf("%s: connection closed after %d of %d bytes: %w", f.url, have+n, total, io.ErrUnexpectedEOF)
	}
	if err := out.Sync(); err != nil {
		return diskFull(err)
	}
	p.p.Complete = true
	p.p.Total = have + n
	c.progress(p.p)
	return nil
}

func (c *Client) progress(p Progress) {
	if c.opts.Progress != nil {
		c.opts.Progress(p)
	}
}

// progressWriter counts the bytes copied and reports them at most every
// Options.ProgressEvery.
type progressWriter struct {
	c     *Client
	p     Progress
	start time.Time
	last  time.Time
}

func (w *progressWriter) Write(b []byte) (int, error) {
	w.p.Done += int64(len(b))
	now := time.Now()
	if el := now.Sub(w.start).Seconds(); el > 0 {
		w.p.Rate = float64(w.p.Done-w.p.Resumed) / el
	}
	if now.Sub(w.last) >= w.c.opts.ProgressEvery {
		w.last = now
		w.c.progress(w.p)
	}
	return len(b), nil
}

// parseContentRange reads "bytes START-END/SIZE" (SIZE may be "*": -1)
// or "bytes */SIZE" (START -1).
func parseContentRange(s string) (start, size int64, ok bool) {
	rest, found := strings.CutPrefix(s, "bytes ")
	if !found {
		return 0, 0, false
	}
	rng, sz, found := strings.Cut(rest, "/")
	if !found {
		return 0, 0, false
	}
	size = -1
	if sz != "*" {
		n, err := strconv.ParseInt(sz, 10, 64)
		if err != nil || n < 0 {
			return 0, 0, false
		}
		size = n
	}
	if rng == "*" {
		return -1, size, true
	}
	a, _, found := strings.Cut(rng, "-")
	n, err := strconv.ParseInt(a, 10, 64)
	if !found || err != nil || n < 0 {
		return 0, 0, false
	}
	return n, size, true
}
