package demo

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// maxCloningBytes is the size budget of the whole kit: mostly the
// decoder's 3.2 M float32 weights, which are that many so that
// quantizing it has work to show (issue 6's speed and size goals).
const maxCloningBytes = 16 << 20

func TestBuildCloningDeterministic(t *testing.T) {
	a, err := BuildCloning(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildCloning(&CloningOptions{Layers: DefaultLayers, Seed: DefaultSeed, SampleRate: SampleRate})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(slices.Sorted(maps.Keys(a)), []string{DecoderFile, EncoderFile, VocoderFile, ManifestFile}) {
		t.Fatalf("files %v", slices.Sorted(maps.Keys(a)))
	}
	total := 0
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two builds", name)
		}
		total += len(data)
		t.Logf("%s: %d bytes", name, len(data))
	}
	t.Logf("total: %d bytes", total)
	if total > maxCloningBytes {
		t.Errorf("kit is %d bytes, budget %d", total, maxCloningBytes)
	}
	// The seed makes another decoder and codebook, not another vocoder.
	c, err := BuildCloning(&CloningOptions{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a[DecoderFile], c[DecoderFile]) || bytes.Equal(a[EncoderFile], c[EncoderFile]) {
		t.Error("another seed gives the same decoder or encoder")
	}
	if !bytes.Equal(a[VocoderFile], c[VocoderFile]) {
		t.Error("the seed changes the vocoder")
	}
}

func TestCloningOptionsRejected(t *testing.T) {
	for _, tt := range []struct {
		o     CloningOptions
		field string
	}{
		{CloningOptions{SampleRate: 7999}, "SampleRate"},
		{CloningOptions{MaxSeconds: MaxMaxSeconds + 1}, "MaxSeconds"},
		{CloningOptions{Layers: -1}, "Layers"},
		{CloningOptions{Layers: MaxLayers + 1}, "Layers"},
		{CloningOptions{Heads: MaxHeads + 1}, "Heads"},
		{CloningOptions{HeadDim: 4}, "HeadDim"},
		{CloningOptions{HeadDim: 33}, "HeadDim"},
		{CloningOptions{HeadDim: MaxHeadDim + 2}, "HeadDim"},
		{CloningOptions{PromptTokens: MaxPromptTokens + 1}, "PromptTokens"},
		{CloningOptions{Codes: 1}, "Codes"},
		{CloningOptions{Codes: MaxCodes + 1}, "Codes"},
		{CloningOptions{MaxContext: DefaultPromptTokens}, "MaxContext"},
		{CloningOptions{MaxContext: MaxMaxContext + 1}, "MaxContext"},
	} {
		_, err := BuildCloning(&tt.o)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tt.field) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions naming %s", tt.o, err, tt.field)
		}
	}
}

// manifestKeys returns the sorted keys of the object at path in v.
func manifestKeys(t *testing.T, v map[string]any, path ...string) []string {
	t.Helper()
	cur := v
	for _, p := range path {
		next, ok := cur[p].(map[string]any)
		if !ok {
			t.Fatalf("manifest: %s is not an object", strings.Join(path, "."))
		}
		cur = next
	}
	return slices.Sorted(maps.Keys(cur))
}

