package onnx

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// mlp builds y = Relu(x·W + b) with a dynamic batch dimension.
func mlp(t testing.TB) *Model {
	t.Helper()
	g := NewGraph("mlp")
	x := g.Input("x", Float, Dynamic("batch"), Fixed(3))
	w := g.Float32s("w", []int64{3, 2}, []float32{1, 2, 3, 4, 5, 6})
	b := g.Float32s("b", []int64{2}, []float32{0.5, -100})
	h := g.Op("Add", []string{g.Op("MatMul", []string{x, w}), b})
	g.Node("Relu", []string{h}, []string{"y"})
	g.Output("y", Float, Dynamic("batch"), Fixed(2))
	m, err := g.Model(&ModelOptions{Metadata: map[string]string{"purpose": "test"}})
	if err != nil {
		t.Fatalf("build mlp: %v", err)
	}
	return m
}

func encode(t testing.TB, m *Model) []byte {
	t.Helper()
	data, err := Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestRoundTrip(t *testing.T) {
	m := mlp(t)
	data := encode(t, m)
	got, err := Decode(data, nil)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	if !proto.Equal(got.Proto, m.Proto) {
		t.Fatal("decoded model differs from the built one")
	}
	if got.Digest != m.Digest || got.Size != int64(len(data)) {
		t.Fatalf("digest/size %s/%d, want %s/%d", got.Digest, got.Size, m.Digest, len(data))
	}
	if again := encode(t, got); !bytes.Equal(again, data) {
		t.Fatal("encoding is not deterministic")
	}
	if got.Opset("") != 17 || got.Opset("ai.onnx") != 17 || got.Opset("com.microsoft") != 0 {
		t.Fatalf("opsets: %v", got.Proto.GetOpsetImport())
	}
	if got.Metadata()["purpose"] != "test" {
		t.Fatalf("metadata: %v", got.Metadata())
	}

	path := filepath.Join(t.TempDir(), "m.onnx")
	if err := WriteFile(path, m); err != nil {
		t.Fatal(err)
	}
	fromFile, err := ReadFile(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(fromFile.Proto, m.Proto) || fromFile.Digest != m.Digest {
		t.Fatal("file round trip differs")
	}
}

// mutate returns a fresh encoded mlp after f changed its proto.
func mutate(t *testing.T, f func(*onnxpb.ModelProto)) []byte {
	t.Helper()
	m := mlp(t)
	f(m.Proto)
	data, err := proto.Marshal(m.Proto)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestDecodeRejects(t *testing.T) {
	good := encode(t, mlp(t))
	rng := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 4096)
	for i := range random {
		random[i] = byte(rng.UintN(256))
	}
	wav := append([]byte("RIFF\x24\x00\x00\x00WAVEfmt "), make([]byte, 40)...)

	cases := []struct {
		name string
		data []byte
		want error
		msg  string
	}{
		{"empty", nil, ErrInvalidModel, "empty"},
		{"truncated", good[:len(good)/2], ErrInvalidModel, ""},
		{"random bytes", random, ErrInvalidModel, ""},
		{"a wav file", wav, ErrInvalidModel, ""},
		{"json", []byte(`{"audio":{"sample_rate":22050}}`), ErrInvalidModel, ""},
		{"no ir version", mutate(t, func(p *onnxpb.ModelProto) { p.IrVersion = 0 }), ErrInvalidModel, "ir_version"},
		{"future ir version", mutate(t, func(p *onnxpb.ModelProto) { p.IrVersion = 99 }), ErrInvalidModel, "ir_version 99"},
		{"no graph", mutate(t, func(p *onnxpb.ModelProto) { p.Graph = nil }), ErrInvalidModel, "no graph"},
		{"no opset", mutate(t, func(p *onnxpb.ModelProto) { p.OpsetImport = nil }), ErrInvalidModel, "opset"},
		{"unknown domain", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Node[0].Domain = "com.example" }), ErrGraph, "com.example"},
		{"use before definition", mutate(t, func(p *onnxpb.ModelProto) {
			n := p.Graph.Node
			n[0], n[1] = n[1], n[0]
		}), ErrGraph, "before anything produces it"},
		{"duplicate name", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Node[0].Output[0] = "x" }), ErrGraph, "defined twice"},
		{"missing output", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Output[0].Name = "nope" }), ErrGraph, "never produced"},
		{"no outputs", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Output = nil }), ErrGraph, "no outputs"},
		{"empty op", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Node[0].OpType = "" }), ErrGraph, "op_type"},
		{"short raw data", mutate(t, func(p *onnxpb.ModelProto) {
			p.Graph.Initializer[0].RawData = p.Graph.Initializer[0].RawData[:5]
		}), ErrGraph, "raw_data"},
		{"negative dim", mutate(t, func(p *onnxpb.ModelProto) { p.Graph.Initializer[0].Dims = []int64{-3, -2} }), ErrGraph, "negative"},
		{"overflowing dims", mutate(t, func(p *onnxpb.ModelProto) {
			p.Graph.Initializer[0].Dims = []int64{1 << 40, 1 << 40}
		}), ErrGraph, "too many"},
		{"external escape", mutate(t, func(p *onnxpb.ModelProto) {
			w := p.Graph.Initializer[0]
			w.RawData = nil
			w.DataLocation = onnxpb.TensorProto_EXTERNAL
			w.ExternalData = []*onnxpb.StringStringEntryProto{{Key: "location", Value: "../../etc/passwd"}}
		}), ErrGraph, "external data"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, err := Decode(c.data, nil)
			if err == nil {
				t.Fatalf("accepted: %v", m.Proto)
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("error %v is not %v", err, c.want)
			}
			if c.msg != "" && !strings.Contains(err.Error(), c.msg) {
				t.Fatalf("error %q does not mention %q", err, c.msg)
			}
		})
	}
}

