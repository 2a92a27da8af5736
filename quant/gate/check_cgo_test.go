//go:build cgo

package gate_test

import (
	"errors"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/gate"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

func voiceCheck(t *testing.T, original, candidate []byte, idMap map[string][]int64, precision string) *gate.Verdict {
	t.Helper()
	v, err := gate.CheckVoice(shared.rt, original, candidate, &gate.VoiceOptions{
		Options:      gate.Options{Precision: precision, Session: cpu},
		PhonemeIDMap: idMap,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s:\n%s", t.Name(), v)
	return v
}

func failedNames(v *gate.Verdict) map[string]bool {
	out := map[string]bool{}
	for _, c := range v.Failed() {
		out[c.Name] = true
	}
	return out
}

func value(t *testing.T, v *gate.Verdict, name, subject string) float64 {
	t.Helper()
	for _, c := range v.Checks {
		if c.Name == name && c.Subject == subject {
			return c.Value
		}
	}
	t.Fatalf("verdict has no %s check of %s:\n%s", name, subject, v)
	return 0
}

func TestCheckVoiceDemoAgainstItself(t *testing.T) {
	dv := demoVoice(t)
	v := voiceCheck(t, dv, dv, demo.PhonemeIDMap(), gate.PrecisionFP16)
	if !v.Pass || len(v.Checks) != 4 {
		t.Fatalf("the demo voice against itself must pass all four audio checks:\n%s", v)
	}
	if snr := value(t, v, gate.CheckSNR, "audio"); snr < 200 {
		t.Errorf("SNR %v: the same model on the same inputs must give the same audio", snr)
	}
}

func TestCheckVoiceDemoPerturbed(t *testing.T) {
	dv := demoVoice(t)
	// Every table 2% larger: formants and durations move, the voice sounds
	// different; the gate must say so by spectral correlation.
	v := voiceCheck(t, dv, rewriteWeights(t, dv, largeFloats, scaled(1.02)), demo.PhonemeIDMap(), gate.PrecisionInt8)
	if v.Pass || !failedNames(v)[gate.CheckSpectralCorrelation] {
		t.Fatalf("a perturbed demo voice must fail spectral correlation:\n%s", v)
	}
	if err := v.Err(); !errors.Is(err, gate.ErrFailed) {
		t.Errorf("Err() = %v", err)
	}
}

// TestCheckVoiceDemoFP16 rounds every large table of the demo voice to
// float16, as fp16-store does: the fp16 gate passes, SNR included,
// because the columns that make its pitch are stored exactly.
func TestCheckVoiceDemoFP16(t *testing.T) {
	dv := demoVoice(t)
	v := voiceCheck(t, dv, rewriteWeights(t, dv, largeFloats, fp16Round), demo.PhonemeIDMap(), gate.PrecisionFP16)
	if !v.Pass {
		t.Errorf("fp16 tables of the demo voice must pass the fp16 gate:\n%s", v)
	}
}

// TestCheckVoicePhaseDrift: the demo voice integrates f0 into the phase of
// every harmonic, so a parameter table 1/2048 off (float16's step, had
// its pitch column not been stored exactly) moves the waveform's phase
// further each period: waveform SNR collapses (below 10 dB, against 30)
// while the sound hardly changes (spectral correlation stays within the
// int8 limit, log-mel distance within the fp16 one). The gate's SNR
// check is what notices.
func TestCheckVoicePhaseDrift(t *testing.T) {
	dv := demoVoice(t)
	params := func(name string, _ []int64, _ map[string]bool) bool { return name == "phoneme_params" }
	v := voiceCheck(t, dv, rewriteWeights(t, dv, params, scaled(1+1.0/2048)), demo.PhonemeIDMap(), gate.PrecisionFP16)
	if snr := value(t, v, gate.CheckSNR, "audio"); v.Pass || snr > 10 {
		t.Errorf("a drifted pitch must fail SNR by far:\n%s", v)
	}
	if c := value(t, v, gate.CheckSpectralCorrelation, "audio"); c < 0.98 {
		t.Errorf("drifted pitch: spectral correlation %v < 0.98", c)
	}
	if d := value(t, v, gate.CheckLogMelDistance, "audio"); d > 0.5 {
		t.Errorf("drifted pitch: log-mel distance %v > 0.5 dB", d)
	}
}

func TestCheckVoiceBenchModel(t *testing.T) {
	bm := smallBench(t)
	id := benchmodel.PhonemeIDMap()
	// fp16 weights in a feed-forward vocoder: the fp16 limits hold.
	if v := voiceCheck(t, bm, rewriteWeights(t, bm, largeFloats, fp16Round), id, gate.PrecisionFP16); !v.Pass {
		t.Errorf("fp16 weights of the bench model must pass the fp16 gate:\n%s", v)
	}
	// 2-bit weights are destructive: refused, by spectral correlation and
	// log-mel distance both.
	v := voiceCheck(t, bm, rewriteWeights(t, bm, layerWeights, blockQuant(2, 32)), id, gate.PrecisionNBits)
	if f := failedNames(v); v.Pass || !f[gate.CheckSpectralCorrelation] || !f[gate.CheckLogMelDistance] {
		t.Errorf("2-bit weights must fail spectral correlation and log-mel distance:\n%s", v)
	}
}

func TestCheckDecoder(t *testing.T) {
	dec := cloneDecoder(t)
	check := func(candidate []byte, precision string) *gate.Verdict {
		v, err := gate.CheckDecoder(shared.rt, dec, candidate, &gate.DecoderOptions{Options: gate.Options{Precision: precision, Session: cpu}})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s:\n%s", precision, v)
		return v
	}
	if v := check(dec, gate.PrecisionFP16); !v.Pass || value(t, v, gate.CheckRelativeError, "prosody") != 0 {
		t.Errorf("the decoder against itself must pass with zero error:\n%s", v)
	}
	if v := check(rewriteWeights(t, dec, largeFloats, fp16Round), gate.PrecisionFP16); !v.Pass {
		t.Errorf("fp16 weights must pass the fp16 gate:\n%s", v)
	}
	if v := check(rewriteWeights(t, dec, matmulWeights, blockQuant(8, 0)), gate.PrecisionInt8); !v.Pass {
		t.Errorf("int8 per-channel weights must pass the int8 gate:\n%s", v)
	}
	v := check(rewriteWeights(t, dec, matmulWeights, blockQuant(2, 32)), gate.PrecisionNBits)
	if f := failedNames(v); v.Pass || !f[gate.CheckCosine] || !f[gate.CheckRelativeError] {
		t.Errorf("2-bit weights must fail cosine and relative error:\n%s", v)
	}
}

func TestCheckDecoderOptions(t *testing.T) {
	dec := cloneDecoder(t)
	_, err := gate.CheckDecoder(shared.rt, dec, dec, &gate.DecoderOptions{PastKey: "cache.{i}.k"})
	if !errors.Is(err, gate.ErrIncompatible) {
		t.Errorf("wrong KV naming: %v, want ErrIncompatible", err)
	}
	_, err = gate.CheckDecoder(shared.rt, dec, dec, &gate.DecoderOptions{Steps: make([]int64, gate.MaxSteps+1)})
	if !errors.Is(err, gate.ErrInvalidOptions) {
		t.Errorf("too many steps: %v, want ErrInvalidOptions", err)
	}
	// Given tokens, no vocabulary is needed.
	v, err := gate.CheckDecoder(shared.rt, dec, dec, &gate.DecoderOptions{
		Options: gate.Options{Session: cpu}, Prompts: [][]int64{{3, 4, 5}}, Steps: []int64{7, 8}})
	if err != nil || !v.Pass {
		t.Fatalf("%v\n%v", err, v)
	}
}

// matmulModel is y = x·W for a fixed W [4, 3].
func matmulModel(t *testing.T, scale float32) []byte {
	t.Helper()
	g := onnx.NewGraph("mm")
	x := g.Input("x", onnx.Float, onnx.Dynamic("n"), onnx.Fixed(4))
	w := g.Float32s("W", []int64{4, 3}, []float32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12})
	g.Node("MatMul", []string{x, g.Op("Mul", []string{w, g.Scalar(scale)})}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Dynamic("n"), onnx.Fixed(3))
	m, err := g.Model(nil)
	if err != nil {
		t.Fatal(err)
	}
	data, err := onnx.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestCheckModel(t *testing.T) {
	orig := matmulModel(t, 1)
	inputs := [][]ort.Tensor{
		{{Name: "x", Shape: []int64{1, 4}, Float32: []float32{1, 0, 0, 0}}},
		{{Name: "x", Shape: []int64{2, 4}, Float32: []float32{0, 1, 0, 0, 1, 1, 1, 1}}},
	}
	opts := &gate.Options{Precision: "int8", Session: cpu}
	v, err := gate.CheckModel(shared.rt, orig, orig, inputs, opts)
	if err != nil || !v.Pass {
		t.Fatalf("%v\n%v", err, v)
	}
	// 10% larger weights: cosine stays 1 (same direction), relative error
	// is exactly 0.1, within int8's 0.15 but not fp16's 0.01.
	big := matmulModel(t, 1.1)
	if v, _ := gate.CheckModel(shared.rt, orig, big, inputs, opts); !v.Pass {
		t.Errorf("10%% scaled weights under int8 limits:\n%s", v)
	}
	v, err = gate.CheckModel(shared.rt, orig, big, inputs, &gate.Options{Precision: "fp16", Session: cpu})
	if err != nil {
		t.Fatal(err)
	}
	if f := failedNames(v); v.Pass || !f[gate.CheckRelativeError] || f[gate.CheckCosine] {
		t.Errorf("10%% scaled weights under fp16 limits must fail relative error only:\n%s", v)
	}
	if r := value(t, v, gate.CheckRelativeError, "y"); r < 0.0999 || r > 0.1001 {
		t.Errorf("relative error %v, want 0.1", r)
	}
}

func TestCheckRefusals(t *testing.T) {
	dv := demoVoice(t)
	opts := &gate.VoiceOptions{Options: gate.Options{Session: cpu}, PhonemeIDMap: demo.PhonemeIDMap()}
	if _, err := gate.CheckVoice(shared.rt, dv, dv[:len(dv)/2], opts); !errors.Is(err, onnx.ErrInvalidModel) {
		t.Errorf("truncated candidate: %v, want onnx.ErrInvalidModel", err)
	}
	if _, err := gate.CheckVoice(shared.rt, dv, matmulModel(t, 1), opts); !errors.Is(err, gate.ErrIncompatible) {
		t.Errorf("another model as candidate: %v, want ErrIncompatible", err)
	}
	mm := matmulModel(t, 1)
	if _, err := gate.CheckVoice(shared.rt, mm, mm, opts); !errors.Is(err, gate.ErrIncompatible) {
		t.Errorf("a model without the Piper contract: %v, want ErrIncompatible", err)
	}
	if _, err := gate.CheckVoice(shared.rt, dv, dv, nil); !errors.Is(err, gate.ErrInvalidOptions) {
		t.Errorf("nil options: %v", err)
	}
	bad := *opts
	bad.Sentences = [][]int64{make([]int64, gate.MaxSentenceIDs+1)}
	if _, err := gate.CheckVoice(shared.rt, dv, dv, &bad); !errors.Is(err, gate.ErrInvalidOptions) {
		t.Errorf("overlong sentence: %v", err)
	}
	if _, err := gate.CheckModel(shared.rt, mm, mm, nil, nil); !errors.Is(err, gate.ErrInvalidOptions) {
		t.Errorf("no inputs: %v", err)
	}
	if _, err := gate.CheckModel(nil, mm, mm, [][]ort.Tensor{{}}, nil); !errors.Is(err, gate.ErrInvalidOptions) {
		t.Errorf("nil runtime: %v", err)
	}
}

// The speed check runs and reports; whether it passes depends on the
// machine, so only its presence and shape are checked here.
func TestCheckSpeedReported(t *testing.T) {
	dv := demoVoice(t)
	v, err := gate.CheckVoice(shared.rt, dv, dv, &gate.VoiceOptions{
		Options:      gate.Options{Precision: "fp16", Session: cpu, CheckSpeed: true, SpeedRuns: 3},
		PhonemeIDMap: demo.PhonemeIDMap(),
	})
	if err != nil {
		t.Fatal(err)
	}
	if v.Speed == nil || v.Speed.Runs != 3 || v.Speed.Original <= 0 || v.Speed.Candidate <= 0 {
		t.Fatalf("speed %+v", v.Speed)
	}
	value(t, v, gate.CheckSpeed, "runtime")
}

// TestLogMelBoundCalibration holds the int8/nbits log-mel bound to its
// calibration: white noise 40 dB under the demo voice passes it, 30 dB
// (audible hiss in the pauses) does not.
func TestLogMelBoundCalibration(t *testing.T) {
	s, err := shared.rt.NewSession(demoVoice(t), cpu)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	sentences, err := gate.DefaultSentences(demo.PhonemeIDMap())
	if err != nil {
		t.Fatal(err)
	}
	th, _ := gate.DefaultThresholds(gate.PrecisionInt8)
	for i, ids := range sentences {
		out, err := s.Run([]ort.Tensor{
			{Name: "input", Shape: []int64{1, int64(len(ids))}, Int64: ids},
			{Name: "input_lengths", Shape: []int64{1}, Int64: []int64{int64(len(ids))}},
			{Name: "scales", Shape: []int64{3}, Float32: []float32{0, 1, 0}},
			{Name: "sid", Shape: []int64{1}, Int64: []int64{0}},
		})
		if err != nil {
			t.Fatal(err)
		}
		y := out[0].Float32
		quiet := gate.CompareAudio(y, addNoise(y, 40, uint64(i)), demo.SampleRate)
		loud := gate.CompareAudio(y, addNoise(y, 30, uint64(i)), demo.SampleRate)
		t.Logf("sentence %d: 40 dB noise %.2f dB, 30 dB noise %.2f dB", i, quiet.LogMelDistance, loud.LogMelDistance)
		if quiet.LogMelDistance > th.MaxLogMelDistance || loud.LogMelDistance <= th.MaxLogMelDistance {
			t.Errorf("sentence %d: log-mel distance %.2f (40 dB noise) and %.2f (30 dB) must fall on either side of %v",
				i, quiet.LogMelDistance, loud.LogMelDistance, th.MaxLogMelDistance)
		}
	}
}

func BenchmarkCheckVoiceDemo(b *testing.B) {
	dv := demoVoice(b)
	opts := &gate.VoiceOptions{Options: gate.Options{Session: cpu}, PhonemeIDMap: demo.PhonemeIDMap()}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := gate.CheckVoice(shared.rt, dv, dv, opts); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()*1000/float64(b.N), "ms/check")
}
