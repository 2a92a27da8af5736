package main

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/cpuclass"
)

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// TestQuantizeDecoder: the cloning kit's decoder under int8 and under
// nbits passes the gate and shrinks more than 3×; 2-bit weights are
// refused with a report and not written.
func TestQuantizeDecoder(t *testing.T) {
	dir := t.TempDir()
	if err := demo.WriteCloning(dir, nil); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "decoder.onnx")
	for _, mode := range []string{"int8", "nbits"} {
		out := filepath.Join(dir, "decoder."+mode+".onnx")
		stdout, stderr, err := mynah(t, "quantize", "--mode", mode, in, "-o", out)
		if err != nil || !strings.Contains(stdout, "gate ["+mode+"]: PASS") {
			t.Fatalf("%s: %v\n%s%s", mode, err, stdout, stderr)
		}
		ratio := float64(fileSize(t, out)) / float64(fileSize(t, in))
		t.Logf("%s decoder: %.3f× the original", mode, ratio)
		if ratio > 1.0/3 {
			t.Errorf("%s decoder is %.2f× the original, want at most 1/3", mode, ratio)
		}
		if stdout, _, _ := mynah(t, "quantize", "--mode", "inspect", out); !strings.Contains(stdout, "quantized") || strings.Contains(stdout, "not quantized") {
			t.Errorf("inspect of the %s result does not say it is quantized:\n%s", mode, stdout)
		}
		if _, _, err := mynah(t, "quantize", "--mode", "int8", out, "-o", filepath.Join(dir, "twice.onnx")); err == nil || !strings.Contains(err.Error(), "already quantized") {
			t.Errorf("quantizing %s twice: %v", mode, err)
		}
	}

	bad := filepath.Join(dir, "decoder.2bit.onnx")
	stdout, _, err := mynah(t, "quantize", "--mode", "nbits", "--bits", "2", in, "-o", bad)
	if err == nil || !strings.Contains(err.Error(), "not written") || !strings.Contains(stdout, "FAIL") {
		t.Fatalf("2-bit decoder: %v\n%s", err, stdout)
	}
	if !strings.Contains(err.Error(), "cosine of prosody") {
		t.Errorf("the refusal does not say which check failed: %v", err)
	}
	if _, err := os.Stat(bad); !os.IsNotExist(err) {
		t.Errorf("a refused model was written (%v)", err)
	}
	if _, _, err := mynah(t, "quantize", "--mode", "nbits", "--bits", "2", "--force", in, "-o", bad); err != nil {
		t.Errorf("--force: %v", err)
	} else if _, err := os.Stat(bad); err != nil {
		t.Errorf("--force did not write: %v", err)
	}
}

