package quant_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// corpus returns every ONNX model the project has: the ONNX Runtime test
// models, the demo voice, the cloning kit's encoder, decoder and vocoder,
// and the style kit's model (all generated, so the test needs no state).
func corpus(t testing.TB) map[string][]byte {
	t.Helper()
	models := map[string][]byte{}
	paths, err := filepath.Glob(filepath.Join("ort", "testdata", "*.onnx"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no ort test models: %v", err)
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		models[p] = data
	}
	built, err := demo.Models()
	if err != nil {
		t.Fatal(err)
	}
	maps.Copy(models, built)
	return models
}

func decode(t testing.TB, data []byte) *onnx.Model {
	t.Helper()
	m, err := onnx.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// roundTrip checks load → save → load gives the same protobuf.
func roundTrip(t *testing.T, what string, m *onnx.Model) {
	t.Helper()
	data, err := onnx.Encode(m)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	back := decode(t, data)
	if !proto.Equal(m.Proto, back.Proto) {
		t.Errorf("%s: decoded model differs from the one encoded", what)
	}
	again, err := onnx.Encode(back)
	if err != nil {
		t.Fatal(err)
	}
	if back.Digest != m.Digest || len(again) != len(data) {
		t.Errorf("%s: second encoding differs (digest %s vs %s)", what, back.Digest, m.Digest)
	}
}

// TestRoundTrip runs every model of the corpus, and its quantized forms,
// through load → save → load.
func TestRoundTrip(t *testing.T) {
	models := corpus(t)
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range models {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range names {
		m := decode(t, models[name])
		roundTrip(t, name, m)
		for _, mode := range []quant.Mode{quant.ModeFP16Store, quant.ModeInt8, quant.ModeNBits, quant.ModeAuto} {
			res, err := quant.Quantize(m, &quant.Options{Mode: mode, IncludeConv: true})
			if err != nil {
				t.Errorf("%s %s: %v", name, mode, err)
				continue
			}
			roundTrip(t, name+" "+string(mode), res.Model)
			if !proto.Equal(m.Proto, decode(t, models[name]).Proto) {
				t.Fatalf("%s %s: Quantize modified its input", name, mode)
			}
		}
	}
}

// TestDemoDecoderShrinks is the size half of the decoder goal; the
// quality half is the gate's.
func TestDemoDecoderShrinks(t *testing.T) {
	kit, err := demo.BuildCloning(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, kit[demo.DecoderFile])
	for _, c := range []struct {
		opts quant.Options
		max  float64
	}{
		{quant.Options{Mode: quant.ModeFP16Store}, 0.52},
		{quant.Options{Mode: quant.ModeInt8}, 0.45},
		{quant.Options{Mode: quant.ModeNBits}, 0.45},
		{quant.Options{Mode: quant.ModeAuto}, 0.45},
		{quant.Options{Mode: quant.ModeAuto, AutoMatMul: quant.ModeNBits}, 0.40},
		// The goal: at least 3× smaller under int8 and nbits.
		{quant.Options{Mode: quant.ModeInt8, RestFP16: true}, 0.36},
		{quant.Options{Mode: quant.ModeInt8, RestFP16: true, EmbeddingsInt8: true}, 1.0 / 3},
		{quant.Options{Mode: quant.ModeNBits, RestFP16: true}, 1.0 / 3},
		{quant.Options{Mode: quant.ModeAuto, RestFP16: true, AutoMatMul: quant.ModeNBits}, 1.0 / 3},
	} {
		res, err := quant.Quantize(m, &c.opts)
		if err != nil {
			t.Fatal(err)
		}
		r := float64(res.Model.Size) / float64(m.Size)
		t.Logf("%s/%s/rest-fp16=%v: %d → %d bytes (%.3f)", c.opts.Mode, c.opts.AutoMatMul, c.opts.RestFP16, m.Size, res.Model.Size, r)
		if r > c.max {
			t.Errorf("%s: size ratio %.3f, want ≤ %.2f\n%s", c.opts.Mode, r, c.max, res.Report)
		}
		if res.Report.BytesAfter != res.Model.Size || res.Report.BytesBefore != m.Size {
			t.Errorf("report sizes %d → %d, model %d → %d", res.Report.BytesBefore, res.Report.BytesAfter, m.Size, res.Model.Size)
		}
	}
}

// TestRefuseQuantizedTwice covers the already-quantized refusal on every
// mode's output.
func TestRefuseQuantizedTwice(t *testing.T) {
	kit, err := demo.BuildCloning(nil)
	if err != nil {
		t.Fatal(err)
	}
	m := decode(t, kit[demo.DecoderFile])
	for _, mode := range []quant.Mode{quant.ModeFP16Store, quant.ModeInt8, quant.ModeNBits, quant.ModeAuto} {
		res, err := quant.Quantize(m, &quant.Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if in := quant.Inspect(res.Model); !in.Quantized {
			t.Errorf("%s: Inspect does not see a quantized model", mode)
		}
		_, err = quant.Quantize(res.Model, &quant.Options{Mode: quant.ModeFP16Store})
		if !errors.Is(err, quant.ErrAlreadyQuantized) {
			t.Errorf("%s twice: %v, want ErrAlreadyQuantized", mode, err)
		}
	}
}
