package main

import (
	"os"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/systemd/systemdtest"
)

// TestLoggerAutoFormat: log.format auto writes journal lines (priority
// prefix, no timestamp) to the stream systemd connected to the journal,
// and text lines elsewhere.
func TestLoggerAutoFormat(t *testing.T) {
	f, stream := systemdtest.JournalStream(t)
	t.Setenv("JOURNAL_STREAM", stream)
	newLogger(config.Log{Level: "info", Format: "auto"}, f).Warn("to journal")
	t.Setenv("JOURNAL_STREAM", "")
	newLogger(config.Log{Level: "info", Format: "auto"}, f).Warn("to terminal")
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[0], "<4>level=WARN") || !strings.HasPrefix(lines[1], "time=") {
		t.Errorf("auto format wrote %q", data)
	}
}
