package bundle

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/mynah-tts/mynah/quant/ort"
)

// tensorSpec is what the engine contract says about one tensor of a role:
// its element types, ranks, and the fixed dimensions the manifest implies.
type tensorSpec struct {
	key      string
	what     string
	types    []ort.ElementType
	ranks    []int
	optional bool
	// dims returns axis → size that a declared fixed dimension must have.
	dims func(m *Manifest) map[int]int64
}

type roleSpec struct{ inputs, outputs []tensorSpec }

var (
	f32     = []ort.ElementType{ort.Float32}
	i64     = []ort.ElementType{ort.Int64}
	threeAt = func(axis int) func(*Manifest) map[int]int64 {
		return func(*Manifest) map[int]int64 { return map[int]int64{axis: 3} }
	}
)

// specs follow the engine contracts in doc.go and REFERENCE.md.
var specs = map[string]map[string]roleSpec{
	EnginePiper: {RoleModel: {
		inputs: []tensorSpec{
			{key: "ids", what: "phoneme ids int64 [1, P]", types: i64, ranks: []int{2}},
			{key: "lengths", what: "id count int64 [1]", types: i64, ranks: []int{1}},
			{key: "scales", what: "noise, length, noise_w float32 [3]", types: f32, ranks: []int{1}, dims: threeAt(0)},
			{key: "sid", what: "speaker id int64 [1]", types: i64, ranks: []int{1}, optional: true},
		},
		outputs: []tensorSpec{{key: "audio", what: "audio float32 [1, 1, 1, T]", types: f32, ranks: []int{1, 2, 3, 4}}},
	}},
	EnginePipeline: {
		RoleEncoder: {
			inputs: []tensorSpec{{key: "audio", what: "mono audio float32 [1, N]", types: f32, ranks: []int{2}}},
			outputs: []tensorSpec{
				{key: "embedding", what: "speaker embedding float32 [1, D]", types: f32, ranks: []int{2}},
				{key: "prompt", what: "speaker prompt ids int64 [1, K]", types: i64, ranks: []int{2}},
			},
		},
		RoleDecoder: {
			inputs: []tensorSpec{
				{key: "ids", what: "ids int64 [1, S]", types: i64, ranks: []int{2}},
				{key: "prev", what: "previous prosody float32 [1, S, 3]", types: f32, ranks: []int{3}, dims: threeAt(2)},
			},
			outputs: []tensorSpec{{key: "prosody", what: "prosody float32 [1, S, 3]", types: f32, ranks: []int{3}, dims: threeAt(2)}},
		},
		RoleVocoder: {
			inputs: []tensorSpec{
				{key: "ids", what: "phoneme ids int64 [1, n]", types: i64, ranks: []int{2}},
				{key: "lengths", what: "id count int64 [1]", types: i64, ranks: []int{1}},
				{key: "scales", what: "noise, length, noise_w float32 [3]", types: f32, ranks: []int{1}, dims: threeAt(0)},
				{key: "prosody", what: "prosody float32 [1, n, 3]", types: f32, ranks: []int{3}, dims: threeAt(2)},
				{key: "embedding", what: "speaker embedding float32 [1, D]", types: f32, ranks: []int{2}},
			},
			outputs: []tensorSpec{{key: "audio", what: "audio float32 [1, 1, 1, T]", types: f32, ranks: []int{1, 2, 3, 4}}},
		},
	},
	EngineStyleVector: {RoleModel: {
		inputs: []tensorSpec{
			{key: "tokens", what: "tokens int64 [1, L+2]", types: i64, ranks: []int{2}},
			{key: "style", what: "style vector float32 [1, dim]", types: f32, ranks: []int{2},
				dims: func(m *Manifest) map[int]int64 { return map[int]int64{1: int64(m.Style.Dim)} }},
			// Some Kokoro exports take the speed as int32.
			{key: "speed", what: "speed float32 [1]", types: []ort.ElementType{ort.Float32, ort.Int32}, ranks: []int{1}},
		},
		outputs: []tensorSpec{{key: "audio", what: "audio float32 [T] or [1, T]", types: f32, ranks: []int{1, 2}}},
	}},
}

func specFor(engine, role string) roleSpec { return specs[engine][role] }

func specByKey(list []tensorSpec, key string) *tensorSpec {
	for i := range list {
		if list[i].key == key {
			return &list[i]
		}
	}
	return nil
}

func specKeys(list []tensorSpec) string {
	k := make([]string, len(list))
	for i, s := range list {
		k[i] = s.key
	}
	return strings.Join(k, ", ")
}

// ModelIO is what CheckModel reads of a loaded model; *ort.Session has it.
type ModelIO interface {
	Inputs() []ort.TensorInfo
	Outputs() []ort.TensorInfo
}

var _ ModelIO = (*ort.Session)(nil)

