package bundle

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/mynah-tts/mynah/quant/cpuclass"
)

// Precisions a variant may have (`mynah quantize --voice` writes them).
const (
	PrecisionFP32  = "fp32" // the files of "files" themselves
	PrecisionFP16  = "fp16"
	PrecisionInt8  = "int8"
	PrecisionNBits = "nbits"
)

var variantPrecisions = []string{PrecisionFP16, PrecisionInt8, PrecisionNBits}

// Variant is a precision variant of the bundle: files that replace some of
// "files" (same keys; the tensors stay the same), and what the quality
// gate said when it was made.
type Variant struct {
	Files map[string]FileRef `json:"files"`
	Gate  GateRecord         `json:"gate"`
}

// GateRecord is the quality gate's verdict on a variant.
type GateRecord struct {
	Passed bool `json:"passed"`
	// Provider is the ONNX Runtime execution provider the variant was
	// checked (and timed) with; a device with another provider should
	// check it again before trusting its speed.
	Provider string `json:"provider"`
	// SizeRatio is the variant's files' size over the originals'.
	SizeRatio float64 `json:"size_ratio"`
	// Summary is the gate's one-line result, for people.
	Summary string `json:"summary,omitempty"`
	// CPU is the class of CPU the gate ran on (vnni, avx2, arm64; see
	// package quant/cpuclass), and Int8Format the format of the
	// variant's int8 MatMul weights ("" when it has none). ONNX Runtime
	// computes a format either exactly or not at all well on a class, and
	// exactly means the same integers on every class where it is exact,
	// so the verdict holds wherever Int8Format is exact.
	CPU        string `json:"cpu,omitempty"`
	Int8Format string `json:"int8_format,omitempty"`
	// Unjudged means the gate could not judge the variant: it was made
	// for another class of CPU (mynah quantize --target) in a format not
	// exact where it was made. Passed is then false; auto never takes it,
	// a precision named in the config does.
	Unjudged bool `json:"unjudged,omitempty"`
}

// UsableOn reports whether a variant with gate record g computes on CPUs
// of class c what its gate judged, and if not, why not. A variant
// without int8 MatMul weights is usable everywhere. One recorded before
// mynah recorded CPU classes (no cpu) may hold full-range int8 weights,
// which saturate on avx2 CPUs.
func (g GateRecord) UsableOn(precision string, c cpuclass.Class) (bool, string) {
	if g.Int8Format == "" {
		if g.CPU == "" && (precision == PrecisionInt8 || precision == PrecisionNBits) && !cpuclass.FullRange.ExactOn(c) {
			return false, fmt.Sprintf("it records no CPU class (made by an older mynah) and may hold int8 weights that saturate on %s CPUs: quantize it again", c)
		}
		return true, ""
	}
	f, err := cpuclass.ParseInt8Format(g.Int8Format)
	if err != nil {
		return false, err.Error()
	}
	if !f.ExactOn(c) {
		return false, fmt.Sprintf("its %s int8 weights saturate on %s CPUs like this one: quantize it again here (mynah quantize --voice DIR --mode %s)", f, c, precision)
	}
	return true, ""
}

func (m *Manifest) checkVariants() error {
	for _, p := range sortedKeys(m.Variants) {
		v := m.Variants[p]
		field := "variants." + p
		if !slices.Contains(variantPrecisions, p) {
			return invalid(field, "precision %q is not one of fp16, int8, nbits", clip(p))
		}
		if len(v.Files) == 0 {
			return invalid(field+".files", "empty: a variant replaces at least one file")
		}
		for _, key := range sortedKeys(v.Files) {
			if _, ok := m.Files[key]; !ok {
				return invalid(field+".files."+key, "no such key in files")
			}
			ref := v.Files[key]
			if err := ref.validate(field + ".files." + key); err != nil {
				return err
			}
			v.Files[key] = ref
		}
		if !(v.Gate.SizeRatio >= 0 && v.Gate.SizeRatio <= 100) {
			return invalid(field+".gate.size_ratio", "%v out of range", v.Gate.SizeRatio)
		}
		if err := checkName(field+".gate.provider", v.Gate.Provider); err != nil && v.Gate.Provider != "" {
			return err
		}
		if _, err := cpuclass.Parse(v.Gate.CPU); err != nil && v.Gate.CPU != "" {
			return invalid(field+".gate.cpu", "%v", err)
		}
		if _, err := cpuclass.ParseInt8Format(v.Gate.Int8Format); err != nil && v.Gate.Int8Format != "" {
			return invalid(field+".gate.int8_format", "%v", err)
		}
		if v.Gate.Unjudged && v.Gate.Passed {
			return invalid(field+".gate", "unjudged and passed at once")
		}
		if len(v.Gate.Summary) > 1000 {
			return invalid(field+".gate.summary", "%d bytes, at most 1000", len(v.Gate.Summary))
		}
	}
	return nil
}

