package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestWatchIgnoresInstallerFiles: what mynah voice install writes in
// voices.dir/.mynah (the catalog, locks, downloads in progress) never
// rereads the voices; the voice it renames into voices.dir does.
func TestWatchIgnoresInstallerFiles(t *testing.T) {
	dir := t.TempDir()
	work := filepath.Join(dir, ".mynah", "staging", "v")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	var reloads atomic.Int32
	ctx, cancel := context.WithCancel(context.Background())
	done, err := watchVoices(ctx, dir, 20*time.Millisecond, func() { reloads.Add(1) }, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); <-done })
	for _, f := range []string{filepath.Join(dir, ".mynah", "catalog.json"), filepath.Join(dir, ".mynah", "v.lock"), filepath.Join(work, "v.onnx.part")} {
		if err := os.WriteFile(f, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(300 * time.Millisecond) // many quiet periods
	if n := reloads.Load(); n != 0 {
		t.Fatalf("%d rereads for the installer's own files", n)
	}
	if err := os.Rename(work, filepath.Join(dir, "v")); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(wait); reloads.Load() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the voice renamed into voices.dir was not reread")
		}
	}
}
