package cache

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// TestMain doubles as the child process of the lock, crash and spool
// tests: they re-run the test binary with MYNAH_CACHE_CHILD set.
func TestMain(m *testing.M) {
	if role := os.Getenv("MYNAH_CACHE_CHILD"); role != "" {
		os.Exit(runChild(role, os.Getenv("MYNAH_CACHE_PATH")))
	}
	os.Exit(m.Run())
}

// openTemp opens a Store in a new temporary directory and checks the file's
// integrity when the test ends, after closing the store: bbolt's tx.Check,
// the structural walk, and a read-only Open with Check.
func openTemp(t testing.TB, opts *Options) *Store {
	t.Helper()
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, opts)
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		mustBeSound(t, path)
	})
	return s
}

// mustBeSound fails the test if the file at path is not a sound cache file.
func mustBeSound(t testing.TB, path string) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Errorf("integrity: bbolt open %s: %v", path, err)
		return
	}
	if err := verifyStructure(path, db.Info().PageSize); err != nil {
		t.Errorf("integrity: structure: %v", err)
	}
	if err := db.View(checkTx); err != nil {
		t.Errorf("integrity: %v", err)
	}
	db.Close()
	s, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Errorf("integrity: read-only open: %v", err)
		return
	}
	defer s.Close()
	if s.Snapshot() {
		t.Errorf("integrity: %s still locked by a writer", path)
	}
	if err := s.Check(); err != nil {
		t.Errorf("integrity: %v", err)
	}
}

// fakeClock is a settable clock for TTL and last-use times.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *fakeClock {
	return &fakeClock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// key makes a distinct phrase key for a test sentence.
func key(text string) PhraseKey {
	return PhraseSpec{ModelDigest: "d1", Voice: "v", SampleRate: 22050, Text: text}.Key()
}

// sealed returns payload followed by its SHA-256, the checksum the crash
// test verifies after every kill.
func sealed(payload []byte) []byte {
	sum := sha256.Sum256(payload)
	return append(append([]byte(nil), payload...), sum[:]...)
}

func unsealed(v []byte) ([]byte, bool) {
	if len(v) < sha256.Size {
		return nil, false
	}
	p := v[:len(v)-sha256.Size]
	sum := sha256.Sum256(p)
	return p, bytes.Equal(sum[:], v[len(p):])
}

// filler returns n deterministic bytes.
func filler(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

func mustPut(t testing.TB, s *Store, k PhraseKey, voice string, v []byte) {
	t.Helper()
	if err := s.PutPhrase(k, voice, v); err != nil {
		t.Fatalf("put: %v", err)
	}
}

func mustHit(t testing.TB, s *Store, k PhraseKey, want []byte) {
	t.Helper()
	got, ok, err := s.GetPhrase(k)
	if err != nil || !ok {
		t.Fatalf("get %s: ok=%v err=%v, want a hit", k, ok, err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("get %s: %d bytes differ from the %d stored", k, len(got), len(want))
	}
}

func mustMiss(t testing.TB, s *Store, k PhraseKey) {
	t.Helper()
	if _, ok, err := s.GetPhrase(k); err != nil || ok {
		t.Fatalf("get %s: ok=%v err=%v, want a miss", k, ok, err)
	}
}

// logBuffer captures a Store's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// runChild is the body of a child process. It prints "ready" once it has
// written something, then runs until it is killed or its stdin closes.
func runChild(role, path string) int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "child:", err)
		return 1
	}
	switch role {
	case "hold": // hold the lock with a few phrases in the file
		s, err := Open(path, nil)
		if err != nil {
			return fail(err)
		}
		for i := range 5 {
			if err := s.PutPhrase(key(strconv.Itoa(i)), "v", sealed(filler(1000, byte(i)))); err != nil {
				return fail(err)
			}
		}
		fmt.Println("ready")
		_, _ = os.Stdin.Read(make([]byte, 1)) // until the parent closes stdin
		if err := s.Close(); err != nil {
			return fail(err)
		}
		return 0
	case "phrases", "paced": // write, read, pin and delete phrases forever
		s, err := Open(path, &Options{MaxBytes: 256 << 10, FlushInterval: 20 * time.Millisecond})
		if err != nil {
			return fail(err)
		}
		if r := s.Recovery(); r != nil {
			return fail(fmt.Errorf("recovered a file a crash left: %s", r.Reason))
		}
		seed, _ := strconv.Atoi(os.Getenv("MYNAH_CACHE_SEED"))
		for i := 0; ; i++ {
			n := (seed*7919+i*104729)%12000 + 1
			k := key(fmt.Sprintf("%d-%d", seed, i))
			err := s.PutPhrase(k, fmt.Sprintf("v%d", i%3), sealed(filler(n, byte(i))))
			if errors.Is(err, ErrBudget) { // pins fill the budget: let them go
				for _, p := range s.Pinned() {
					_ = s.Unpin(p)
				}
			} else if err != nil {
				return fail(err)
			}
			switch i % 10 {
			case 3:
				_, _, _ = s.GetPhrase(key(fmt.Sprintf("%d-%d", seed, i/2)))
			case 5:
				_ = s.Pin(k)
			case 7:
				_ = s.DeletePhrase(key(fmt.Sprintf("%d-%d", seed, i-1)))
			}
			if i == 0 {
				fmt.Println("ready")
			}
			if role == "paced" { // a daemon's rhythm, rather than a stress test's
				time.Sleep(2 * time.Millisecond)
			}
		}
	case "spool": // spool requests and delete some, reporting each return
		s, err := Open(path, &Options{MaxSpoolEntries: 1 << 20})
		if err != nil {
			return fail(err)
		}
		seed := os.Getenv("MYNAH_CACHE_SEED")
		base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
		for i := 0; ; i++ {
			id := fmt.Sprintf("%s-%06d", seed, i)
			if err := s.SpoolPut(id, []byte("say "+id), base.Add(time.Duration(i)*time.Millisecond), time.Time{}); err != nil {
				return fail(err)
			}
			fmt.Println("put", id)
			if i%3 == 2 {
				prev := fmt.Sprintf("%s-%06d", seed, i-1)
				fmt.Println("deleting", prev)
				if err := s.SpoolDelete(prev); err != nil {
					return fail(err)
				}
				fmt.Println("del", prev)
			}
			if i == 0 {
				fmt.Println("ready")
			}
		}
	}
	return fail(errors.New("unknown role " + role))
}
