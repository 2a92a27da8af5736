//go:build cgo

package ort

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"
)

func addInputs(x, y []float32) []Tensor {
	n := int64(len(x) / 3)
	return []Tensor{
		{Name: "x", Shape: []int64{n, 3}, Float32: x},
		{Name: "y", Shape: []int64{n, 3}, Float32: y},
	}
}

func TestRunAdd(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), addModel(), nil)
	x := []float32{1, 2, 3, 4, 5, 6}
	y := []float32{0.5, -2, 10, 1e6, -5, 0}
	out, err := s.Run(addInputs(x, y))
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 1 || out[0].Name != "z" || out[0].Type != Float32 {
		t.Fatalf("outputs %+v, want one float32 z", out)
	}
	if !slices.Equal(out[0].Shape, []int64{2, 3}) {
		t.Errorf("shape %v, want [2 3]", out[0].Shape)
	}
	for i := range x {
		if want := x[i] + y[i]; out[0].Float32[i] != want {
			t.Errorf("z[%d] = %v, want %v", i, out[0].Float32[i], want)
		}
	}
	// Inputs are read, not written.
	if !slices.Equal(x, []float32{1, 2, 3, 4, 5, 6}) {
		t.Errorf("input modified: %v", x)
	}
}

// matMulWant computes x · W in Go, the reference for the model.
func matMulWant(x []float32) []float32 {
	rows := len(x) / 4
	y := make([]float32, rows*3)
	for r := 0; r < rows; r++ {
		for c := 0; c < 3; c++ {
			var sum float32
			for k := 0; k < 4; k++ {
				sum += x[r*4+k] * matMulWeights[k*3+c]
			}
			y[r*3+c] = sum
		}
	}
	return y
}

func closeEnough(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-4*(1+math.Abs(float64(b[i]))) {
			return false
		}
	}
	return true
}

