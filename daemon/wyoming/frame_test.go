package wyoming

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/audio"
)

func read(s string, lim Limits) (Event, error) {
	return ReadEvent(bufio.NewReader(strings.NewReader(s)), lim)
}

func TestReadEvent(t *testing.T) {
	audioLim := Limits{MaxPayloadBytes: 16}
	tests := []struct {
		name    string
		in      string
		lim     Limits
		typ     string
		data    map[string]any // nil: no data
		payload string
		err     error
	}{
		{name: "type only", in: `{"type":"describe"}` + "\n", typ: "describe"},
		{name: "crlf", in: `{"type":"describe"}` + "\r\n", typ: "describe"},
		{name: "inline data", in: `{"type":"synthesize","data":{"text":"hi"}}` + "\n", typ: "synthesize", data: map[string]any{"text": "hi"}},
		{name: "data block", in: `{"type":"synthesize","data_length":13,"version":"1.8.0"}` + "\n" + `{"text":"hi"}`, typ: "synthesize", data: map[string]any{"text": "hi"}},
		{name: "block merged over inline", in: `{"type":"x","data":{"a":1,"b":2},"data_length":7}` + "\n" + `{"b":3}`, typ: "x", data: map[string]any{"a": 1.0, "b": 3.0}},
		{name: "null data and lengths", in: `{"type":"x","data":null,"data_length":null,"payload_length":null}` + "\n", typ: "x"},
		{name: "zero lengths", in: `{"type":"x","data_length":0,"payload_length":0}` + "\n", typ: "x"},
		{name: "payload", in: `{"type":"audio-chunk","data_length":2,"payload_length":4}` + "\n{}abcd", lim: audioLim, typ: "audio-chunk", data: map[string]any{}, payload: "abcd"},
		{name: "unicode", in: `{"type":"synthesize","data":{"text":"你好"}}` + "\n", typ: "synthesize", data: map[string]any{"text": "你好"}},

		{name: "eof", in: "", err: io.EOF},
		{name: "half a header", in: `{"type":"desc`, err: ErrTruncated},
		{name: "short data", in: `{"type":"x","data_length":10}` + "\n{}", err: ErrTruncated},
		{name: "short payload", in: `{"type":"x","payload_length":10}` + "\nab", lim: audioLim, err: ErrTruncated},
		{name: "empty line", in: "\n", err: ErrMalformed},
		{name: "not json", in: "hello\n", err: ErrMalformed},
		{name: "binary", in: "\x00\xff\xfe\x01\n", err: ErrMalformed},
		{name: "array", in: "[1,2]\n", err: ErrMalformed},
		{name: "null header", in: "null\n", err: ErrMalformed},
		{name: "no type", in: `{"data":{}}` + "\n", err: ErrMalformed},
		{name: "type not string", in: `{"type":5}` + "\n", err: ErrMalformed},
		{name: "inline data not object", in: `{"type":"x","data":"s"}` + "\n", err: ErrMalformed},
		{name: "block not object", in: `{"type":"x","data_length":3}` + "\n[1]", err: ErrMalformed},
		{name: "block not json", in: `{"type":"x","data_length":3}` + "\n{{{", err: ErrMalformed},
		{name: "negative length", in: `{"type":"x","data_length":-1}` + "\n", err: ErrMalformed},
		{name: "fraction length", in: `{"type":"x","data_length":1.5}` + "\n", err: ErrMalformed},
		{name: "string length", in: `{"type":"x","data_length":"2"}` + "\n{}", err: ErrMalformed},
		{name: "huge length", in: `{"type":"x","data_length":99999999999999999999999}` + "\n", err: ErrMalformed},
		{name: "data over limit", in: `{"type":"x","data_length":1048577}` + "\n", err: ErrDataTooLarge},
		{name: "data over custom limit", in: `{"type":"x","data_length":11}` + "\n", lim: Limits{MaxDataBytes: 10}, err: ErrDataTooLarge},
		{name: "payload refused by default", in: `{"type":"audio-chunk","payload_length":1}` + "\nx", err: ErrPayloadTooLarge},
		{name: "payload over limit", in: `{"type":"audio-chunk","payload_length":17}` + "\n", lim: audioLim, err: ErrPayloadTooLarge},
		{name: "header over limit", in: `{"type":"` + strings.Repeat("a", 100) + `"}` + "\n", lim: Limits{MaxHeaderBytes: 64}, err: ErrHeaderTooLong},
		{name: "header over limit without newline", in: strings.Repeat("a", 70000), err: ErrHeaderTooLong},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := read(tt.in, tt.lim)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ev.Type != tt.typ || string(ev.Payload) != tt.payload {
				t.Errorf("got type %q payload %q, want %q %q", ev.Type, ev.Payload, tt.typ, tt.payload)
			}
			if tt.data == nil {
				if len(ev.Data) != 0 {
					t.Errorf("data = %s, want none", ev.Data)
				}
				return
			}
			var got map[string]any
			if err := json.Unmarshal(ev.Data, &got); err != nil {
				t.Fatalf("data %s: %v", ev.Data, err)
			}
			if g, w := mustJSON(t, got), mustJSON(t, tt.data); g != w {
				t.Errorf("data = %s, want %s", g, w)
			}
		})
	}
}

