//go:build cgo

package ort

import (
	"bytes"
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"
)

// ortBuffer copies data into an anonymous mapping, read-only from then on
// as a mapped file would be, so that ONNX Runtime writing into the model it
// was told to use in place crashes the test instead of passing. The
// mapping is the caller's to unmap (unmapORT).
func ortBuffer(t testing.TB, data []byte) []byte {
	t.Helper()
	m, err := unix.Mmap(-1, 0, len(data), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_ANON|unix.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	copy(m, data)
	if err := unix.Mprotect(m, unix.PROT_READ); err != nil {
		t.Fatal(err)
	}
	return m
}

func unmapORT(t testing.TB, m []byte) {
	t.Helper()
	if err := unix.Munmap(m); err != nil {
		t.Errorf("munmap: %v", err)
	}
}

// freeCount is a NewSessionORT free that counts its calls and unmaps the
// buffer on the first.
type freeCount struct {
	t     testing.TB
	buf   []byte
	calls atomic.Int32
}

func (f *freeCount) free() {
	if f.calls.Add(1) == 1 && f.buf != nil {
		unmapORT(f.t, f.buf)
	}
}

func (f *freeCount) expect(what string, want int32) {
	f.t.Helper()
	if got := f.calls.Load(); got != want {
		f.t.Errorf("%s: free called %d times, want %d", what, got, want)
	}
}

// saveOptimized builds model with opts and SaveOptimized set, and returns
// the session and the file ONNX Runtime wrote.
func saveOptimized(t *testing.T, rt *Runtime, model []byte, opts SessionOptions) (*Session, []byte) {
	t.Helper()
	opts.SaveOptimized = filepath.Join(t.TempDir(), "model.ort")
	s := newSessionBytes(t, rt, model, &opts)
	data, err := os.ReadFile(opts.SaveOptimized)
	if err != nil {
		t.Fatalf("SaveOptimized: %v", err)
	}
	if !IsORTFormat(data) {
		t.Fatalf("SaveOptimized wrote %d bytes starting %q, which IsORTFormat refuses", len(data), data[:min(len(data), 8)])
	}
	return s, data
}

// ortFormatCase is a model and the inputs it is compared on.
type ortFormatCase struct {
	name   string
	model  func(t *testing.T) []byte
	inputs func(rng *rand.Rand) [][]Tensor
}

func ortFormatCases() []ortFormatCase {
	// The residual blocks of a HiFi-GAN: on x86 with AVX2 or AVX-512,
	// ONNX Runtime lays the 2-D convolutions out for its NCHWc kernels,
	// which is what an optimized file keeps and a plain ONNX file cannot.
	var residual liftNetCase
	for _, c := range liftNetCases {
		if c.name == "residual blocks" {
			residual = c
		}
	}
	convInputs := func(rng *rand.Rand) [][]Tensor {
		var runs [][]Tensor
		for _, length := range []int64{1000, 37, 1000} {
			x := make([]float32, residual.channels*length)
			for i := range x {
				x[i] = 2*rng.Float32() - 1
			}
			runs = append(runs, []Tensor{{Name: "x", Shape: []int64{1, residual.channels, length}, Float32: x}})
		}
		return runs
	}
	return []ortFormatCase{
		{
			name:  "matmul",
			model: func(*testing.T) []byte { return matMulModel().bytes() },
			inputs: func(rng *rand.Rand) [][]Tensor {
				var runs [][]Tensor
				for _, rows := range []int{1, 7, 300} {
					x := make([]float32, rows*4)
					for i := range x {
						x[i] = 4*rng.Float32() - 2
					}
					runs = append(runs, []Tensor{{Name: "x", Shape: []int64{int64(rows), 4}, Float32: x}})
				}
				return runs
			},
		},
		{
			name:   "conv 2-D (lifted)",
			model:  func(t *testing.T) []byte { _, lifted := buildLiftNet(t, residual); return lifted },
			inputs: convInputs,
		},
		{
			name:   "conv 1-D",
			model:  func(t *testing.T) []byte { orig, _ := buildLiftNet(t, residual); return orig },
			inputs: convInputs,
		},
	}
}

// TestSaveOptimizedLoadsAsORT saves each model's optimized form and loads
// it with NewSessionORT from read-only memory: the same inputs, outputs,
// metadata and results as the session that wrote it. Both run the same
// rewritten graph on the same CPU, so the results agree to a tolerance far
// below what a different kernel would give (1e-5 of the largest value,
// where TestLiftConv1DMatchesORT needs 1e-4 across kernels).
func TestSaveOptimizedLoadsAsORT(t *testing.T) {
	rt := openRuntime(t, nil)
	opts := SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1}
	for _, c := range ortFormatCases() {
		t.Run(c.name, func(t *testing.T) {
			model := c.model(t)
			if IsORTFormat(model) {
				t.Fatal("IsORTFormat takes the ONNX model for ONNX Runtime's format")
			}
			orig, data := saveOptimized(t, rt, model, opts)
			t.Logf("%d bytes of ONNX, %d of ORT format; NCHWc reorders in it (x86 with AVX2 or AVX-512, 2-D convolutions): %v",
				len(model), len(data), bytes.Contains(data, []byte("ReorderInput")))

			f := &freeCount{t: t, buf: ortBuffer(t, data)}
			loadOpts := opts
			loadOpts.CPUArena = true // any options, not only those it was saved with
			s, err := rt.NewSessionORT(f.buf, orig.Inputs(), orig.Outputs(), f.free, &loadOpts)
			if err != nil {
				f.free()
				t.Fatal(err)
			}
			if s.Provider() != ProviderCPU {
				t.Errorf("provider %s, want cpu", s.Provider())
			}
			if !slices.EqualFunc(s.Inputs(), orig.Inputs(), equalInfo) || !slices.EqualFunc(s.Outputs(), orig.Outputs(), equalInfo) {
				t.Errorf("ORT session: inputs %v outputs %v; want %v %v", s.Inputs(), s.Outputs(), orig.Inputs(), orig.Outputs())
			}
			if got, want := s.Metadata(), orig.Metadata(); !equalMaps(got, want) {
				t.Errorf("metadata %v, want %v", got, want)
			}

			for i, in := range c.inputs(rand.New(rand.NewPCG(5, 6))) {
				want, err := orig.Run(in)
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Run(in)
				if err != nil {
					t.Fatalf("run %d on the ORT session: %v", i, err)
				}
				if c.name == "matmul" && !closeEnough(want[0].Float32, matMulWant(in[0].Float32)) {
					t.Fatalf("run %d: the ONNX session differs from the Go reference", i)
				}
				for k := range want {
					if got[k].Name != want[k].Name || !slices.Equal(got[k].Shape, want[k].Shape) {
						t.Fatalf("run %d: output %s %v, want %s %v", i, got[k].Name, got[k].Shape, want[k].Name, want[k].Shape)
					}
					if diff, size := maxAbsDiff(got[k].Float32, want[k].Float32); diff > 1e-5*size || size == 0 {
						t.Errorf("run %d: %s differs by %g, %g of its largest value %g", i, want[k].Name, diff, diff/size, size)
					}
				}
			}
			f.expect("before Close", 0)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f.expect("after Close", 1)
			if err := s.Close(); err != nil {
				t.Errorf("second Close: %v", err)
			}
			f.expect("after a second Close", 1)
			if _, err := s.Run(c.inputs(rand.New(rand.NewPCG(1, 1)))[0]); !errors.Is(err, ErrClosed) {
				t.Errorf("Run after Close: %v, want ErrClosed", err)
			}
		})
	}
}