// TestQuantizeVoice: a Piper-shaped conv-heavy model under fp16-store
// passes the audio gate and halves. The demo voice under fp16-store
// passes too, with its weights halved; its file cannot halve, because a
// quarter of it is graph (465 signal-processing nodes), not weights. Its
// one Conv made int8 is refused: int8 activations smear the parameter
// tracks that Conv smooths.
func TestQuantizeVoice(t *testing.T) {
	dir := t.TempDir()
	model, err := benchmodel.PiperMedium(nil)
	if err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "medium.onnx")
	if err := os.WriteFile(in, model, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(in+".json", benchmodel.PiperConfig(), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "medium.fp16.onnx")
	stdout, stderr, err := mynah(t, "quantize", "--mode", "fp16-store", in, "-o", out)
	if err != nil || !strings.Contains(stdout, "gate [fp16]: PASS") {
		t.Fatalf("fp16-store: %v\n%s%s", err, stdout, stderr)
	}
	if ratio := float64(fileSize(t, out)) / float64(fileSize(t, in)); ratio > 0.51 {
		t.Errorf("fp16 model is %.3f× the original, want about half", ratio)
	}

	vdir := t.TempDir()
	vpath, err := demo.Write(vdir, nil)
	if err != nil {
		t.Fatal(err)
	}
	out = filepath.Join(vdir, "demo.fp16.onnx")
	stdout, stderr, err = mynah(t, "quantize", "--mode", "fp16-store", vpath, "-o", out)
	if err != nil || !strings.Contains(stdout, "gate [fp16]: PASS") {
		t.Fatalf("demo voice fp16: %v\n%s%s", err, stdout, stderr)
	}
	// The summary line: "fp16-store: N weights, A KiB → A/2 KiB; model ...".
	var n int
	var before, after float64
	line := stdout[strings.Index(stdout, "fp16-store: "):]
	if _, err := fmt.Sscanf(line, "fp16-store: %d weights, %f KiB → %f KiB", &n, &before, &after); err != nil || math.Abs(after/before-0.5) > 0.001 {
		t.Errorf("demo voice fp16: weights %v → %v KiB (%v), want halved\n%s", before, after, err, stdout)
	}
	ratio := float64(fileSize(t, out)) / float64(fileSize(t, vpath))
	t.Logf("demo voice fp16: weights %.1f → %.1f KiB, file %.3f×", before, after, ratio)
	if ratio > 0.65 {
		t.Errorf("fp16 demo voice is %.3f× the original, want at most 0.65 (weights halved, graph kept)", ratio)
	}

	stdout, _, err = mynah(t, "quantize", "--mode", "int8", "--include-conv", vpath, "-o", filepath.Join(vdir, "demo.int8.onnx"))
	if err == nil || !strings.Contains(err.Error(), "spectral-correlation") {
		t.Fatalf("demo voice int8 with its Conv: %v, want a refusal on spectral correlation\n%s", err, stdout)
	}
}

