package benchmodel

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// parameters counts the float weights of a model and tallies the op types.
func parameters(t testing.TB, data []byte) (int64, map[string]int) {
	t.Helper()
	m, err := onnx.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, in := range m.Graph().GetInitializer() {
		if onnx.DataType(in.GetDataType()) == onnx.Float {
			k, _ := onnx.NumElements(in.GetDims())
			n += k
		}
	}
	ops := map[string]int{}
	for _, node := range m.Graph().GetNode() {
		ops[node.GetOpType()]++
	}
	return n, ops
}

func TestPiperMediumShape(t *testing.T) {
	a, err := PiperMedium(nil)
	if err != nil {
		t.Fatal(err)
	}
	n, ops := parameters(t, a)
	if n < 15_000_000 || n > 20_000_000 {
		t.Errorf("%d parameters, want a Piper medium's 15–20 M", n)
	}
	// Conv-heavy, with the encoder's MatMuls: 6 layers × q, k, v, o
	// projections plus the two attention products.
	if ops["Conv"] < 60 || ops["ConvTranspose"] != 3 || ops["MatMul"] != 6*6 {
		t.Errorf("op counts %v", ops)
	}
	b, err := PiperMedium(&Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Error("two builds with the same options differ")
	}
	c, err := PiperMedium(&Options{Seed: 2})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, c) {
		t.Error("another seed gave the same model")
	}
}

func TestOptionsLimits(t *testing.T) {
	tests := []struct {
		opts Options
		name string
	}{
		{Options{Hidden: 7}, "Hidden"},
		{Options{Hidden: 66, DecoderChannels: 12}, "DecoderChannels"},
		{Options{Hidden: 2000}, "Hidden"},
		{Options{Symbols: 10}, "Symbols"},
		{Options{EncoderLayers: 33}, "EncoderLayers"},
		{Options{FramesPerPhoneme: -1}, "FramesPerPhoneme"},
		{Options{Speakers: 5000}, "Speakers"},
	}
	for _, tt := range tests {
		_, err := PiperMedium(&tt.opts)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("%+v: %v, want ErrInvalidOptions naming %s", tt.opts, err, tt.name)
		}
	}
}

func TestPhonemeIDMap(t *testing.T) {
	m := PhonemeIDMap()
	if m["_"][0] != 0 || m["^"][0] != 1 || m["$"][0] != 2 {
		t.Errorf("pad/start/end ids %v %v %v", m["_"], m["^"], m["$"])
	}
	seen := map[int64]bool{}
	for s, ids := range m {
		if len(ids) != 1 || ids[0] >= DefaultSymbols || seen[ids[0]] || len([]rune(s)) != 1 {
			t.Errorf("symbol %q → %v", s, ids)
		}
		seen[ids[0]] = true
	}
}

func BenchmarkPiperMediumBuild(b *testing.B) {
	b.ReportAllocs()
	var size int
	for b.Loop() {
		data, err := PiperMedium(nil)
		if err != nil {
			b.Fatal(err)
		}
		size = len(data)
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// piperIDsForTest is a fixed 40-id sentence: ^ _ then 19 symbols each
// followed by _, then $.
func piperIDsForTest() []int64 {
	ids := []int64{1, 0}
	for i := range 19 {
		ids = append(ids, int64(14+(i*7)%60), 0)
	}
	return append(ids, 2)
}
