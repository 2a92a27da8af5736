package bundle_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/cpuclass"
)

func TestChoosePrecision(t *testing.T) {
	gates := map[string]bundle.GateRecord{
		"fp16":  {Passed: true, Provider: "cpu", SizeRatio: 0.5, CPU: "vnni"},
		"int8":  {Passed: true, Provider: "cpu", SizeRatio: 0.3, CPU: "vnni", Int8Format: "s8-7bit"},
		"nbits": {Passed: false, Provider: "cpu", SizeRatio: 0.2, Summary: "cosine 0.97", CPU: "vnni", Int8Format: "s8-7bit"},
	}
	for _, tc := range []struct {
		want, provider, got string
		err                 bool
	}{
		{"auto", "", "int8", false},     // the smallest that passed, not nbits
		{"", "cpu", "int8", false},      // "" is auto
		{"auto", "cuda", "fp32", false}, // checked on another provider: not trusted
		{"fp32", "", "fp32", false},
		{"fp16", "", "fp16", false},
		{"nbits", "", "", true}, // failed the gate
		{"int4", "", "", true},  // no such precision
	} {
		got, over, err := bundle.ChoosePrecision(tc.want, gates, tc.provider, cpuclass.AVX2)
		if got != tc.got || (err != nil) != tc.err || over != "" {
			t.Errorf("ChoosePrecision(%q, %q) = %q, %q, %v; want %q (error %v)", tc.want, tc.provider, got, over, err, tc.got, tc.err)
		}
		if err != nil && !errors.Is(err, bundle.ErrNoVariant) {
			t.Errorf("%q: error %v does not wrap ErrNoVariant", tc.want, err)
		}
	}
	if got, _, _ := bundle.ChoosePrecision("auto", nil, "", cpuclass.VNNI); got != "fp32" {
		t.Errorf("no variants: %q", got)
	}
}

// TestChoosePrecisionCPU: auto takes an int8 variant only where its
// weight format is exact, and says what it passed over; a named
// precision is refused there; an unjudged variant is taken only by name.
func TestChoosePrecisionCPU(t *testing.T) {
	fp16 := bundle.GateRecord{Passed: true, Provider: "cpu", SizeRatio: 0.5, CPU: "avx2"}
	full := bundle.GateRecord{Passed: true, Provider: "cpu", SizeRatio: 0.3, CPU: "vnni", Int8Format: "s8"}
	legacy := bundle.GateRecord{Passed: true, Provider: "cpu", SizeRatio: 0.3} // before cpu was recorded
	unjudged := bundle.GateRecord{Unjudged: true, Provider: "cpu", SizeRatio: 0.3, CPU: "avx2", Int8Format: "s8", Summary: "not judged"}
	for _, tc := range []struct {
		name    string
		int8    bundle.GateRecord
		want    string
		cpu     cpuclass.Class
		got     string
		over    string // a substring of passedOver; "" means none
		refused bool
	}{
		{"full range on vnni", full, "auto", cpuclass.VNNI, "int8", "", false},
		{"full range on arm64", full, "auto", cpuclass.ARM64, "int8", "", false},
		{"full range on avx2", full, "auto", cpuclass.AVX2, "fp16", "int8: its s8 int8 weights saturate on avx2", false},
		{"full range named on avx2", full, "int8", cpuclass.AVX2, "", "", true},
		{"7-bit on avx2", bundle.GateRecord{Passed: true, SizeRatio: 0.3, CPU: "vnni", Int8Format: "s8-7bit"}, "auto", cpuclass.AVX2, "int8", "", false},
		{"u8 on avx2", bundle.GateRecord{Passed: true, SizeRatio: 0.3, CPU: "vnni", Int8Format: "u8"}, "auto", cpuclass.AVX2, "int8", "", false},
		{"legacy on vnni", legacy, "auto", cpuclass.VNNI, "int8", "", false},
		{"legacy on avx2", legacy, "auto", cpuclass.AVX2, "fp16", "older mynah", false},
		{"unjudged by auto", unjudged, "auto", cpuclass.VNNI, "fp16", "", false},
		{"unjudged named", unjudged, "int8", cpuclass.VNNI, "int8", "", false},
		{"unjudged named where it saturates", unjudged, "int8", cpuclass.AVX2, "", "", true},
	} {
		gates := map[string]bundle.GateRecord{"fp16": fp16, "int8": tc.int8}
		got, over, err := bundle.ChoosePrecision(tc.want, gates, "", tc.cpu)
		if got != tc.got || (err != nil) != tc.refused || (tc.over == "") != (over == "") || !strings.Contains(over, tc.over) {
			t.Errorf("%s: got %q, passed over %q, error %v; want %q, %q, refused %v", tc.name, got, over, err, tc.got, tc.over, tc.refused)
		}
		if err != nil && !errors.Is(err, bundle.ErrNoVariant) {
			t.Errorf("%s: %v does not wrap ErrNoVariant", tc.name, err)
		}
	}
	// A larger variant auto did not want anyway is not reported.
	gates := map[string]bundle.GateRecord{"fp16": {Passed: true, SizeRatio: 0.5, CPU: "avx2", Int8Format: "s8"}, "nbits": {Passed: true, SizeRatio: 0.2, CPU: "avx2", Int8Format: "s8-7bit"}}
	if got, over, _ := bundle.ChoosePrecision("auto", gates, "", cpuclass.AVX2); got != "nbits" || over != "" {
		t.Errorf("got %q, passed over %q; want nbits and nothing", got, over)
	}
}

