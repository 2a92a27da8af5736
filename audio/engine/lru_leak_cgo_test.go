//go:build cgo

package engine

import (
	"bufio"
	"context"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// TestSessionCacheLoadEvictRSSLevels loads and evicts the demo voice through
// the session LRU 100 times; if closing leaked ORT memory, RSS would grow by
// about a session per cycle instead of levelling off.
func TestSessionCacheLoadEvictRSSLevels(t *testing.T) {
	rt, dir := enginetest.OpenRuntime(t), t.TempDir()
	if _, err := demo.Write(dir, nil); err != nil {
		t.Fatalf("demo voice: %v", err)
	}
	s := newSessionLRU(&lruOptions[*voice.Piper]{
		MaxCount: 1,
		Load: func(ctx context.Context, key string) (*voice.Piper, int64, error) {
			v, err := voice.LoadPiper(rt, key, nil)
			return v, 0, err
		},
		Close: func(v *voice.Piper) error { return v.Close() },
	})
	defer s.Close()
	const cycles = 100
	rss := make([]int64, cycles)
	for i := range cycles {
		_, release, err := s.Get(t.Context(), dir)
		if err != nil {
			t.Fatal(err)
		}
		release()
		if !s.Evict(dir) {
			t.Fatal("Evict: not cached")
		}
		runtime.GC()
		debug.FreeOSMemory()
		rss[i] = residentBytes(t)
	}
	if st := s.Stats(); st.Loads != cycles || st.Sessions != 0 {
		t.Fatalf("stats %+v", st)
	}
	// Allocator noise settles within the first cycles; the second half must
	// not keep growing. glibc's arenas (this test process has none of
	// mynahd's malloc settings) grow 2–5 MB over the last 50 cycles, once
	// 8.3 MB under -race; a leaked session would add its model and ORT's
	// graph every cycle, over 50 MB in all.
	const slack = 24 << 20
	early, late := rss[cycles/2], rss[cycles-1]
	t.Logf("RSS after cycle 1: %d KiB, %d: %d KiB, %d: %d KiB", rss[0]>>10, cycles/2, early>>10, cycles, late>>10)
	if emu := os.Getenv("MYNAH_EMULATED"); emu != "" {
		// qemu-user keeps about 245 KB for every thread that has ended, and
		// each session's ONNX Runtime thread pool starts and ends some.
		t.Skipf("the loads and evictions work; the leak check is not judged under %s, whose RSS is the emulator's (it grew %d KiB over the last %d cycles): make test judges it natively",
			emu, (late-early)>>10, cycles/2)
	}
	if late-early > slack {
		t.Errorf("RSS grew %d KiB over the last %d load/evict cycles (slack %d KiB): sessions leak", (late-early)>>10, cycles/2, slack>>10)
	}
}

func residentBytes(t *testing.T) int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
