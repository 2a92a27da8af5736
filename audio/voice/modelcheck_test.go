package voice

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// tinyModel is y = x · W + b with both weights initializers, encoded.
func tinyModel(tb testing.TB) []byte {
	tb.Helper()
	g := onnx.NewGraph("tiny")
	x := g.Input("x", onnx.Float, onnx.Dynamic("n"), onnx.Fixed(2))
	w := g.Float32s("W", []int64{2, 2}, []float32{1, 2, 3, 4})
	b := g.Float32s("b", []int64{2}, []float32{5, 6})
	g.Node("Add", []string{g.Op("MatMul", []string{x, w}), b}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Dynamic("n"), onnx.Fixed(2))
	m, err := g.Model(nil)
	if err != nil {
		tb.Fatal(err)
	}
	data, err := onnx.Encode(m)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// mutated is tinyModel changed by f, encoded.
func mutated(tb testing.TB, f func(*onnxpb.ModelProto)) []byte {
	tb.Helper()
	var mp onnxpb.ModelProto
	if err := proto.Unmarshal(tinyModel(tb), &mp); err != nil {
		tb.Fatal(err)
	}
	f(&mp)
	data, err := proto.Marshal(&mp)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// splitGraph encodes data's graph as two graph fields, which protobuf
// merges: the first holds the nodes and initializers, the second the rest.
func splitGraph(tb testing.TB, data []byte) []byte {
	tb.Helper()
	var head, first, second []byte
	err := eachField(data, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != modelGraphField {
			head = append(head, field...)
			return nil
		}
		return eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
			if num == 1 || num == graphInitializerField {
				first = append(first, field...)
			} else {
				second = append(second, field...)
			}
			return nil
		})
	})
	if err != nil {
		tb.Fatal(err)
	}
	head = protowire.AppendBytes(protowire.AppendTag(head, modelGraphField, protowire.BytesType), first)
	return protowire.AppendBytes(protowire.AppendTag(head, modelGraphField, protowire.BytesType), second)
}

// doubledRaw gives every initializer of data a leading raw_data field of
// junk: protobuf keeps the last occurrence, so the model is unchanged.
func doubledRaw(tb testing.TB, data []byte, junk []byte) []byte {
	tb.Helper()
	var out []byte
	err := eachField(data, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != modelGraphField {
			out = append(out, field...)
			return nil
		}
		var g []byte
		err := eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
			if num != graphInitializerField {
				g = append(g, field...)
				return nil
			}
			t := protowire.AppendBytes(protowire.AppendTag(nil, tensorRawDataField, protowire.BytesType), junk)
			g = protowire.AppendBytes(protowire.AppendTag(g, graphInitializerField, protowire.BytesType), append(t, value...))
			return nil
		})
		out = protowire.AppendBytes(protowire.AppendTag(out, modelGraphField, protowire.BytesType), g)
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// sameAsDecode fails unless checkModel and onnx.Decode agree on data:
// both refuse it with the same sentinel error, or both accept it and
// decode the same model.
func sameAsDecode(t *testing.T, data []byte, opts *onnx.ReadOptions) {
	t.Helper()
	want, wantErr := onnx.Decode(data, opts)
	got, err := checkModel(data, opts)
	if wantErr != nil {
		for _, sentinel := range []error{onnx.ErrInvalidModel, onnx.ErrGraph, onnx.ErrTooLarge} {
			if errors.Is(wantErr, sentinel) && !errors.Is(err, sentinel) {
				t.Fatalf("checkModel: %v; Decode: %v", err, wantErr)
			}
		}
		return
	}
	if err != nil {
		t.Fatalf("checkModel: %v; Decode accepts the model", err)
	}
	if !proto.Equal(got.Proto, want.Proto) {
		t.Fatal("checkModel decoded another model than Decode")
	}
}