func TestVariantLoadAndSelect(t *testing.T) {
	m := piperManifest()
	m.Variants = map[string]bundle.Variant{
		"fp16": {Files: map[string]bundle.FileRef{"model": {Path: "voice.fp16.onnx"}},
			Gate: bundle.GateRecord{Passed: true, Provider: "cpu", SizeRatio: 0.5, Summary: "snr 40 dB"}},
		"int8": {Files: map[string]bundle.FileRef{"model": {Path: "voice.int8.onnx"}},
			Gate: bundle.GateRecord{Passed: false, Provider: "cpu", SizeRatio: 0.3, Summary: "snr 3 dB"}},
	}
	dir := writeBundle(t, m, map[string][]byte{"voice.onnx": []byte("full"), "voice.fp16.onnx": []byte("half"), "voice.int8.onnx": []byte("bad")}, true)
	b, err := bundle.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.WithPrecision("fp16", false)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := v.RoleFile(bundle.RoleModel)
	if f.Rel != "voice.fp16.onnx" || v.Digest == b.Digest {
		t.Errorf("fp16 view: model %s, digest changed %v", f.Rel, v.Digest != b.Digest)
	}
	if f, _ := b.RoleFile(bundle.RoleModel); f.Rel != "voice.onnx" {
		t.Errorf("the original bundle changed: %s", f.Rel)
	}
	if _, err := b.WithPrecision("int8", false); !errors.Is(err, bundle.ErrNoVariant) {
		t.Errorf("a failed variant: %v", err)
	}
	if v, err := b.WithPrecision("int8", true); err != nil {
		t.Errorf("a failed variant, forced: %v", err)
	} else if f, _ := v.RoleFile(bundle.RoleModel); f.Rel != "voice.int8.onnx" {
		t.Errorf("forced int8 view: %s", f.Rel)
	}

	// A variant file that changed after the gate, or went missing, makes
	// that variant unavailable; the voice still loads as it is.
	os.WriteFile(filepath.Join(dir, "voice.fp16.onnx"), []byte("HALF"), 0o644)
	b, err = bundle.Load(dir)
	if err != nil {
		t.Fatalf("a damaged variant file broke the voice: %v", err)
	}
	if _, err := b.WithPrecision("fp16", false); !errors.Is(err, bundle.ErrNoVariant) || !errors.Is(err, bundle.ErrFileMismatch) {
		t.Errorf("damaged variant file: %v, want ErrNoVariant and ErrFileMismatch", err)
	}
	os.Remove(filepath.Join(dir, "voice.int8.onnx"))
	if _, err := b.WithPrecision("int8", true); !errors.Is(err, bundle.ErrNoVariant) {
		t.Errorf("missing variant file: %v, want ErrNoVariant", err)
	}
	if v, err := b.WithPrecision("fp32", false); err != nil || v != b {
		t.Errorf("fp32 of a bundle with broken variants: %v", err)
	}
}

func TestVariantManifestErrors(t *testing.T) {
	ok := bundle.GateRecord{Passed: true, Provider: "cpu", SizeRatio: 0.5}
	for name, v := range map[string]map[string]bundle.Variant{
		"unknown precision": {"int4": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: digest}}, Gate: ok}},
		"no files":          {"fp16": {Gate: ok}},
		"unknown file key":  {"fp16": {Files: map[string]bundle.FileRef{"vocoder": {Path: "a.onnx", SHA256: digest}}, Gate: ok}},
		"escaping path":     {"fp16": {Files: map[string]bundle.FileRef{"model": {Path: "../a.onnx", SHA256: digest}}, Gate: ok}},
		"bad digest":        {"fp16": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: "xyz"}}, Gate: ok}},
		"negative ratio":    {"fp16": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: digest}}, Gate: bundle.GateRecord{SizeRatio: -1}}},
		"unknown cpu":       {"int8": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: digest}}, Gate: bundle.GateRecord{CPU: "sse2"}}},
		"unknown format":    {"int8": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: digest}}, Gate: bundle.GateRecord{Int8Format: "s4"}}},
		"unjudged, passed":  {"int8": {Files: map[string]bundle.FileRef{"model": {Path: "a.onnx", SHA256: digest}}, Gate: bundle.GateRecord{Passed: true, Unjudged: true}}},
	} {
		m := piperManifest()
		m.Variants = v
		if err := m.Validate(); !errors.Is(err, bundle.ErrInvalidManifest) {
			t.Errorf("%s: %v, want ErrInvalidManifest", name, err)
		}
	}
}