func TestReadEventTruncatedIsUnexpectedEOF(t *testing.T) {
	_, err := read(`{"type":"x"`, Limits{})
	if !errors.Is(err, ErrTruncated) || !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want ErrTruncated and io.ErrUnexpectedEOF", err)
	}
}

func TestReadEventSequence(t *testing.T) {
	in := `{"type":"a"}` + "\n" + `{"type":"b","data_length":2}` + "\n{}" + `{"type":"c"}` + "\n"
	r := bufio.NewReader(strings.NewReader(in))
	for _, want := range []string{"a", "b", "c"} {
		ev, err := ReadEvent(r, Limits{})
		if err != nil || ev.Type != want {
			t.Fatalf("got %q, %v; want %q", ev.Type, err, want)
		}
	}
	if _, err := ReadEvent(r, Limits{}); err != io.EOF {
		t.Fatalf("after the last event: %v, want io.EOF", err)
	}
}

func TestWriteEvent(t *testing.T) {
	tests := []struct {
		name string
		ev   Event
		want string
		err  error
	}{
		{name: "no data", ev: Event{Type: "synthesize-stopped"}, want: `{"type":"synthesize-stopped","version":"1.8.0"}` + "\n"},
		{name: "empty object", ev: Event{Type: "x", Data: json.RawMessage(`{}`)}, want: `{"type":"x","version":"1.8.0"}` + "\n"},
		{name: "data as block", ev: Event{Type: "x", Data: json.RawMessage(`{"a":1}`)}, want: `{"type":"x","version":"1.8.0","data_length":7}` + "\n" + `{"a":1}`},
		{name: "payload", ev: Event{Type: "audio-chunk", Data: json.RawMessage(`{"r":1}`), Payload: []byte{1, 2}}, want: `{"type":"audio-chunk","version":"1.8.0","data_length":7,"payload_length":2}` + "\n" + `{"r":1}` + "\x01\x02"},
		{name: "no type", ev: Event{}, err: ErrMalformed},
		{name: "data not object", ev: Event{Type: "x", Data: json.RawMessage(`[1]`)}, err: ErrMalformed},
		{name: "data not json", ev: Event{Type: "x", Data: json.RawMessage(`{`)}, err: ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			err := WriteEvent(&b, tt.ev)
			if tt.err != nil {
				if !errors.Is(err, tt.err) {
					t.Fatalf("err = %v, want %v", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if b.String() != tt.want {
				t.Errorf("wrote %q, want %q", b.String(), tt.want)
			}
		})
	}
}

func TestWriteReadRoundTrip(t *testing.T) {
	ev := Event{Type: "audio-chunk", Data: json.RawMessage(`{"rate":22050,"width":2,"channels":1}`), Payload: []byte("pcm!")}
	var b bytes.Buffer
	if err := WriteEvent(&b, ev); err != nil {
		t.Fatal(err)
	}
	got, err := ReadEvent(bufio.NewReader(&b), Limits{MaxPayloadBytes: 4})
	if err != nil {
		t.Fatal(err)
	}
	if got.Type != ev.Type || string(got.Data) != string(ev.Data) || string(got.Payload) != string(ev.Payload) {
		t.Fatalf("round trip: %+v, want %+v", got, ev)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAppendAudioChunkIsEncodeEvent: the audio path's own framing makes
// the bytes encodeEvent makes of the same chunk, and ReadEvent reads
// them back.
func TestAppendAudioChunkIsEncodeEvent(t *testing.T) {
	for _, tt := range []struct {
		f       audioFormat
		samples []int16
	}{
		{audioFormat{Rate: 22050, Width: 2, Channels: 1, Timestamp: 0}, []int16{0, 1, -1, 32767, -32768}},
		{audioFormat{Rate: 16000, Width: 2, Channels: 2, Timestamp: 123456789}, []int16{7, -7}},
		{audioFormat{Rate: 22050, Width: 2, Channels: 1, Timestamp: 46}, nil}, // the empty chunk
		{audioFormat{Rate: 48000, Width: 2, Channels: 1, Timestamp: 1 << 40}, make([]int16, 1024)},
	} {
		payload := make([]byte, 2*len(tt.samples))
		for j, s := range tt.samples {
			binary.LittleEndian.PutUint16(payload[2*j:], uint16(s))
		}
		data, err := json.Marshal(tt.f)
		if err != nil {
			t.Fatal(err)
		}
		frame, err := encodeEvent(Event{Type: typeAudioChunk, Data: data, Payload: payload})
		if err != nil {
			t.Fatal(err)
		}
		want := bytes.Join(frame, nil)
		got := appendAudioChunk(nil, tt.f, tt.samples)
		if !bytes.Equal(got, want) {
			t.Errorf("%+v, %d samples:\n got %q\nwant %q", tt.f, len(tt.samples), got, want)
			continue
		}
		e, err := ReadEvent(bufio.NewReader(bytes.NewReader(got)), Limits{MaxPayloadBytes: 1 << 20})
		if err != nil || e.Type != typeAudioChunk || !bytes.Equal(e.Payload, payload) {
			t.Errorf("%+v: read back %q, %d payload bytes, %v", tt.f, e.Type, len(e.Payload), err)
		}
	}
}

// TestMaxChunkHeader: writeAudio sizes its buffer with maxChunkHeader a
// chunk; a frame at the longest format and lengths must fit in it.
func TestMaxChunkHeader(t *testing.T) {
	samples := make([]int16, 4)
	frame := appendAudioChunk(nil, audioFormat{Rate: audio.MaxRate, Width: 2, Channels: audio.MaxChannels, Timestamp: math.MaxInt64}, samples)
	// The payload length a frame of 2^62 samples would write: 19 digits,
	// as long as an int64 gets.
	extra := len(strconv.Itoa(math.MaxInt64)) - len(strconv.Itoa(2*len(samples)))
	if got := len(frame) - 2*len(samples) + extra; got != maxChunkHeader {
		t.Errorf("longest audio-chunk header is %d bytes, maxChunkHeader says %d", got, maxChunkHeader)
	}
}

// appendAudioChunk is the whole frame writeAudio sends for samples in
// format f: the header, then the samples as s16le.
func appendAudioChunk(dst []byte, f audioFormat, samples []int16) []byte {
	return audio.AppendS16LE(appendAudioChunkHeader(dst, f, len(samples)), samples)
}