// Gates returns the gate records of the manifest's variants, by
// precision.
func (m *Manifest) Gates() map[string]GateRecord {
	out := make(map[string]GateRecord, len(m.Variants))
	for p, v := range m.Variants {
		out[p] = v.Gate
	}
	return out
}

// ChoosePrecision settles a voice's configured precision against the
// variants there are (their gate records, by precision) on a CPU of class
// cpu: "auto" (or "") takes the passed variant usable on cpu (UsableOn),
// checked with provider when provider is not empty, with the smallest
// files, else fp32; passedOver then says why smaller variants that passed
// were left out ("" when none was), for one warning line. fp32 is always
// there; a named one must exist, have passed or be unjudged, and be
// usable on cpu (else ErrNoVariant).
func ChoosePrecision(want string, gates map[string]GateRecord, provider string, cpu cpuclass.Class) (precision, passedOver string, err error) {
	switch want {
	case "", "auto":
		// A candidate passed, for the provider, and is smaller than fp32.
		candidate := func(g GateRecord) bool {
			return g.Passed && (provider == "" || g.Provider == provider) && g.SizeRatio > 0 && g.SizeRatio < 1
		}
		best, ratio := PrecisionFP32, 1.0
		for _, p := range variantPrecisions {
			if g, ok := gates[p]; ok && candidate(g) && g.SizeRatio < ratio {
				if usable, _ := g.UsableOn(p, cpu); usable {
					best, ratio = p, g.SizeRatio
				}
			}
		}
		// What would have been chosen over best but for this CPU.
		var over []string
		for _, p := range variantPrecisions {
			if g, ok := gates[p]; ok && candidate(g) && g.SizeRatio < ratio {
				if _, why := g.UsableOn(p, cpu); why != "" {
					over = append(over, p+": "+why)
				}
			}
		}
		return best, strings.Join(over, "; "), nil
	case PrecisionFP32:
		return want, "", nil
	}
	g, ok := gates[want]
	switch {
	case !slices.Contains(variantPrecisions, want):
		return "", "", fmt.Errorf("%w: precision %q: want auto, fp32, fp16, int8 or nbits", ErrNoVariant, want)
	case !ok:
		return "", "", fmt.Errorf("%w: no %s variant (make one with mynah quantize --voice)", ErrNoVariant, want)
	case !g.Passed && !g.Unjudged:
		return "", "", fmt.Errorf("%w: the %s variant failed the quality gate (%s)", ErrNoVariant, want, g.Summary)
	}
	if ok, why := g.UsableOn(want, cpu); !ok {
		return "", "", fmt.Errorf("%w: the %s variant is not usable here: %s", ErrNoVariant, want, why)
	}
	return want, "", nil
}

// WithPrecision returns the bundle as its variant of precision: the
// variant's files, verified now as Load verifies the others, replace the
// originals of the same keys, and Digest gets the precision appended, so
// caches keyed on it keep the variants apart. fp32 (or "") returns b. A
// variant that is missing, or whose files do not verify, is an error
// wrapping ErrNoVariant; one whose gate failed is too, unless force.
func (b *Bundle) WithPrecision(precision string, force bool) (*Bundle, error) {
	if precision == "" || precision == PrecisionFP32 {
		return b, nil
	}
	v, ok := b.Manifest.Variants[precision]
	if !ok || !force {
		if _, _, err := ChoosePrecision(precision, b.Manifest.Gates(), "", cpuclass.Host()); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Dir, err)
		}
	}
	out := *b
	out.Digest = b.Digest + "/" + precision
	out.files = make(map[string]File, len(b.files))
	for k, f := range b.files {
		out.files[k] = f
	}
	root, err := os.OpenRoot(b.Dir)
	if err != nil {
		return nil, fmt.Errorf("%s: variant %s: %w", b.Dir, precision, err)
	}
	defer root.Close()
	for _, k := range sortedKeys(v.Files) {
		if _, ok := b.files[k]; !ok {
			return nil, fmt.Errorf("%s: %w: variant %s replaces %q, which is not in files", b.Dir, ErrNoVariant, precision, k)
		}
		f, err := verify(root, b.Dir, "variants."+precision+".files."+k, k, v.Files[k], 0)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: variant %s: %w", b.Dir, ErrNoVariant, precision, err)
		}
		out.files[k] = f
	}
	return &out, nil
}
