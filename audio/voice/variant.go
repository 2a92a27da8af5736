package voice

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/cpuclass"
)

// A Piper voice has no manifest, so its precision variants live beside it
// as NAME.<precision>.onnx with a copy of NAME.onnx.json that carries the
// quality gate's verdict under "mynah_variant". Piper and every other
// reader of the config ignore that key.

// VariantKey is the config key of a Piper variant's record.
const VariantKey = "mynah_variant"

// VariantRecord describes a Piper variant: its precision, the digest of
// the model it was made from, and the gate's verdict.
type VariantRecord struct {
	Precision      string            `json:"precision"`
	OriginalSHA256 string            `json:"original_sha256"`
	Gate           bundle.GateRecord `json:"gate"`
}

var piperPrecisions = []string{bundle.PrecisionFP16, bundle.PrecisionInt8, bundle.PrecisionNBits}

// PiperGates returns the gate records of the variants beside the Piper
// model at modelPath, by precision.
func PiperGates(modelPath string) map[string]bundle.GateRecord {
	gates := make(map[string]bundle.GateRecord)
	for p, r := range PiperVariants(modelPath) {
		gates[p] = r.Gate
	}
	return gates
}

// PiperVariantPath is where the precision variant of the Piper model at
// modelPath lies (NAME.onnx → NAME.<precision>.onnx).
func PiperVariantPath(modelPath, precision string) string {
	return strings.TrimSuffix(modelPath, ".onnx") + "." + precision + ".onnx"
}

// isVariantFile reports whether path is NAME.<precision>.onnx of a
// NAME.onnx in the same list.
func isVariantFile(path string, all []string) bool {
	for _, p := range piperPrecisions {
		if base, ok := strings.CutSuffix(path, "."+p+".onnx"); ok {
			for _, a := range all {
				if a == base+".onnx" {
					return true
				}
			}
		}
	}
	return false
}

// PiperVariants reads the records of the variants beside the Piper model
// at modelPath. A variant whose config cannot be read is left out.
func PiperVariants(modelPath string) map[string]VariantRecord {
	out := make(map[string]VariantRecord)
	for _, p := range piperPrecisions {
		data, err := os.ReadFile(PiperVariantPath(modelPath, p) + ".json")
		if err != nil {
			continue
		}
		var v struct {
			Record *VariantRecord `json:"mynah_variant"`
		}
		if json.Unmarshal(data, &v) == nil && v.Record != nil && v.Record.Precision == p {
			out[p] = *v.Record
		}
	}
	return out
}

// piperVariantModel returns the model file of precision for the Piper
// model at modelPath.
func piperVariantModel(modelPath, precision string) (string, error) {
	if precision == "" || precision == bundle.PrecisionFP32 {
		return modelPath, nil
	}
	if _, _, err := bundle.ChoosePrecision(precision, PiperGates(modelPath), "", cpuclass.Host()); err != nil {
		return "", fmt.Errorf("%s: %w", modelPath, err)
	}
	path := PiperVariantPath(modelPath, precision)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("%w: %s is missing", bundle.ErrNoVariant, path)
	}
	return path, nil
}
