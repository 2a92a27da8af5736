//go:build cgo

package ort

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func openRuntime(t testing.TB, log *slog.Logger) *Runtime {
	t.Helper()
	return openRuntimeWith(t, Options{Logger: log})
}

// openRuntimeWith opens the project's library with o until the test ends.
func openRuntimeWith(t testing.TB, o Options) *Runtime {
	t.Helper()
	o.LibraryPath = projectLib(t)
	rt, err := Open(&o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("close runtime: %v", err)
		}
	})
	return rt
}

func newSession(t testing.TB, rt *Runtime, m testModel, opts *SessionOptions) *Session {
	t.Helper()
	return newSessionBytes(t, rt, m.bytes(), opts)
}

// newSessionBytes builds a session of model that is closed when the test
// ends.
func newSessionBytes(t testing.TB, rt *Runtime, model []byte, opts *SessionOptions) *Session {
	t.Helper()
	s, err := rt.NewSession(model, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close session: %v", err)
		}
	})
	return s
}

func TestOpenVersion(t *testing.T) {
	rt := openRuntime(t, nil)
	// setup.sh stamps the release it installed next to the library.
	stamp, err := os.ReadFile(filepath.Join(filepath.Dir(projectLib(t)), "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Fields(string(stamp))[0]
	if rt.Version() != want || want != "1.30.0" {
		t.Errorf("Version() = %q, setup.sh installed %q; want 1.30.0", rt.Version(), want)
	}
	if rt.LibraryPath() != projectLib(t) {
		t.Errorf("LibraryPath() = %q, want %q", rt.LibraryPath(), projectLib(t))
	}
}

func TestOpenShared(t *testing.T) {
	lib := projectLib(t)
	a, err := Open(&Options{LibraryPath: lib})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Open(&Options{LibraryPath: lib})
	if err != nil {
		t.Fatalf("second Open with the same library: %v", err)
	}
	// A symlink to the same file is the same library.
	link := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.Symlink(lib, link); err != nil {
		t.Fatal(err)
	}
	c, err := Open(&Options{LibraryPath: link})
	if err != nil {
		t.Fatalf("Open through a symlink: %v", err)
	}
	other := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	if err := os.WriteFile(other, []byte("not loaded"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(&Options{LibraryPath: other}); !errors.Is(err, ErrLibraryConflict) {
		t.Fatalf("Open with another library while one is loaded: %v, want ErrLibraryConflict", err)
	}
	for _, rt := range []*Runtime{a, c} {
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	// b still holds the library: sessions keep working.
	s, err := b.NewSession(addModel().bytes(), nil)
	if err != nil {
		t.Fatalf("session on the remaining runtime: %v", err)
	}
	if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{4, 5, 6})); err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewSession(addModel().bytes(), nil); !errors.Is(err, ErrClosed) {
		t.Errorf("NewSession on a closed runtime: %v, want ErrClosed", err)
	}
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{4, 5, 6})); !errors.Is(err, ErrClosed) {
		t.Errorf("Run after the runtime closed: %v, want ErrClosed", err)
	}
}

// libcPath finds the C library this test process has mapped: a real shared
// library that is not ONNX Runtime.
func libcPath(t *testing.T) string {
	t.Helper()
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) == 6 && strings.Contains(filepath.Base(f[5]), "libc.so") {
			return f[5]
		}
	}
	t.Fatal("no libc.so in /proc/self/maps")
	return ""
}

func TestOpenBadLibrary(t *testing.T) {
	dir := t.TempDir()
	garbage := filepath.Join(dir, "libonnxruntime.so.1")
	if err := os.WriteFile(garbage, bytes.Repeat([]byte("mynah"), 1000), 0o755); err != nil {
		t.Fatal(err)
	}
	real, err := os.ReadFile(projectLib(t))
	if err != nil {
		t.Fatal(err)
	}
	truncated := filepath.Join(dir, "truncated.so")
	if err := os.WriteFile(truncated, real[:4096], 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, path, mention string
	}{
		{"garbage", garbage, "not an ELF shared library"},
		{"truncated", truncated, "file truncated"},
		{"not onnx runtime", libcPath(t), "not ONNX Runtime"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rt, err := Open(&Options{LibraryPath: tc.path})
			if err == nil {
				rt.Close()
				t.Fatalf("Open(%s) succeeded", tc.path)
			}
			if !errors.Is(err, ErrBadLibrary) {
				t.Errorf("got %v, want ErrBadLibrary", err)
			}
			if !strings.Contains(err.Error(), tc.mention) || !strings.Contains(err.Error(), tc.path) {
				t.Errorf("error %q should name %s and say %q", err, tc.path, tc.mention)
			}
		})
	}
	// A failed load leaves nothing behind: the real library still opens.
	openRuntime(t, nil)
}

func TestOpenMissingConfiguredLibrary(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libonnxruntime.so.1")
	_, err := Open(&Options{LibraryPath: missing})
	if !errors.Is(err, ErrLibraryNotFound) || !strings.Contains(err.Error(), missing) {
		t.Fatalf("got %v, want ErrLibraryNotFound naming %s", err, missing)
	}
}

func TestSessionIntrospection(t *testing.T) {
	rt := openRuntime(t, nil)
	tests := []struct {
		name            string
		model           testModel
		inputs, outputs string
	}{
		{"add", addModel(), "x float32[?,3] y float32[?,3]", "z float32[?,3]"},
		{"matmul (initializer is not an input)", matMulModel(), "x float32[?,4]", "y float32[?,3]"},
		{"int64 and scalars", idsModel(), "ids int64[1,?] offset int64[]", "out int64[1,?] sum int64[]"},
		{"kv concat", concatModel(), "past float32[1,2,?,4] new float32[1,2,?,4]", "present float32[1,2,?,4]"},
		{"element types", identityModel(),
			"f16 float16[2,?] f64 float64[2,?] i32 int32[2,?] i8 int8[2,?] u8 uint8[2,?] b bool[2,?]",
			"f16_out float16[2,?] f64_out float64[2,?] i32_out int32[2,?] i8_out int8[2,?] u8_out uint8[2,?] b_out bool[2,?]"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, rt, tc.model, nil)
			if got := infoString(s.Inputs()); got != tc.inputs {
				t.Errorf("inputs %s, want %s", got, tc.inputs)
			}
			if got := infoString(s.Outputs()); got != tc.outputs {
				t.Errorf("outputs %s, want %s", got, tc.outputs)
			}
		})
	}
	// Dynamic dimensions are -1, and callers get copies.
	s := newSession(t, rt, concatModel(), nil)
	in := s.Inputs()
	if !slices.Equal(in[0].Dims, []int64{1, 2, -1, 4}) {
		t.Errorf("past dims %v, want [1 2 -1 4]", in[0].Dims)
	}
	in[0].Dims[0] = 99
	if s.Inputs()[0].Dims[0] != 1 {
		t.Error("Inputs() returned the session's own slice")
	}
}

func TestMetadata(t *testing.T) {
	rt := openRuntime(t, nil)
	got := newSession(t, rt, matMulModel(), nil).Metadata()
	want := map[string]string{"voice": "test", "sample_rate": "22050"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("metadata %v, want %v", got, want)
	}
	if md := newSession(t, rt, addModel(), nil).Metadata(); len(md) != 0 {
		t.Errorf("model without metadata reports %v", md)
	}
}
