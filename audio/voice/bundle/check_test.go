package bundle_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// fakeIO is a model's inputs and outputs as ONNX Runtime would report them.
type fakeIO struct{ in, out []ort.TensorInfo }

func (f fakeIO) Inputs() []ort.TensorInfo  { return f.in }
func (f fakeIO) Outputs() []ort.TensorInfo { return f.out }

var _ bundle.ModelIO = fakeIO{}

func ti(name string, typ ort.ElementType, dims ...int64) ort.TensorInfo {
	return ort.TensorInfo{Name: name, Type: typ, Dims: dims}
}

// Models that follow the contract exactly, as exported.
func styleIO() fakeIO {
	return fakeIO{
		in:  []ort.TensorInfo{ti("tokens", ort.Int64, 1, -1), ti("style", ort.Float32, 1, 256), ti("speed", ort.Float32, 1)},
		out: []ort.TensorInfo{ti("audio", ort.Float32, -1)},
	}
}

func decoderIO() fakeIO {
	f := fakeIO{
		in:  []ort.TensorInfo{ti("input_ids", ort.Int64, 1, -1), ti("prev_prosody", ort.Float32, 1, -1, 3)},
		out: []ort.TensorInfo{ti("prosody", ort.Float32, 1, -1, 3)},
	}
	for i := range 2 {
		f.in = append(f.in, ti(fmt.Sprintf("past_key_values.%d.key", i), ort.Float32, 1, 2, -1, 32),
			ti(fmt.Sprintf("past_key_values.%d.value", i), ort.Float32, 1, 2, -1, 32))
		f.out = append(f.out, ti(fmt.Sprintf("present.%d.key", i), ort.Float32, 1, 2, -1, 32),
			ti(fmt.Sprintf("present.%d.value", i), ort.Float32, 1, 2, -1, 32))
	}
	return f
}

func encoderIO() fakeIO {
	return fakeIO{
		in:  []ort.TensorInfo{ti("audio", ort.Float32, 1, -1)},
		out: []ort.TensorInfo{ti("embedding", ort.Float32, 1, 192), ti("prompt_ids", ort.Int64, 1, 64)},
	}
}

func vocoderIO() fakeIO {
	return fakeIO{
		in: []ort.TensorInfo{ti("input", ort.Int64, 1, -1), ti("input_lengths", ort.Int64, 1), ti("scales", ort.Float32, 3),
			ti("prosody", ort.Float32, 1, -1, 3), ti("speaker_embedding", ort.Float32, 1, 192)},
		out: []ort.TensorInfo{ti("output", ort.Float32, 1, 1, 1, -1)},
	}
}

// edit returns a copy of f with the named tensor replaced (or removed, for
// a zero TensorInfo), or with t added when no tensor has that name.
func edit(f fakeIO, name string, t ort.TensorInfo) fakeIO {
	change := func(list []ort.TensorInfo) ([]ort.TensorInfo, bool) {
		list = slices.Clone(list)
		for i := range list {
			if list[i].Name == name {
				if t.Name == "" {
					return slices.Delete(list, i, i+1), true
				}
				list[i] = t
				return list, true
			}
		}
		return list, false
	}
	in, found := change(f.in)
	out, foundOut := change(f.out)
	if !found && !foundOut {
		in = append(in, t)
	}
	return fakeIO{in: in, out: out}
}

