//go:build cgo

package ort

import (
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

// bigMatMulModel is y = x · W with W [n, n] random-ish float32: a stand-in
// for a real layer, big enough that load time is about the weights.
func bigMatMulModel(n int) testModel {
	w := make([]float32, n*n)
	for i := range w {
		w[i] = float32(i%97) / 97
	}
	return testModel{
		nodes:        []node{{op: "MatMul", inputs: []string{"x", "W"}, outputs: []string{"y"}}},
		inputs:       []valueInfo{tensorValue("x", onnxFloat, "batch", n)},
		outputs:      []valueInfo{tensorValue("y", onnxFloat, "batch", n)},
		initializers: []initializer{{name: "W", elem: onnxFloat, dims: []int64{int64(n), int64(n)}, raw: float32Raw(w)}},
	}
}

// BenchmarkNewSession measures a cold session load, and separately reading
// the inputs and outputs: from the protobuf (modelIO, what NewSession
// does) and through the temporary session onnxruntime_go needs for it
// (ortModelIO, what NewSession did, and still does for a model whose file
// leaves an output's rank open).
func BenchmarkNewSession(b *testing.B) {
	rt := openRuntime(b, nil)
	for _, n := range []int{4, 1024} {
		model := bigMatMulModel(n).bytes()
		name := "weights=" + strconv.Itoa(n*n*4/1024) + "KiB"
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(model)))
			for b.Loop() {
				s, err := rt.NewSession(model, &SessionOptions{Provider: ProviderCPU})
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
		b.Run(name+"/modelIO-only", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := modelIO(model); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/ortModelIO-only", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := ortModelIO(model); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkRunMatMul runs the small [1,4]·[4,3] model: the fixed cost of one
// Run through this package (validation, tensor wrapping, output copy).
func BenchmarkRunMatMul(b *testing.B) {
	rt := openRuntime(b, nil)
	variants := []struct {
		name string
		opts SessionOptions
	}{
		{"default", SessionOptions{}},
		{"arena", SessionOptions{CPUArena: true}},
		{"arena+pattern", SessionOptions{CPUArena: true, MemoryPattern: true}},
		{"spin", SessionOptions{Spin: true}},
		{"1-thread", SessionOptions{IntraOpThreads: 1}},
	}
	x := []float32{1, 2, 3, 4}
	for _, v := range variants {
		s := newSession(b, rt, matMulModel(), &v.opts)
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			in := []Tensor{{Name: "x", Shape: []int64{1, 4}, Float32: x}}
			for b.Loop() {
				if _, err := s.Run(in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	s := newSession(b, rt, matMulModel(), nil)
	b.Run("RunWithOutputs", func(b *testing.B) {
		b.ReportAllocs()
		in := []Tensor{{Name: "x", Shape: []int64{1, 4}, Float32: x}}
		out := []Tensor{{Name: "y", Shape: []int64{1, 3}, Float32: make([]float32, 3)}}
		for b.Loop() {
			if _, err := s.RunWithOutputs(in, out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			in := []Tensor{{Name: "x", Shape: []int64{1, 4}, Float32: []float32{1, 2, 3, 4}}}
			for pb.Next() {
				if _, err := s.Run(in); err != nil {
					b.Error(err)
					return
				}
			}
		})
	})
}

// BenchmarkRunKVConcat appends one step to a 256-step KV cache of
// [1, 8, seq, 64] float32 (512 KiB): an ORT-allocated output (malloc'd by
// ORT, or from its arena, then copied into Go by onnxruntime_go) against
// RunWithOutputs writing into a reused Go buffer.
func BenchmarkRunKVConcat(b *testing.B) {
	rt := openRuntime(b, nil)
	m := concatModel()
	for i := range m.inputs {
		m.inputs[i].dims = []dim{1, 8, m.inputs[i].dims[2], 64}
	}
	m.outputs[0].dims = []dim{1, 8, "total_seq", 64}
	s := newSession(b, rt, m, nil)
	arena := newSession(b, rt, m, &SessionOptions{CPUArena: true})
	past := Tensor{Name: "past", Shape: []int64{1, 8, 256, 64}, Float32: make([]float32, 8*256*64)}
	step := Tensor{Name: "new", Shape: []int64{1, 8, 1, 64}, Float32: make([]float32, 8*64)}
	in := []Tensor{past, step}
	b.Run("Run", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(8 * 257 * 64 * 4))
		for b.Loop() {
			if _, err := s.Run(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Run/arena", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(8 * 257 * 64 * 4))
		for b.Loop() {
			if _, err := arena.Run(in); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("RunWithOutputs", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(8 * 257 * 64 * 4))
		out := []Tensor{{Name: "present", Shape: []int64{1, 8, 257, 64}, Float32: make([]float32, 8*257*64)}}
		for b.Loop() {
			if _, err := s.RunWithOutputs(in, out); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// rssBytes is the resident set size of this process.
func rssBytes(t *testing.T) int64 {
	t.Helper()
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b))
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// TestRunReleasesOutputs runs a model with a 1 MiB output 1000 times. With
// the output values left undestroyed the process grows by over 400 MiB
// (checked by deleting the destroy); released, by allocator slack only.
func TestRunReleasesOutputs(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), addModel(), &SessionOptions{IntraOpThreads: 1})
	x := make([]float32, 3*87382) // ~1 MiB
	in := addInputs(x, x)
	run := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := s.Run(in); err != nil {
				t.Fatal(err)
			}
		}
		runtime.GC()
		debug.FreeOSMemory()
	}
	run(200)
	before := rssBytes(t)
	run(1000)
	grew := rssBytes(t) - before
	if grew > 256<<20 {
		t.Errorf("RSS grew by %d MiB over 1000 runs of a 1 MiB output: outputs are leaking", grew>>20)
	}
	t.Logf("RSS change over 1000 runs: %+d KiB", grew>>10)
}
