//go:build cgo

package ort

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	onnx "github.com/yalue/onnxruntime_go"
)

func TestRunConfigReadsBack(t *testing.T) {
	openRuntime(t, nil)
	entries := map[string]string{runKeyArenaShrink: "cpu:0", "mynah.test.key": "a value"}
	ro, err := newRunConfig(entries)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Destroy()
	for key, want := range entries {
		got, ok, err := runConfigEntry(ro, key)
		if err != nil || !ok || got != want {
			t.Errorf("%s: read back %q, %v, %v; want %q", key, got, ok, err, want)
		}
	}
	if got, ok, err := runConfigEntry(ro, "mynah.test.unset"); err != nil || ok {
		t.Errorf("unset key: read back %q, %v, %v; want not set", got, ok, err)
	}
}

// TestRunConfigEmpty: ONNX Runtime refuses an empty key, and the error says
// which entry and why; an empty value is a value, read back as set (and,
// for the shrinkage key, the same as leaving it out).
func TestRunConfigEmpty(t *testing.T) {
	rt := openRuntime(t, nil)
	ro, err := newRunConfig(map[string]string{"": "x"})
	if err == nil {
		ro.Destroy()
		t.Fatal("empty key accepted")
	}
	if msg := err.Error(); !strings.Contains(msg, `run option ""="x"`) || !strings.Contains(msg, "key is empty") {
		t.Errorf("empty key: %q; want the entry and ONNX Runtime's reason", msg)
	}

	ro, err = newRunConfig(map[string]string{runKeyArenaShrink: ""})
	if err != nil {
		t.Fatalf("empty value: %v", err)
	}
	if got, ok, err := runConfigEntry(ro, runKeyArenaShrink); err != nil || !ok || got != "" {
		t.Errorf("empty value: read back %q, %v, %v; want set to \"\"", got, ok, err)
	}
	s := newSession(t, rt, addModel(), &SessionOptions{IntraOpThreads: 1})
	swapRunOptions(t, s, ro)
	if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})); err != nil {
		t.Errorf("run with an empty shrinkage list on a session without arena: %v", err)
	}
}

// swapRunOptions makes s run with ro, which s then owns.
func swapRunOptions(t *testing.T, s *Session, ro *onnx.RunOptions) {
	t.Helper()
	if s.b.ro != nil {
		s.b.ro.Destroy()
	}
	s.b.ro = ro
}

func TestRunOptionsPointer(t *testing.T) {
	openRuntime(t, nil)
	ro, err := onnx.NewRunOptions()
	if err != nil {
		t.Fatal(err)
	}
	if p, err := runOptionsPointer(ro); err != nil || p == nil {
		t.Errorf("fresh run options: %p, %v", p, err)
	}
	ro.Destroy()
	if _, err := runOptionsPointer(ro); err == nil || !strings.Contains(err.Error(), "not initialized") {
		t.Errorf("destroyed run options: %v, want not initialized", err)
	}
	if _, err := runOptionsPointer(nil); err == nil {
		t.Error("nil run options: no error")
	}
	if err := setRunConfig(ro, map[string]string{runKeyArenaShrink: "cpu:0"}); err == nil {
		t.Error("entry set on destroyed run options")
	}
}

// arenaModel: y = (x·x + x) · W, x float32 [N, 64], W [64, 8]: two
// intermediates of x's size per run, so a longer x grows the arena.
func arenaModel() (testModel, []float32) {
	r := rand.New(rand.NewPCG(1, 2))
	w := make([]float32, 64*8)
	for i := range w {
		w[i] = r.Float32()*2 - 1
	}
	return testModel{
		nodes: []node{
			{op: "Mul", inputs: []string{"x", "x"}, outputs: []string{"sq"}},
			{op: "Add", inputs: []string{"sq", "x"}, outputs: []string{"sum"}},
			{op: "MatMul", inputs: []string{"sum", "W"}, outputs: []string{"y"}},
		},
		inputs:       []valueInfo{tensorValue("x", onnxFloat, "N", 64)},
		outputs:      []valueInfo{tensorValue("y", onnxFloat, "N", 8)},
		initializers: []initializer{{name: "W", elem: onnxFloat, dims: []int64{64, 8}, raw: float32Raw(w)}},
	}, w
}

