package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/gate"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

const quantizeUsage = `Usage:
  mynah quantize --mode MODE [flags] IN.onnx -o OUT.onnx
  mynah quantize --mode MODE [flags] --voice DIR
  mynah quantize --mode inspect IN.onnx

With --voice, the result becomes a precision variant of the voice in DIR,
recorded where mynahd's voices.precision finds it: beside a Piper model as
NAME.<precision>.onnx (with a copy of its config holding the gate's
verdict), or in a bundle's voice.json: one model per run, --role decoder
(the default) or vocoder of a cloning bundle (its speaker encoder stays, so
enrolled speakers keep working), the model of a style bundle. Variants of
one precision made for several roles are one variant.

Makes a model smaller, and refuses the result if it sounds worse or runs
slower than allowed. MODE:
  fp16-store  float weights stored as fp16, computed in float (half the weight
              bytes, same speed): the safe choice for Piper voices and vocoders
  int8        MatMul/Gemm with constant weights as dynamic int8 (faster on
              transformer decoders; Conv untouched unless --include-conv)
  nbits       4-bit weight-only MatMulNBits for MatMuls (smallest); MatMuls
              narrower than 32 (output heads) take int8
  auto        MatMuls int8 (or --auto-matmul nbits), the rest fp16-store,
              embeddings untouched; checks speed too
  inspect     op histogram, weight bytes by op and type, opsets, whether it
              is already quantized

int8 weights take the format the CPU computes exactly (--target, default this
CPU): full-range s8 on x86 with VNNI and on arm64, 7-bit s8 on other x86 CPUs,
whose AVX2 kernel adds pairs of products in 16 bits and saturates on
full-range weights; u8 (--int8-format) is exact everywhere at full precision,
and slower. A variant records the format and the CPU it was judged on;
mynahd's auto takes it only where the format is exact. One made for a CPU whose
format saturates here cannot be judged here: it is recorded as not judged,
which auto never takes.

The quality gate runs the original and the result in ONNX Runtime on the same
inputs and compares them: a Piper voice (IN.onnx with IN.onnx.json beside
it) on fixed sentences with noise off (SNR, spectral correlation, log-mel
distance), a KV-cache decoder on fixed prompts (tensor errors, cosine). With
--voice on a bundle, the audio the whole bundle speaks (four fixed
sentences, default speaker, noise off) is judged too, original against
variant; that is a vocoder's or style model's only check. A
failing result is not written unless --force; the report says which check
failed by how much.

Flags:
`

// quantizeFlags are mynah quantize's flags. voice install --quantize
// takes them at their defaults (newQuantizeFlags), so that its variant is
// the one mynah quantize --voice DIR --mode MODE makes.
type quantizeFlags struct {
	mode, out, kind, target, int8Format, autoMatMul, provider, voiceDir, role string
	force, noGate, speed, conv, rest, emb                                     bool
	bits, block, accuracy                                                     int
}

func (f *quantizeFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.mode, "mode", "", "fp16-store, int8, nbits, auto or inspect")
	fs.StringVar(&f.out, "o", "", "output model (must differ from the input)")
	fs.BoolVar(&f.force, "force", false, "write the result even if the gate fails it")
	fs.BoolVar(&f.noGate, "no-gate", false, "skip the quality gate (the result is not checked at all)")
	fs.BoolVar(&f.speed, "check-speed", false, "also refuse a result more than 5% slower than the original (default on for auto)")
	fs.StringVar(&f.kind, "kind", "", "what the gate runs: voice (Piper contract), decoder (KV cache), or empty to tell from the model's inputs")
	fs.IntVar(&f.bits, "bits", quant.DefaultBits, "nbits: bits per weight (2 and 3 only to see the gate refuse them)")
	fs.IntVar(&f.block, "block-size", quant.DefaultBlockSize, "nbits: weights per scale, a power of two 16..256")
	fs.IntVar(&f.accuracy, "accuracy-level", quant.DefaultAccuracyLevel, "nbits: ONNX Runtime's accuracy_level (4 = int8 dot products)")
	fs.StringVar(&f.target, "target", "auto", "int8: the CPU the model is for: vnni, avx2, arm64, or auto (this one, "+string(cpuclass.Host())+"); it picks --int8-format")
	fs.StringVar(&f.int8Format, "int8-format", "", "int8: MatMul weight format s8, s8-7bit or u8 (default: the --target's)")
	fs.BoolVar(&f.conv, "include-conv", false, "int8/auto: quantize Conv too (usually slower and noisier on CPUs)")
	fs.BoolVar(&f.rest, "rest-fp16", false, "int8/nbits: store the remaining float weights as fp16")
	fs.BoolVar(&f.emb, "embeddings-int8", false, "store Gather tables (embeddings) as int8 per row")
	fs.StringVar(&f.autoMatMul, "auto-matmul", "int8", "auto: int8 or nbits for MatMuls")
	fs.StringVar(&f.provider, "provider", "cpu", "execution provider the gate measures with (the device's)")
	fs.StringVar(&f.voiceDir, "voice", "", "make a variant of the voice in this directory instead of writing -o")
	fs.StringVar(&f.role, "role", "", "with --voice on a bundle: which model to quantize: decoder (default) or vocoder of a cloning bundle, model of a style bundle")
}