func TestCheckModelAccepts(t *testing.T) {
	pipeline, err := bundle.Parse([]byte(pipelineJSON))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    *bundle.Manifest
		role string
		io   fakeIO
	}{
		{"style", styleManifest(), bundle.RoleModel, styleIO()},
		{"style [1, T] output and int32 speed", styleManifest(), bundle.RoleModel,
			edit(edit(styleIO(), "audio", ti("audio", ort.Float32, 1, -1)), "speed", ti("speed", ort.Int32, 1))},
		{"style dynamic dim", styleManifest(), bundle.RoleModel, edit(styleIO(), "style", ti("style", ort.Float32, -1, -1))},
		{"style scalar-or-undeclared speed", styleManifest(), bundle.RoleModel, edit(styleIO(), "speed", ti("speed", ort.Float32))},
		{"encoder", pipeline, bundle.RoleEncoder, encoderIO()},
		{"decoder", pipeline, bundle.RoleDecoder, decoderIO()},
		{"vocoder", pipeline, bundle.RoleVocoder, vocoderIO()},
		{"extra output is ignored", pipeline, bundle.RoleEncoder,
			fakeIO{in: encoderIO().in, out: append(encoderIO().out, ti("debug", ort.Float32, 5))}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if err := c.m.CheckModel(c.role, c.io); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestCheckModelRejects: each mismatch names the role, the tensor and
// what differs.
func TestCheckModelRejects(t *testing.T) {
	pipeline, err := bundle.Parse([]byte(pipelineJSON))
	if err != nil {
		t.Fatal(err)
	}
	style := styleManifest()
	style128 := styleManifest()
	style128.Style.Dim = 128
	renamed := styleManifest()
	renamed.Model.Inputs["tokens"] = "input_ids"
	cases := []struct {
		name string
		m    *bundle.Manifest
		role string
		io   fakeIO
		want []string
	}{
		{"wrong tensor name", renamed, bundle.RoleModel, styleIO(),
			[]string{`model input tokens: model has no input "input_ids"`, "speed, style, tokens"}},
		{"wrong dtype", style, bundle.RoleModel, edit(styleIO(), "tokens", ti("tokens", ort.Int32, 1, -1)),
			[]string{`model input tokens ("tokens") is int32 in the model, want int64`}},
		{"wrong speed dtype", style, bundle.RoleModel, edit(styleIO(), "speed", ti("speed", ort.Float64, 1)),
			[]string{`speed ("speed") is float64`, "want float32 or int32"}},
		{"wrong rank", style, bundle.RoleModel, edit(styleIO(), "style", ti("style", ort.Float32, 1, 1, 256)),
			[]string{`model input style ("style") has rank 3`, "want rank 2"}},
		{"wrong output rank", style, bundle.RoleModel, edit(styleIO(), "audio", ti("audio", ort.Float32, 1, 1, -1)),
			[]string{`model output audio ("audio") has rank 3`}},
		{"style dim differs", style128, bundle.RoleModel, styleIO(),
			[]string{`style ("style") has dimension 1 = 256 in the model`, "the manifest implies 128"}},
		{"missing output", style, bundle.RoleModel, edit(styleIO(), "audio", ort.TensorInfo{}),
			[]string{`model output audio: model has no output "audio"`}},
		{"undeclared input", style, bundle.RoleModel, edit(styleIO(), "attention_mask", ti("attention_mask", ort.Int64, 1, -1)),
			[]string{`model input "attention_mask"`, "not declared"}},
		{"prosody channels", pipeline, bundle.RoleDecoder, edit(decoderIO(), "prosody", ti("prosody", ort.Float32, 1, -1, 4)),
			[]string{`decoder output prosody ("prosody") has dimension 2 = 4`}},
		{"kv heads", pipeline, bundle.RoleDecoder, edit(decoderIO(), "past_key_values.1.value", ti("past_key_values.1.value", ort.Float32, 1, 4, -1, 32)),
			[]string{`decoder input kv.past_value[1] ("past_key_values.1.value") has dimension 1 = 4`, "implies 2"}},
		{"kv head_dim", pipeline, bundle.RoleDecoder, edit(decoderIO(), "present.0.key", ti("present.0.key", ort.Float32, 1, 2, -1, 64)),
			[]string{`kv.present_key[0] ("present.0.key") has dimension 3 = 64`}},
		{"kv fp16", pipeline, bundle.RoleDecoder, edit(decoderIO(), "present.0.key", ti("present.0.key", ort.Float16, 1, 2, -1, 32)),
			[]string{`present.0.key") is float16 in the model, want float32`}},
		{"kv layer missing", pipeline, bundle.RoleDecoder, edit(decoderIO(), "past_key_values.1.key", ort.TensorInfo{}),
			[]string{`decoder input kv.past_key[1]: model has no input "past_key_values.1.key"`}},
		{"more layers than declared", pipeline, bundle.RoleDecoder, edit(decoderIO(), "past_key_values.2.key", ti("past_key_values.2.key", ort.Float32, 1, 2, -1, 32)),
			[]string{`decoder: model input "past_key_values.2.key"`, "not declared"}},
		{"encoder prompt dtype", pipeline, bundle.RoleEncoder, edit(encoderIO(), "prompt_ids", ti("prompt_ids", ort.Float32, 1, 64)),
			[]string{`encoder output prompt ("prompt_ids") is float32 in the model, want int64`}},
		{"vocoder scales length", pipeline, bundle.RoleVocoder, edit(vocoderIO(), "scales", ti("scales", ort.Float32, 2)),
			[]string{`vocoder input scales ("scales") has dimension 0 = 2`}},
		{"role the manifest lacks", style, bundle.RoleVocoder, vocoderIO(), []string{`manifest has no role "vocoder"`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.m.CheckModel(c.role, c.io)
			if !errors.Is(err, bundle.ErrModelMismatch) {
				t.Fatalf("err = %v, want ErrModelMismatch", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %q, want it to mention %q", err, w)
				}
			}
		})
	}
}
