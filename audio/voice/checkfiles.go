package voice

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// CheckPiperFiles checks the Piper voice whose model is at modelPath, with
// its config at modelPath+".json", as a load does before ONNX Runtime
// sees anything: the config parses and validates, the model passes
// checkModel, and its graph has the inputs the Piper contract names (sid
// too when the config has several speakers). It needs no ONNX Runtime, so
// an installer can refuse a bad download before the voice appears.
func CheckPiperFiles(modelPath string) (*PiperConfig, error) {
	cfg, err := ReadPiperConfig(modelPath + ".json")
	if err != nil {
		return nil, err
	}
	data, free, err := readModel(modelPath)
	if err != nil {
		return nil, err
	}
	defer free()
	m, err := checkModel(data, &onnx.ReadOptions{Dir: filepath.Dir(modelPath)})
	if err != nil {
		return nil, fmt.Errorf("read model %s: %w", modelPath, err)
	}
	var inputs []string
	for _, in := range m.Proto.GetGraph().GetInput() {
		inputs = append(inputs, in.GetName())
	}
	want := []string{"input", "input_lengths", "scales"}
	if cfg.NumSpeakers > 1 {
		want = append(want, "sid")
	}
	for _, name := range want {
		if !slices.Contains(inputs, name) {
			return nil, fmt.Errorf("%w: %s has no input %q (inputs: %v): not a Piper voice", ErrModelMismatch, modelPath, name, inputs)
		}
	}
	return cfg, nil
}
