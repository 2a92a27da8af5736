package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
)

func TestLoadChimes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "door.wav")
	os.WriteFile(good, audio.EncodeWAV(audio.PCM{Rate: 16000, Channels: 2, Samples: make([]int16, 3200)}), 0o644)
	notWAV := filepath.Join(dir, "notes.wav")
	os.WriteFile(notWAV, []byte("not a recording"), 0o644)
	long := filepath.Join(dir, "long.wav")
	os.WriteFile(long, audio.EncodeWAV(audio.PCM{Rate: 8000, Channels: 1, Samples: make([]int16, 8000*(config.MaxChimeSeconds+1))}), 0o644)

	book, byPriority, err := loadChimes(config.Announce{Chimes: map[string]string{"door": good},
		Priority: map[string]string{"alert": "two_tone", "low": ""}}, 22050)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"ding", "two_tone", "door"} {
		if p, ok := book.Chime(name); !ok || p.Rate != 22050 || p.Channels != 1 || len(p.Samples) == 0 {
			t.Errorf("chime %s: %v, %+v", name, ok, p.Rate)
		}
	}
	if len(byPriority) != 1 || byPriority[daemon.PriorityAlert] != "two_tone" {
		t.Errorf("by priority %v", byPriority)
	}
	for _, path := range []string{filepath.Join(dir, "missing.wav"), notWAV, long} {
		_, _, err := loadChimes(config.Announce{Chimes: map[string]string{"door": path}}, 22050)
		if err == nil || !strings.Contains(err.Error(), "announce.chimes.door") {
			t.Errorf("%s: %v, want an error naming announce.chimes.door", filepath.Base(path), err)
		}
	}
}
