package onnx

// The lift tests' fuzz target and its committed corpus, made from
// liftCases (conv2d_test.go).

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

var updateLiftCorpus = flag.Bool("update-lift-corpus", false, "rewrite testdata/fuzz/FuzzLiftConv1D from liftCases")

// liftCorpus names the cases committed as FuzzLiftConv1D's corpus files,
// so that `go test -fuzz` starts from them even without the seeds' f.Add.
var liftCorpus = []string{"residual chain", "read by a subgraph that has a name like a new one", "omitted inputs and outputs"}

// TestLiftConv1DCorpus keeps the committed corpus files the models they
// were made from; -update-lift-corpus writes them again.
func TestLiftConv1DCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzLiftConv1D")
	cases := make(map[string]liftCase)
	for _, c := range liftCases() {
		cases[c.name] = c
	}
	for _, name := range liftCorpus {
		c, ok := cases[name]
		if !ok {
			t.Fatalf("no case %q", name)
		}
		path := filepath.Join(dir, strings.ReplaceAll(name, " ", "_"))
		want := c.build(t)
		if *updateLiftCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, fmt.Appendf(nil, "go test fuzz v1\n[]byte(%q)\n", encode(t, want)), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update-lift-corpus to write it)", err)
		}
		lines := strings.Split(strings.TrimSpace(string(data)), "\n")
		var quoted string
		if len(lines) != 2 || lines[0] != "go test fuzz v1" {
			t.Fatalf("%s is not a go test fuzz v1 file of one value", path)
		}
		if _, err := fmt.Sscanf(lines[1], "[]byte(%q)", &quoted); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		got, err := Decode([]byte(quoted), nil)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if !proto.Equal(got.Proto, want.Proto) {
			t.Errorf("%s is not the model of case %q (run with -update-lift-corpus)", path, name)
		}
	}
}

func FuzzLiftConv1D(f *testing.F) {
	for _, c := range liftCases() {
		f.Add(encode(f, c.build(f)))
	}
	f.Fuzz(func(t *testing.T, data []byte) { fuzzRewrite(t, data, LiftConv1D, true) })
}

// fuzzRewrite is the body of the rewrites' fuzz targets: on any model
// that decodes, rewrite fails for no model, changes nothing when it
// rewrites nothing, and leaves a model that checks and encodes, with the
// graph's inputs and outputs as they were; idempotent rewrites find
// nothing the second time.
func fuzzRewrite(t *testing.T, data []byte, rewrite func(*Model) (int, error), idempotent bool) {
	m, err := Decode(data, &ReadOptions{MaxBytes: 1 << 20})
	if err != nil {
		return
	}
	before := proto.Clone(m.Proto.GetGraph()).(*onnxpb.GraphProto)
	n, err := rewrite(m)
	if err != nil {
		t.Fatalf("a decoded model: %v", err)
	}
	if n == 0 && !proto.Equal(m.Proto.GetGraph(), before) {
		t.Fatal("nothing rewritten, but the graph changed")
	}
	if err := Check(m, nil); err != nil {
		t.Fatalf("rewritten model does not check: %v", err)
	}
	g := m.Graph()
	if !proto.Equal(&onnxpb.GraphProto{Input: g.Input, Output: g.Output}, &onnxpb.GraphProto{Input: before.Input, Output: before.Output}) {
		t.Fatal("graph inputs or outputs changed")
	}
	if _, err := Encode(m); err != nil {
		t.Fatal(err)
	}
	if !idempotent {
		return
	}
	if again, err := rewrite(m); again != 0 || err != nil {
		t.Fatalf("second pass rewrote %d (%v), want 0", again, err)
	}
}