func TestCheckModel(t *testing.T) {
	tiny := tinyModel(t)
	cases := []struct {
		name string
		data []byte
		want error // nil: the model is fine
	}{
		{"tiny", tiny, nil},
		{"graph in two fields", splitGraph(t, tiny), nil},
		{"raw_data twice", doubledRaw(t, tiny, []byte("junk")), nil},
		{"raw_data twice, the first empty", doubledRaw(t, tiny, nil), nil},
		{"empty raw_data, values in float_data", mutated(t, func(m *onnxpb.ModelProto) {
			w := m.Graph.Initializer[0]
			w.RawData, w.FloatData = nil, []float32{1, 2, 3, 4}
		}), nil},
		{"initializer listed as input", mutated(t, func(m *onnxpb.ModelProto) {
			m.Graph.Input = append(m.Graph.Input, &onnxpb.ValueInfoProto{Name: "W"})
		}), nil},
		{"raw_data of the wrong size", mutated(t, func(m *onnxpb.ModelProto) {
			m.Graph.Initializer[0].RawData = m.Graph.Initializer[0].RawData[:12]
		}), onnx.ErrGraph},
		{"name defined twice", mutated(t, func(m *onnxpb.ModelProto) { m.Graph.Initializer[1].Name = "W" }), onnx.ErrGraph},
		{"external data leaving the directory", mutated(t, func(m *onnxpb.ModelProto) {
			w := m.Graph.Initializer[0]
			w.RawData, w.DataLocation = nil, onnxpb.TensorProto_EXTERNAL
			w.ExternalData = []*onnxpb.StringStringEntryProto{{Key: "location", Value: "../../etc/passwd"}}
		}), onnx.ErrGraph},
		{"no ir version", mutated(t, func(m *onnxpb.ModelProto) { m.IrVersion = 0 }), onnx.ErrInvalidModel},
		{"no graph", mutated(t, func(m *onnxpb.ModelProto) { m.Graph = nil }), onnx.ErrInvalidModel},
		{"empty", nil, onnx.ErrInvalidModel},
		{"truncated in a weight", tiny[:len(tiny)-40], onnx.ErrInvalidModel},
		{"truncated in the header", tiny[:5], onnx.ErrInvalidModel},
		{"not protobuf", []byte("RIFF\x24\x00\x00\x00WAVEfmt "), onnx.ErrInvalidModel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := checkModel(c.data, nil)
			if c.want == nil && err != nil || c.want != nil && !errors.Is(err, c.want) {
				t.Fatalf("checkModel: %v, want %v", err, c.want)
			}
			sameAsDecode(t, c.data, nil)
		})
	}
	if _, err := checkModel(tiny, &onnx.ReadOptions{MaxBytes: 64}); !errors.Is(err, onnx.ErrTooLarge) {
		t.Errorf("over MaxBytes: %v, want ErrTooLarge", err)
	}
}

// TestCheckModelAliasesWeights: the weights of the checked model are the
// file's bytes, not a copy.
func TestCheckModelAliasesWeights(t *testing.T) {
	data, err := benchmodel.PiperMedium(&benchmodel.Options{Hidden: 32, Filter: 64, EncoderLayers: 1, FlowLayers: 1, WaveNetLayers: 2, DecoderChannels: 32})
	if err != nil {
		t.Fatal(err)
	}
	sameAsDecode(t, data, nil)
	m, err := checkModel(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Overwrite the file's bytes: a weight that aliases them changes too.
	clear(data)
	weights := 0
	for _, w := range m.Graph().GetInitializer() {
		raw := w.GetRawData()
		for _, v := range raw {
			if v != 0 {
				t.Fatalf("initializer %s: raw_data is a copy", w.GetName())
			}
		}
		if len(raw) > 0 {
			weights++
		}
	}
	if weights == 0 {
		t.Fatal("no initializer has raw_data")
	}
}

// FuzzCheckModel: checkModel, which parses model files from outside,
// agrees with onnx.Decode on any bytes.
func FuzzCheckModel(f *testing.F) {
	tiny := tinyModel(f)
	f.Add(tiny)
	f.Add(splitGraph(f, tiny))
	f.Add(doubledRaw(f, tiny, []byte{1, 2, 3}))
	f.Add(tiny[:len(tiny)-9])
	f.Add([]byte{})
	files, _ := filepath.Glob(filepath.Join("..", "..", "quant", "ort", "testdata", "*.onnx"))
	for _, path := range files {
		if data, err := os.ReadFile(path); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sameAsDecode(t, data, &onnx.ReadOptions{MaxBytes: 1 << 20})
	})
}

// BenchmarkCheckModel checks the 15 M-parameter bench model in Go: with
// onnx.Decode (a copy of every weight, and the sha256 that Decode also
// takes) and with checkModel (neither).
func BenchmarkCheckModel(b *testing.B) {
	data, err := benchmodel.PiperMedium(nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		check func([]byte, *onnx.ReadOptions) error
	}{
		{"Decode", func(d []byte, o *onnx.ReadOptions) error { _, err := onnx.Decode(d, o); return err }},
		{"checkModel", func(d []byte, o *onnx.ReadOptions) error { _, err := checkModel(d, o); return err }},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if err := c.check(data, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
