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
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/cmd/internal/memory"
	"github.com/mynah-tts/mynah/quant"
	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/gate"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
)

// errNothingToRewrite means the mode finds no weight of the model to
// rewrite; nothing is written. It and refusedError are how quantize
// --voice ends when it leaves the voice as it was, which voice install
// --quantize says without failing the install.
var errNothingToRewrite = errors.New("nothing to rewrite")

// refusedError is quantize --voice's error for a result the quality gate
// failed, which is not written. Its verdict wraps gate.ErrFailed and
// names the checks that failed.
type refusedError struct{ verdict error }

func (e *refusedError) Error() string {
	return fmt.Sprintf("no variant written: %v (--force records it as failed)", e.verdict)
}

func (e *refusedError) Unwrap() error { return e.verdict }

// quantizeVoice makes a precision variant of the voice in dir and records
// it where mynahd looks (voices.precision): beside a Piper model as
// NAME.<precision>.onnx with a copy of its config carrying the gate's
// verdict, or in a bundle's voice.json under "variants". Of a bundle one
// model (role) is quantized per run; a cloning bundle's speaker encoder
// never is (stored speakers were made by it).
func quantizeVoice(dir, role string, qo quant.Options, force bool, checkSpeed bool, prov ort.Provider, stdout, stderr io.Writer) error {
	if _, err := os.Stat(filepath.Join(dir, bundle.ManifestName)); err == nil {
		return quantizeBundle(dir, role, qo, force, checkSpeed, prov, stdout)
	}
	if role != "" && role != bundle.RoleModel {
		return usageError("--role %s: a Piper voice is one model; --role is for bundles (decoder, vocoder; model)", role)
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
	g := unjudgedRecord(res.Report, cpuclass.Host(), prov, len(cand), len(data))
	if g.Unjudged {
		fmt.Fprintf(stdout, "gate [%s]: NOT JUDGED: %s\n", precisionOf(qo.Mode), g.Summary)
	} else {
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
			return &refusedError{verdict: v.Err()}
		}
		g = gateRecord(v, prov, len(cand), len(data), res.Report)
	}
	var doc map[string]any
	if err := json.Unmarshal(cfgData, &doc); err != nil {
		return err
	}
	doc[voice.VariantKey] = voice.VariantRecord{Precision: precision, OriginalSHA256: m.Digest, Gate: g}
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
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original)%s\n", precision, path, float64(len(cand))/float64(len(data)), passNote(g))
	return nil
}

