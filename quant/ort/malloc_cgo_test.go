//go:build cgo

package ort

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

func openRuntimeBuilding(t *testing.T, building func(build func())) *Runtime {
	t.Helper()
	return openRuntimeWith(t, Options{Building: building})
}

// TestBuildingOncePerSession: Options.Building wraps the whole build of a
// session once, however many providers ProviderAuto tries on the way, and
// also when the build fails; a session refused before ONNX Runtime sees
// it never reaches it.
func TestBuildingOncePerSession(t *testing.T) {
	var calls, inside atomic.Int32
	rt := openRuntimeBuilding(t, func(build func()) {
		calls.Add(1)
		inside.Add(1)
		defer inside.Add(-1)
		build()
	})
	expect := func(what string, want int32) {
		t.Helper()
		if got := calls.Load(); got != want {
			t.Errorf("after %s: Building called %d times in all, want %d", what, got, want)
		}
	}
	in := addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})

	cpu := newSession(t, rt, addModel(), &SessionOptions{Provider: ProviderCPU})
	expect("a cpu session", 1)
	auto := newSession(t, rt, addModel(), &SessionOptions{Provider: ProviderAuto})
	expect("an auto session on "+string(auto.Provider()), 2)
	for _, s := range []*Session{cpu, auto} {
		if _, err := s.Run(in); err != nil {
			t.Errorf("%s session: %v", s.Provider(), err)
		}
	}

	unknownOp := addModel()
	unknownOp.nodes[0].op = "NoSuchOperator"
	if _, err := rt.NewSession(unknownOp.bytes(), nil); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("unknown operator: %v, want ErrInvalidModel", err)
	}
	expect("a model ONNX Runtime refuses", 3)

	if _, err := rt.NewSession(addModel().bytes(), &SessionOptions{IntraOpThreads: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad options: %v, want ErrInvalidOptions", err)
	}
	if _, err := rt.NewSession(nil, nil); !errors.Is(err, ErrInvalidModel) {
		t.Errorf("no model: %v, want ErrInvalidModel", err)
	}
	expect("two sessions refused in Go", 3)
	if n := inside.Load(); n != 0 {
		t.Errorf("%d Building calls still inside", n)
	}
}

// TestBuildingNeverBuilds: a Building that does not call build is an
// error that names it, not a nil session.
func TestBuildingNeverBuilds(t *testing.T) {
	rt := openRuntimeBuilding(t, func(func()) {})
	s, err := rt.NewSession(addModel().bytes(), nil)
	if err == nil || s != nil {
		t.Fatalf("NewSession = %v, %v; want an error", s, err)
	}
	if !strings.Contains(err.Error(), "Building") {
		t.Errorf("error %q does not name Options.Building", err)
	}
	rt.mu.Lock()
	open := len(rt.sessions)
	rt.mu.Unlock()
	if open != 0 {
		t.Errorf("%d sessions registered", open)
	}
}

// TestLoadThresholdSessions builds and runs sessions through LoadThreshold,
// the Building mynahd uses.
func TestLoadThresholdSessions(t *testing.T) {
	rt := openRuntimeBuilding(t, LoadThreshold(128<<10, MaxMMapThreshold))
	m, w := arenaModel()
	x := make([]float32, 5*64)
	for i := range x {
		x[i] = float32(i%7) - 3
	}
	for _, opts := range []*SessionOptions{nil, {IntraOpThreads: 1, CPUArena: true, ArenaShrink: true}} {
		s := newSession(t, rt, m, opts)
		out, err := s.Run([]Tensor{{Name: "x", Shape: []int64{5, 64}, Float32: x}})
		if err != nil {
			t.Fatal(err)
		}
		if !closeEnough(out[0].Float32, arenaModelWant(x, w)) {
			t.Errorf("options %+v: y differs from the Go reference", opts)
		}
	}
}

// TestBuildingTwiceBuildsOnce: a Building that calls build a second time,
// after it or alongside it, still gets one session: ONNX Runtime builds
// once (the optimized file it writes on each build is not written again),
// one session is registered, and for NewSessionORT free is called once.
func TestBuildingTwiceBuildsOnce(t *testing.T) {
	var saved string
	twice := map[string]func(build func()){
		"after": func(build func()) {
			build()
			os.Remove(saved)
			build()
		},
		"alongside": func(build func()) {
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); build() }()
			build()
			wg.Wait()
			os.Remove(saved)
			build()
		},
	}
	for name, building := range twice {
		t.Run(name, func(t *testing.T) {
			rt := openRuntimeBuilding(t, building)
			registered := func() int {
				rt.mu.Lock()
				defer rt.mu.Unlock()
				return len(rt.sessions)
			}
			saved = filepath.Join(t.TempDir(), "model.ort")
			s := newSession(t, rt, matMulModel(), &SessionOptions{Provider: ProviderCPU, SaveOptimized: saved})
			if _, err := os.Stat(saved); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("the optimized model was written again after the first build (%v)", err)
			}
			if n := registered(); n != 1 {
				t.Errorf("%d sessions registered, want 1", n)
			}
			x := []float32{1, 2, 3, 4}
			if out, err := s.Run([]Tensor{{Name: "x", Shape: []int64{1, 4}, Float32: x}}); err != nil || !closeEnough(out[0].Float32, matMulWant(x)) {
				t.Errorf("run: %v, %v", out, err)
			}

			saved = filepath.Join(t.TempDir(), "unused.ort")
			_, data := saveOptimized(t, openRuntime(t, nil), matMulModel().bytes(), SessionOptions{Provider: ProviderCPU})
			f := &freeCount{t: t, buf: ortBuffer(t, data)}
			so, err := rt.NewSessionORT(f.buf, s.Inputs(), s.Outputs(), f.free, &SessionOptions{Provider: ProviderCPU})
			if err != nil {
				f.free()
				t.Fatal(err)
			}
			if n := registered(); n != 2 {
				t.Errorf("%d sessions registered, want 2", n)
			}
			if err := so.Close(); err != nil {
				t.Fatal(err)
			}
			f.expect("NewSessionORT's session closed", 1)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if n := registered(); n != 0 {
				t.Errorf("%d sessions registered after both closed", n)
			}
		})
	}
}
