package systemd

import (
	"bytes"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/systemd/systemdtest"
)

func TestJournalFormat(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(NewLogHandler("journal", slog.LevelDebug, &buf)).With("component", "queue")
	log.Debug("d")
	log.Info("hello world", "id", "a1")
	log.WithGroup("mqtt").Warn("w", "broker", "tcp://b:1883")
	log.Error("multi\nline")
	want := []string{
		`<7>level=DEBUG msg=d component=queue`,
		`<6>level=INFO msg="hello world" component=queue id=a1`,
		`<4>level=WARN msg=w component=queue mqtt.broker=tcp://b:1883`,
		`<3>level=ERROR msg="multi\nline" component=queue`,
	}
	got := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("journal output:\n%s\nwant:\n%s", buf.String(), strings.Join(want, "\n"))
	}
}

// TestJournalFormatConcurrent checks that the priority prefix belongs to
// its own record when many goroutines log at once.
func TestJournalFormatConcurrent(t *testing.T) {
	var buf bytes.Buffer
	root := slog.New(NewLogHandler("journal", slog.LevelDebug, &buf))
	var wg sync.WaitGroup
	for g := range 8 {
		log := root.With("g", g)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 200 {
				log.Warn("w")
				log.Info("i")
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != 8*200*2 {
		t.Fatalf("%d lines, want %d", len(lines), 8*200*2)
	}
	for _, l := range lines {
		if !(strings.HasPrefix(l, "<4>level=WARN ") || strings.HasPrefix(l, "<6>level=INFO ")) {
			t.Fatalf("line with the wrong prefix: %q", l)
		}
	}
}

func TestLogFormats(t *testing.T) {
	var buf bytes.Buffer
	slog.New(NewLogHandler("json", slog.LevelInfo, &buf)).Info("m", "k", 1)
	var rec map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil || rec["msg"] != "m" || rec["time"] == nil {
		t.Errorf("json record %q: %v", buf.String(), err)
	}
	buf.Reset()
	slog.New(NewLogHandler("text", slog.LevelWarn, &buf)).Info("hidden")
	slog.New(NewLogHandler("text", slog.LevelWarn, &buf)).Warn("shown")
	if s := buf.String(); !strings.HasPrefix(s, "time=") || strings.Contains(s, "hidden") || !strings.Contains(s, "msg=shown") {
		t.Errorf("text output %q", s)
	}
}

func TestConnectedToJournal(t *testing.T) {
	f, stream := systemdtest.JournalStream(t)
	_, other := systemdtest.JournalStream(t)
	t.Setenv("JOURNAL_STREAM", "")
	if ConnectedToJournal(f) {
		t.Error("connected without JOURNAL_STREAM")
	}
	t.Setenv("JOURNAL_STREAM", other)
	if ConnectedToJournal(f) {
		t.Error("connected although JOURNAL_STREAM names another file (inherited variable)")
	}
	t.Setenv("JOURNAL_STREAM", stream)
	if !ConnectedToJournal(f) {
		t.Error("not connected although JOURNAL_STREAM names f")
	}
}