// newQuantizeFlags are the flags as mynah quantize --mode mode parses them.
func newQuantizeFlags(mode string) *quantizeFlags {
	var f quantizeFlags
	f.register(flag.NewFlagSet("quantize", flag.ContinueOnError))
	f.mode = mode
	return &f
}

// settings parses what both forms share: the mode with its options,
// and the provider the gate measures with.
func (f *quantizeFlags) settings(stderr io.Writer) (quant.Options, ort.Provider, error) {
	md, err := quant.ParseMode(f.mode)
	if err != nil {
		return quant.Options{}, "", usageError("--mode: %v", err)
	}
	am, err := quant.ParseMode(f.autoMatMul)
	if err != nil {
		return quant.Options{}, "", usageError("--auto-matmul: %v", err)
	}
	prov, err := ort.ParseProvider(f.provider)
	if err != nil {
		return quant.Options{}, "", usageError("--provider: %v", err)
	}
	tgt := cpuclass.Host()
	if f.target != "auto" {
		if tgt, err = cpuclass.Parse(f.target); err != nil {
			return quant.Options{}, "", usageError("--target: %v (or auto)", err)
		}
	}
	var i8 cpuclass.Int8Format
	if f.int8Format != "" {
		if i8, err = cpuclass.ParseInt8Format(f.int8Format); err != nil {
			return quant.Options{}, "", usageError("--int8-format: %v", err)
		}
	}
	return quant.Options{Mode: md, Target: tgt, Int8Format: i8, Bits: f.bits, BlockSize: f.block, AccuracyLevel: f.accuracy,
		IncludeConv: f.conv, RestFP16: f.rest, EmbeddingsInt8: f.emb, AutoMatMul: am, Progress: progress(stderr)}, prov, nil
}

// variant is the --voice form: a precision variant of the voice in dir
// (quantizeVoice), the speed checked too for auto.
func (f *quantizeFlags) variant(dir string, stdout, stderr io.Writer) error {
	qo, prov, err := f.settings(stderr)
	if err != nil {
		return err
	}
	return quantizeVoice(dir, f.role, qo, f.force, f.speed || qo.Mode == quant.ModeAuto, prov, stdout, stderr)
}

