package voice_test

import (
	"encoding/json"
	"errors"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"os"
	"path/filepath"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
)

// writeVariant puts a copy of the model beside it as a variant of
// precision with a gate record, as mynah quantize --voice does.
func writeVariant(t *testing.T, model, precision string, passed bool) {
	t.Helper()
	data, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	path := voice.PiperVariantPath(model, precision)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var cfg map[string]any
	raw, _ := os.ReadFile(model + ".json")
	json.Unmarshal(raw, &cfg)
	cfg[voice.VariantKey] = voice.VariantRecord{Precision: precision, OriginalSHA256: "x",
		Gate: bundle.GateRecord{Passed: passed, Provider: "cpu", SizeRatio: 0.5}}
	out, _ := json.Marshal(cfg)
	if err := os.WriteFile(path+".json", out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPiperVariants(t *testing.T) {
	dir := t.TempDir()
	model, err := demo.Write(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	writeVariant(t, model, "fp16", true)
	writeVariant(t, model, "int8", false)
	// The variants do not make the directory ambiguous.
	if found, err := voice.FindPiper(dir); err != nil || found != model {
		t.Fatalf("FindPiper with variants beside: %q, %v", found, err)
	}
	gates := voice.PiperGates(model)
	if len(gates) != 2 || !gates["fp16"].Passed || gates["int8"].Passed {
		t.Errorf("gates %+v", gates)
	}
	rt := enginetest.OpenRuntime(t)
	v, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{Precision: "fp16"})
	if err != nil {
		t.Fatal(err)
	}
	if got := v.Info().ModelPath; filepath.Base(got) != "mynah-demo.fp16.onnx" {
		t.Errorf("fp16 loaded %s", got)
	}
	v.Close()
	if _, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{Precision: "int8"}); !errors.Is(err, bundle.ErrNoVariant) {
		t.Errorf("a variant that failed the gate: %v", err)
	}
	if _, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{Precision: "nbits"}); !errors.Is(err, bundle.ErrNoVariant) {
		t.Errorf("a missing variant: %v", err)
	}
}