// CheckModel compares role's declared tensors with the model's real inputs
// and outputs as ONNX Runtime reports them: every declared name must exist
// with an element type and rank the engine contract allows and with the
// fixed dimensions the manifest implies (the style dim, the KV heads and
// head_dim, the 3 prosody channels); every model input must be declared,
// because the engine cannot feed an input it does not know. A dimension
// the model leaves dynamic, and a rank it leaves undeclared, pass. Errors
// wrap ErrModelMismatch and name the role, the tensor and what differs.
func (m *Manifest) CheckModel(role string, model ModelIO) error {
	t := m.tensors(role)
	if t == nil {
		return fmt.Errorf("%w: manifest has no role %q", ErrModelMismatch, role)
	}
	spec := specFor(m.Engine, role)
	ins := byName(model.Inputs())
	outs := byName(model.Outputs())
	mapped := make(map[string]bool)
	// side is "input" or "output".
	check := func(side string, have map[string]ort.TensorInfo, s tensorSpec, name string, dims map[int]int64) error {
		info, ok := have[name]
		if !ok {
			return fmt.Errorf("%w: %s %s %s: model has no %s %q (model %ss: %s)",
				ErrModelMismatch, role, side, s.key, side, name, side, list(have))
		}
		where := fmt.Sprintf("%s %s %s (%q)", role, side, s.key, name)
		if !slices.Contains(s.types, info.Type) {
			return fmt.Errorf("%w: %s is %s in the model, want %s", ErrModelMismatch, where, info.Type, typeList(s.types))
		}
		// ONNX Runtime reports a scalar and an undeclared shape alike;
		// neither can be told from the other, so neither is checked.
		if len(info.Dims) > 0 {
			if !slices.Contains(s.ranks, len(info.Dims)) {
				return fmt.Errorf("%w: %s has rank %d (%s) in the model, want rank %s for %s",
					ErrModelMismatch, where, len(info.Dims), info, intList(s.ranks), s.what)
			}
			for _, axis := range slices.Sorted(maps.Keys(dims)) {
				if axis < len(info.Dims) && info.Dims[axis] >= 0 && info.Dims[axis] != dims[axis] {
					return fmt.Errorf("%w: %s has dimension %d = %d in the model (%s), the manifest implies %d",
						ErrModelMismatch, where, axis, info.Dims[axis], info, dims[axis])
				}
			}
		}
		if side == "input" {
			mapped[name] = true
		}
		return nil
	}
	for _, side := range []struct {
		name  string
		decl  map[string]string
		specs []tensorSpec
		have  map[string]ort.TensorInfo
	}{{"input", t.Inputs, spec.inputs, ins}, {"output", t.Outputs, spec.outputs, outs}} {
		for _, s := range side.specs {
			name := side.decl[s.key]
			if name == "" {
				continue // optional and not declared
			}
			var dims map[int]int64
			if s.dims != nil {
				dims = s.dims(m)
			}
			if err := check(side.name, side.have, s, name, dims); err != nil {
				return err
			}
		}
	}
	if role == RoleDecoder && m.Decoder != nil {
		if err := m.checkKV(ins, outs, check); err != nil {
			return err
		}
	}
	for _, in := range model.Inputs() {
		if !mapped[in.Name] {
			return fmt.Errorf("%w: %s: model input %q (%s) is not declared in the manifest, and the engine cannot feed it",
				ErrModelMismatch, role, in.Name, in)
		}
	}
	return nil
}

func (m *Manifest) checkKV(ins, outs map[string]ort.TensorInfo,
	check func(string, map[string]ort.TensorInfo, tensorSpec, string, map[int]int64) error) error {
	kv := m.Decoder.KV
	dims := map[int]int64{1: int64(kv.Heads), 3: int64(kv.HeadDim)}
	for i := range kv.Layers {
		n := kv.Names(i)
		for k, side := range []string{"input", "input", "output", "output"} {
			have := ins
			if side == "output" {
				have = outs
			}
			s := tensorSpec{key: "kv." + [...]string{"past_key", "past_value", "present_key", "present_value"}[k] + "[" + strconv.Itoa(i) + "]",
				what: "KV float32 [1, heads, seq, head_dim]", types: f32, ranks: []int{4}}
			if err := check(side, have, s, n[k], dims); err != nil {
				return err
			}
		}
	}
	// A model with more layers than declared has past inputs the engine
	// would not feed; the undeclared-input check below names them.
	return nil
}

func byName(list []ort.TensorInfo) map[string]ort.TensorInfo {
	m := make(map[string]ort.TensorInfo, len(list))
	for _, t := range list {
		m[t.Name] = t
	}
	return m
}

func list(m map[string]ort.TensorInfo) string {
	names := slices.Sorted(maps.Keys(m))
	if len(names) > 12 {
		names = append(names[:12], fmt.Sprintf("… %d more", len(m)-12))
	}
	return strings.Join(names, ", ")
}

func typeList(ts []ort.ElementType) string {
	s := make([]string, len(ts))
	for i, t := range ts {
		s[i] = t.String()
	}
	return strings.Join(s, " or ")
}

func intList(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, " or ")
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
