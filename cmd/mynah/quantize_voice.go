package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/gate"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// quantizeVoice makes a precision variant of the voice in dir and records
// it where mynahd looks (voices.precision): beside a Piper model as
// NAME.<precision>.onnx with a copy of its config carrying the gate's
// verdict, or in a bundle's voice.json under "variants". Of a cloning
// bundle only the decoder is quantized: the speaker encoder must stay as
// it is (stored speakers were made by it), and the vocoder is a voice's
// most fragile part.
func quantizeVoice(dir string, qo quant.Options, force bool, checkSpeed bool, prov ort.Provider, stdout, stderr io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, bundle.ManifestName)); err == nil {
		return quantizeBundle(dir, qo, force, checkSpeed, prov, stdout)
	}
	model, err := voice.FindPiper(dir)
	if err != nil {
		return err
	}
	m, data, err := onnx.ReadFileData(model, nil)
	if err != nil {
		return err
	}
	qo.Dir = filepath.Dir(model)
	res, cand, precision, err := quantizeModel(m, qo, stdout)
	if err != nil {
		return err
	}
	cfgData, err := os.ReadFile(model + ".json")
	if err != nil {
		return err
	}
	cfg, err := voice.ParsePiperConfig(cfgData)
	if err != nil {
		return err
	}
	v, err := withRuntime(func(rt *ort.Runtime) (*gate.Verdict, error) {
		return gate.CheckVoice(rt, data, cand, &gate.VoiceOptions{
			Options:      gateOptions(qo.Mode, checkSpeed, prov),
			PhonemeIDMap: cfg.PhonemeIDMap, SampleRate: cfg.Audio.SampleRate,
		})
	})
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, v.String())
	if !v.Pass && !force {
		return fmt.Errorf("no variant written: %w (--force records it as failed)", v.Err())
	}
	var doc map[string]any
	if err := json.Unmarshal(cfgData, &doc); err != nil {
		return err
	}
	doc[voice.VariantKey] = voice.VariantRecord{Precision: precision, OriginalSHA256: m.Digest, Gate: gateRecord(v, prov, len(cand), len(data))}
	variantCfg, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	path := voice.PiperVariantPath(model, precision)
	if err := onnx.WriteFile(path, res.Model); err != nil {
		return err
	}
	if err := writeFileAtomic(path+".json", append(variantCfg, '\n')); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original)%s\n", precision, path, float64(len(cand))/float64(len(data)), passNote(v.Pass))
	return nil
}