func runQuantize(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("quantize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f quantizeFlags
	f.register(fs)
	fs.Usage = func() {
		fmt.Fprint(stderr, quantizeUsage)
		fs.PrintDefaults()
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if f.voiceDir != "" {
		if len(pos) > 0 || f.out != "" {
			return usageError("--voice takes no input model and no -o: the variant goes beside the voice")
		}
		if err := f.variant(f.voiceDir, stdout, stderr); err != nil {
			return fmt.Errorf("quantize --voice %s: %w", f.voiceDir, err)
		}
		return nil
	}
	if len(pos) != 1 {
		return usageError("quantize needs one input model")
	}
	in := pos[0]
	m, data, err := onnx.ReadFileData(in, nil)
	if err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	if f.mode == "inspect" {
		fmt.Fprint(stdout, quant.Inspect(m).String())
		return nil
	}
	qo, prov, err := f.settings(stderr)
	if err != nil {
		return err
	}
	md := qo.Mode
	if f.out == "" {
		return usageError("quantize needs -o OUT.onnx")
	}
	if abs(f.out) == abs(in) {
		return usageError("-o must not be the input: the original is what the result is checked against")
	}
	qo.Dir = filepath.Dir(in)
	res, cand, _, err := quantizeModel(m, qo, stdout)
	if err != nil {
		return fmt.Errorf("quantize: nothing written: %w", err)
	}

	var verdict *gate.Verdict
	if g := unjudgedRecord(res.Report, cpuclass.Host(), prov, len(cand), len(data)); g.Unjudged && !f.noGate {
		fmt.Fprintf(stdout, "gate [%s]: NOT JUDGED: %s\n", precisionOf(md), g.Summary)
	} else if !f.noGate {
		if verdict, err = runGate(in, m, data, cand, md, f.kind, f.speed || md == quant.ModeAuto, prov); err != nil {
			return fmt.Errorf("quality gate: %w", err)
		}
		fmt.Fprint(stdout, verdict.String())
	}
	if verdict != nil && !verdict.Pass && !f.force {
		return fmt.Errorf("not written: %w (--force writes it anyway)", verdict.Err())
	}
	if err := onnx.WriteFile(f.out, res.Model); err != nil {
		return fmt.Errorf("quantize: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s: %d bytes, %.2f× the original\n", f.out, len(cand), float64(len(cand))/float64(len(data)))
	if verdict != nil && guessKind(m) == "decoder" {
		fmt.Fprintln(stdout, "note: this judged the decoder's own outputs; quantize --voice DIR on its bundle also judges the audio through encoder → decoder → vocoder")
	}
	return nil
}

// runGate picks the check for the model: a Piper voice, a KV decoder, or
// (with neither) a refusal to guess inputs.
func runGate(in string, m *onnx.Model, original, candidate []byte, mode quant.Mode, kind string, speed bool, prov ort.Provider) (*gate.Verdict, error) {
	if kind == "" {
		kind = guessKind(m)
	}
	rt, err := ort.Open(&ort.Options{Building: memory.SessionBuilding()})
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	opts := gate.Options{Precision: precisionOf(mode), CheckSpeed: speed, Session: &ort.SessionOptions{Provider: prov}}
	switch kind {
	case "voice":
		cfg, err := voice.ReadPiperConfig(in + ".json")
		if err != nil {
			return nil, fmt.Errorf("a voice needs its config beside it (%s.json): %w", in, err)
		}
		return gate.CheckVoice(rt, original, candidate, &gate.VoiceOptions{
			Options: opts, PhonemeIDMap: cfg.PhonemeIDMap, SampleRate: cfg.Audio.SampleRate,
		})
	case "decoder":
		return gate.CheckDecoder(rt, original, candidate, &gate.DecoderOptions{Options: opts})
	}
	return nil, errors.New("cannot tell what this model is (not a Piper voice, no past_key_values inputs): pass --kind voice|decoder, or --no-gate")
}

// guessKind tells a Piper voice or a KV-cache decoder by its inputs.
func guessKind(m *onnx.Model) string {
	var names []string
	for _, in := range m.Graph().GetInput() {
		names = append(names, in.GetName())
	}
	has := func(n string) bool { return slices.Contains(names, n) }
	if has("input") && has("input_lengths") && has("scales") {
		return "voice"
	}
	for _, n := range names {
		if strings.HasPrefix(n, "past_key_values.") {
			return "decoder"
		}
	}
	return ""
}

// precisionOf names the gate's threshold set for a mode.
func precisionOf(m quant.Mode) string {
	switch m {
	case quant.ModeFP16Store:
		return "fp16"
	case quant.ModeNBits:
		return "nbits"
	}
	return "int8"
}

// progress prints a bar on stderr for long rewrites.
func progress(w io.Writer) func(done, total int, what string) {
	last := -1
	return func(done, total int, what string) {
		if total <= 0 {
			return
		}
		pct := 100 * done / total
		if pct/5 == last/5 && done != total {
			return
		}
		last = pct
		bar := strings.Repeat("#", pct/5) + strings.Repeat(".", 20-pct/5)
		fmt.Fprintf(w, "\rquantize [%s] %3d%% %-40.40s", bar, pct, what)
		if done == total {
			fmt.Fprintln(w)
		}
	}
}

func abs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if r, err := filepath.EvalSymlinks(a); err == nil {
		return r
	}
	return a
}
