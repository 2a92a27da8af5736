//go:build cgo

package ort

import (
	"bytes"
	"errors"
	"flag"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.onnx from the test model builders")

var testdataModels = map[string]func() testModel{
	"add":      addModel,
	"matmul":   matMulModel,
	"ids":      idsModel,
	"concat":   concatModel,
	"identity": identityModel,
}

// TestTestdataModels keeps testdata/*.onnx equal to what the builders write
// (go test -run TestTestdataModels -update regenerates them) and loads each
// file through NewSessionFromFile.
func TestTestdataModels(t *testing.T) {
	rt := openRuntime(t, nil)
	for name, build := range testdataModels {
		path := filepath.Join("testdata", name+".onnx")
		want := build().bytes()
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run go test -run TestTestdataModels -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the %s builder; rerun with -update", path, name)
		}
		s, err := rt.NewSessionFromFile(path, nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(s.Inputs()) == 0 || len(s.Outputs()) == 0 {
			t.Errorf("%s: inputs %v outputs %v", path, s.Inputs(), s.Outputs())
		}
		s.Close()
	}
	_, err := rt.NewSessionFromFile(filepath.Join("testdata", "missing.onnx"), nil)
	if !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
}

func TestNewSessionFromFileTooLarge(t *testing.T) {
	rt := openRuntime(t, nil)
	// A sparse file: its size exceeds the limit without using the disk.
	path := filepath.Join(t.TempDir(), "huge.onnx")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxModelBytes + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = rt.NewSessionFromFile(path, nil)
	if !errors.Is(err, ErrModelTooLarge) || !strings.Contains(err.Error(), "MaxModelBytes") {
		t.Errorf("got %v, want ErrModelTooLarge naming MaxModelBytes", err)
	}
}

// TestInvalidModelBytes hands ONNX Runtime bytes that are not a model. It
// must refuse them with an error; a crash fails the whole test binary.
func TestInvalidModelBytes(t *testing.T) {
	rt := openRuntime(t, nil)
	valid := matMulModel().bytes()
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	unknownOp := matMulModel()
	unknownOp.nodes[0].op = "NoSuchOperator"
	danglingInput := addModel()
	danglingInput.nodes[0].inputs[1] = "nowhere"
	tests := map[string][]byte{
		"nil":              nil,
		"zero bytes":       {},
		"random bytes":     random,
		"text":             []byte("this is not an onnx model\n"),
		"truncated model":  valid[:len(valid)/2],
		"unknown operator": unknownOp.bytes(),
		"dangling input":   danglingInput.bytes(),
	}
	for name, model := range tests {
		t.Run(name, func(t *testing.T) {
			s, err := rt.NewSession(model, nil)
			if err == nil {
				s.Close()
				t.Fatal("accepted")
			}
			if !errors.Is(err, ErrInvalidModel) {
				t.Errorf("got %v, want ErrInvalidModel", err)
			}
		})
	}
}

// TestUnsupportedModel: a model whose input has an element type Tensor
// cannot carry is refused at load, naming the input.
func TestUnsupportedModel(t *testing.T) {
	rt := openRuntime(t, nil)
	m := testModel{
		nodes:   []node{{op: "Identity", inputs: []string{"text"}, outputs: []string{"same"}}},
		inputs:  []valueInfo{tensorValue("text", onnxString, 1)},
		outputs: []valueInfo{tensorValue("same", onnxString, 1)},
	}
	_, err := rt.NewSession(m.bytes(), nil)
	if !errors.Is(err, ErrUnsupportedModel) || !strings.Contains(err.Error(), `"text"`) {
		t.Errorf("got %v, want ErrUnsupportedModel naming text", err)
	}
}

// TestProviderAuto: on a machine without a GPU build, auto lands on the CPU
// and says so in exactly one log line per Runtime; with a CUDA build it
// lands on CUDA silently. Either way the session works.
func TestProviderAuto(t *testing.T) {
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	rt := openRuntime(t, log)
	s := newSession(t, rt, addModel(), &SessionOptions{Provider: ProviderAuto})
	newSession(t, rt, matMulModel(), nil) // a second auto session
	if _, err := s.Run(addInputs([]float32{1, 2, 3}, []float32{1, 1, 1})); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	switch s.Provider() {
	case ProviderCPU:
		if len(lines) != 1 || !strings.Contains(lines[0], "level=INFO") ||
			!strings.Contains(lines[0], "provider=cpu") || !strings.Contains(lines[0], "cuda") {
			t.Errorf("want one INFO line saying cuda failed and cpu is used, got %d:\n%s", len(lines), buf.String())
		}
	case ProviderCUDA:
		if buf.Len() != 0 {
			t.Errorf("no fallback happened, yet something was logged:\n%s", buf.String())
		}
	default:
		t.Errorf("auto picked %q", s.Provider())
	}
}

// TestProviderExplicit: an explicit GPU provider that cannot be had is an
// error, never a silent CPU session.
func TestProviderExplicit(t *testing.T) {
	rt := openRuntime(t, nil)
	auto := newSession(t, rt, addModel(), nil)
	if p := newSession(t, rt, addModel(), &SessionOptions{Provider: ProviderCPU}).Provider(); p != ProviderCPU {
		t.Errorf("explicit cpu gave %q", p)
	}
	for _, p := range []Provider{ProviderCUDA, ProviderTensorRT} {
		s, err := rt.NewSession(addModel().bytes(), &SessionOptions{Provider: p})
		if auto.Provider() == ProviderCPU {
			// auto fell back, so this library has no CUDA provider.
			if err == nil {
				s.Close()
				t.Fatalf("explicit %s succeeded on a library where auto fell back to cpu", p)
			}
			if !errors.Is(err, ErrProviderUnavailable) || !strings.Contains(err.Error(), string(p)) {
				t.Errorf("explicit %s: %v; want ErrProviderUnavailable naming %s", p, err, p)
			}
			continue
		}
		if p == ProviderCUDA && (err != nil || s.Provider() != ProviderCUDA) {
			t.Errorf("explicit cuda on a CUDA build: %v", err)
		}
		if s != nil {
			s.Close()
		}
	}
}