func equalInfo(a, b TensorInfo) bool {
	return a.Name == b.Name && a.Type == b.Type && slices.Equal(a.Dims, b.Dims)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestNewSessionORTErrors: what NewSessionORT refuses, and that it never
// calls free when it does.
func TestNewSessionORTErrors(t *testing.T) {
	rt := openRuntime(t, nil)
	orig, data := saveOptimized(t, rt, matMulModel().bytes(), SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1})
	buf := ortBuffer(t, data)
	t.Cleanup(func() { unmapORT(t, buf) })
	in, out := orig.Inputs(), orig.Outputs()
	unnamed := func(list []TensorInfo) []TensorInfo { l := cloneInfos(list); l[0].Name = ""; return l }
	untyped := func(list []TensorInfo) []TensorInfo { l := cloneInfos(list); l[0].Type = Undefined; return l }
	// A file cut short still starts like one: ONNX Runtime's verifier
	// refuses it before it reads anything.
	truncated := ortBuffer(t, data[:64])
	t.Cleanup(func() { unmapORT(t, truncated) })

	cases := []struct {
		name          string
		data          []byte
		inputs, outpt []TensorInfo
		opts          *SessionOptions
		want          error
		msg           string
	}{
		{"onnx protobuf", matMulModel().bytes(), in, out, nil, ErrInvalidModel, "not an ONNX Runtime format model"},
		{"empty", []byte{}, in, out, nil, ErrInvalidModel, "empty"},
		{"nil", nil, in, out, nil, ErrInvalidModel, "empty"},
		{"header only", buf[:8], in, out, nil, ErrInvalidModel, ""},
		{"truncated", truncated, in, out, nil, ErrInvalidModel, ""},
		{"no inputs", buf, nil, out, nil, ErrInvalidModel, "0 inputs"},
		{"no outputs", buf, in, nil, nil, ErrInvalidModel, "0 outputs"},
		{"unnamed input", buf, unnamed(in), out, nil, ErrInvalidModel, "without a name"},
		{"unnamed output", buf, in, unnamed(out), nil, ErrInvalidModel, "without a name"},
		{"input without type", buf, untyped(in), out, nil, ErrInvalidModel, "element type undefined"},
		{"bad options", buf, in, out, &SessionOptions{IntraOpThreads: -1}, ErrInvalidOptions, "IntraOpThreads"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &freeCount{t: t}
			s, err := rt.NewSessionORT(c.data, c.inputs, c.outpt, f.free, c.opts)
			if err == nil {
				s.Close()
				t.Fatalf("accepted")
			}
			if s != nil {
				t.Errorf("a session with the error %v", err)
			}
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("error %q, want %v saying %q", err, c.want, c.msg)
			}
			f.expect("on an error", 0)
		})
	}

	// ONNX Runtime checks names only when a run uses them: a session with
	// a wrong input name loads, every run fails with ONNX Runtime's
	// error, and the buffer is the session's until Close as usual.
	for _, c := range []struct {
		name   string
		rename func(in, out []TensorInfo)
		want   string
	}{
		{"wrong input name", func(in, _ []TensorInfo) { in[0].Name = "nope" }, "Invalid input name: nope"},
		{"wrong output name", func(_, out []TensorInfo) { out[0].Name = "nope" }, "Invalid output name: nope"},
	} {
		t.Run(c.name, func(t *testing.T) {
			in, out := orig.Inputs(), orig.Outputs()
			c.rename(in, out)
			f := &freeCount{t: t}
			s, err := rt.NewSessionORT(buf, in, out, f.free, nil)
			if err != nil {
				t.Fatalf("NewSessionORT: %v; ONNX Runtime used to leave names to the run", err)
			}
			_, err = s.Run([]Tensor{{Name: in[0].Name, Shape: []int64{1, 4}, Float32: []float32{1, 2, 3, 4}}})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("run: %v, want ONNX Runtime's %q", err, c.want)
			}
			f.expect("after the failed run", 0)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			f.expect("after Close", 1)
		})
	}

	t.Run("NewSession given ORT format", func(t *testing.T) {
		_, err := rt.NewSession(data, nil)
		if !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "NewSessionORT") {
			t.Errorf("NewSession: %v, want ErrInvalidModel pointing at NewSessionORT", err)
		}
	})

	t.Run("closed runtime", func(t *testing.T) {
		closed, err := Open(&Options{LibraryPath: projectLib(t)})
		if err != nil {
			t.Fatal(err)
		}
		if err := closed.Close(); err != nil {
			t.Fatal(err)
		}
		f := &freeCount{t: t}
		if _, err := closed.NewSessionORT(buf, in, out, f.free, nil); !errors.Is(err, ErrClosed) {
			t.Errorf("NewSessionORT on a closed runtime: %v, want ErrClosed", err)
		}
		f.expect("on a closed runtime", 0)
	})
}