// TestCloningManifest checks voice.json against the bundle contract key
// by key, and its digests against the files.
func TestCloningManifest(t *testing.T) {
	files, err := BuildCloning(&CloningOptions{SampleRate: 24000})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(files[ManifestFile], &m); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		path []string
		keys string
	}{
		{nil, "decoder encoder engine files format name sample_rate text vocoder"},
		{[]string{"text"}, "language phoneme_id_map phonemes"},
		{[]string{"files"}, "decoder encoder vocoder"},
		{[]string{"files", "encoder"}, "path sha256 size"},
		{[]string{"encoder"}, "file inputs max_seconds min_seconds outputs sample_rate"},
		{[]string{"encoder", "inputs"}, "audio"},
		{[]string{"encoder", "outputs"}, "embedding prompt"},
		{[]string{"decoder"}, "file inputs kv max_steps outputs"},
		{[]string{"decoder", "inputs"}, "ids prev"},
		{[]string{"decoder", "outputs"}, "prosody"},
		{[]string{"decoder", "kv"}, "head_dim heads layers layout max_context past_key past_value present_key present_value"},
		{[]string{"vocoder"}, "file inputs outputs"},
		{[]string{"vocoder", "inputs"}, "embedding ids lengths prosody scales"},
		{[]string{"vocoder", "outputs"}, "audio"},
	} {
		if got := strings.Join(manifestKeys(t, m, tt.path...), " "); got != tt.keys {
			t.Errorf("manifest %s: keys %q, want %q", strings.Join(tt.path, "."), got, tt.keys)
		}
	}
	got, err := bundle.Parse(files[ManifestFile])
	if err != nil {
		t.Fatal(err)
	}
	if got.Format != 1 || got.Engine != "pipeline" || got.Name != CloneName || got.SampleRate != 24000 {
		t.Errorf("manifest head %d %q %q %d", got.Format, got.Engine, got.Name, got.SampleRate)
	}
	if got.Text.Phonemes != "espeak" || got.Text.Language != "en-us" || !reflect.DeepEqual(got.Text.PhonemeIDMap, PhonemeIDMap()) {
		t.Errorf("manifest text %q %q, map of %d", got.Text.Phonemes, got.Text.Language, len(got.Text.PhonemeIDMap))
	}
	for role, name := range map[string]string{"encoder": EncoderFile, "decoder": DecoderFile, "vocoder": VocoderFile} {
		sum := sha256.Sum256(files[name])
		if f := got.Files[role]; f.Path != name || f.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("files.%s = %+v, want %s with its sha256", role, f, name)
		}
	}
	kvWant := bundle.KV{Layout: "per_layer", Layers: 4, Heads: 4, HeadDim: 64, MaxContext: 512,
		PastKey: "past_key_values.{i}.key", PastValue: "past_key_values.{i}.value",
		PresentKey: "present.{i}.key", PresentValue: "present.{i}.value"}
	if got.Decoder.KV != kvWant || got.Decoder.MaxSteps != 512-64 || got.Decoder.File != "decoder" {
		t.Errorf("decoder %+v", got.Decoder)
	}
	if e := got.Encoder; e.File != "encoder" || e.SampleRate != 16000 || e.MinSeconds != 1 || e.MaxSeconds != 30 {
		t.Errorf("encoder %+v", e)
	}
}

// ioSignature is a value's name, type and shape as the contract writes it.
func ioSignature(v *onnxpb.ValueInfoProto) string {
	tt := v.GetType().GetTensorType()
	dims := make([]string, 0, len(tt.GetShape().GetDim()))
	for _, d := range tt.GetShape().GetDim() {
		if p := d.GetDimParam(); p != "" {
			dims = append(dims, p)
		} else {
			dims = append(dims, fmt.Sprint(d.GetDimValue()))
		}
	}
	dt := map[onnx.DataType]string{onnx.Float: "float32", onnx.Int64: "int64"}[onnx.DataType(tt.GetElemType())]
	return fmt.Sprintf("%s %s[%s]", v.GetName(), dt, strings.Join(dims, ","))
}

// TestCloningModelIO checks each model's inputs and outputs, the tensor
// names the manifest points at, in the models themselves.
func TestCloningModelIO(t *testing.T) {
	files, err := BuildCloning(&CloningOptions{Layers: 3})
	if err != nil {
		t.Fatal(err)
	}
	past := "float32[1,4,past_sequence,64]"
	present := "float32[1,4,total_sequence,64]"
	for _, tt := range []struct {
		file    string
		inputs  []string
		outputs []string
	}{
		{EncoderFile, []string{"audio float32[1,samples]"},
			[]string{"embedding float32[1,128]", "prompt_ids int64[1,64]"}},
		{DecoderFile,
			[]string{"input_ids int64[1,sequence]", "prev_prosody float32[1,sequence,3]",
				"past_key_values.0.key " + past, "past_key_values.0.value " + past,
				"past_key_values.1.key " + past, "past_key_values.1.value " + past,
				"past_key_values.2.key " + past, "past_key_values.2.value " + past},
			[]string{"prosody float32[1,sequence,3]",
				"present.0.key " + present, "present.0.value " + present,
				"present.1.key " + present, "present.1.value " + present,
				"present.2.key " + present, "present.2.value " + present}},
		{VocoderFile,
			[]string{"input int64[1,phonemes]", "input_lengths int64[1]", "scales float32[3]",
				"prosody float32[1,phonemes,3]", "speaker_embedding float32[1,128]"},
			[]string{"output float32[1,1,1,samples]"}},
	} {
		m, err := onnx.Decode(files[tt.file], nil)
		if err != nil {
			t.Fatalf("%s: %v", tt.file, err)
		}
		var in, out []string
		for _, v := range m.Graph().GetInput() {
			in = append(in, ioSignature(v))
		}
		for _, v := range m.Graph().GetOutput() {
			out = append(out, ioSignature(v))
		}
		if !slices.Equal(in, tt.inputs) || !slices.Equal(out, tt.outputs) {
			t.Errorf("%s:\n inputs  %q\n want    %q\n outputs %q\n want    %q", tt.file, in, tt.inputs, out, tt.outputs)
		}
		if m.Opset("") != 17 {
			t.Errorf("%s: opset %d, want 17", tt.file, m.Opset(""))
		}
	}
}