func TestQuantizeUsage(t *testing.T) {
	dir := t.TempDir()
	path, err := demo.Write(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"quantize"},
		{"quantize", "--mode", "int8", path}, // no -o
		{"quantize", "--mode", "int3", path, "-o", "x.onnx"}, // bad mode
		{"quantize", "--mode", "int8", path, "-o", path},     // overwrite the input
		{"quantize", "--mode", "int8", "--provider", "npu", path, "-o", "x.onnx"},
	} {
		if _, _, err := mynah(t, args...); exitCode(err) != 2 {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
	trunc := filepath.Join(dir, "cut.onnx")
	data, _ := os.ReadFile(path)
	os.WriteFile(trunc, data[:len(data)/2], 0o644)
	if _, _, err := mynah(t, "quantize", "--mode", "int8", trunc, "-o", filepath.Join(dir, "o.onnx")); err == nil || exitCode(err) != 1 {
		t.Errorf("a truncated model: %v", err)
	}
	// The demo voice has no MatMul: nbits has nothing to do and says so
	// instead of writing a copy.
	o := filepath.Join(dir, "n.onnx")
	if _, _, err := mynah(t, "quantize", "--mode", "nbits", path, "-o", o); exitCode(err) != 1 || !strings.Contains(err.Error(), "rewrites no weight") {
		t.Errorf("nbits on a model without MatMuls: %v", err)
	}
	if _, err := os.Stat(o); !os.IsNotExist(err) {
		t.Errorf("a model nbits left unchanged was written (%v)", err)
	}
}

// TestQuantizeVoiceVariants: --voice records a variant where mynahd finds
// it: in a bundle's voice.json (a role per run), or beside a Piper model;
// a refused variant is not written, and --force records it as failed so
// that auto never takes it. A bundle's variant must also pass the audio
// check through the whole voice.
func TestQuantizeVoiceVariants(t *testing.T) {
	kit := t.TempDir()
	if err := demo.WriteCloning(kit, nil); err != nil {
		t.Fatal(err)
	}
	load := func() *bundle.Bundle {
		t.Helper()
		b, err := bundle.Load(kit)
		if err != nil {
			t.Fatalf("the bundle no longer loads: %v", err)
		}
		return b
	}
	for _, mode := range []string{"int8", "nbits"} {
		out, stderr, err := mynah(t, "quantize", "--voice", kit, "--mode", mode)
		if err != nil {
			t.Fatalf("--voice %s: %v\n%s%s", mode, err, out, stderr)
		}
		if !strings.Contains(out, "encoder → decoder → vocoder") || strings.Count(out, "gate ["+mode+"]: PASS") != 2 {
			t.Errorf("--voice %s did not report both checks passing:\n%s", mode, out)
		}
		v, ok := load().Manifest.Variants[mode]
		if !ok || !v.Gate.Passed || v.Gate.Provider != "cpu" || v.Gate.SizeRatio > 1.0/3 || v.Files["decoder"].Path != "decoder."+mode+".onnx" {
			t.Fatalf("recorded %s variant %+v", mode, v)
		}
	}
	if p, _, _ := bundle.ChoosePrecision("auto", load().Manifest.Gates(), "cpu", cpuclass.Host()); p != "nbits" {
		t.Errorf("auto picks %s, want the smallest that passed (nbits)", p)
	}
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--mode", "nbits", "--bits", "2"); err == nil {
		t.Error("a 2-bit decoder was accepted")
	}
	if v := load().Manifest.Variants["nbits"]; !v.Gate.Passed {
		t.Errorf("a refused 2-bit run spoiled the nbits variant it replaced: %+v", v)
	}

	// The vocoder with its Conv in int8 joins the int8 variant only if
	// the whole voice still sounds the same; it does not, and the int8
	// variant stays as it was (its decoder file untouched).
	out, _, err := mynah(t, "quantize", "--voice", kit, "--role", "vocoder", "--mode", "int8", "--include-conv")
	if err == nil || !strings.Contains(err.Error(), "of warped audio") {
		t.Fatalf("int8 vocoder with Conv: %v, want a refusal by the audio check\n%s", err, out)
	}
	if v := load().Manifest.Variants["int8"]; !v.Gate.Passed || len(v.Files) != 1 {
		t.Errorf("int8 variant after the refused vocoder: %+v", v)
	}
	if _, err := os.Stat(filepath.Join(kit, "vocoder.int8.onnx")); !os.IsNotExist(err) {
		t.Errorf("a refused variant's file was left (%v)", err)
	}
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--role", "vocoder", "--mode", "int8", "--include-conv", "--force"); err != nil {
		t.Fatalf("--force: %v", err)
	}
	if g := load().Manifest.Variants["int8"].Gate; g.Passed || !strings.HasPrefix(g.Summary, "audio through the whole voice") {
		t.Errorf("forced int8 vocoder recorded as %+v", g)
	}

	// fp16: the vocoder alone is held to the waveform (its pitch readout is
	// exact in fp16, so SNR stays high), then the decoder joins it.
	for _, role := range []string{"vocoder", "decoder"} {
		if out, _, err := mynah(t, "quantize", "--voice", kit, "--role", role, "--mode", "fp16-store"); err != nil {
			t.Fatalf("fp16 %s: %v\n%s", role, err, out)
		} else if role == "vocoder" && !strings.Contains(out, "snr ") {
			t.Errorf("the fp16 vocoder alone was not checked on SNR:\n%s", out)
		}
	}
	if v := load().Manifest.Variants["fp16"]; !v.Gate.Passed || len(v.Files) != 2 {
		t.Errorf("fp16 variant of vocoder and decoder: %+v", v)
	}
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--role", "encoder", "--mode", "int8"); exitCode(err) != 2 {
		t.Errorf("--role encoder: %v, want a usage error", err)
	}

	// A style bundle's model: fp16 and int8 pass through the style
	// engine's audio; nbits has no MatMul wide enough and says so.
	style := t.TempDir()
	if err := demo.WriteStyle(style, nil); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []string{"fp16-store", "int8"} {
		if out, _, err := mynah(t, "quantize", "--voice", style, "--mode", mode); err != nil || !strings.Contains(out, "tokens → style model") {
			t.Errorf("style %s: %v\n%s", mode, err, out)
		}
	}
	if _, _, err := mynah(t, "quantize", "--voice", style, "--mode", "nbits"); err == nil || !strings.Contains(err.Error(), "wide enough") {
		t.Errorf("style nbits: %v", err)
	}
	if b, err := bundle.Load(style); err != nil || !b.Manifest.Variants["fp16"].Gate.Passed || !b.Manifest.Variants["int8"].Gate.Passed {
		t.Errorf("style variants %v: %+v", err, b)
	}

	piper := t.TempDir()
	model, err := demo.Write(piper, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := mynah(t, "quantize", "--voice", piper, "--mode", "fp16-store"); err != nil {
		t.Fatalf("demo voice fp16 variant: %v", err)
	}
	if p, _, _ := bundle.ChoosePrecision("auto", voice.PiperGates(model), "", cpuclass.Host()); p != "fp16" {
		t.Errorf("auto picks %s, want the fp16 variant that passed", p)
	}
	if _, _, err := mynah(t, "quantize", "--voice", piper, "--mode", "int8", "--include-conv"); err == nil || !strings.Contains(err.Error(), "spectral-correlation") {
		t.Fatalf("demo voice int8 variant: %v, want a refusal on spectral correlation", err)
	}
	if _, err := os.Stat(voice.PiperVariantPath(model, "int8")); !os.IsNotExist(err) {
		t.Errorf("a refused Piper variant was written (%v)", err)
	}
	if _, _, err := mynah(t, "quantize", "--voice", piper, "--mode", "int8", "--include-conv", "--force"); err != nil {
		t.Fatalf("--force: %v", err)
	}
	gates := voice.PiperGates(model)
	if g, ok := gates["int8"]; !ok || g.Passed {
		t.Errorf("forced variant recorded as %+v, want failed", gates)
	}
	if p, _, _ := bundle.ChoosePrecision("auto", gates, "", cpuclass.Host()); p != "fp16" {
		t.Errorf("auto picks %s, want fp16 over a failed int8", p)
	}
	if found, err := voice.FindPiper(piper); err != nil || found != model {
		t.Errorf("the variant made the voice directory ambiguous: %q %v", found, err)
	}
}

