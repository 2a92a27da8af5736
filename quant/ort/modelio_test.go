package ort

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Wire pieces for the modelIO cases that the test model builder cannot
// write: odd field orders, repeated messages that merge, foreign fields.

func graphField(g []byte) []byte { return appendMessage(nil, 7, g) }

func inputField(v valueInfo) []byte  { return appendMessage(nil, 11, v.bytes()) }
func outputField(v valueInfo) []byte { return appendMessage(nil, 12, v.bytes()) }

// typed is a ValueInfoProto of name whose TypeProto is typ, as written.
func typed(name string, typ []byte) []byte {
	vb := appendString(nil, 1, name)
	return appendMessage(vb, 2, typ)
}

func tensorType(elem int, shape []byte) []byte {
	tt := protowire.AppendTag(nil, 1, protowire.VarintType)
	tt = protowire.AppendVarint(tt, uint64(elem))
	if shape != nil {
		tt = appendMessage(tt, 2, shape)
	}
	return appendMessage(nil, 1, tt)
}

func sequenceType(elem int) []byte {
	return appendMessage(nil, 4, tensorType(elem, []byte{}))
}

func join(parts ...[]byte) []byte {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	return b
}

func TestModelIO(t *testing.T) {
	x := tensorValue("x", onnxFloat, "N", 3)
	y := tensorValue("y", onnxFloat, "N", 3)
	ir3 := matMulModel()
	ir3.inputs = append(ir3.inputs, tensorValue("W", onnxFloat, 4, 3))
	sparse := appendMessage(nil, 15, appendMessage(nil, 1, appendString(nil, 8, "S")))
	dimNeither := appendMessage(nil, 1, appendString(nil, 3, "batch")) // a denotation only
	dimZero := appendMessage(nil, 1, protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), 0))
	unknown := protowire.AppendVarint(protowire.AppendTag(nil, 999, protowire.VarintType), 7)

	tests := []struct {
		name            string
		model           []byte
		inputs, outputs string
		incomplete      bool  // ONNX Runtime must be asked for the outputs
		err             error // wrapped by the error, if any
		mention         string
	}{
		{name: "add", model: addModel().bytes(), inputs: "x float32[?,3] y float32[?,3]", outputs: "z float32[?,3]"},
		{name: "initializer is not an input", model: matMulModel().bytes(), inputs: "x float32[?,4]", outputs: "y float32[?,3]"},
		{name: "initializer also listed as input (IR 3)", model: ir3.bytes(), inputs: "x float32[?,4]", outputs: "y float32[?,3]"},
		{name: "scalars and fixed dims", model: idsModel().bytes(), inputs: "ids int64[1,?] offset int64[]", outputs: "out int64[1,?] sum int64[]"},
		{name: "every element type", model: identityModel().bytes(),
			inputs:     "f16 float16[2,?] f64 float64[2,?] i32 int32[2,?] i8 int8[2,?] u8 uint8[2,?] b bool[2,?]",
			outputs:    "f16_out float16[2,?] f64_out float64[2,?] i32_out int32[2,?] i8_out int8[2,?] u8_out uint8[2,?] b_out bool[2,?]",
			incomplete: true},
		{name: "unknown rank", model: graphField(join(inputField(valueInfo{name: "a", elem: onnxFloat}), outputField(y))),
			inputs: "a float32[]", outputs: "y float32[?,3]"},
		{name: "output of unknown rank", model: graphField(join(inputField(x), outputField(valueInfo{name: "a", elem: onnxFloat}))),
			inputs: "x float32[?,3]", outputs: "a float32[]", incomplete: true},
		{name: "float16 output of open shape", model: graphField(join(inputField(x), outputField(tensorValue("h", onnxFloat16, 2, "n")))),
			inputs: "x float32[?,3]", outputs: "h float16[2,?]", incomplete: true},
		{name: "float16 output of fixed shape", model: graphField(join(inputField(x), outputField(tensorValue("h", onnxFloat16, 2, 3)))),
			inputs: "x float32[?,3]", outputs: "h float16[2,3]"},
		{name: "dim with neither value nor name", model: graphField(join(appendMessage(nil, 11, typed("a", tensorType(onnxFloat, dimNeither))), outputField(y))),
			inputs: "a float32[?]", outputs: "y float32[?,3]"},
		{name: "zero-length dim", model: graphField(join(appendMessage(nil, 11, typed("a", tensorType(onnxFloat, dimZero))), outputField(y))),
			inputs: "a float32[0]", outputs: "y float32[?,3]"},
		{name: "sparse initializer listed as input", model: graphField(join(sparse, inputField(tensorValue("S", onnxFloat, 2)), inputField(x), outputField(y))),
			inputs: "x float32[?,3]", outputs: "y float32[?,3]"},
		{name: "graph in two pieces merges", model: join(graphField(inputField(x)), unknown, graphField(join(inputField(y), outputField(x)))),
			inputs: "x float32[?,3] y float32[?,3]", outputs: "x float32[?,3]"},
		{name: "type in two pieces merges", model: graphField(join(appendMessage(nil, 11, join(typed("a", tensorType(onnxInt64, nil)), appendMessage(nil, 2, tensorType(onnxInt64, dimZero)))), outputField(y))),
			inputs: "a int64[0]", outputs: "y float32[?,3]"},
		{name: "a later tensor type replaces a sequence", model: graphField(join(appendMessage(nil, 11, join(typed("a", sequenceType(onnxFloat)), appendMessage(nil, 2, tensorType(onnxBool, []byte{})))), outputField(y))),
			inputs: "a bool[]", outputs: "y float32[?,3]"},
		{name: "foreign fields and wire types are skipped", model: join(unknown, protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 1),
			graphField(join(unknown, appendMessage(nil, 5, join(unknown, appendString(nil, 8, "W"))), inputField(x), inputField(tensorValue("W", onnxFloat, 1)), outputField(y), unknown))),
			inputs: "x float32[?,3]", outputs: "y float32[?,3]"},
		{name: "weights are not an input", model: graphField(join(appendMessage(nil, 5, join(appendString(nil, 8, "W"), protowire.AppendBytes(protowire.AppendTag(nil, 9, protowire.BytesType), make([]byte, 1<<16)))), inputField(x), outputField(y))),
			inputs: "x float32[?,3]", outputs: "y float32[?,3]"},

		{name: "sequence input", model: graphField(join(appendMessage(nil, 11, typed("seq", sequenceType(onnxFloat))), outputField(y))),
			err: ErrUnsupportedModel, mention: `input "seq" is a sequence`},
		{name: "a later sequence type replaces a tensor", model: graphField(join(inputField(x), outputField(y), appendMessage(nil, 12, join(typed("s", tensorType(onnxFloat, nil)), appendMessage(nil, 2, sequenceType(onnxFloat)))))),
			err: ErrUnsupportedModel, mention: `output "s" is a sequence`},
		{name: "string input", model: graphField(join(inputField(tensorValue("text", onnxString, 1)), outputField(y))),
			err: ErrUnsupportedModel, mention: `input "text" has element type STRING`},
		{name: "untyped output", model: graphField(join(inputField(x), appendMessage(nil, 12, appendString(nil, 1, "z")))),
			err: ErrInvalidModel, mention: `output "z" has no type`},
		{name: "empty", model: nil, err: ErrInvalidModel, mention: "no graph"},
		{name: "graph with the wrong wire type", model: protowire.AppendVarint(protowire.AppendTag(nil, 7, protowire.VarintType), 1), err: ErrInvalidModel, mention: "no graph"},
		{name: "truncated", model: matMulModel().bytes()[:60], err: ErrInvalidModel},
		{name: "not protobuf", model: []byte("RIFF\x24\x00\x00\x00WAVEfmt "), err: ErrInvalidModel},
		{name: "field number 0", model: []byte{0x00, 0x01}, err: ErrInvalidModel},
		{name: "length past the end", model: []byte{0x3a, 0xff, 0x01, 0x00}, err: ErrInvalidModel},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in, out, complete, err := scanModelIO(tc.model)
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(fmt.Sprint(err), tc.mention) {
					t.Fatalf("got %v, want %v mentioning %q", err, tc.err, tc.mention)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := infoString(in); got != tc.inputs {
				t.Errorf("inputs %s, want %s", got, tc.inputs)
			}
			if got := infoString(out); got != tc.outputs {
				t.Errorf("outputs %s, want %s", got, tc.outputs)
			}
			if complete == tc.incomplete {
				t.Errorf("complete %v, want %v", complete, !tc.incomplete)
			}
			checkAgainstDecode(t, tc.model)
		})
	}
}

