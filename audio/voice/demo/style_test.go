package demo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/onnx"
)

func TestBuildStyleDeterministic(t *testing.T) {
	a, err := BuildStyle(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := BuildStyle(&StyleOptions{MaxSeconds: DefaultMaxSeconds, RowRule: bundle.RowRuleTokens})
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 5 || len(a) != len(b) {
		t.Fatalf("%d and %d files, want 5", len(a), len(b))
	}
	for name, data := range a {
		if !bytes.Equal(data, b[name]) {
			t.Errorf("%s differs between two builds", name)
		}
	}
	c, err := BuildStyle(&StyleOptions{RowRule: bundle.RowRuleTokensMinusOne})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a[StyleModelFile], c[StyleModelFile]) || bytes.Equal(a[bundle.ManifestName], c[bundle.ManifestName]) {
		t.Error("the row rule should change voice.json and nothing else")
	}
}

func TestBuildStyleOptions(t *testing.T) {
	for _, o := range []StyleOptions{{RowRule: "tokens_plus_one"}, {MaxSeconds: -1}, {MaxSeconds: MaxMaxSeconds + 1}} {
		if _, err := BuildStyle(&o); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: err = %v, want ErrInvalidOptions", o, err)
		}
	}
}

// TestStyleKitLoads: the written kit is a bundle that Load verifies, with
// a model that quant/onnx accepts and the Kokoro tensors.
func TestStyleKitLoads(t *testing.T) {
	dir := t.TempDir()
	if err := WriteStyle(dir, nil); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := b.Manifest
	if m.Engine != bundle.EngineStyleVector || m.SampleRate != StyleSampleRate || m.Style.Dim != StyleDim || m.Style.Rows != StyleRows {
		t.Fatalf("manifest %+v", m)
	}
	if got := b.VoiceNames(); len(got) != 3 || got[0] != "amber" || got[1] != "iris" || got[2] != "jade" {
		t.Fatalf("voices %v", got)
	}
	f, err := b.RoleFile(bundle.RoleModel)
	if err != nil {
		t.Fatal(err)
	}
	model, err := onnx.ReadFile(f.Path, nil)
	if err != nil {
		t.Fatal(err)
	}
	var ins, outs []string
	for _, in := range model.Graph().GetInput() {
		ins = append(ins, in.GetName())
	}
	for _, out := range model.Graph().GetOutput() {
		outs = append(outs, out.GetName())
	}
	if len(ins) != 3 || ins[0] != "tokens" || ins[1] != "style" || ins[2] != "speed" || len(outs) != 1 || outs[0] != "audio" {
		t.Fatalf("model inputs %v outputs %v", ins, outs)
	}
	if f.Size > maxModelBytes {
		t.Errorf("model is %d bytes, over the demo voice's budget of %d", f.Size, maxModelBytes)
	}
	if _, err := os.Stat(filepath.Join(dir, "voices", "amber.bin")); err != nil {
		t.Fatal(err)
	}
}

// TestStyleVectorsAimAtTheirVoice reads the voice files back through the
// projection, as the model does, and finds each voice's speaker in every
// row, moved by no more than the per-row change.
func TestStyleVectorsAimAtTheirVoice(t *testing.T) {
	w := styleDirections()
	for i := range w {
		for j := range w {
			want := 0.0
			if i == j {
				want = 1
			}
			if d := dot(w[i], w[j]); math.Abs(d-want) > 1e-9 {
				t.Fatalf("directions %d·%d = %v", i, j, d)
			}
		}
	}
	for _, v := range StyleVoices() {
		data := styleVoiceBytes(v)
		if len(data) != StyleRows*StyleDim*4 {
			t.Fatalf("%s: %d bytes", v.Name, len(data))
		}
		var lo, hi float64 = math.Inf(1), 0
		row := make([]float64, StyleDim)
		for r := range StyleRows {
			for i := range row {
				row[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*(r*StyleDim+i):])))
			}
			f0 := styleF0Centre * math.Exp2(styleF0Octaves*math.Tanh(dot(row, w[0])))
			lo, hi = min(lo, f0), max(hi, f0)
			if rms := math.Sqrt(dot(row, row) / StyleDim); rms < styleResidual/2 {
				t.Fatalf("%s row %d: RMS %v, the residual is missing", v.Name, r, rms)
			}
		}
		if lo < v.F0*(1-styleRowF0-1e-3) || hi > v.F0*(1+styleRowF0+1e-3) || hi-lo < v.F0*styleRowF0 {
			t.Errorf("%s: row pitch %.1f..%.1f Hz, want within ±%.0f%% of %.0f and varying", v.Name, lo, hi, 100*styleRowF0, v.F0)
		}
	}
}

// BenchmarkBuildStyle: building the whole kit (model, pack, manifest); the
// metrics are the files' sizes.
func BenchmarkBuildStyle(b *testing.B) {
	b.ReportAllocs()
	var files map[string][]byte
	for b.Loop() {
		var err error
		if files, err = BuildStyle(nil); err != nil {
			b.Fatal(err)
		}
	}
	var pack int
	for name, data := range files {
		if filepath.Dir(name) == "voices" {
			pack += len(data)
		}
	}
	b.ReportMetric(float64(len(files[StyleModelFile])), "model-bytes")
	b.ReportMetric(float64(pack), "pack-bytes")
	b.ReportMetric(float64(len(files[bundle.ManifestName])), "manifest-bytes")
}
