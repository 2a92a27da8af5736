package engine

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// coldLoadDelay stands in for opening an ONNX session; the real figure with
// ORT belongs to the voice benchmarks.
const coldLoadDelay = 20 * time.Millisecond

// BenchmarkSessionsWarmVsCold measures a warm Get+release (the voice-switch
// cost with a warm session) against a cold one whose Load sleeps
// coldLoadDelay, and reports both and their ratio.
func BenchmarkSessionsWarmVsCold(b *testing.B) {
	newCache := func() *sessionLRU[int] {
		return newSessionLRU(&lruOptions[int]{
			MaxCount: 2,
			Load: func(ctx context.Context, key string) (int, int64, error) {
				select {
				case <-time.After(coldLoadDelay):
					return len(key), 1 << 20, nil
				case <-ctx.Done():
					return 0, 0, ctx.Err()
				}
			},
		})
	}
	ctx := context.Background()

	// Cold: a few loads are enough to measure a 20 ms sleep.
	const coldRuns = 5
	cold := newCache()
	defer cold.Close()
	start := time.Now()
	for i := range coldRuns {
		_, release, err := cold.Get(ctx, fmt.Sprint("cold-", i))
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
	coldNs := float64(time.Since(start).Nanoseconds()) / coldRuns

	// Warm: alternate two cached voices, as a voice switch does.
	warm := newCache()
	defer warm.Close()
	if err := warm.Preload(ctx, "amy", "kathleen"); err != nil {
		b.Fatal(err)
	}
	keys := [2]string{"amy", "kathleen"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		_, release, err := warm.Get(ctx, keys[i&1])
		if err != nil {
			b.Fatal(err)
		}
		release()
	}
	b.StopTimer()
	warmNs := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	if st := warm.Stats(); st.Loads != 2 {
		b.Fatalf("warm cache loaded %d times, want 2", st.Loads)
	}
	b.ReportMetric(warmNs, "warm-ns")
	b.ReportMetric(coldNs, "cold-ns")
	b.ReportMetric(coldNs/warmNs, "cold/warm")
}

// BenchmarkSessionsConcurrentWarm is the warm path under contention: all
// Gets share one mutex.
func BenchmarkSessionsConcurrentWarm(b *testing.B) {
	s := newSessionLRU(&lruOptions[int]{
		Load: func(context.Context, string) (int, int64, error) { return 1, 1, nil },
	})
	defer s.Close()
	ctx := context.Background()
	if err := s.Preload(ctx, "a", "b", "c", "d"); err != nil {
		b.Fatal(err)
	}
	keys := [4]string{"a", "b", "c", "d"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			_, release, err := s.Get(ctx, keys[i&3])
			if err != nil {
				b.Error(err)
				return
			}
			release()
			i++
		}
	})
}

// BenchmarkCgroupMemory is the cost the pressure check adds to each Get
// when the cgroup probe is used (three small file reads per cgroup level,
// plus /proc/self/cgroup).
func BenchmarkCgroupMemory(b *testing.B) {
	const svc = "system.slice/mynahd.service"
	root := writeCgroupTree(b, map[string]string{
		"self":                    "0::/" + svc + "\n",
		"system.slice/memory.max": "max\n",
		svc + "/memory.max":       "268435456\n",
		svc + "/memory.current":   "167772160\n",
		svc + "/memory.stat":      realMemoryStat,
	})
	c := cgroupMemory{Root: root, SelfCgroup: filepath.Join(root, "self")}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := c.Available(); !ok {
			b.Fatal("no answer")
		}
	}
}
