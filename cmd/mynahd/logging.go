package main

import (
	"log/slog"
	"os"

	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/systemd"
)

// newLogger builds mynahd's root logger from the log section (validated
// first). Records go to f, standard error in practice; with format auto, f
// also decides between journal and text.
func newLogger(c config.Log, f *os.File) *slog.Logger {
	format := c.Format
	if format == "auto" || format == "" {
		format = "text"
		if systemd.ConnectedToJournal(f) {
			format = "journal"
		}
	}
	return slog.New(systemd.NewLogHandler(format, parseLevel(c.Level), f))
}

func parseLevel(s string) slog.Level {
	switch s {
	case "debug":
		return slog.LevelDebug
	case "warn":
		return slog.LevelWarn
	case "error":
		return slog.LevelError
	}
	return slog.LevelInfo
}