func TestBundleRole(t *testing.T) {
	for _, c := range []struct {
		engine, role, want string
		usage              bool
	}{
		{bundle.EnginePipeline, "", bundle.RoleDecoder, false},
		{bundle.EnginePipeline, "vocoder", bundle.RoleVocoder, false},
		{bundle.EnginePipeline, "encoder", "", true},
		{bundle.EnginePipeline, "model", "", true},
		{bundle.EngineStyleVector, "", bundle.RoleModel, false},
		{bundle.EngineStyleVector, "decoder", "", true},
		{bundle.EnginePiper, "", "", false},
	} {
		got, err := bundleRole(c.engine, c.role)
		if got != c.want || (err != nil) != (c.want == "") || errors.Is(err, errUsage) != c.usage {
			t.Errorf("bundleRole(%s, %q) = %q, %v", c.engine, c.role, got, err)
		}
	}
}

func TestSummaryCutsAtACharacter(t *testing.T) {
	long := strings.Repeat("≥", 400) // 1200 bytes
	s := summary(long)
	if len(s) > 1000 || !utf8.ValidString(s) || !strings.HasPrefix(long, s) {
		t.Errorf("summary: %d bytes, valid %v", len(s), utf8.ValidString(s))
	}
	if summary("passed") != "passed" {
		t.Error("a short summary changed")
	}
}

