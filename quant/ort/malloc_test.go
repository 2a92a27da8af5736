package ort

import (
	"runtime"
	"slices"
	"sync"
	"testing"
)

// TestMallocCalls: with cgo on Linux (a glibc system: this project's
// targets) the allocator calls take; without cgo or elsewhere they report
// that they did nothing.
func TestMallocCalls(t *testing.T) {
	want := cgoEnabled && runtime.GOOS == "linux"
	for _, n := range []int{256 << 10, MaxMMapThreshold} {
		if got := SetMMapThreshold(n); got != want {
			t.Errorf("SetMMapThreshold(%d) = %v, want %v", n, got, want)
		}
	}
	if got := TrimCHeap(); got != want {
		t.Errorf("TrimCHeap() = %v, want %v", got, want)
	}
	// Back to glibc's initial threshold (its dynamic raising stays off),
	// not the 32 MiB above, for the tests that follow.
	SetMMapThreshold(128 << 10)
}

// fakeMalloc stands in for the C allocator under loadThreshold.
type fakeMalloc struct {
	mu        sync.Mutex
	threshold int
	sets      []int
	trims     int
}

func (f *fakeMalloc) set(n int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.threshold = n
	f.sets = append(f.sets, n)
	return true
}

func (f *fakeMalloc) trim() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.trims++
	return true
}

func (f *fakeMalloc) state() (threshold int, sets []int, trims int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.threshold, slices.Clone(f.sets), f.trims
}

const (
	testSteady = 256 << 10
	testLoad   = MaxMMapThreshold
)

// check wants the threshold steady after sets set calls, one trim per
// return to steady.
func (f *fakeMalloc) check(t *testing.T, wantSets []int) {
	t.Helper()
	threshold, sets, trims := f.state()
	if threshold != testSteady || !slices.Equal(sets, wantSets) || trims != len(wantSets)/2 {
		t.Errorf("threshold %d after thresholds %v and %d trims; want %d after %v and %d trims",
			threshold, sets, trims, testSteady, wantSets, len(wantSets)/2)
	}
}

// during is a build that wants the load threshold while it runs.
func (f *fakeMalloc) during(t *testing.T, builds *int) func() {
	return func() {
		*builds++
		if threshold, _, _ := f.state(); threshold != testLoad {
			t.Errorf("threshold %d while building, want %d", threshold, testLoad)
		}
	}
}

func TestLoadThresholdOnce(t *testing.T) {
	f := &fakeMalloc{threshold: testSteady}
	building := loadThreshold(testSteady, testLoad, f.set, f.trim)
	builds := 0
	building(f.during(t, &builds))
	if builds != 1 {
		t.Fatalf("build ran %d times, want 1", builds)
	}
	f.check(t, []int{testLoad, testSteady})
	building(f.during(t, &builds))
	if builds != 2 {
		t.Fatalf("build ran %d times over two calls, want 2", builds)
	}
	f.check(t, []int{testLoad, testSteady, testLoad, testSteady})
}

// TestLoadThresholdNested: a session built while another is (a build that
// builds) keeps the load threshold until the outer one is done.
func TestLoadThresholdNested(t *testing.T) {
	f := &fakeMalloc{threshold: testSteady}
	building := loadThreshold(testSteady, testLoad, f.set, f.trim)
	inner := 0
	outer := 0
	building(func() {
		outer++
		building(f.during(t, &inner))
		f.during(t, new(int))() // still raised after the inner build
	})
	if outer != 1 || inner != 1 {
		t.Fatalf("outer build ran %d times, inner %d; want 1 each", outer, inner)
	}
	f.check(t, []int{testLoad, testSteady})
}

// TestLoadThresholdConcurrent: builds overlap instead of queueing (every
// one of them waits inside build for all the others, which would hang a
// wrapper that serialized them), and the threshold goes up once and back
// once for the lot.
func TestLoadThresholdConcurrent(t *testing.T) {
	f := &fakeMalloc{threshold: testSteady}
	building := loadThreshold(testSteady, testLoad, f.set, f.trim)
	const n = 8
	var inside, done sync.WaitGroup
	inside.Add(n)
	builds := make([]int, n)
	for i := range n {
		done.Go(func() {
			building(func() {
				f.during(t, &builds[i])()
				inside.Done()
				inside.Wait()
			})
		})
	}
	done.Wait()
	for i, b := range builds {
		if b != 1 {
			t.Errorf("goroutine %d: build ran %d times, want 1", i, b)
		}
	}
	f.check(t, []int{testLoad, testSteady})
}

// TestLoadThresholdRace: builds that come and go at random, nested or
// not, each see the load threshold, and after the last the threshold is
// steady and every raise was undone and trimmed after.
func TestLoadThresholdRace(t *testing.T) {
	f := &fakeMalloc{threshold: testSteady}
	building := loadThreshold(testSteady, testLoad, f.set, f.trim)
	const n = 16
	var wg sync.WaitGroup
	builds := make([]int, n)
	for i := range n {
		wg.Go(func() {
			for range 50 {
				if i%4 == 0 {
					building(func() { building(f.during(t, &builds[i])) })
				} else {
					building(f.during(t, &builds[i]))
				}
				runtime.Gosched()
			}
		})
	}
	wg.Wait()
	for i, b := range builds {
		if b != 50 {
			t.Errorf("goroutine %d: build ran %d times, want 50", i, b)
		}
	}
	threshold, sets, trims := f.state()
	if threshold != testSteady || len(sets)%2 != 0 || trims != len(sets)/2 {
		t.Fatalf("threshold %d after %d sets and %d trims; want %d, raised and set back in pairs", threshold, len(sets), trims, testSteady)
	}
	for i, s := range sets {
		if want := []int{testLoad, testSteady}[i%2]; s != want {
			t.Fatalf("set %d of %v is %d, want %d: raises and returns do not alternate", i, sets, s, want)
		}
	}
}

// TestLoadThresholdPanic: a build that panics still sets the threshold
// back, and the next build raises it again.
func TestLoadThresholdPanic(t *testing.T) {
	f := &fakeMalloc{threshold: testSteady}
	building := loadThreshold(testSteady, testLoad, f.set, f.trim)
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the build's panic did not reach the caller")
			}
		}()
		building(func() { panic("build failed") })
	}()
	f.check(t, []int{testLoad, testSteady})
	builds := 0
	building(f.during(t, &builds))
	f.check(t, []int{testLoad, testSteady, testLoad, testSteady})
}

// TestLoadThresholdReal runs LoadThreshold on the process's own allocator,
// nested and concurrently: every build runs once and all of them return.
func TestLoadThresholdReal(t *testing.T) {
	building := LoadThreshold(128<<10, MaxMMapThreshold)
	var (
		mu     sync.Mutex
		builds int
		wg     sync.WaitGroup
	)
	count := func() {
		mu.Lock()
		builds++
		mu.Unlock()
	}
	for range 8 {
		wg.Go(func() {
			for range 20 {
				building(func() {
					count()
					building(count)
				})
			}
		})
	}
	wg.Wait()
	if builds != 8*20*2 {
		t.Errorf("%d builds ran, want %d", builds, 8*20*2)
	}
}
