package main

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/catalog/catalogtest"
	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/quant/ort"
)

// quantizeInstallKey is the voice these tests install: the demo voice,
// served under a catalog key.
const quantizeInstallKey = "en_US-lessac-medium"

// quantizeInstallModel is where the install puts the voice's model.
func quantizeInstallModel(dir string) string {
	return filepath.Join(dir, quantizeInstallKey, quantizeInstallKey+".onnx")
}

// quantizeInstallCheckFP16 checks that the voice in dir has an fp16
// variant recorded as passed, and that mynah say speaks with it (an
// explicit --precision loads that variant or fails).
func quantizeInstallCheckFP16(t *testing.T, dir string) {
	t.Helper()
	model := quantizeInstallModel(dir)
	if _, err := os.Stat(voice.PiperVariantPath(model, "fp16")); err != nil {
		t.Fatalf("no fp16 variant beside the voice: %v", err)
	}
	if g, ok := voice.PiperGates(model)["fp16"]; !ok || !g.Passed {
		t.Fatalf("the fp16 variant is recorded as %+v (found %v), want passed", g, ok)
	}
	isolateUserCache(t)
	wav := filepath.Join(t.TempDir(), "fp16.wav")
	if _, stderr, err := mynah(t, "say", "--voice", filepath.Dir(model), "--precision", "fp16", "--no-cache", "--out", wav, "Hello there."); err != nil {
		t.Fatalf("say with the fp16 variant: %v\n%s", err, stderr)
	}
	data, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	if pcm, err := audio.DecodeWAV(data, nil); err != nil || pcm.Duration() <= 0 {
		t.Errorf("the fp16 variant said nothing: %v", err)
	}
}

// TestVoiceInstallQuantizeFP16: the voice is installed, quantized as
// mynah quantize --voice does (the gate's verdict and the variant on
// stdout, the variant beside the voice, recorded as passed), then
// prepared: the optimized copy is of the fp16 variant mynahd's
// voices.precision (auto) loads.
func TestVoiceInstallQuantizeFP16(t *testing.T) {
	_, dir, flags := voiceEnv(t)
	optimized := filepath.Join(t.TempDir(), "optimized")
	out, errOut, err := install(t, append(flags, "--optimized-dir", optimized), quantizeInstallKey, "--quantize", "fp16-store")
	if err != nil {
		t.Fatalf("%v\n%s%s", err, out, errOut)
	}
	checkVoice(t, dir, quantizeInstallKey)
	variant := "variant fp16: " + voice.PiperVariantPath(quantizeInstallModel(dir), "fp16")
	for _, want := range []string{"installed " + quantizeInstallKey, "gate [fp16]: PASS", variant} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// The copy prepared is of the variant mynahd's voices.precision
	// (auto) picks: the fp16 one, made first.
	if q, p := strings.Index(errOut, "quantizing "+quantizeInstallKey), strings.Index(errOut, "prepared "+quantizeInstallKey+" (fp16)"); q < 0 || p < q {
		t.Errorf("stderr does not say it quantized the voice, then prepared its fp16 variant:\n%s", errOut)
	}
	def := config.Default().ONNX
	p, err := voice.LoadPiper(enginetest.OpenRuntime(t), filepath.Join(dir, quantizeInstallKey), &voice.PiperOptions{
		Session:       &ort.SessionOptions{Provider: ort.Provider(def.Provider), IntraOpThreads: def.Threads, CPUArena: def.Arena},
		KeepConv1D:    !def.LiftConv1D,
		OptimizedDir:  optimized,
		OptimizeLater: true,
		Precision:     "fp16",
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if !p.Info().Optimized {
		t.Error("the fp16 variant's first load after the install did not find the prepared copy")
	}
	quantizeInstallCheckFP16(t, dir)
}

// TestVoiceInstallQuantizeNothingToRewrite: the demo voice has no MatMul,
// so int8 (Conv left alone) finds nothing to rewrite. That is said, and
// the install succeeds with the voice as it is. A second install finds
// the voice installed and quantizes it all the same, without fetching it
// again.
func TestVoiceInstallQuantizeNothingToRewrite(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	out, errOut, err := install(t, flags, quantizeInstallKey, "--quantize", "int8", "--no-prepare")
	if err != nil {
		t.Fatalf("an int8 with nothing to rewrite failed the install: %v\n%s%s", err, out, errOut)
	}
	checkVoice(t, dir, quantizeInstallKey)
	if want := quantizeInstallKey + " is installed as it is, with no int8 variant: nothing to rewrite"; !strings.Contains(errOut, want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut)
	}
	if v := voice.PiperVariants(quantizeInstallModel(dir)); len(v) != 0 {
		t.Errorf("variants %v written, want none", v)
	}

	out, errOut, err = install(t, flags, quantizeInstallKey, "--quantize", "fp16-store")
	if err != nil {
		t.Fatalf("the second install: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(out, "already installed") || !strings.Contains(out, "variant fp16: ") {
		t.Errorf("the second install did not quantize the installed voice:\n%s", out)
	}
	if n := s.Gets(catalogtest.ModelURLPath(quantizeInstallKey)); n != 1 {
		t.Errorf("the model was fetched %d times, want once", n)
	}
	quantizeInstallCheckFP16(t, dir)
}

// TestVoiceInstallQuantizeUsage: a mode quantize --voice does not take is
// a usage error before anything is fetched; --help lists the flag.
func TestVoiceInstallQuantizeUsage(t *testing.T) {
	s, dir, flags := voiceEnv(t)
	for _, mode := range []string{"int3", "inspect", "FP16"} {
		_, _, err := install(t, flags, quantizeInstallKey, "--quantize", mode)
		if !errors.Is(err, errUsage) || !strings.Contains(err.Error(), "--quantize") {
			t.Errorf("--quantize %s: %v, want a usage error naming --quantize", mode, err)
		}
	}
	if n := s.Gets("/voices.json") + s.Gets(catalogtest.ModelURLPath(quantizeInstallKey)); n != 0 {
		t.Errorf("%d requests for a command line with a bad --quantize", n)
	}
	checkNothingInstalled(t, dir, quantizeInstallKey)

	_, errOut, err := mynah(t, "voice", "install", "--help")
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(errOut, "-quantize") || !strings.Contains(errOut, "fp16-store, int8, nbits or auto") {
		t.Errorf("voice install --help (%v) does not list --quantize:\n%s", err, errOut)
	}
}