func TestLimits(t *testing.T) {
	data := encode(t, mlp(t))
	if _, err := Decode(data, &ReadOptions{MaxBytes: 10}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MaxBytes: %v", err)
	}
	if _, err := Decode(data, &ReadOptions{MaxNodes: 1}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("MaxNodes: %v", err)
	}
	// If nested in If nested in ... deeper than the limit.
	inner := NewGraph("leaf")
	c := inner.Float32s("c", nil, []float32{1})
	inner.Output(c, Float)
	sub, _ := inner.Proto()
	for i := 0; i < 5; i++ {
		g := NewGraph("level")
		cond := g.Initializer(&onnxpb.TensorProto{DataType: int32(Bool), RawData: []byte{1}})
		g.Node("If", []string{cond}, []string{"out"}, AttrGraph("then_branch", sub), AttrGraph("else_branch", sub))
		g.Output("out", Float)
		sub, _ = g.Proto()
	}
	m := &Model{Proto: &onnxpb.ModelProto{IrVersion: 8, Graph: sub,
		OpsetImport: []*onnxpb.OperatorSetIdProto{{Version: 17}}}}
	if err := Check(m, &ReadOptions{MaxGraphDepth: 3}); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("depth: %v", err)
	}
	if err := Check(m, nil); err != nil {
		t.Fatalf("depth 5 within default: %v", err)
	}
}

func TestSubgraphSeesOuterScope(t *testing.T) {
	g := NewGraph("outer")
	x := g.Input("x", Float, Fixed(1))
	thenG := NewGraph("then")
	thenG.Node("Identity", []string{x}, []string{"t_out"})
	thenG.Output("t_out", Float, Fixed(1))
	// The builder of a subgraph does not know the outer scope, so it records
	// the read as an error; build the branch by hand instead, as a rewrite
	// pass would see it in a loaded model.
	branch := &onnxpb.GraphProto{
		Name:   "then",
		Node:   []*onnxpb.NodeProto{{OpType: "Identity", Input: []string{x}, Output: []string{"t_out"}}},
		Output: []*onnxpb.ValueInfoProto{valueInfo("t_out", Float, []Dim{Fixed(1)})},
	}
	cond := g.Initializer(&onnxpb.TensorProto{DataType: int32(Bool), RawData: []byte{1}})
	g.Node("If", []string{cond}, []string{"y"}, AttrGraph("then_branch", branch), AttrGraph("else_branch", branch))
	g.Output("y", Float, Fixed(1))
	if _, err := g.Model(nil); err != nil {
		t.Fatalf("outer-scope read rejected: %v", err)
	}
	if thenG.Err() == nil {
		t.Fatal("builder accepted a read of an unknown name")
	}
}