func TestWriteCloning(t *testing.T) {
	dir := t.TempDir()
	if err := WriteCloning(dir, nil); err != nil {
		t.Fatal(err)
	}
	want, err := BuildCloning(nil)
	if err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, slices.Sorted(maps.Keys(want))) {
		t.Errorf("dir holds %v", names)
	}
	for name, data := range want {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || !bytes.Equal(got, data) {
			t.Errorf("%s: written bytes differ (%v)", name, err)
		}
	}
	// The bundle package, which the engine loads bundles with, accepts it
	// and finds every digest right.
	if _, err := bundle.Load(dir); err != nil {
		t.Errorf("bundle.Load: %v", err)
	}
	if err := WriteCloning(filepath.Join(dir, "missing"), nil); err == nil {
		t.Error("writing into a missing directory succeeded")
	}
	if err := WriteCloning(dir, &CloningOptions{Codes: 1}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("bad options: err = %v", err)
	}
}

func TestKVName(t *testing.T) {
	for _, tt := range []struct {
		pattern string
		i       int
		want    string
	}{
		{"past_key_values.{i}.key", 0, "past_key_values.0.key"},
		{"present.{i}.value", 11, "present.11.value"},
		{"{i}", 3, "3"},
		{"no_index", 2, "no_index"},
		{"a{i}b{i}", 1, "a1b1"},
		{"{i", 1, "{i"},
	} {
		if got := kvName(tt.pattern, tt.i); got != tt.want {
			t.Errorf("kvName(%q, %d) = %q, want %q", tt.pattern, tt.i, got, tt.want)
		}
	}
}

// TestProjectionOrthonormal: the vocoder reads the embedding back through
// the projection's transpose, which is only exact for orthonormal rows.
func TestProjectionOrthonormal(t *testing.T) {
	w := projection()
	var worst float64
	for i := range featureDim {
		for j := range featureDim {
			var d float64
			for k := range EmbeddingDim {
				d += float64(w[i*EmbeddingDim+k]) * float64(w[j*EmbeddingDim+k])
			}
			if i == j {
				d--
			}
			worst = max(worst, math.Abs(d))
		}
	}
	if worst > 1e-6 {
		t.Errorf("W·Wᵀ differs from I by %g", worst)
	}
}

func TestMelFilterbank(t *testing.T) {
	fb := melFilterbank()
	for m := range encMels {
		var sum float64
		nonzero := 0
		for k := range encBins {
			v := float64(fb[k*encMels+m])
			if v < 0 {
				t.Fatalf("filter %d bin %d is %v", m, k, v)
			}
			if v > 0 {
				nonzero++
			}
			sum += v
		}
		if math.Abs(sum-1) > 1e-5 || nonzero < 2 {
			t.Errorf("filter %d: area %v over %d bins", m, sum, nonzero)
		}
	}
}

func TestSplitmix(t *testing.T) {
	// The first outputs of SplitMix64 seeded with 0, from the reference
	// implementation: the weights depend on these exact numbers.
	r := splitmix{0}
	for _, want := range []uint64{0xe220a8397b1dcdaf, 0x6e789e6aa1b965f4, 0x06c45d188009454f} {
		if got := r.next(); got != want {
			t.Errorf("next() = %#x, want %#x", got, want)
		}
	}
	r = splitmix{1}
	var sum, sq float64
	const n = 100000
	for range n {
		v := r.normal()
		sum += v
		sq += v * v
	}
	if mean, sd := sum/n, math.Sqrt(sq/n-(sum/n)*(sum/n)); math.Abs(mean) > 0.02 || math.Abs(sd-1) > 0.02 {
		t.Errorf("normal(): mean %.3f, sd %.3f", mean, sd)
	}
}

func BenchmarkBuildCloning(b *testing.B) {
	var size int
	b.ReportAllocs()
	for b.Loop() {
		files, err := BuildCloning(nil)
		if err != nil {
			b.Fatal(err)
		}
		size = 0
		for _, f := range files {
			size += len(f)
		}
	}
	b.ReportMetric(float64(size), "bytes")
}
