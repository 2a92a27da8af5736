package bundle

import (
	"fmt"
	"os"
	"slices"
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
// variants there are (their gate records, by precision): "auto" (or "")
// takes the passed variant, checked with provider when provider is not
// empty, with the smallest files, else fp32; fp32 is always there; a
// named one must exist and have passed (else ErrNoVariant).
func ChoosePrecision(want string, gates map[string]GateRecord, provider string) (string, error) {
	switch want {
	case "", "auto":
		best, ratio := PrecisionFP32, 1.0
		for _, p := range variantPrecisions {
			g, ok := gates[p]
			if ok && g.Passed && (provider == "" || g.Provider == provider) && g.SizeRatio > 0 && g.SizeRatio < ratio {
				best, ratio = p, g.SizeRatio
			}
		}
		return best, nil
	case PrecisionFP32:
		return want, nil
	}
	g, ok := gates[want]
	switch {
	case !slices.Contains(variantPrecisions, want):
		return "", fmt.Errorf("%w: precision %q: want auto, fp32, fp16, int8 or nbits", ErrNoVariant, want)
	case !ok:
		return "", fmt.Errorf("%w: no %s variant (make one with mynah quantize --voice)", ErrNoVariant, want)
	case !g.Passed:
		return "", fmt.Errorf("%w: the %s variant failed the quality gate (%s)", ErrNoVariant, want, g.Summary)
	}
	return want, nil
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
		if _, err := ChoosePrecision(precision, b.Manifest.Gates(), ""); err != nil {
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