func TestRunMatMulEveryOption(t *testing.T) {
	rt := openRuntime(t, nil)
	x := []float32{1, 0, 0, 0, 0, 1, 0, 0, 0.5, -1, 2, 3}
	want := matMulWant(x)
	variants := map[string]*SessionOptions{
		"nil (defaults)":      nil,
		"cpu, arena on":       {Provider: ProviderCPU, CPUArena: true},
		"cpu, arena, pattern": {Provider: ProviderCPU, CPUArena: true, MemoryPattern: true},
		"one thread":          {IntraOpThreads: 1},
		"parallel, spinning":  {IntraOpThreads: 2, InterOpThreads: 2, Spin: true},
		"optimizations off":   {GraphOptimization: GraphOptimizationDisabled},
		"basic optimizations": {GraphOptimization: GraphOptimizationBasic},
		"extended":            {GraphOptimization: GraphOptimizationExtended},
	}
	for name, opts := range variants {
		t.Run(name, func(t *testing.T) {
			s := newSession(t, rt, matMulModel(), opts)
			out, err := s.Run([]Tensor{{Name: "x", Shape: []int64{3, 4}, Float32: x}})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(out[0].Shape, []int64{3, 3}) || !closeEnough(out[0].Float32, want) {
				t.Errorf("y = %v %v, want [3 3] %v", out[0].Shape, out[0].Float32, want)
			}
		})
	}
	if _, err := rt.NewSession(matMulModel().bytes(), &SessionOptions{IntraOpThreads: -1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("negative threads: %v, want ErrInvalidOptions", err)
	}
}

func TestRunInt64AndScalars(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), idsModel(), nil)
	ids := []int64{3, 1, 4, 1, 5, 9, 2, 6}
	out, err := s.Run([]Tensor{
		{Name: "ids", Shape: []int64{1, int64(len(ids))}, Int64: ids},
		{Name: "offset", Int64: []int64{-1 << 40}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for i, id := range ids {
		want := id*2 - 1<<40
		sum += want
		if out[0].Int64[i] != want {
			t.Errorf("out[%d] = %d, want %d", i, out[0].Int64[i], want)
		}
	}
	if out[1].Name != "sum" || len(out[1].Shape) != 0 || !slices.Equal(out[1].Int64, []int64{sum}) {
		t.Errorf("sum = %+v, want scalar %d", out[1], sum)
	}
}

func TestRunZeroLengthDims(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), concatModel(), nil)
	seq := func(n int, base float32) []float32 {
		v := make([]float32, 1*2*n*4)
		for i := range v {
			v[i] = base + float32(i)
		}
		return v
	}
	kv := func(name string, n int, data []float32) Tensor {
		return Tensor{Name: name, Shape: []int64{1, 2, int64(n), 4}, Float32: data}
	}
	// First decoder step: an empty past, given without any data slice.
	newKV := seq(3, 100)
	out, err := s.Run([]Tensor{{Name: "past", Shape: []int64{1, 2, 0, 4}}, kv("new", 3, newKV)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out[0].Shape, []int64{1, 2, 3, 4}) || !slices.Equal(out[0].Float32, newKV) {
		t.Errorf("present after empty past: %v %v, want [1 2 3 4] %v", out[0].Shape, out[0].Float32, newKV)
	}
	// Next step: the present becomes the past.
	next := seq(1, 500)
	out2, err := s.Run([]Tensor{kv("past", 3, out[0].Float32), kv("new", 1, next)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out2[0].Shape, []int64{1, 2, 4, 4}) {
		t.Fatalf("present shape %v, want [1 2 4 4]", out2[0].Shape)
	}
	// Concat on axis 2 interleaves per head: head h is past[h] then new[h].
	for h := 0; h < 2; h++ {
		got := out2[0].Float32[h*16 : h*16+16]
		want := append(slices.Clone(newKV[h*12:h*12+12]), next[h*4:h*4+4]...)
		if !slices.Equal(got, want) {
			t.Errorf("head %d = %v, want %v", h, got, want)
		}
	}
	// Both empty: a zero-element output comes back as an empty, non-nil slice.
	out3, err := s.Run([]Tensor{kv("past", 0, nil), kv("new", 0, []float32{})})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(out3[0].Shape, []int64{1, 2, 0, 4}) || out3[0].Float32 == nil || len(out3[0].Float32) != 0 {
		t.Errorf("empty present: shape %v data %v (nil %v)", out3[0].Shape, out3[0].Float32, out3[0].Float32 == nil)
	}
}

func TestRunElementTypes(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), identityModel(), nil)
	// 1.0, -2.0, 0.5, 65504 (max half), +Inf, NaN as float16 bit patterns.
	f16 := []uint16{0x3C00, 0xC000, 0x3800, 0x7BFF, 0x7C00, 0x7E00}
	in := []Tensor{
		{Name: "f16", Type: Float16, Shape: []int64{2, 3}, Float16: f16},
		{Name: "f64", Shape: []int64{2, 1}, Float64: []float64{math.Pi, -math.MaxFloat64}},
		{Name: "i32", Shape: []int64{2, 2}, Int32: []int32{math.MinInt32, -1, 0, math.MaxInt32}},
		{Name: "i8", Shape: []int64{2, 2}, Int8: []int8{-128, -1, 1, 127}},
		{Name: "u8", Shape: []int64{2, 1}, Uint8: []uint8{0, 255}},
		{Name: "b", Shape: []int64{2, 2}, Bool: []bool{true, false, false, true}},
	}
	// ORT cannot hand back a float16 output of dynamic shape through
	// onnxruntime_go: Run says so and names the way out.
	_, err := s.Run(in)
	if !errors.Is(err, ErrUnsupportedModel) || !strings.Contains(err.Error(), "f16_out") || !strings.Contains(err.Error(), "RunWithOutputs") {
		t.Fatalf("Run with a dynamic float16 output: %v; want ErrUnsupportedModel naming f16_out and RunWithOutputs", err)
	}
	out, err := s.RunWithOutputs(in, []Tensor{{Name: "f16_out", Shape: []int64{2, 3}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("%d outputs, want %d", len(out), len(in))
	}
	types := []ElementType{Float16, Float64, Int32, Int8, Uint8, Bool}
	for i, o := range out {
		if o.Name != in[i].Name+"_out" || o.Type != types[i] || !slices.Equal(o.Shape, in[i].Shape) {
			t.Errorf("output %d: %s %v %v, want %s_out %v %v", i, o.Name, o.Type, o.Shape, in[i].Name, types[i], in[i].Shape)
		}
	}
	if !slices.Equal(out[0].Float16, f16) ||
		!slices.Equal(out[1].Float64, in[1].Float64) ||
		!slices.Equal(out[2].Int32, in[2].Int32) ||
		!slices.Equal(out[3].Int8, in[3].Int8) ||
		!slices.Equal(out[4].Uint8, in[4].Uint8) ||
		!slices.Equal(out[5].Bool, in[5].Bool) {
		t.Errorf("values changed on the way through:\nin  %+v\nout %+v", in, out)
	}
	// An empty float16 tensor in and out.
	empty := slices.Clone(in)
	empty[0] = Tensor{Name: "f16", Shape: []int64{2, 0}}
	out, err = s.RunWithOutputs(empty, []Tensor{{Name: "f16_out", Shape: []int64{2, 0}}})
	if err != nil {
		t.Fatalf("empty float16: %v", err)
	}
	if out[0].Type != Float16 || len(out[0].Float16) != 0 {
		t.Errorf("empty float16 output %+v", out[0])
	}
}

func TestRunWithOutputsWritesInPlace(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), matMulModel(), nil)
	x := []float32{1, 2, 3, 4, 5, 6, 7, 8}
	buf := make([]float32, 6)
	out, err := s.RunWithOutputs(
		[]Tensor{{Name: "x", Shape: []int64{2, 4}, Float32: x}},
		[]Tensor{{Name: "y", Shape: []int64{2, 3}, Float32: buf}})
	if err != nil {
		t.Fatal(err)
	}
	if &out[0].Float32[0] != &buf[0] {
		t.Error("output was not written into the caller's buffer")
	}
	if !closeEnough(buf, matMulWant(x)) {
		t.Errorf("buffer %v, want %v", buf, matMulWant(x))
	}
	// A buffer shape the model contradicts is refused before ORT sees it.
	_, err = s.RunWithOutputs([]Tensor{{Name: "x", Shape: []int64{2, 4}, Float32: x}},
		[]Tensor{{Name: "y", Shape: []int64{2, 4}, Float32: make([]float32, 8)}})
	if !errors.Is(err, ErrInputMismatch) || !strings.Contains(err.Error(), `"y"`) {
		t.Errorf("wrong output shape: %v, want ErrInputMismatch naming y", err)
	}
	// A shape that fits the declaration but not the result is ORT's error.
	_, err = s.RunWithOutputs([]Tensor{{Name: "x", Shape: []int64{2, 4}, Float32: x}},
		[]Tensor{{Name: "y", Shape: []int64{5, 3}}})
	if err == nil {
		t.Error("ORT accepted an output buffer of the wrong batch size")
	}
}