func infoString(list []TensorInfo) string {
	s := make([]string, len(list))
	for i, t := range list {
		s[i] = t.String()
	}
	return strings.Join(s, " ")
}

// decodedIO derives what scanModelIO must return from a full decode by the
// protobuf library: the oracle of the fuzz test. ok is false when the
// library refuses the bytes (modelIO, which reads less, may not).
func decodedIO(data []byte) (in, out []TensorInfo, err error, ok bool) {
	var mp onnxpb.ModelProto
	if proto.Unmarshal(data, &mp) != nil {
		return nil, nil, nil, false
	}
	g := mp.GetGraph()
	if g == nil {
		return nil, nil, ErrInvalidModel, true
	}
	inits := map[string]bool{}
	for _, t := range g.GetInitializer() {
		inits[t.GetName()] = true
	}
	for _, s := range g.GetSparseInitializer() {
		inits[s.GetValues().GetName()] = true
	}
	convert := func(v *onnxpb.ValueInfoProto) (TensorInfo, error) {
		switch v.GetType().GetValue().(type) {
		case *onnxpb.TypeProto_TensorType:
		case nil:
			return TensorInfo{}, ErrInvalidModel
		default:
			return TensorInfo{}, ErrUnsupportedModel
		}
		tt := v.GetType().GetTensorType()
		typ, known := onnxElementTypes[tt.GetElemType()]
		if !known {
			return TensorInfo{}, ErrUnsupportedModel
		}
		dims := []int64{}
		for _, d := range tt.GetShape().GetDim() {
			if dv, isValue := d.GetValue().(*onnxpb.TensorShapeProto_Dimension_DimValue); isValue {
				dims = append(dims, dv.DimValue)
			} else {
				dims = append(dims, -1)
			}
		}
		return TensorInfo{Name: v.GetName(), Type: typ, Dims: dims}, nil
	}
	for _, v := range g.GetInput() {
		if inits[v.GetName()] {
			continue
		}
		t, err := convert(v)
		if err != nil {
			return nil, nil, err, true
		}
		in = append(in, t)
	}
	for _, v := range g.GetOutput() {
		t, err := convert(v)
		if err != nil {
			return nil, nil, err, true
		}
		out = append(out, t)
	}
	return in, out, nil, true
}

