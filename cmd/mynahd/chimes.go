package main

import (
	"fmt"
	"os"
	"time"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
)

// chimeBook is the chimes of announce.chimes and the built-in ones,
// decoded once at the default voice's rate and kept in memory: a chime
// plays from memory, as a cached phrase does.
type chimeBook map[string]audio.PCM

func (b chimeBook) Chime(name string) (audio.PCM, bool) {
	p, ok := b[name]
	return p, ok
}

var _ daemon.Chimes = chimeBook(nil)

// maxChimeFileBytes bounds a chime file: 10 s of 48 kHz stereo is 1.9 MB.
const maxChimeFileBytes = 4 << 20

// loadChimes makes the built-in chimes and decodes the configured files
// at rate, mono. A file that cannot be read stops mynahd at start, naming
// its key.
func loadChimes(a config.Announce, rate int) (chimeBook, map[daemon.Priority]string, error) {
	book := chimeBook{}
	for _, name := range audio.BuiltinChimes() {
		p, err := audio.Chime(name, rate)
		if err != nil {
			return nil, nil, err
		}
		book[name] = p
	}
	for name, path := range a.Chimes {
		p, err := readChime(path, rate)
		if err != nil {
			return nil, nil, fmt.Errorf("announce.chimes.%s: %w", name, err)
		}
		book[name] = p
	}
	byPriority := map[daemon.Priority]string{}
	for pr, name := range a.Priority {
		p, err := daemon.ParsePriority(pr)
		if err != nil {
			return nil, nil, fmt.Errorf("announce.priority: %w", err)
		}
		if name != "" {
			byPriority[p] = name
		}
	}
	return book, byPriority, nil
}

func readChime(path string, rate int) (audio.PCM, error) {
	f, err := os.Open(path)
	if err != nil {
		return audio.PCM{}, err
	}
	defer f.Close()
	p, err := audio.ReadWAV(f, &audio.WAVOptions{MaxBytes: maxChimeFileBytes, MaxDuration: config.MaxChimeSeconds * time.Second})
	if err != nil {
		return audio.PCM{}, fmt.Errorf("%s: %w", path, err)
	}
	return audio.Convert(p, rate, 1)
}
