package bundle_test

import (
	"bytes"
	"errors"
	"reflect"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
)

// FuzzParse: Parse never panics, every failure is an ErrInvalidManifest,
// and whatever it accepts survives Marshal and Parse unchanged (so the
// checks depend on nothing the JSON encoding loses).
func FuzzParse(f *testing.F) {
	f.Add([]byte(pipelineJSON))
	for _, m := range []*bundle.Manifest{styleManifest(), piperManifest()} {
		data, err := m.Marshal()
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(`{"format":1}`))
	f.Add([]byte(`{"format":1,"format":1}`))
	f.Add([]byte(`{"format":2,"future":true}`))
	f.Add([]byte(`{"format":1,"engine":"style_vector","files":{"m":{"path":"../m","sha256":""}}}`))
	f.Add([]byte(`[[[[[[[[[[{}]]]]]]]]]]`))
	f.Add([]byte("{\"format\":1,\"name\":\"\\u0000\"}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := bundle.Parse(data)
		if err != nil {
			if !errors.Is(err, bundle.ErrInvalidManifest) {
				t.Fatalf("error %v is not ErrInvalidManifest", err)
			}
			return
		}
		out, err := m.Marshal()
		if err != nil {
			t.Fatalf("accepted manifest does not marshal: %v", err)
		}
		back, err := bundle.Parse(out)
		if err != nil {
			t.Fatalf("marshalled manifest does not parse: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(back, m) {
			t.Fatalf("round trip changed the manifest:\n%+v\n%+v", back, m)
		}
		again, _ := back.Marshal()
		if !bytes.Equal(again, out) {
			t.Fatal("marshal is not deterministic")
		}
	})
}