func arenaModelWant(x, w []float32) []float32 {
	rows := len(x) / 64
	y := make([]float32, rows*8)
	for r := range rows {
		for c := range 8 {
			var sum float32
			for k := range 64 {
				v := x[r*64+k]
				sum += (v*v + v) * w[k*8+c]
			}
			y[r*8+c] = sum
		}
	}
	return y
}

// TestArenaShrinkSameOutputs runs inputs of growing (then shrinking)
// length through sessions without the arena, with it, and with it shrunk
// after every run: the same kernels on the same graph, so the outputs are
// the same to the bit, whoever holds the memory.
func TestArenaShrinkSameOutputs(t *testing.T) {
	rt := openRuntime(t, nil)
	m, w := arenaModel()
	variants := []struct {
		name string
		opts SessionOptions
	}{
		{"no arena", SessionOptions{IntraOpThreads: 1}},
		{"arena", SessionOptions{IntraOpThreads: 1, CPUArena: true}},
		{"arena, shrink", SessionOptions{IntraOpThreads: 1, CPUArena: true, ArenaShrink: true}},
	}
	sessions := make([]*Session, len(variants))
	for i, v := range variants {
		sessions[i] = newSession(t, rt, m, &v.opts)
	}
	shrink := sessions[2]
	if shrink.b.ro == nil {
		t.Fatal("CPUArena+ArenaShrink session has no run options")
	}
	if got, ok, err := runConfigEntry(shrink.b.ro, runKeyArenaShrink); err != nil || !ok || got != "cpu:0" {
		t.Fatalf("shrink session's %s = %q, %v, %v; want cpu:0", runKeyArenaShrink, got, ok, err)
	}

	r := rand.New(rand.NewPCG(3, 4))
	for _, rows := range []int{1, 3, 64, 1000, 1000, 20000, 7, 50000, 2, 50000} {
		x := make([]float32, rows*64)
		for i := range x {
			x[i] = r.Float32()*4 - 2
		}
		in := []Tensor{{Name: "x", Shape: []int64{int64(rows), 64}, Float32: x}}
		var first []float32
		for i, s := range sessions {
			out, err := s.Run(in)
			if err != nil {
				t.Fatalf("%d rows, %s: %v", rows, variants[i].name, err)
			}
			if !slices.Equal(out[0].Shape, []int64{int64(rows), 8}) {
				t.Fatalf("%d rows, %s: shape %v", rows, variants[i].name, out[0].Shape)
			}
			if i == 0 {
				first = out[0].Float32
				if !closeEnough(first, arenaModelWant(x, w)) {
					t.Fatalf("%d rows, %s: y differs from the Go reference", rows, variants[i].name)
				}
				continue
			}
			if !slices.Equal(out[0].Float32, first) {
				t.Errorf("%d rows: %s differs from %s", rows, variants[i].name, variants[0].name)
			}
		}
	}
}

// TestArenaShrinkNeedsArena: ArenaShrink alone is ignored, because ONNX
// Runtime fails every run that asks to shrink an arena the session does
// not have.
func TestArenaShrinkNeedsArena(t *testing.T) {
	rt := openRuntime(t, nil)
	in := addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})
	s := newSession(t, rt, addModel(), &SessionOptions{IntraOpThreads: 1, ArenaShrink: true})
	if s.b.ro != nil {
		t.Error("ArenaShrink without CPUArena made run options")
	}
	if _, err := s.Run(in); err != nil {
		t.Fatal(err)
	}
	ro, err := newRunConfig(map[string]string{runKeyArenaShrink: "cpu:0"})
	if err != nil {
		t.Fatal(err)
	}
	swapRunOptions(t, s, ro)
	if _, err := s.Run(in); err == nil || !strings.Contains(err.Error(), "arena") {
		t.Errorf("shrinking a session without arena: %v; want ONNX Runtime's error about the arena", err)
	}
}

