package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/cache"
)

// cacheFile makes a cache file with two phrases of voice amy, one of bob,
// one hit and one miss, and returns its path.
func cacheFile(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []string{"amy", "amy", "bob"} {
		k := cache.PhraseSpec{Voice: v, Text: strings.Repeat("x", i+1)}.Key()
		if err := s.PutPhrase(k, v, bytes.Repeat([]byte{byte(i)}, 1000)); err != nil {
			t.Fatal(err)
		}
	}
	s.GetPhrase(cache.PhraseSpec{Voice: "amy", Text: "x"}.Key())
	s.GetPhrase(cache.PhraseSpec{Voice: "amy", Text: "absent"}.Key())
	if err := s.SpoolPut("r1", []byte("hi"), time.Now(), time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCacheStats(t *testing.T) {
	path := cacheFile(t)
	out, stderr, err := mynah(t, "cache", "stats", "--file", path)
	if err != nil {
		t.Fatalf("cache stats: %v\n%s", err, stderr)
	}
	for _, want := range []string{"phrases       3, 0.0 MiB of a 64.0 MiB budget", "hits          1, misses 1, hit ratio 50.0%", "spool         1 request(s)", path} {
		if !strings.Contains(out, want) {
			t.Errorf("stats output lacks %q:\n%s", want, out)
		}
	}
	if _, _, err := mynah(t, "cache", "stats", "--file", filepath.Join(t.TempDir(), "none.db")); err == nil || exitCode(err) != 1 {
		t.Errorf("stats of a missing file: %v", err)
	}
}

// While the daemon holds the file, stats and check read a snapshot and
// purge says what to do instead. (bbolt's lock conflicts within one process
// too, so the "daemon" can be a Store opened here.)
func TestCacheWhileDaemonRuns(t *testing.T) {
	path := cacheFile(t)
	daemon, err := cache.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer daemon.Close()

	out, stderr, err := mynah(t, "cache", "stats", "--file", path)
	if err != nil || !strings.Contains(out, "snapshot") || !strings.Contains(out, "phrases       3") {
		t.Errorf("stats while locked: %v\n%s%s", err, out, stderr)
	}
	out, _, err = mynah(t, "cache", "check", "--file", path)
	if err != nil || !strings.HasPrefix(out, "ok ") || !strings.Contains(out, "mynahd is running") {
		t.Errorf("check while locked: %v\n%s", err, out)
	}
	_, _, err = mynah(t, "cache", "purge", "--scope", "phrases", "--file", path)
	if err == nil || !strings.Contains(err.Error(), "mynah/<node>/cache/purge") {
		t.Errorf("purge while locked: %v, want advice to stop mynahd or use MQTT", err)
	}
	if st := daemon.Stats(); st.Entries != 3 {
		t.Errorf("the daemon's cache changed: %+v", st)
	}
}

func TestCachePurge(t *testing.T) {
	path := cacheFile(t)
	out, stderr, err := mynah(t, "cache", "purge", "--scope", "voice=amy", "--file", path)
	if err != nil || !strings.Contains(out, "purged 2 record(s) (voice=amy)") {
		t.Fatalf("purge voice=amy: %v\n%s%s", err, out, stderr)
	}
	out, _, _ = mynah(t, "cache", "stats", "--file", path)
	if !strings.Contains(out, "phrases       1,") || !strings.Contains(out, "spool         1") {
		t.Errorf("after purge voice=amy:\n%s", out)
	}
	out, _, err = mynah(t, "cache", "purge", "--file", path, "--scope", "all")
	if err != nil || !strings.Contains(out, "purged 2 record(s) (all)") {
		t.Fatalf("purge all: %v\n%s", err, out)
	}
	out, _, _ = mynah(t, "cache", "stats", "--file", path)
	if !strings.Contains(out, "phrases       0,") || !strings.Contains(out, "spool         0") {
		t.Errorf("after purge all:\n%s", out)
	}
	missing := filepath.Join(t.TempDir(), "none.db")
	if _, _, err := mynah(t, "cache", "purge", "--scope", "all", "--file", missing); err == nil {
		t.Error("purge of a missing file succeeded")
	}
	if _, err := os.Stat(missing); err == nil {
		t.Error("purge created a cache file where there was none")
	}
}

func TestCacheCheck(t *testing.T) {
	path := cacheFile(t)
	out, _, err := mynah(t, "cache", "check", "--file", path)
	if err != nil || !strings.HasPrefix(out, "ok ") || !strings.Contains(out, "3 phrases, 1 spooled") {
		t.Fatalf("check of a sound file: %v\n%s", err, out)
	}
	// Break both meta pages' magic numbers: bbolt cannot open it.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	data[16] ^= 0xff
	data[ps+16] ^= 0xff
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	out, _, err = mynah(t, "cache", "check", "--file", path)
	if err == nil || exitCode(err) != 1 || !strings.HasPrefix(out, "DAMAGED ") {
		t.Fatalf("check of a damaged file: %v (exit %d)\n%s", err, exitCode(err), out)
	}
	if after, _ := os.ReadFile(path); !bytes.Equal(after, data) {
		t.Error("check changed the damaged file")
	}
}

func TestCacheUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"cache"},
		{"cache", "shrink"},
		{"cache", "purge"},
		{"cache", "purge", "--scope", "everything"},
		{"cache", "purge", "--scope", "older=soon"},
		{"cache", "stats", "extra"},
		{"cache", "check", "--nope"},
	} {
		if _, _, err := mynah(t, args...); exitCode(err) != 2 {
			t.Errorf("%q: %v, want a usage error (exit 2)", args, err)
		}
	}
	if _, stderr, err := mynah(t, "cache", "--help"); err != nil || !strings.Contains(stderr, "voice=NAME") {
		t.Errorf("cache --help: %v\n%s", err, stderr)
	}
}

// Without --file, the cache commands use mynahd's cache.file.
func TestCacheCommandsReadMynahdConfig(t *testing.T) {
	path := cacheFile(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "mynahd.yaml")
	if err := os.WriteFile(conf, []byte("cache:\n  file: "+path+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, stderr, err := mynah(t, "cache", "stats", "--config", conf); err != nil || !strings.Contains(out, path) || !strings.Contains(out, "phrases       3") {
		t.Errorf("stats --config: %v\n%s%s", err, out, stderr)
	}
	t.Setenv("MYNAH_CONFIG", conf)
	if out, _, err := mynah(t, "cache", "check"); err != nil || !strings.Contains(out, "ok "+path) {
		t.Errorf("check with $MYNAH_CONFIG: %v\n%s", err, out)
	}
	off := filepath.Join(dir, "off.yaml")
	os.WriteFile(off, []byte("cache:\n  file: \"\"\n"), 0o600)
	if _, _, err := mynah(t, "cache", "stats", "--config", off); exitCode(err) != 2 || !strings.Contains(err.Error(), "--file") {
		t.Errorf("a config without a cache: %v, want a usage error pointing at --file", err)
	}
}
