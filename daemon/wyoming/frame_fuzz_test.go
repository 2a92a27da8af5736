package wyoming

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// FuzzReadEvent feeds arbitrary bytes to ReadEvent: it must never panic,
// never return more than the limits allow, only return its documented
// errors for bad frames, and whatever it accepts must survive WriteEvent
// and ReadEvent unchanged. Seeds are below and in testdata/fuzz.
func FuzzReadEvent(f *testing.F) {
	for _, s := range []string{
		`{"type":"describe"}` + "\n",
		`{"type":"synthesize","data":{"text":"Hello there.","voice":{"name":"en_US-amy"}}}` + "\n",
		`{"type":"synthesize-chunk","data_length":15,"version":"1.8.0"}` + "\n" + `{"text":"Hello"}`,
		`{"type":"x","data":{"a":1},"data_length":7}` + "\n" + `{"a":2}`,
		`{"type":"audio-chunk","payload_length":4}` + "\nabcd",
		`{"type":"x","data_length":-1}` + "\n",
		`{"type":"x","data_length":1e3}` + "\n",
		`{"type":"x"`,
		"\x00\xff\n",
		"\n",
	} {
		f.Add([]byte(s))
	}
	lim := Limits{MaxHeaderBytes: 4096, MaxDataBytes: 4096, MaxPayloadBytes: 64}
	f.Fuzz(func(t *testing.T, in []byte) {
		ev, err := ReadEvent(bufio.NewReader(bytes.NewReader(in)), lim)
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, ErrTruncated) && !isFrameError(err) {
				t.Fatalf("undocumented error %v", err)
			}
			return
		}
		if ev.Type == "" {
			t.Fatal("accepted an event without a type")
		}
		if len(ev.Payload) > lim.MaxPayloadBytes {
			t.Fatalf("payload of %d bytes over the limit", len(ev.Payload))
		}
		if len(ev.Data) > 0 && !json.Valid(ev.Data) {
			t.Fatalf("data %q is not JSON", ev.Data)
		}
		var b bytes.Buffer
		if err := WriteEvent(&b, ev); err != nil {
			t.Fatalf("cannot write what was read: %v", err)
		}
		again, err := ReadEvent(bufio.NewReader(&b), Limits{MaxDataBytes: 1 << 20, MaxPayloadBytes: lim.MaxPayloadBytes, MaxHeaderBytes: 1 << 20})
		if err != nil {
			t.Fatalf("cannot read what was written: %v", err)
		}
		if again.Type != ev.Type || !bytes.Equal(again.Payload, ev.Payload) || !sameJSON(again.Data, ev.Data) {
			t.Fatalf("round trip changed %+v into %+v", ev, again)
		}
	})
}

func sameJSON(a, b []byte) bool {
	if isNull(a) || string(bytes.TrimSpace(a)) == "{}" {
		return isNull(b) || string(bytes.TrimSpace(b)) == "{}"
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}