// TestNewSessionORTRuntimeClose: Runtime.Close frees the buffers of the
// sessions it closes, once each, also while other goroutines keep loading;
// a load the close refuses frees nothing (its caller does).
func TestNewSessionORTRuntimeClose(t *testing.T) {
	saver := openRuntime(t, nil)
	orig, data := saveOptimized(t, saver, matMulModel().bytes(), SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1})
	in, out := orig.Inputs(), orig.Outputs()
	buf := ortBuffer(t, data)
	t.Cleanup(func() { unmapORT(t, buf) }) // after every session: cleanups run last first

	rt, err := Open(&Options{LibraryPath: projectLib(t)})
	if err != nil {
		t.Fatal(err)
	}
	first := &freeCount{t: t}
	s, err := rt.NewSessionORT(buf, in, out, first.free, &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}

	type load struct {
		s    *Session
		err  error
		free *freeCount
	}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		loads []load
	)
	started := make(chan struct{}, 4)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				f := &freeCount{t: t}
				s, err := rt.NewSessionORT(buf, in, out, f.free, &SessionOptions{Provider: ProviderCPU, IntraOpThreads: 1})
				mu.Lock()
				loads = append(loads, load{s, err, f})
				mu.Unlock()
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					return
				}
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
	first.expect("the session Runtime.Close closed", 1)
	if err := s.Close(); err != nil {
		t.Errorf("Close after Runtime.Close: %v", err)
	}
	first.expect("Close after Runtime.Close", 1)
	var made int
	for _, l := range loads {
		switch {
		case l.err == nil:
			made++
			l.free.expect("a session made while the runtime closed", 1)
		case errors.Is(l.err, ErrClosed):
			l.free.expect("a load the closed runtime refused", 0)
		default:
			t.Errorf("NewSessionORT: %v, want ErrClosed", l.err)
		}
	}
	t.Logf("%d sessions made and closed with the runtime, %d refused", made, len(loads)-made)
}

