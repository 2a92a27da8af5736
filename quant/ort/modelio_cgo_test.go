//go:build cgo

package ort_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	onnxrt "github.com/yalue/onnxruntime_go"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// TestModelIOMatchesORT reads every model the project's tests load — this
// package's test models and testdata, the demo voice and its cloning and
// style kits, the Piper-medium-shaped bench model with and without
// speakers, and their quantized variants — with ort's protobuf reader and
// with the throwaway ONNX Runtime session it replaced, and wants the same
// names, element types and dims, in the same order.
func TestModelIOMatchesORT(t *testing.T) {
	rt, err := ort.Open(nil)
	if err != nil {
		t.Fatalf("these tests need ONNX Runtime (scripts/setup.sh): %v", err)
	}
	defer rt.Close()
	for name, data := range testModels(t) {
		t.Run(name, func(t *testing.T) {
			in, out, err := ort.ModelIO(data)
			if err != nil {
				t.Fatal(err)
			}
			ortIn, ortOut, err := onnxrt.GetInputOutputInfoWithONNXData(data)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := describe(in), describeORT(t, ortIn); got != want {
				t.Errorf("inputs\n  read %s\n  ORT  %s", got, want)
			}
			if got, want := describe(out), describeORT(t, ortOut); got != want {
				t.Errorf("outputs\n  read %s\n  ORT  %s", got, want)
			}
		})
	}
}

// TestModelIOOutputsAsDeclared pins down where modelIO and ONNX Runtime
// differ: an output dimension the file leaves open but ONNX Runtime's
// shape inference fixes. modelIO reports it open, which Run handles the
// same way (ONNX Runtime allocates the output and says its shape).
func TestModelIOOutputsAsDeclared(t *testing.T) {
	rt, err := ort.Open(nil)
	if err != nil {
		t.Fatalf("these tests need ONNX Runtime (scripts/setup.sh): %v", err)
	}
	defer rt.Close()
	model := ort.InferredOutputModel()
	_, out, err := ort.ModelIO(model)
	if err != nil {
		t.Fatal(err)
	}
	_, ortOut, err := onnxrt.GetInputOutputInfoWithONNXData(model)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := describe(out), "y float32 [-1 -1]"; got != want {
		t.Errorf("modelIO says %s, want %s", got, want)
	}
	if got, want := describeORT(t, ortOut), "y float32 [2 3]"; got != want {
		t.Errorf("ONNX Runtime says %s, want %s (has its shape inference changed?)", got, want)
	}
	s, err := rt.NewSession(model, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	res, err := s.Run([]ort.Tensor{{Name: "x", Shape: []int64{2, 3}, Float32: []float32{1, 2, 3, 4, 5, 6}}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res[0].Shape, []int64{2, 3}) || res[0].Float32[5] != 6 {
		t.Errorf("y = %v %v, want [2 3] ending in 6", res[0].Shape, res[0].Float32)
	}
}

func testModels(t *testing.T) map[string][]byte {
	t.Helper()
	models := ort.BuiltModels()
	files, err := filepath.Glob(filepath.Join("testdata", "*.onnx"))
	if err != nil || len(files) == 0 {
		t.Fatalf("testdata: %v %v", files, err)
	}
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		models["testdata/"+filepath.Base(path)] = data
	}
	add := func(name string, data []byte, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		models[name] = data
	}
	model, _, err := demo.Build(nil)
	add("demo", model, err)
	kit, err := demo.BuildCloning(nil)
	for _, f := range []string{demo.EncoderFile, demo.DecoderFile, demo.VocoderFile} {
		add("cloning/"+f, kit[f], err)
	}
	style, err := demo.BuildStyle(nil)
	add("style/"+demo.StyleModelFile, style[demo.StyleModelFile], err)
	medium, err := benchmodel.PiperMedium(nil)
	add("benchmodel", medium, err)
	speakers, err := benchmodel.PiperMedium(&benchmodel.Options{Hidden: 32, Filter: 64, EncoderLayers: 1, FlowLayers: 1,
		WaveNetLayers: 2, DecoderChannels: 32, Speakers: 3})
	add("benchmodel/speakers", speakers, err)
	for _, base := range []string{"demo", "benchmodel/speakers", "cloning/" + demo.DecoderFile} {
		m, err := onnx.Decode(models[base], nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []quant.Mode{quant.ModeFP16Store, quant.ModeInt8, quant.ModeNBits} {
			r, err := quant.Quantize(m, &quant.Options{Mode: mode})
			if err != nil {
				continue // nothing this mode rewrites in that model
			}
			data, err := onnx.Encode(r.Model)
			add(base+"/"+string(mode), data, err)
		}
	}
	return models
}

func describe(list []ort.TensorInfo) string {
	s := make([]string, len(list))
	for i, t := range list {
		s[i] = fmt.Sprintf("%s %s %v", t.Name, t.Type, t.Dims)
	}
	return strings.Join(s, "; ")
}

// describeORT is describe for ONNX Runtime's own answer.
func describeORT(t *testing.T, list []onnxrt.InputOutputInfo) string {
	t.Helper()
	types := map[onnxrt.TensorElementDataType]ort.ElementType{
		onnxrt.TensorElementDataTypeFloat: ort.Float32, onnxrt.TensorElementDataTypeFloat16: ort.Float16,
		onnxrt.TensorElementDataTypeDouble: ort.Float64, onnxrt.TensorElementDataTypeInt64: ort.Int64,
		onnxrt.TensorElementDataTypeInt32: ort.Int32, onnxrt.TensorElementDataTypeInt8: ort.Int8,
		onnxrt.TensorElementDataTypeUint8: ort.Uint8, onnxrt.TensorElementDataTypeBool: ort.Bool,
	}
	s := make([]string, len(list))
	for i, info := range list {
		typ, ok := types[info.DataType]
		if info.OrtValueType != onnxrt.ONNXTypeTensor || !ok {
			t.Fatalf("%s: %s of %s, which the project's models never have", info.Name, info.OrtValueType, info.DataType)
		}
		s[i] = fmt.Sprintf("%s %s %v", info.Name, typ, slices.Clone([]int64(info.Dimensions)))
	}
	return strings.Join(s, "; ")
}