// bigTemporariesModel: y = ReduceSum((zeros(shape) + x)²), shape int64
// [2] and x float32 [1, M], so that a run's intermediates are as large as
// the shape asks while its input and output stay tiny.
func bigTemporariesModel() testModel {
	return testModel{
		nodes: []node{
			{op: "ConstantOfShape", inputs: []string{"shape"}, outputs: []string{"zeros"}},
			{op: "Add", inputs: []string{"zeros", "x"}, outputs: []string{"a"}},
			{op: "Mul", inputs: []string{"a", "a"}, outputs: []string{"sq"}},
			{op: "ReduceSum", inputs: []string{"sq"}, outputs: []string{"y"}},
		},
		inputs:  []valueInfo{tensorValue("shape", onnxInt64, 2), tensorValue("x", onnxFloat, 1, "M")},
		outputs: []valueInfo{tensorValue("y", onnxFloat, 1, 1)},
	}
}

// The arena memory tests' runs of bigTemporariesModel: inputs of bigRows
// rows make intermediates of bigTensorBytes.
const (
	bigRows, bigCols = 8192, 1024
	bigTensorBytes   = bigRows * bigCols * 4
)

type bigRuns struct {
	t *testing.T
	x Tensor
}

// newBigRuns sets the mmap threshold as mynahd does (every block above
// 256 KiB its own mapping, so that what ONNX Runtime frees leaves the
// process at once).
func newBigRuns(t *testing.T) bigRuns {
	if !SetMMapThreshold(256 << 10) {
		t.Log("no mmap threshold to set; glibc's own decides")
	}
	x := Tensor{Name: "x", Shape: []int64{1, bigCols}, Float32: make([]float32, bigCols)}
	for i := range x.Float32 {
		x.Float32[i] = 1
	}
	return bigRuns{t, x}
}

// inputs of n rows.
func (b bigRuns) inputs(n int64) []Tensor {
	return []Tensor{{Name: "shape", Shape: []int64{2}, Int64: []int64{n, bigCols}}, b.x}
}

// run runs s on n rows and checks the sum.
func (b bigRuns) run(s *Session, n int64) {
	b.t.Helper()
	out, err := s.Run(b.inputs(n))
	if err != nil {
		b.t.Fatal(err)
	}
	if out[0].Float32[0] != float32(n*bigCols) {
		b.t.Fatalf("y = %v, want %v", out[0].Float32[0], n*bigCols)
	}
}

// settledRSS is the process's RSS once the heaps gave back what they can.
func (b bigRuns) settledRSS() int64 {
	runtime.GC()
	debug.FreeOSMemory()
	TrimCHeap()
	return rssBytes(b.t)
}

// TestArenaShrinkReturnsMemory: a run whose intermediates are 32 MiB
// tensors leaves the arena at about twice that (66 MiB measured) without
// shrinkage, and gives all of it back with it (0–2 MiB). Each session
// first runs a one-row input: under the arena's default power-of-two
// growth ONNX Runtime never frees its first region, so a session whose
// first run is the big one keeps it (logged below) and the comparison
// would measure that instead.
func TestArenaShrinkReturnsMemory(t *testing.T) {
	rt := openRuntime(t, nil)
	big := newBigRuns(t)
	kept := func(opts SessionOptions, warm bool) int64 {
		s, err := rt.NewSession(bigTemporariesModel().bytes(), &opts)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if warm {
			if _, err := s.Run(big.inputs(1)); err != nil {
				t.Fatal(err)
			}
		}
		before := big.settledRSS()
		big.run(s, bigRows)
		return big.settledRSS() - before
	}
	arena := SessionOptions{IntraOpThreads: 1, CPUArena: true}
	shrink := SessionOptions{IntraOpThreads: 1, CPUArena: true, ArenaShrink: true}
	var withArena, withShrink int64
	for range 2 { // alternated, so that neither is measured on a cold process only
		withArena = max(withArena, kept(arena, true))
		withShrink = max(withShrink, kept(shrink, true))
	}
	t.Logf("RSS kept after a run with %d MiB intermediates: arena %+d KiB, arena with shrinkage %+d KiB (first run big: %+d KiB)",
		bigTensorBytes>>20, withArena>>10, withShrink>>10, kept(shrink, false)>>10)
	judgeShrunk(t, withArena, withShrink, bigTensorBytes, "with ArenaShrink")
}