func TestBuilderErrors(t *testing.T) {
	g := NewGraph("bad")
	x := g.Input("x", Float)
	g.Input("x", Float)
	g.Op("Neg", []string{x})
	if _, err := g.Model(nil); !errors.Is(err, ErrGraph) || !strings.Contains(err.Error(), "defined twice") {
		t.Fatalf("duplicate input: %v", err)
	}
	g = NewGraph("bad")
	g.Op("Neg", []string{"nothing"})
	if _, err := g.Model(nil); !errors.Is(err, ErrGraph) {
		t.Fatalf("unknown input: %v", err)
	}
	g = NewGraph("bad")
	g.Input("x", Float)
	g.Output("y", Float)
	if _, err := g.Model(nil); !errors.Is(err, ErrGraph) {
		t.Fatalf("unknown output: %v", err)
	}
}

func TestConstantsAreShared(t *testing.T) {
	g := NewGraph("c")
	if g.Scalar(2) != g.Scalar(2) || g.Scalar(2) == g.Scalar(3) {
		t.Fatal("float scalars not shared by value")
	}
	if g.Ints(1, 2) != g.Ints(1, 2) || g.Ints(1, 2) == g.Ints(2, 1) || g.ScalarInt(1) == g.Ints(1) {
		t.Fatal("int constants not shared by value")
	}
	v, err := Float32Data(Float32Tensor("t", []int64{3}, []float32{1.5, -2, 3e9}))
	if err != nil || len(v) != 3 || v[0] != 1.5 || v[1] != -2 || v[2] != 3e9 {
		t.Fatalf("Float32Data: %v %v", v, err)
	}
}

func TestReadFileErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := ReadFile(filepath.Join(dir, "missing.onnx"), nil); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
	empty := filepath.Join(dir, "empty.onnx")
	os.WriteFile(empty, nil, 0o644)
	if _, err := ReadFile(empty, nil); !errors.Is(err, ErrInvalidModel) || !strings.Contains(err.Error(), "empty.onnx") {
		t.Fatalf("empty: %v", err)
	}
	if _, err := ReadFile(dir, nil); !errors.Is(err, ErrInvalidModel) {
		t.Fatalf("directory: %v", err)
	}
}

func TestConfinedPath(t *testing.T) {
	for loc, ok := range map[string]bool{
		"weights.bin": true, "sub/w.bin": true, "./w.bin": true,
		"": false, "../w.bin": false, "/etc/passwd": false, "a/../../w": false, "w\x00.bin": false, `..\w`: false,
	} {
		if err := ConfinedPath("/models/voice", loc); (err == nil) != ok {
			t.Errorf("ConfinedPath(%q) = %v, want ok=%v", loc, err, ok)
		}
	}
	if ConfinedPath("", "w.bin") == nil {
		t.Error("external data allowed without a directory")
	}
}

func FuzzDecode(f *testing.F) {
	good := encode(f, mlp(f))
	f.Add(good)
	f.Add(good[:len(good)-7])
	f.Add([]byte{})
	f.Add([]byte{0x08, 0x08, 0x3a, 0x00})
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVE"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Decode(data, &ReadOptions{MaxBytes: 1 << 20})
		if err != nil {
			if !errors.Is(err, ErrInvalidModel) && !errors.Is(err, ErrGraph) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("error outside the documented set: %v", err)
			}
			return
		}
		// Whatever Decode accepts must survive a round trip unchanged.
		again, err := Encode(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := Decode(again, nil)
		if err != nil {
			t.Fatalf("re-decode of accepted model: %v", err)
		}
		if !proto.Equal(m.Proto, m2.Proto) {
			t.Fatal("round trip changed an accepted model")
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	data := encode(b, mlp(b))
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := Decode(data, nil); err != nil {
			b.Fatal(err)
		}
	}
}