// quantizeBundle makes the decoder variant of a cloning bundle and records
// it in voice.json.
func quantizeBundle(dir string, qo quant.Options, force bool, checkSpeed bool, prov ort.Provider, stdout io.Writer) error {
	b, err := bundle.Load(dir)
	if err != nil {
		return err
	}
	man := b.Manifest
	if man.Engine != bundle.EnginePipeline {
		return fmt.Errorf("%s: a %s bundle is not supported yet; quantize its model with mynah quantize IN -o OUT", dir, man.Engine)
	}
	f, err := b.RoleFile(bundle.RoleDecoder)
	if err != nil {
		return err
	}
	m, data, err := onnx.ReadFileData(f.Path, nil)
	if err != nil {
		return err
	}
	qo.Dir = filepath.Dir(f.Path)
	res, cand, precision, err := quantizeModel(m, qo, stdout)
	if err != nil {
		return err
	}
	d := man.Decoder
	v, err := withRuntime(func(rt *ort.Runtime) (*gate.Verdict, error) {
		return gate.CheckDecoder(rt, data, cand, &gate.DecoderOptions{
			Options: gateOptions(qo.Mode, checkSpeed, prov),
			IDs:     d.Inputs["ids"], Prev: d.Inputs["prev"], Feedback: d.Outputs["prosody"],
			PastKey: d.KV.PastKey, PastValue: d.KV.PastValue, PresentKey: d.KV.PresentKey, PresentValue: d.KV.PresentValue,
		})
	})
	if err != nil {
		return err
	}
	fmt.Fprint(stdout, v.String())
	if !v.Pass && !force {
		return fmt.Errorf("no variant written: %w (--force records it as failed)", v.Err())
	}
	// voice.json and the variant's file cannot change together, so each
	// step leaves a bundle that loads: an earlier variant of the same
	// precision is unrecorded before its file is replaced, and the new
	// one is recorded as not passed until every check is done, so a crash
	// meanwhile leaves nothing voices.precision auto would take.
	manifestPath := filepath.Join(b.Dir, bundle.ManifestName)
	writeManifest := func() error {
		out, err := man.Marshal()
		if err != nil {
			return err
		}
		return writeFileAtomic(manifestPath, out)
	}
	if man.Variants == nil {
		man.Variants = map[string]bundle.Variant{}
	}
	_, replacing := man.Variants[precision]
	if replacing {
		delete(man.Variants, precision)
		if err := writeManifest(); err != nil {
			return err
		}
	}
	rel := filepath.ToSlash(filepath.Join(filepath.Dir(f.Rel), trimExt(filepath.Base(f.Rel))+"."+precision+".onnx"))
	path := filepath.Join(b.Dir, filepath.FromSlash(rel))
	if err := onnx.WriteFile(path, res.Model); err != nil {
		return err
	}
	written, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	record := func(g bundle.GateRecord) error {
		man.Variants[precision] = bundle.Variant{
			Files: map[string]bundle.FileRef{d.File: {Path: rel, SHA256: sha256Hex(written), Size: int64(len(written))}},
			Gate:  g,
		}
		return writeManifest()
	}
	undo := func(cause error) error {
		delete(man.Variants, precision)
		if err := writeManifest(); err == nil {
			os.Remove(path)
		}
		if replacing {
			return fmt.Errorf("%w (the earlier %s variant was removed)", cause, precision)
		}
		return cause
	}

	g := gateRecord(v, prov, len(cand), len(data))
	if v.Pass {
		// The decoder's outputs are within limits; what a listener hears
		// also goes through the vocoder, so the whole pipeline is run both
		// ways and the audio judged too.
		pending := g
		pending.Passed, pending.Summary = false, "pending: the audio check through the whole pipeline did not finish"
		if err := record(pending); err != nil {
			return undo(err)
		}
		av, err := checkPipelineAudio(b.Dir, precision, qo.Mode, prov)
		if err != nil {
			return undo(fmt.Errorf("audio check through the pipeline: %w", err))
		}
		fmt.Fprint(stdout, "audio, encoder → decoder → vocoder, original vs variant:\n"+av.String())
		if !av.Pass {
			g.Passed, g.Summary = false, "audio through the pipeline: "+av.Err().Error()
			if len(g.Summary) > 1000 {
				g.Summary = g.Summary[:1000]
			}
			if !force {
				return undo(fmt.Errorf("no variant written: %w (--force records it as failed)", av.Err()))
			}
		}
	}
	if err := record(g); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original decoder), recorded in %s%s\n",
		precision, path, float64(len(cand))/float64(len(data)), bundle.ManifestName, passNote(g.Passed))
	return nil
}

// pipelineSentences are what checkPipelineAudio has the bundle say: a
// question, a list, numbers and a long sentence, so that the decoder's
// errors have room to add up over many steps.
var pipelineSentences = []string{
	"Good morning! The kitchen lights are on.",
	"Is the back door locked, or should I check it again?",
	"Tomorrow: rain until noon, then sun, with a high of nineteen degrees.",
	"The washing machine has finished its cycle, and the dryer will be done in about twenty minutes, so you can fold the towels before dinner.",
}