// judgeShrunk fails unless the arena kept at least one intermediate of
// bigTensorBytes (else the test measures nothing) and, shrunk (after what),
// under a quarter of one. Under emulation it skips: RSS is the emulator's.
func judgeShrunk(t *testing.T, kept, shrunk, bigTensorBytes int64, after string) {
	t.Helper()
	if emu := os.Getenv("MYNAH_EMULATED"); emu != "" {
		t.Skipf("the runs work; what they keep is not judged under %s, whose RSS is the emulator's: make test judges it natively", emu)
	}
	if kept < bigTensorBytes {
		t.Errorf("the arena kept %d KiB after the run, less than one %d KiB intermediate: this test no longer measures the arena", kept>>10, bigTensorBytes>>10)
	}
	if shrunk > bigTensorBytes/4 {
		t.Errorf("%s %d KiB are still kept (%d KiB without it): the arena was not shrunk", after, shrunk>>10, kept>>10)
	}
}

// TestReleaseArenaReturnsMemory: with CPUArena and no ArenaShrink the arena
// keeps what a run with 32 MiB intermediates needed (66 MiB measured, as in
// TestArenaShrinkReturnsMemory) until ReleaseArena, whose run on a one-row
// input gives it back (0–2 MiB measured). Each session's first run is a
// one-row one, for the reason TestArenaShrinkReturnsMemory gives.
func TestReleaseArenaReturnsMemory(t *testing.T) {
	rt := openRuntime(t, nil)
	big := newBigRuns(t)
	measure := func() (kept, released int64) {
		s, err := rt.NewSession(bigTemporariesModel().bytes(), &SessionOptions{IntraOpThreads: 1, CPUArena: true})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.b.ro != nil {
			t.Error("CPUArena without ArenaShrink shrinks every run")
		}
		if _, err := s.Run(big.inputs(1)); err != nil {
			t.Fatal(err)
		}
		before := big.settledRSS()
		big.run(s, bigRows)
		kept = big.settledRSS() - before
		if err := s.ReleaseArena(big.inputs(1)); err != nil {
			t.Fatal(err)
		}
		released = big.settledRSS() - before
		// The session goes on as before, arena and all.
		big.run(s, bigRows/2)
		return kept, released
	}
	var kept, released int64
	for range 2 {
		k, r := measure()
		kept, released = max(kept, k), max(released, r)
	}
	t.Logf("RSS kept after a run with %d MiB intermediates: %+d KiB; after ReleaseArena %+d KiB", bigTensorBytes>>20, kept>>10, released>>10)
	judgeShrunk(t, kept, released, bigTensorBytes, "after ReleaseArena")
}

// TestReleaseArenaWithoutArena: without CPUArena (ArenaShrink alone
// included) ReleaseArena looks at nothing and runs nothing, so even inputs
// Run refuses return nil; once the session is closed it says so.
func TestReleaseArenaWithoutArena(t *testing.T) {
	rt := openRuntime(t, nil)
	for _, opts := range []SessionOptions{{IntraOpThreads: 1}, {IntraOpThreads: 1, ArenaShrink: true}} {
		s, err := rt.NewSession(addModel().bytes(), &opts)
		if err != nil {
			t.Fatal(err)
		}
		if s.b.shrink != nil {
			t.Errorf("options %+v: a session without arena has shrink run options", opts)
		}
		bad := []Tensor{{Name: "nope", Float32: []float32{1}}}
		if _, err := s.Run(bad); !errors.Is(err, ErrInputMismatch) {
			t.Fatalf("Run(bad) = %v, want ErrInputMismatch", err)
		}
		for _, in := range [][]Tensor{nil, bad, addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})} {
			if err := s.ReleaseArena(in); err != nil {
				t.Errorf("options %+v: ReleaseArena(%v) = %v, want nil", opts, in, err)
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseArena(nil); !errors.Is(err, ErrClosed) {
			t.Errorf("options %+v: ReleaseArena after Close: %v, want ErrClosed", opts, err)
		}
	}
}