// quantizeBundle makes a precision variant of one model of a bundle (role;
// "" means the decoder of a pipeline bundle, the model of a style_vector
// one) and records it in voice.json, after the gate: a decoder's own
// outputs first, then, for every role, the audio the whole bundle speaks
// with the variant against the original.
func quantizeBundle(dir, role string, qo quant.Options, force bool, checkSpeed bool, prov ort.Provider, stdout io.Writer) error {
	b, err := bundle.Load(dir)
	if err != nil {
		return err
	}
	man := b.Manifest
	if role, err = bundleRole(man.Engine, role); err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	f, err := b.RoleFile(role)
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
	fileKey := man.Role(role).File // the key of "files" a variant replaces
	unjudged := unjudgedRecord(res.Report, cpuclass.Host(), prov, len(cand), len(data))
	var v *gate.Verdict
	if role == bundle.RoleDecoder && !unjudged.Unjudged {
		d := man.Decoder
		v, err = withRuntime(func(rt *ort.Runtime) (*gate.Verdict, error) {
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
			return &refusedError{verdict: v.Err()}
		}
	}
	edit, err := beginVariant(b, precision, fileKey)
	if err != nil {
		return err
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
	edit.files[fileKey] = bundle.FileRef{Path: rel, SHA256: sha256Hex(written), Size: int64(len(written))}

	// The variant's int8 format is the one of all its int8 files: those of
	// the other roles it keeps, and this one's.
	rep := res.Report
	if kept := edit.keptFormat(); kept != "" && len(edit.files) > 1 {
		if rep.Int8Format != "" && rep.Int8Format != kept {
			return edit.undo(fmt.Errorf("the %s variant's other files hold %s int8 weights and this %s would hold %s: quantize it with --int8-format %s, or remake the variant",
				precision, kept, role, rep.Int8Format, kept), path, role)
		}
		rep.Int8Format = kept
		unjudged = unjudgedRecord(rep, cpuclass.Host(), prov, len(cand), len(data))
	}
	g := bundle.GateRecord{Passed: true, Provider: string(prov), SizeRatio: float64(len(cand)) / float64(len(data)), Summary: "passed",
		CPU: string(cpuclass.Host()), Int8Format: string(rep.Int8Format)}
	switch {
	case unjudged.Unjudged:
		fmt.Fprintf(stdout, "gate [%s]: NOT JUDGED: %s\n", precisionOf(qo.Mode), unjudged.Summary)
		g = unjudged
	case v != nil:
		g = gateRecord(v, prov, len(cand), len(data), rep)
	}
	if g.Passed {
		// What a listener hears goes through every model of the bundle, so
		// the whole bundle speaks both ways and the audio is judged too.
		pending := g
		pending.Passed, pending.Summary = false, "pending: the audio check through the whole voice did not finish"
		if err := edit.record(pending); err != nil {
			return edit.undo(err, path, role)
		}
		// A variant with a decoder (or a style model) decides durations
		// and pitch, so its audio is compared time-warped; a vocoder alone
		// gets them as they were and is held to the waveform too.
		timing := man.Engine == bundle.EngineStyleVector
		if d := man.Role(bundle.RoleDecoder); d != nil {
			_, timing = edit.files[d.File]
		}
		av, err := checkBundleAudio(b.Dir, man.Engine, precision, timing, qo.Mode, prov)
		if err != nil {
			return edit.undo(fmt.Errorf("audio check through the whole voice: %w", err), path, role)
		}
		fmt.Fprintf(stdout, "audio, %s, original vs variant:\n%s", bundleChain(man.Engine), av)
		if !av.Pass {
			g.Passed, g.Summary = false, summary("audio through the whole voice: "+av.Err().Error())
			if !force {
				return edit.undo(&refusedError{verdict: av.Err()}, path, role)
			}
		}
	}
	if err := edit.record(g); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "variant %s: %s (%.2f× the original %s), recorded in %s%s\n",
		precision, path, float64(len(cand))/float64(len(data)), role, bundle.ManifestName, passNote(g))
	return nil
}

// bundleRole settles --role for a bundle's engine: "" is the decoder of
// a pipeline bundle, the model of a style_vector one; a pipeline's
// encoder is refused.
func bundleRole(engine, role string) (string, error) {
	switch {
	case engine != bundle.EnginePipeline && engine != bundle.EngineStyleVector:
		return "", fmt.Errorf("a %s bundle is not supported; quantize its model with mynah quantize IN -o OUT", engine)
	case role == "":
		return bundleRoles(engine)[0], nil
	case engine == bundle.EnginePipeline && role == bundle.RoleEncoder:
		return "", usageError("--role encoder: the speaker encoder stays as it is; the speakers stored for this voice were made by it")
	case slices.Contains(bundleRoles(engine), role):
		return role, nil
	}
	return "", usageError("--role %s: a %s bundle's roles are %s", role, engine, strings.Join(bundleRoles(engine), ", "))
}

// variantEdit changes one precision's entry in a bundle's voice.json.
// voice.json and a variant's file cannot change together, so every step
// leaves a bundle that loads: an earlier variant of the precision is
// unrecorded before a file of it is replaced, and the new one is
// recorded as not passed until every check is done, so that a crash
// meanwhile leaves nothing voices.precision auto would take.
type variantEdit struct {
	man       *bundle.Manifest
	path      string // voice.json
	precision string
	// files are the variant's files: the earlier variant's for other
	// roles (an fp16 decoder and an fp16 vocoder make one fp16 variant),
	// and the new one once the caller adds it.
	files     map[string]bundle.FileRef
	previous  bundle.Variant
	had       bool // there was an earlier variant of the precision
	replacing bool // and it had a file for this role, which is replaced
}

// beginVariant starts an edit of b's precision variant that replaces (or
// adds) the file of key fileKey.
func beginVariant(b *bundle.Bundle, precision, fileKey string) (*variantEdit, error) {
	e := &variantEdit{man: b.Manifest, path: filepath.Join(b.Dir, bundle.ManifestName), precision: precision,
		files: map[string]bundle.FileRef{}}
	if e.man.Variants == nil {
		e.man.Variants = map[string]bundle.Variant{}
	}
	e.previous, e.had = e.man.Variants[precision]
	for k, ref := range e.previous.Files {
		if k != fileKey {
			e.files[k] = ref
		}
	}
	if _, e.replacing = e.previous.Files[fileKey]; e.replacing {
		delete(e.man.Variants, precision)
		if err := e.write(); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func (e *variantEdit) write() error {
	out, err := e.man.Marshal()
	if err != nil {
		return err
	}
	return writeFileAtomic(e.path, out)
}

// record writes the variant with gate record g.
func (e *variantEdit) record(g bundle.GateRecord) error {
	e.man.Variants[e.precision] = bundle.Variant{Files: e.files, Gate: g}
	return e.write()
}

// undo ends a refused or failed edit: the earlier variant comes back when
// its files are untouched, and the new file (at path, for role) is
// removed. It returns cause, saying so when the earlier variant is gone.
func (e *variantEdit) undo(cause error, path, role string) error {
	delete(e.man.Variants, e.precision)
	if e.had && !e.replacing {
		e.man.Variants[e.precision] = e.previous
	}
	if err := e.write(); err == nil {
		os.Remove(path)
	}
	if e.replacing {
		return fmt.Errorf("%w (the earlier %s variant was removed: its %s file was replaced)", cause, e.precision, role)
	}
	return cause
}

// bundleRoles are the roles quantize --voice --role takes for an engine,
// the default first.
func bundleRoles(engine string) []string {
	if engine == bundle.EngineStyleVector {
		return []string{bundle.RoleModel}
	}
	return []string{bundle.RoleDecoder, bundle.RoleVocoder}
}

// bundleChain names what the audio check runs through.
func bundleChain(engine string) string {
	if engine == bundle.EngineStyleVector {
		return "tokens → style model"
	}
	return "encoder → decoder → vocoder"
}

// bundleSentences are what checkBundleAudio has a bundle say: a question,
// a list, numbers and a long sentence, so that a decoder's errors have
// room to add up over many steps.
var bundleSentences = []string{
	"Good morning! The kitchen lights are on.",
	"Is the back door locked, or should I check it again?",
	"Tomorrow: rain until noon, then sun, with a high of nineteen degrees.",
	"The washing machine has finished its cycle, and the dryer will be done in about twenty minutes, so you can fold the towels before dinner.",
}

// checkBundleAudio speaks bundleSentences with the bundle in dir as it is
// and as its precision variant (default speaker, noise off) and judges
// the audio by the precision's limits (gate.CheckAudio; time-warped with
// warp).
func checkBundleAudio(dir, engine, precision string, warp bool, mode quant.Mode, prov ort.Provider) (*gate.Verdict, error) {
	return withRuntime(func(rt *ort.Runtime) (*gate.Verdict, error) {
		so := &ort.SessionOptions{Provider: prov}
		speak := func(precision string) ([][]float32, int, error) {
			var (
				synth func(s string, emit func(voice.Chunk) error) error
				done  func() error
			)
			if engine == bundle.EngineStyleVector {
				st, err := voice.LoadStyle(rt, dir, &voice.StyleOptions{Session: so, Precision: precision, ForcePrecision: true})
				if err != nil {
					return nil, 0, err
				}
				synth = func(s string, emit func(voice.Chunk) error) error {
					return st.Synthesize(context.Background(), voice.Request{Text: s}, emit)
				}
				done = st.Close
			} else {
				p, err := voice.LoadPipeline(rt, dir, &voice.PipelineOptions{
					Session: so, Precision: precision, ForcePrecision: true,
					Inference: &voice.Inference{LengthScale: voice.DefaultLengthScale},
				})
				if err != nil {
					return nil, 0, err
				}
				synth = func(s string, emit func(voice.Chunk) error) error {
					return p.Synthesize(context.Background(), voice.PipelineRequest{Text: s}, emit)
				}
				done = p.Close
			}
			defer done()
			out := make([][]float32, len(bundleSentences))
			rate := 0
			for i, s := range bundleSentences {
				err := synth(s, func(c voice.Chunk) error {
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
		return gate.CheckAudio(pairs, rate, warp, &gate.Options{Precision: precisionOf(mode)})
	})
}

// quantizeModel runs the rewrite and names the variant's precision.
func quantizeModel(m *onnx.Model, qo quant.Options, stdout io.Writer) (*quant.Result, []byte, string, error) {
	res, err := quant.Quantize(m, &qo)
	if err != nil {
		return nil, nil, "", err
	}
	fmt.Fprint(stdout, res.Report.String())
	if len(res.Report.Rows) == 0 {
		return nil, nil, "", fmt.Errorf("%w: --mode %s rewrites no weight of this model (--mode inspect shows what it has)", errNothingToRewrite, qo.Mode)
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
	if qo.Mode == quant.ModeNBits && precision != bundle.PrecisionNBits {
		return nil, nil, "", fmt.Errorf("%w: --mode nbits: no MatMul of this model is wide enough for 4 bits (K and N at least %d); --mode int8 quantizes the narrow ones", errNothingToRewrite, quant.NBitsMinDim)
	}
	cand, err := onnx.Encode(res.Model)
	if err != nil {
		return nil, nil, "", err
	}
	return res, cand, precision, nil
}

func gateOptions(mode quant.Mode, checkSpeed bool, prov ort.Provider) gate.Options {
	return gate.Options{Precision: precisionOf(mode), CheckSpeed: checkSpeed, Session: &ort.SessionOptions{Provider: prov}}
}

func gateRecord(v *gate.Verdict, prov ort.Provider, cand, orig int, rep quant.Report) bundle.GateRecord {
	s := "passed"
	if err := v.Err(); err != nil {
		s = err.Error()
	}
	return bundle.GateRecord{Passed: v.Pass, Provider: string(prov), SizeRatio: float64(cand) / float64(orig), Summary: summary(s),
		CPU: string(cpuclass.Host()), Int8Format: string(rep.Int8Format)}
}

// unjudgedRecord is the gate record of a variant the gate cannot judge
// on this CPU (of class host): its int8 weights are in a format ONNX
// Runtime does not compute exactly here (made with --target for another
// CPU). Unjudged is false when the gate can judge it.
func unjudgedRecord(rep quant.Report, host cpuclass.Class, prov ort.Provider, cand, orig int) bundle.GateRecord {
	g := bundle.GateRecord{Provider: string(prov), SizeRatio: float64(cand) / float64(orig), CPU: string(host), Int8Format: string(rep.Int8Format)}
	if rep.Int8Format == "" || rep.Int8Format.ExactOn(host) {
		return g
	}
	g.Unjudged = true
	g.Summary = fmt.Sprintf("not judged: its %s int8 weights saturate on this %s CPU, so the gate cannot run them here; judge it on a CPU of class %s, or name its precision in that device's config",
		rep.Int8Format, host, strings.ReplaceAll(cpuclass.List(rep.Int8Format.ExactClasses()), ", ", " or "))
	return g
}

// keptFormat is the int8 format of the variant the edit extends ("" if none).
func (e *variantEdit) keptFormat() cpuclass.Int8Format {
	if !e.had {
		return ""
	}
	return cpuclass.Int8Format(e.previous.Gate.Int8Format)
}

// summary cuts a gate record's summary to the 1000 bytes voice.json
// keeps, at a character boundary (the reports say "≥").
func summary(s string) string {
	if len(s) <= 1000 {
		return s
	}
	cut := 1000
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut]
}

func passNote(g bundle.GateRecord) string {
	switch {
	case g.Unjudged:
		return "; it is recorded as NOT JUDGED: voices.precision auto never takes it, a precision named in the config does"
	case !g.Passed:
		return "; it FAILED the gate and is recorded so: voices.precision auto never takes it"
	}
	return ""
}

func withRuntime(f func(rt *ort.Runtime) (*gate.Verdict, error)) (*gate.Verdict, error) {
	rt, err := ort.Open(&ort.Options{Building: memory.SessionBuilding()})
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
