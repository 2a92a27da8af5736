package voice_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/onnx"
)

// TestCheckModelDemoModels: on the demo voice and every model of the demo
// kits, checkModel accepts what onnx.Decode accepts and decodes the same
// model.
func TestCheckModelDemoModels(t *testing.T) {
	models, err := demo.Models()
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range models {
		want, err := onnx.Decode(data, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := voice.CheckModel(data, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !proto.Equal(got.Proto, want.Proto) {
			t.Errorf("%s: checkModel decoded another model than Decode", name)
		}
	}
}