// checkPipelineAudio speaks pipelineSentences with the bundle in dir as
// it is and as its precision variant, default speaker and noise off, and
// judges the audio by the precision's limits (gate.CheckAudio).
func checkPipelineAudio(dir, precision string, mode quant.Mode, prov ort.Provider) (*gate.Verdict, error) {
	return withRuntime(func(rt *ort.Runtime) (*gate.Verdict, error) {
		speak := func(precision string) ([][]float32, int, error) {
			p, err := voice.LoadPipeline(rt, dir, &voice.PipelineOptions{
				Session:   &ort.SessionOptions{Provider: prov},
				Precision: precision, ForcePrecision: true,
				Inference: &voice.Inference{LengthScale: voice.DefaultLengthScale},
			})
			if err != nil {
				return nil, 0, err
			}
			defer p.Close()
			out := make([][]float32, len(pipelineSentences))
			rate := 0
			for i, s := range pipelineSentences {
				err := p.Synthesize(context.Background(), voice.PipelineRequest{Text: s}, func(c voice.Chunk) error {
					out[i] = append(out[i], gate.Int16ToFloat32(c.PCM.Samples)...)
					rate = c.PCM.Rate
					return nil
				})
				if err != nil {
					return nil, 0, fmt.Errorf("%s: %q: %w", precision, s, err)
				}
			}
			return out, rate, nil
		}
		orig, rate, err := speak(bundle.PrecisionFP32)
		if err != nil {
			return nil, err
		}
		cand, _, err := speak(precision)
		if err != nil {
			return nil, err
		}
		pairs := make([]gate.AudioPair, len(orig))
		for i := range orig {
			pairs[i] = gate.AudioPair{Where: fmt.Sprintf("sentence %d", i), Original: orig[i], Candidate: cand[i]}
		}
		return gate.CheckAudio(pairs, rate, &gate.Options{Precision: precisionOf(mode)})
	})
}

// quantizeModel runs the rewrite and names the variant's precision.
func quantizeModel(m *onnx.Model, qo quant.Options, stdout io.Writer) (*quant.Result, []byte, string, error) {
	res, err := quant.Quantize(m, &qo)
	if err != nil {
		return nil, nil, "", err
	}
	fmt.Fprint(stdout, res.Report.String())
	cand, err := onnx.Encode(res.Model)
	if err != nil {
		return nil, nil, "", err
	}
	// The variant is named by its smallest weights: nbits mode keeps
	// narrow MatMuls in int8, and auto stores what it does not make
	// integer as fp16.
	precision := bundle.PrecisionFP16
	for _, r := range res.Report.Rows {
		switch r.Mode {
		case quant.ModeInt8:
			if precision != bundle.PrecisionNBits {
				precision = bundle.PrecisionInt8
			}
		case quant.ModeNBits:
			precision = bundle.PrecisionNBits
		}
	}
	if len(res.Report.Rows) == 0 {
		return nil, nil, "", errors.New("nothing to quantize in this model with this mode")
	}
	return res, cand, precision, nil
}

func gateOptions(mode quant.Mode, checkSpeed bool, prov ort.Provider) gate.Options {
	return gate.Options{Precision: precisionOf(mode), CheckSpeed: checkSpeed, Session: &ort.SessionOptions{Provider: prov}}
}

func gateRecord(v *gate.Verdict, prov ort.Provider, cand, orig int) bundle.GateRecord {
	summary := "passed"
	if err := v.Err(); err != nil {
		summary = err.Error()
	}
	if len(summary) > 1000 {
		summary = summary[:1000]
	}
	return bundle.GateRecord{Passed: v.Pass, Provider: string(prov), SizeRatio: float64(cand) / float64(orig), Summary: summary}
}

func passNote(passed bool) string {
	if passed {
		return ""
	}
	return "; it FAILED the gate and is recorded so: voices.precision auto never takes it"
}

func withRuntime(f func(rt *ort.Runtime) (*gate.Verdict, error)) (*gate.Verdict, error) {
	rt, err := ort.Open(nil)
	if err != nil {
		return nil, err
	}
	defer rt.Close()
	return f(rt)
}

func trimExt(name string) string { return strings.TrimSuffix(name, filepath.Ext(name)) }

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeFileAtomic writes through a temporary file and a rename, so a
// reader (mynahd loading the voice) never sees half a manifest.
func writeFileAtomic(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
