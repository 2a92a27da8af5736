package quant

import (
	"github.com/mynah-tts/mynah/quant/cpuclass"

	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// FuzzQuantize feeds arbitrary bytes that decode as a model to every
// mode: Quantize must never panic, must fail only with an error, and what
// it returns must decode and pass onnx.Check again.
func FuzzQuantize(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range []*onnx.Model{
		matMulModel(f, randn(rng, 64, 1), 8, 8),
		gemmModel(f, randn(rng, 64, 1), randn(rng, 8, 1), 8, 8, 0.5, 2),
		mlpModel(f, randn(rng, 64, 1), randn(rng, 8, 1), randn(rng, 64, 1), randn(rng, 8, 1), 8, 8, 8),
		convModel(f, randn(rng, 4*2*3, 1), randn(rng, 4, 1), 2, 4, 3),
		ifModel(f, randn(rng, 64, 1), 8, 8),
	} {
		data, err := onnx.Encode(m)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(0))
		f.Add(data, uint8(7))
	}
	paths, _ := filepath.Glob(filepath.Join("ort", "testdata", "*.onnx"))
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data, uint8(3))
	}
	modes := []Mode{ModeFP16Store, ModeInt8, ModeNBits, ModeAuto}
	f.Fuzz(func(t *testing.T, data []byte, flags uint8) {
		m, err := onnx.Decode(data, &onnx.ReadOptions{MaxBytes: 1 << 20, MaxNodes: 1 << 12})
		if err != nil {
			return
		}
		o := &Options{
			Mode:           modes[flags%4],
			IncludeConv:    flags&4 != 0,
			RestFP16:       flags&8 != 0,
			EmbeddingsInt8: flags&16 != 0,
			Int8Format:     cpuclass.Formats[int(flags>>5)%len(cpuclass.Formats)],
			BlockSize:      16,
		}
		res, err := Quantize(m, o)
		if err != nil {
			if res != nil {
				t.Fatalf("error %v with a result", err)
			}
			if errors.Is(err, onnx.ErrGraph) && !errors.Is(err, onnx.ErrInvalidModel) {
				// Quantize only reports onnx.ErrGraph when its own output fails the check.
				t.Fatalf("rewrite produced an invalid graph: %v", err)
			}
			return
		}
		out, err := onnx.Encode(res.Model)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := onnx.Decode(out, nil); err != nil {
			t.Fatalf("quantized model does not decode: %v", err)
		}
	})
}
