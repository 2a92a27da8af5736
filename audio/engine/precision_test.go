package engine

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// addDecoderVariant quantizes the kit's decoder to int8 and records it in
// voice.json with the given verdict, as mynah quantize --voice does.
func addDecoderVariant(t *testing.T, dir string, passed bool) {
	t.Helper()
	m, err := onnx.ReadFile(filepath.Join(dir, "decoder.onnx"), nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := quant.Quantize(m, &quant.Options{Mode: quant.ModeInt8, RestFP16: true, EmbeddingsInt8: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := onnx.Encode(res.Model)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "decoder.int8.onnx"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	b.Manifest.Variants = map[string]bundle.Variant{"int8": {
		Files: map[string]bundle.FileRef{"decoder": {Path: "decoder.int8.onnx", SHA256: hex.EncodeToString(sum[:]), Size: int64(len(data))}},
		Gate: bundle.GateRecord{Passed: passed, Provider: "cpu", SizeRatio: 0.31,
			CPU: string(cpuclass.Host()), Int8Format: string(res.Report.Int8Format)},
	}}
	out, err := b.Manifest.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.ManifestName), out, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestVoicePrecision(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, demo.Name)
	clone := enginetest.WriteKits(t, dir, false)
	addDecoderVariant(t, clone, true)
	log := slog.New(slog.DiscardHandler)
	rt := enginetest.OpenRuntime(t)
	open := func(precision string, precisions map[string]string) (*Engine, error) {
		return Open(&Options{Runtime: rt, Dir: dir, Default: demo.Name, Precision: precision, Precisions: precisions, Logger: log})
	}

	for _, tc := range []struct {
		precision  string
		precisions map[string]string
		want       string
		fails      bool
	}{
		{"auto", nil, "int8", false},
		{"auto", map[string]string{demo.CloneName: "fp32"}, "fp32", false},
		{"fp32", nil, "fp32", false},
		{"int8", nil, "int8", false},
		{"nbits", nil, "", true}, // there is no nbits variant
	} {
		vs, err := open(tc.precision, tc.precisions)
		if err != nil {
			t.Fatal(err)
		}
		v, release, err := vs.sessions.Get(context.Background(), demo.CloneName)
		switch {
		case tc.fails && err == nil:
			release()
			t.Errorf("%s: loaded %s, want an error", tc.precision, v.precision)
		case !tc.fails && err != nil:
			t.Errorf("%s %v: %v", tc.precision, tc.precisions, err)
		case !tc.fails:
			if v.precision != tc.want {
				t.Errorf("%s %v: loaded %s, want %s", tc.precision, tc.precisions, v.precision, tc.want)
			}
			// The variant speaks, and its phrases are its own.
			err := vs.Speak(context.Background(), Request{Voice: demo.CloneName, Text: "Hello."}, func(Chunk) error { return nil })
			if err != nil {
				t.Errorf("%s: speak: %v", tc.want, err)
			}
			release()
		}
		vs.Close()
	}

	// A variant whose file was damaged after its gate: auto falls back to
	// the original and the voice speaks; asked for by name, it fails.
	addDecoderVariant(t, clone, true)
	if err := os.WriteFile(filepath.Join(clone, "decoder.int8.onnx"), []byte("truncated"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		precision string
		want      string
	}{{"auto", "fp32"}, {"int8", ""}} {
		vs, err := open(tc.precision, nil)
		if err != nil {
			t.Fatal(err)
		}
		v, release, err := vs.sessions.Get(context.Background(), demo.CloneName)
		switch {
		case tc.want == "" && err == nil:
			release()
			t.Errorf("%s with a damaged variant: loaded %s, want an error", tc.precision, v.precision)
		case tc.want == "" && !errors.Is(err, bundle.ErrNoVariant):
			t.Errorf("%s with a damaged variant: %v, want ErrNoVariant", tc.precision, err)
		case tc.want != "" && err != nil:
			t.Errorf("%s with a damaged variant: %v", tc.precision, err)
		case tc.want != "":
			if v.precision != tc.want {
				t.Errorf("%s with a damaged variant: loaded %s", tc.precision, v.precision)
			}
			if err := vs.Speak(context.Background(), Request{Voice: demo.CloneName, Text: "Hello."}, func(Chunk) error { return nil }); err != nil {
				t.Errorf("speak after falling back: %v", err)
			}
			release()
		}
		vs.Close()
	}

	// On a CPU where the variant's int8 weights would saturate, auto
	// passes over it to the original, with one warning saying why; asked
	// for by name there, it is refused.
	var logged strings.Builder
	wlog := slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	if err := setGateFormat(clone, cpuclass.FullRange); err != nil {
		t.Fatal(err)
	}
	vs, err := Open(&Options{Runtime: rt, Dir: dir, Default: demo.Name, Logger: wlog})
	if err != nil {
		t.Fatal(err)
	}
	vs.cpu = cpuclass.AVX2
	v, release, err := vs.sessions.Get(context.Background(), demo.CloneName)
	if err != nil {
		t.Fatal(err)
	}
	if v.precision != "fp32" || strings.Count(logged.String(), "level=WARN") != 1 || !strings.Contains(logged.String(), "s8 int8 weights saturate on avx2") {
		t.Errorf("on an avx2 CPU auto loaded %s and logged:\n%s", v.precision, logged.String())
	}
	release()
	vs.Close()

	// A variant recorded as failed is never taken by auto.
	addDecoderVariant(t, clone, false)
	vs, err = open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer vs.Close()
	v, release, err = vs.sessions.Get(context.Background(), demo.CloneName)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	if v.precision != "fp32" {
		t.Errorf("auto took a variant that failed its gate: %s", v.precision)
	}
}

// setGateFormat records the int8 variant of the bundle in dir as holding
// weights of format f.
func setGateFormat(dir string, f cpuclass.Int8Format) error {
	b, err := bundle.Load(dir)
	if err != nil {
		return err
	}
	v := b.Manifest.Variants["int8"]
	v.Gate.Int8Format = string(f)
	b.Manifest.Variants["int8"] = v
	out, err := b.Manifest.Marshal()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, bundle.ManifestName), out, 0o644)
}
