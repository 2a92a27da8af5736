package voice_test

import (
	"math"
	"os"
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// TestLiftedConvolutionsSpeakAlike loads each bench voice with its 1-D
// convolutions lifted to 2-D (the default) and as the file has them, and
// requires the same speech from both: the same length, and samples that
// differ by no more than float summation order explains (the lifted
// graph runs other ONNX Runtime kernels, whose order differs by CPU).
func TestLiftedConvolutionsSpeakAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the 15 M-parameter voice twice")
	}
	rt := enginetest.OpenRuntime(t)
	for _, v := range []struct {
		name, dir string
		text      string
	}{
		{"demo", demoVoice(t), "The washing machine has finished. Dinner is ready."},
		{"medium-15M", mediumVoice(t), "The front door has been open for ten minutes."},
	} {
		t.Run(v.name, func(t *testing.T) {
			var out [2][]float64
			for i, keep1D := range []bool{false, true} {
				p, err := voice.LoadPiper(rt, v.dir, &voice.PiperOptions{
					Session:    &ort.SessionOptions{Provider: ort.ProviderCPU, CPUArena: true, ArenaShrink: true},
					KeepConv1D: keep1D,
				})
				if err != nil {
					t.Fatal(err)
				}
				out[i], _ = speak(t, p, still(v.text))
				p.Close()
			}
			lifted, plain := out[0], out[1]
			if len(lifted) != len(plain) || len(plain) == 0 {
				t.Fatalf("lifted: %d samples, as in the file: %d", len(lifted), len(plain))
			}
			var peak, worst float64
			for i := range plain {
				peak = max(peak, math.Abs(plain[i]))
				worst = max(worst, math.Abs(lifted[i]-plain[i]))
			}
			t.Logf("%d samples, peak %.4f, largest difference %.2g", len(plain), peak, worst)
			if worst > 2e-3 {
				t.Errorf("lifted speech differs by up to %.3g (peak %.3f): more than summation order explains", worst, peak)
			}
		})
	}
}

// TestBlockedLeakyReluSpeaksAlike: the 15 M-parameter voice with its
// LeakyRelus read through identity convolutions (onnx.BlockLeakyRelu,
// on by default on x86) speaks the same samples, bit for bit, as with
// KeepLeakyRelu. Elsewhere both load the same graph; that the rewrite
// finds the voice's residual stream at all is checked on its graph, for
// both block sizes, on every CPU.
func TestBlockedLeakyReluSpeaksAlike(t *testing.T) {
	if testing.Short() {
		t.Skip("loads the 15 M-parameter voice twice")
	}
	rt := enginetest.OpenRuntime(t)
	dir := mediumVoice(t)
	path, err := voice.FindPiper(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, block := range []int64{8, 16} {
		m, err := onnx.Decode(data, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := onnx.LiftConv1D(m); err != nil {
			t.Fatal(err)
		}
		if n, err := onnx.BlockLeakyRelu(m, block); err != nil || n == 0 {
			t.Fatalf("block %d: BlockLeakyRelu = %d, %v on the 15 M voice; want its residual blocks", block, n, err)
		}
	}
	var out [2][]float64
	for i, keep := range []bool{false, true} {
		p, err := voice.LoadPiper(rt, dir, &voice.PiperOptions{
			Session:       &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1, CPUArena: true},
			KeepLeakyRelu: keep,
		})
		if err != nil {
			t.Fatal(err)
		}
		out[i], _ = speak(t, p, still("The front door has been open for ten minutes."))
		p.Close()
	}
	if len(out[0]) == 0 || !slices.Equal(out[0], out[1]) {
		t.Fatalf("blocked: %d samples, kept: %d, or they differ", len(out[0]), len(out[1]))
	}
}