// TestSaveOptimizedProviders: the file is written by a session built on
// the CPU, whether asked for or fallen back to, and never by a GPU
// provider's: what it would write holds that provider's kernels.
func TestSaveOptimizedProviders(t *testing.T) {
	rt := openRuntime(t, nil)
	dir := t.TempDir()
	for _, p := range []Provider{ProviderCPU, ProviderAuto, ProviderCUDA} {
		t.Run(string(p), func(t *testing.T) {
			path := filepath.Join(dir, string(p)+".ort")
			// Something stale where the file goes is replaced.
			if err := os.WriteFile(path, []byte("stale"), 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := rt.NewSession(matMulModel().bytes(), &SessionOptions{Provider: p, SaveOptimized: path})
			if err != nil {
				if p == ProviderCUDA && errors.Is(err, ErrProviderUnavailable) {
					data, _ := os.ReadFile(path)
					if string(data) != "stale" {
						t.Errorf("a failed cuda session wrote %d bytes", len(data))
					}
					t.Logf("no cuda here: %v", err)
					return
				}
				t.Fatal(err)
			}
			defer s.Close()
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if wrote := IsORTFormat(data); wrote != (s.Provider() == ProviderCPU) {
				t.Errorf("a session asked for %s, built on %s: file written %v, want %v", p, s.Provider(), wrote, !wrote)
			}
		})
	}
}

// TestSaveOptimizedBadPath: ONNX Runtime writes the file only once it has
// built the session, and then fails the whole session with "SaveToOrtFormat
// Failed to save ORT format model to file: <path>", which says neither why
// nor which option. NewSession checks the directory first, and words ONNX
// Runtime's failure (shown here with a file /proc refuses to create) as
// one about SaveOptimized, not ErrInvalidModel.
func TestSaveOptimizedBadPath(t *testing.T) {
	rt := openRuntime(t, nil)
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, path string
		is         error
		msg        string
	}{
		{"missing directory", filepath.Join(dir, "missing", "m.ort"), fs.ErrNotExist, "create the directory"},
		{"parent is a file", filepath.Join(file, "m.ort"), nil, "is not a directory"},
		{"a directory", dir, nil, "SaveOptimized names a file"},
		{"refused by the kernel", "/proc/self/m.ort", nil, "could not write the file"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, err := rt.NewSession(matMulModel().bytes(), &SessionOptions{Provider: ProviderCPU, SaveOptimized: c.path})
			if err == nil {
				s.Close()
				t.Fatal("session made")
			}
			msg := err.Error()
			if errors.Is(err, ErrInvalidModel) || !strings.Contains(msg, "save optimized model to "+c.path) || !strings.Contains(msg, c.msg) {
				t.Errorf("error %q: want one about saving to %s saying %q, not ErrInvalidModel", msg, c.path, c.msg)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Errorf("error %q is not %v", msg, c.is)
			}
			t.Log(msg)
		})
	}
	rt.mu.Lock()
	open := len(rt.sessions)
	rt.mu.Unlock()
	if open != 0 {
		t.Errorf("%d sessions registered after failed builds", open)
	}
}