// TestQuantizeTargets makes the kit's int8 decoder for every class of
// CPU: each records the format its class gets and the CPU the gate ran
// on, and is judged here exactly where its format is exact here (a
// format that saturates on this CPU is recorded as unjudged, which auto
// never takes).
func TestQuantizeTargets(t *testing.T) {
	kit := t.TempDir()
	if err := demo.WriteCloning(kit, nil); err != nil {
		t.Fatal(err)
	}
	host := cpuclass.Host()
	for _, target := range cpuclass.Classes {
		format := cpuclass.Int8FormatFor(target)
		out, stderr, err := mynah(t, "quantize", "--voice", kit, "--mode", "int8", "--target", string(target))
		if err != nil {
			t.Fatalf("--target %s: %v\n%s%s", target, err, out, stderr)
		}
		if !strings.Contains(out, "int8 MatMul weights: "+string(format)+" (for "+string(target)+" CPUs") {
			t.Errorf("--target %s: the report does not name the format %s:\n%s", target, format, out)
		}
		b, err := bundle.Load(kit)
		if err != nil {
			t.Fatal(err)
		}
		g := b.Manifest.Variants["int8"].Gate
		judged := format.ExactOn(host)
		if g.CPU != string(host) || g.Int8Format != string(format) || g.Unjudged == judged || g.Passed != judged {
			t.Errorf("--target %s on a %s CPU recorded %+v; want format %s, judged %v", target, host, g, format, judged)
		}
		p, _, _ := bundle.ChoosePrecision("auto", b.Manifest.Gates(), "", host)
		if (p == "int8") != judged {
			t.Errorf("--target %s: auto on this %s CPU picks %s", target, host, p)
		}
		t.Logf("--target %s: %s weights, judged here (%s): %v", target, format, host, judged)
	}
	// One variant holds one format: a vocoder in another is refused, and
	// the variant stays as it was.
	last := cpuclass.Int8FormatFor(cpuclass.Classes[len(cpuclass.Classes)-1])
	other := cpuclass.Unsigned
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--role", "vocoder", "--mode", "int8", "--int8-format", string(other)); err == nil ||
		!strings.Contains(err.Error(), "--int8-format "+string(last)) {
		t.Errorf("a %s vocoder joining a %s int8 variant: %v, want a refusal naming --int8-format %s", other, last, err, last)
	}
	if b, err := bundle.Load(kit); err != nil || len(b.Manifest.Variants["int8"].Files) != 1 || b.Manifest.Variants["int8"].Gate.Int8Format != string(last) {
		t.Errorf("the int8 variant after a refused vocoder: %v %+v", err, b.Manifest.Variants["int8"])
	}
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--mode", "int8", "--target", "sse2"); exitCode(err) != 2 {
		t.Errorf("--target sse2: %v, want a usage error", err)
	}
	if _, _, err := mynah(t, "quantize", "--voice", kit, "--mode", "int8", "--int8-format", "s4"); exitCode(err) != 2 {
		t.Errorf("--int8-format s4: %v, want a usage error", err)
	}
}

// TestUnjudgedRecord: full-range weights on an avx2 CPU cannot be judged
// there; 7-bit and u8 weights, and models without int8 MatMuls, can.
func TestUnjudgedRecord(t *testing.T) {
	for _, tc := range []struct {
		format   cpuclass.Int8Format
		host     cpuclass.Class
		unjudged bool
	}{
		{cpuclass.FullRange, cpuclass.AVX2, true},
		{cpuclass.FullRange, cpuclass.VNNI, false},
		{cpuclass.FullRange, cpuclass.ARM64, false},
		{cpuclass.ReducedRange, cpuclass.AVX2, false},
		{cpuclass.Unsigned, cpuclass.AVX2, false},
		{"", cpuclass.AVX2, false},
	} {
		g := unjudgedRecord(quant.Report{Target: cpuclass.VNNI, Int8Format: tc.format}, tc.host, "cpu", 1, 4)
		if g.Unjudged != tc.unjudged || g.Passed || g.CPU != string(tc.host) || g.Int8Format != string(tc.format) || g.SizeRatio != 0.25 {
			t.Errorf("%s on %s: %+v, want unjudged %v", tc.format, tc.host, g, tc.unjudged)
		}
		if g.Unjudged && !strings.Contains(g.Summary, "of class vnni or arm64") {
			t.Errorf("the summary does not say where it can be judged: %s", g.Summary)
		}
	}
}
