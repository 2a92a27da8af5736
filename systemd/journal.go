package systemd

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"syscall"
)

// NewLogHandler returns the handler for a concrete format: text, json or
// journal (no timestamp, which the journal adds, and each line prefixed
// with its syslog priority). An unknown format falls back to text.
func NewLogHandler(format string, level slog.Level, w io.Writer) slog.Handler {
	opts := &slog.HandlerOptions{Level: level}
	switch format {
	case "json":
		return slog.NewJSONHandler(w, opts)
	case "journal":
		// The journal stamps every line itself; a second timestamp only
		// makes `journalctl` lines longer.
		opts.ReplaceAttr = func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}
		out := &priorityWriter{w: w}
		return &journalHandler{inner: slog.NewTextHandler(out, opts), out: out}
	default:
		return slog.NewTextHandler(w, opts)
	}
}

// ConnectedToJournal reports whether f is the stream systemd connected to
// the journal. $JOURNAL_STREAM alone is not enough: it is inherited by
// anything started from a service, whose output may go elsewhere, so the
// device and inode it names are compared with f's (sd_journal_stream_fd(3)).
func ConnectedToJournal(f *os.File) bool {
	want := os.Getenv("JOURNAL_STREAM")
	if want == "" || f == nil {
		return false
	}
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return false
	}
	return want == fmt.Sprintf("%d:%d", st.Dev, st.Ino)
}

// journalPriority is the syslog priority journald reads from a "<N>" line
// prefix (SyslogLevelPrefix=yes, the default), so `journalctl -p warning`
// finds the daemon's warnings.
func journalPriority(l slog.Level) string {
	switch {
	case l >= slog.LevelError:
		return "<3>"
	case l >= slog.LevelWarn:
		return "<4>"
	case l >= slog.LevelInfo:
		return "<6>"
	}
	return "<7>"
}

// journalHandler is a text handler whose every line starts with the
// record's journal priority. slog's TextHandler writes one record with one
// Write, so the prefix is set under a lock shared by all derived handlers
// and added by priorityWriter in that same Write.
type journalHandler struct {
	inner slog.Handler
	out   *priorityWriter
}

func (h *journalHandler) Enabled(ctx context.Context, l slog.Level) bool {
	return h.inner.Enabled(ctx, l)
}

func (h *journalHandler) Handle(ctx context.Context, r slog.Record) error {
	h.out.mu.Lock()
	defer h.out.mu.Unlock()
	h.out.prefix = journalPriority(r.Level)
	return h.inner.Handle(ctx, r)
}

func (h *journalHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &journalHandler{inner: h.inner.WithAttrs(attrs), out: h.out}
}

func (h *journalHandler) WithGroup(name string) slog.Handler {
	return &journalHandler{inner: h.inner.WithGroup(name), out: h.out}
}

type priorityWriter struct {
	mu     sync.Mutex // held by journalHandler.Handle around each record
	w      io.Writer
	prefix string
	buf    []byte
}

func (p *priorityWriter) Write(b []byte) (int, error) {
	p.buf = append(append(p.buf[:0], p.prefix...), b...)
	if _, err := p.w.Write(p.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}