// TestReleaseArenaWithArena: with CPUArena ReleaseArena is a run, with
// the shrinkage option, and checks its inputs as Run does.
func TestReleaseArenaWithArena(t *testing.T) {
	rt := openRuntime(t, nil)
	for _, opts := range []SessionOptions{{IntraOpThreads: 1, CPUArena: true}, {IntraOpThreads: 1, CPUArena: true, ArenaShrink: true}} {
		s, err := rt.NewSession(addModel().bytes(), &opts)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok, err := runConfigEntry(s.b.shrink, runKeyArenaShrink); err != nil || !ok || got != "cpu:0" {
			t.Errorf("options %+v: ReleaseArena's %s = %q, %v, %v; want cpu:0", opts, runKeyArenaShrink, got, ok, err)
		}
		if (s.b.ro != nil) != opts.ArenaShrink {
			t.Errorf("options %+v: every run shrinks: %v", opts, s.b.ro != nil)
		}
		if err := s.ReleaseArena(nil); !errors.Is(err, ErrInputMismatch) {
			t.Errorf("options %+v: ReleaseArena(nil) = %v, want ErrInputMismatch", opts, err)
		}
		if err := s.ReleaseArena(addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})); err != nil {
			t.Errorf("options %+v: ReleaseArena: %v", opts, err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.ReleaseArena(addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})); !errors.Is(err, ErrClosed) {
			t.Errorf("options %+v: ReleaseArena after Close: %v, want ErrClosed", opts, err)
		}
	}
}

// TestReleaseArenaConcurrent shrinks the arena over and over while other
// goroutines run the model on inputs of many sizes, each checking its own
// results; run it with -race. ONNX Runtime frees only regions no run is
// using, so the runs never see their memory go.
func TestReleaseArenaConcurrent(t *testing.T) {
	rt := openRuntime(t, nil)
	m, w := arenaModel()
	s := newSession(t, rt, m, &SessionOptions{IntraOpThreads: 1, CPUArena: true})
	const workers, runs = 4, 30
	small := []Tensor{{Name: "x", Shape: []int64{1, 64}, Float32: make([]float32, 64)}}
	var (
		wg, releasers sync.WaitGroup
		done          = make(chan struct{})
		releases      atomic.Int64
	)
	errs := make(chan error, workers+2)
	for range 2 {
		releasers.Add(1)
		go func() {
			defer releasers.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				if err := s.ReleaseArena(small); err != nil {
					errs <- fmt.Errorf("ReleaseArena: %w", err)
					return
				}
				releases.Add(1)
			}
		}()
	}
	for k := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(k), 9))
			for i := range runs {
				rows := 1 + r.IntN(4000)
				x := make([]float32, rows*64)
				for j := range x {
					x[j] = r.Float32()*4 - 2
				}
				out, err := s.Run([]Tensor{{Name: "x", Shape: []int64{int64(rows), 64}, Float32: x}})
				if err != nil {
					errs <- fmt.Errorf("worker %d run %d: %w", k, i, err)
					return
				}
				if !closeEnough(out[0].Float32, arenaModelWant(x, w)) {
					errs <- fmt.Errorf("worker %d run %d (%d rows): y differs from the Go reference", k, i, rows)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(done)
	releasers.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	t.Logf("%d ReleaseArena calls during %d runs", releases.Load(), workers*runs)
}