// checkAgainstDecode compares scanModelIO with decodedIO on data.
func checkAgainstDecode(t *testing.T, data []byte) {
	t.Helper()
	in, out, _, err := scanModelIO(data)
	wantIn, wantOut, wantErr, ok := decodedIO(data)
	if !ok {
		// The library found fault where scanModelIO may not look: ONNX
		// Runtime's parser refuses such a model when the session is made.
		return
	}
	switch {
	case wantErr != nil:
		if !errors.Is(err, wantErr) {
			t.Fatalf("scanModelIO: %v, the decoded model says %v", err, wantErr)
		}
	case err != nil:
		t.Fatalf("scanModelIO: %v, the decoded model is fine", err)
	default:
		if g, w := infoString(in), infoString(wantIn); g != w || len(in) != len(wantIn) {
			t.Fatalf("inputs %q, decoded %q", g, w)
		}
		if g, w := infoString(out), infoString(wantOut); g != w || len(out) != len(wantOut) {
			t.Fatalf("outputs %q, decoded %q", g, w)
		}
	}
}

// FuzzModelIO: scanModelIO never panics on model bytes, reads what a full
// protobuf decode reads wherever that decode succeeds, and fails with
// ErrInvalidModel, ErrUnsupportedModel or not at all.
func FuzzModelIO(f *testing.F) {
	for _, m := range []testModel{addModel(), matMulModel(), idsModel(), concatModel(), identityModel()} {
		f.Add(m.bytes())
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "*.onnx"))
	for _, path := range files {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	x := tensorValue("x", onnxFloat, "N", 3)
	f.Add(join(graphField(inputField(x)), graphField(outputField(x))))
	f.Add(graphField(join(appendMessage(nil, 11, typed("seq", sequenceType(onnxFloat))), outputField(x))))
	f.Add(graphField(appendMessage(nil, 15, appendMessage(nil, 1, appendString(nil, 8, "x")))))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, out, _, err := scanModelIO(data)
		if err != nil && !errors.Is(err, ErrInvalidModel) && !errors.Is(err, ErrUnsupportedModel) {
			t.Fatalf("error %v wraps neither ErrInvalidModel nor ErrUnsupportedModel", err)
		}
		for _, ti := range append(in, out...) {
			if ti.Type == Undefined || ti.Dims == nil {
				t.Fatalf("incomplete %#v", ti)
			}
		}
		checkAgainstDecode(t, data)
	})
}
