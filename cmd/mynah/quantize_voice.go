package main

import (
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
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original)%s\n", precision, path, float64(len(cand))/float64(len(data)), passNote(v))
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
	rel := filepath.ToSlash(filepath.Join(filepath.Dir(f.Rel), trimExt(filepath.Base(f.Rel))+"."+precision+".onnx"))
	path := filepath.Join(b.Dir, filepath.FromSlash(rel))
	if err := onnx.WriteFile(path, res.Model); err != nil {
		return err
	}
	written, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if man.Variants == nil {
		man.Variants = map[string]bundle.Variant{}
	}
	man.Variants[precision] = bundle.Variant{
		Files: map[string]bundle.FileRef{d.File: {Path: rel, SHA256: sha256Hex(written), Size: int64(len(written))}},
		Gate:  gateRecord(v, prov, len(cand), len(data)),
	}
	out, err := man.Marshal()
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(b.Dir, bundle.ManifestName), out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original decoder), recorded in %s%s\n",
		precision, path, float64(len(cand))/float64(len(data)), bundle.ManifestName, passNote(v))
	return nil
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
	precision := bundle.PrecisionFP16
	for _, r := range res.Report.Rows {
		switch r.Mode {
		case quant.ModeInt8:
			precision = bundle.PrecisionInt8
		case quant.ModeNBits:
			if precision != bundle.PrecisionInt8 {
				precision = bundle.PrecisionNBits
			}
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

func passNote(v *gate.Verdict) string {
	if v.Pass {
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
