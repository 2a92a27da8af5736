package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/mynah-tts/mynah/cmd/internal/config"
)

// TestLoggerAutoFormat: log.format auto writes journal lines (priority
// prefix, no timestamp) to the stream systemd connected to the journal,
// and text lines elsewhere.
func TestLoggerAutoFormat(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "stream"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		t.Fatal(err)
	}
	t.Setenv("JOURNAL_STREAM", fmt.Sprintf("%d:%d", st.Dev, st.Ino))
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