func TestRunRejectsMismatchedInputs(t *testing.T) {
	rt := openRuntime(t, nil)
	s := newSession(t, rt, idsModel(), nil)
	ids := Tensor{Name: "ids", Shape: []int64{1, 2}, Int64: []int64{1, 2}}
	off := Tensor{Name: "offset", Int64: []int64{0}}
	tests := []struct {
		name    string
		in      []Tensor
		mention string
	}{
		{"no inputs", nil, `"ids"`},
		{"unknown name", []Tensor{ids, off, {Name: "speaker", Int64: []int64{0}}}, `"speaker"`},
		{"float for int64", []Tensor{{Name: "ids", Shape: []int64{1, 2}, Float32: []float32{1, 2}}, off}, "model wants int64, got float32"},
		{"batch of 2 for fixed 1", []Tensor{{Name: "ids", Shape: []int64{2, 1}, Int64: []int64{1, 2}}, off}, "dimension 0 must be 1"},
		{"short data", []Tensor{{Name: "ids", Shape: []int64{1, 3}, Int64: []int64{1, 2}}, off}, "needs 3 elements"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := s.Run(tc.in)
			if !errors.Is(err, ErrInputMismatch) || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("got %v; want ErrInputMismatch mentioning %s", err, tc.mention)
			}
		})
	}
}

// TestRunConcurrent shares one session between goroutines, each checking
// its own results; run it with -race.
func TestRunConcurrent(t *testing.T) {
	s := newSession(t, openRuntime(t, nil), matMulModel(), &SessionOptions{IntraOpThreads: 1})
	const workers, runs = 8, 40
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < runs; r++ {
				rows := 1 + (w+r)%5
				x := make([]float32, rows*4)
				for i := range x {
					x[i] = float32(w*1000 + r*10 + i)
				}
				out, err := s.Run([]Tensor{{Name: "x", Shape: []int64{int64(rows), 4}, Float32: x}})
				if err != nil {
					errs <- err
					return
				}
				if !closeEnough(out[0].Float32, matMulWant(x)) {
					errs <- fmt.Errorf("worker %d run %d: got %v, want %v", w, r, out[0].Float32, matMulWant(x))
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestSessionClose(t *testing.T) {
	rt := openRuntime(t, nil)
	s, err := rt.NewSession(addModel().bytes(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{1, 2, 3})); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after Close: %v, want ErrClosed", err)
	}
	// Inputs and outputs stay readable: a cache may still describe it.
	if len(s.Inputs()) != 2 {
		t.Errorf("Inputs() after Close: %v", s.Inputs())
	}
}

// TestRuntimeCloseWhileLoading closes a Runtime while other goroutines keep
// creating sessions on it: every session either closes with the Runtime or
// is refused, and none outlives the library.
func TestRuntimeCloseWhileLoading(t *testing.T) {
	rt, err := Open(&Options{LibraryPath: projectLib(t)})
	if err != nil {
		t.Fatal(err)
	}
	model := addModel().bytes()
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		sessions []*Session
	)
	started := make(chan struct{}, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				s, err := rt.NewSession(model, &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1})
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					if !errors.Is(err, ErrClosed) {
						t.Errorf("NewSession: %v, want ErrClosed", err)
					}
					return
				}
				mu.Lock()
				sessions = append(sessions, s)
				mu.Unlock()
			}
		}()
	}
	for w := 0; w < 4; w++ {
		<-started
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for _, s := range sessions {
		if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{1, 2, 3})); !errors.Is(err, ErrClosed) {
			t.Fatalf("a session survived its Runtime: Run = %v", err)
		}
	}
	// The library was released: another one may be loaded now.
	if _, err := Open(&Options{LibraryPath: libcPath(t)}); !errors.Is(err, ErrBadLibrary) {
		t.Errorf("after Close, loading libc: %v; want ErrBadLibrary (not ErrLibraryConflict)", err)
	}
}
