package render

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// testRecord returns n bytes that differ from chunk to chunk.
func testRecord(n int, seed byte) []byte {
	b := make([]byte, n)
	x := uint32(seed) + 1
	for i := range b {
		x = x*1664525 + 1013904223
		b[i] = byte(x >> 24)
	}
	return b
}

// rawAnswer builds a message from a header text and data, bypassing
// EncodeChunk's checks.
func rawAnswer(version byte, header string, data []byte) []byte {
	out := []byte(answerMagic)
	out = append(out, version)
	out = binary.BigEndian.AppendUint16(out, uint16(len(header)))
	out = append(out, header...)
	return append(out, data...)
}

func validChunk() Chunk {
	data := testRecord(10, 1)
	return Chunk{ID: "a", Seq: 0, Total: 1, Key: testKey, Voice: "v", Size: 10, CRC32C: Checksum(data), Data: data}
}

func TestChunkRoundTrip(t *testing.T) {
	errAnswer := Chunk{ID: "a", Voice: "v", Error: "no such voice <here> \u2028", Reason: ReasonUnknownVoice}
	for _, c := range []Chunk{validChunk(), errAnswer} {
		p, err := EncodeChunk(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeChunk(p)
		if err != nil {
			t.Fatalf("DecodeChunk: %v", err)
		}
		if !reflect.DeepEqual(got, c) {
			t.Fatalf("round trip: got %+v, want %+v", got, c)
		}
	}
}

func TestDecodeChunk(t *testing.T) {
	ten := testRecord(10, 1)
	hdr := func(fields string) string { return `{"id":"a","key":"` + testKey + `","voice":"v",` + fields + `}` }
	for _, tc := range []struct {
		name    string
		payload []byte
		ok      bool
		large   bool
	}{
		{"valid", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10,"crc32c":1`), ten), true, false},
		{"last of three", rawAnswer(1, hdr(`"seq":2,"total":3,"size":30,"crc32c":1`), ten), true, false},
		{"unknown header field", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10,"crc32c":1,"future":{"a":[1]}`), ten), true, false},
		{"error answer", rawAnswer(1, `{"id":"a","voice":"v","error":"no voice","reason":"unknown_voice"}`, nil), true, false},
		{"empty", nil, false, false},
		{"short", []byte("MYR\x01\x00"), false, false},
		{"bad magic", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10`), ten)[1:], false, false},
		{"version 2", rawAnswer(2, hdr(`"seq":0,"total":1,"size":10`), ten), false, false},
		{"header over 4 KiB", append([]byte("MYR\x01\x10\x01"), make([]byte, 5000)...), false, true},
		{"header past the end", []byte("MYR\x01\x00\x10{}"), false, false},
		{"header empty", rawAnswer(1, ``, ten), false, false},
		{"header not an object", rawAnswer(1, `[1]`, ten), false, false},
		{"header bad JSON", rawAnswer(1, `{"id":`, ten), false, false},
		{"header null", rawAnswer(1, `null`, ten), false, false},
		{"header trailing", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10`)+`{}`, ten), false, false},
		{"id bad", rawAnswer(1, `{"id":"a/b","key":"`+testKey+`","voice":"v","seq":0,"total":1,"size":10}`, ten), false, false},
		{"key missing", rawAnswer(1, `{"id":"a","voice":"v","seq":0,"total":1,"size":10}`, ten), false, false},
		{"key upper case", rawAnswer(1, `{"id":"a","key":"`+strings.ToUpper(testKey)+`","voice":"v","seq":0,"total":1,"size":10}`, ten), false, false},
		{"voice missing", rawAnswer(1, `{"id":"a","key":"`+testKey+`","seq":0,"total":1,"size":10}`, ten), false, false},
		{"size 0", rawAnswer(1, hdr(`"seq":0,"total":1,"size":0`), ten), false, true},
		{"size over 8 MiB", rawAnswer(1, hdr(`"seq":0,"total":1,"size":8388609`), ten), false, true},
		{"size huge", rawAnswer(1, hdr(`"seq":0,"total":1,"size":1e30`), ten), false, false},
		{"total 0", rawAnswer(1, hdr(`"seq":0,"total":0,"size":10`), ten), false, true},
		{"total 65", rawAnswer(1, hdr(`"seq":0,"total":65,"size":1000`), ten), false, true},
		{"total over size", rawAnswer(1, hdr(`"seq":0,"total":11,"size":10`), ten), false, false},
		{"seq negative", rawAnswer(1, hdr(`"seq":-1,"total":1,"size":10`), ten), false, false},
		{"seq = total", rawAnswer(1, hdr(`"seq":1,"total":1,"size":10`), ten), false, false},
		{"seq a float", rawAnswer(1, hdr(`"seq":0.5,"total":1,"size":10`), ten), false, false},
		{"crc negative", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10,"crc32c":-1`), ten), false, false},
		{"crc over 32 bits", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10,"crc32c":4294967296`), ten), false, false},
		{"no data", rawAnswer(1, hdr(`"seq":0,"total":1,"size":10`), nil), false, false},
		{"data over size", rawAnswer(1, hdr(`"seq":0,"total":1,"size":9`), ten), false, false},
		{"data over 256 KiB", rawAnswer(1, hdr(`"seq":0,"total":1,"size":1000000`), make([]byte, MaxChunkData+1)), false, true},
		{"message over the limit", rawAnswer(1, hdr(`"seq":0,"total":1,"size":1000000`), make([]byte, MaxAnswerBytes)), false, true},
		{"error with data", rawAnswer(1, `{"id":"a","error":"x","reason":"synthesis"}`, ten), false, false},
		{"error with total", rawAnswer(1, `{"id":"a","error":"x","reason":"synthesis","total":1}`, nil), false, false},
		{"error without reason", rawAnswer(1, `{"id":"a","error":"x"}`, nil), false, false},
		{"reason without error", rawAnswer(1, `{"id":"a","reason":"synthesis"}`, nil), false, false},
		{"reason not a word", rawAnswer(1, `{"id":"a","error":"x","reason":"Bad Reason"}`, nil), false, false},
		{"error text too long", rawAnswer(1, `{"id":"a","error":"`+strings.Repeat("x", MaxErrorBytes+1)+`","reason":"synthesis"}`, nil), false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeChunk(tc.payload)
			if (err == nil) != tc.ok {
				t.Fatalf("DecodeChunk = %+v, %v; want ok %v", c, err, tc.ok)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalidAnswer) {
				t.Fatalf("error %v does not wrap ErrInvalidAnswer", err)
			}
			if isTooLarge(err) != tc.large {
				t.Fatalf("error %v: ErrTooLarge %v, want %v", err, !tc.large, tc.large)
			}
		})
	}
}

func TestSplitRecord(t *testing.T) {
	for _, tc := range []struct {
		size, chunk, total int
	}{
		{1, MaxChunkData, 1},
		{MaxChunkData, MaxChunkData, 1},
		{MaxChunkData + 1, MaxChunkData, 2},
		{600 << 10, MaxChunkData, 3},
		{MaxRecordBytes, MaxChunkData, 32},
		{MaxRecordBytes, MaxRecordBytes / MaxChunks, MaxChunks},
		{100, 1, 100}, // over MaxChunks: an error
	} {
		rec := testRecord(tc.size, 3)
		chunks, err := SplitRecord("a", "v", testKey, rec, tc.chunk)
		if tc.total > MaxChunks {
			if !isTooLarge(err) {
				t.Errorf("%d bytes in chunks of %d: %v, want ErrTooLarge", tc.size, tc.chunk, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%d bytes in chunks of %d: %v", tc.size, tc.chunk, err)
		}
		if len(chunks) != tc.total {
			t.Fatalf("%d bytes in chunks of %d: %d chunks, want %d", tc.size, tc.chunk, len(chunks), tc.total)
		}
		var joined []byte
		for i, c := range chunks {
			p, err := EncodeChunk(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(p) > MaxAnswerBytes {
				t.Fatalf("message of %d bytes", len(p))
			}
			d, err := DecodeChunk(p)
			if err != nil || d.Seq != i || d.Total != tc.total || d.Size != tc.size || d.CRC32C != Checksum(rec) {
				t.Fatalf("chunk %d: %+v, %v", i, d, err)
			}
			joined = append(joined, d.Data...)
		}
		if !bytes.Equal(joined, rec) {
			t.Fatalf("%d bytes in chunks of %d: joined chunks differ", tc.size, tc.chunk)
		}
	}
	if _, err := SplitRecord("a", "v", testKey, nil, MaxChunkData); err == nil {
		t.Error("empty record split")
	}
	if _, err := SplitRecord("a", "v", testKey, make([]byte, MaxRecordBytes+1), MaxChunkData); !isTooLarge(err) {
		t.Errorf("record over MaxRecordBytes: %v, want ErrTooLarge", err)
	}
	if _, err := SplitRecord("a", "v", testKey, []byte{1}, MaxChunkData+1); err == nil {
		t.Error("chunk size over MaxChunkData accepted")
	}
}

// An error text as long as MaxErrorBytes, all escaped by JSON, still
// fits MaxHeaderBytes.
func TestErrorChunkFitsHeader(t *testing.T) {
	c := errorChunk(strings.Repeat("i", MaxNameBytes), strings.Repeat("v", MaxNameBytes), errors.New(strings.Repeat("\x01<", MaxErrorBytes)), ReasonSynthesis)
	if len(c.Error) > MaxErrorBytes {
		t.Fatalf("error text of %d bytes", len(c.Error))
	}
	if _, err := EncodeChunk(c); err != nil {
		t.Fatal(err)
	}
	if c := errorChunk("a", "v", errors.New("é"+strings.Repeat("x", MaxErrorBytes)), ReasonSynthesis); len(c.Error) > MaxErrorBytes {
		t.Fatalf("error text of %d bytes", len(c.Error))
	}
	if c := errorChunk("a", "../x", errors.New(""), ReasonSynthesis); c.Voice != "" || c.Error == "" {
		t.Fatalf("errorChunk = %+v", c)
	}
}

func FuzzDecodeChunk(f *testing.F) {
	for _, c := range []Chunk{validChunk(), {ID: "a", Error: "x", Reason: "synthesis"}} {
		p, err := EncodeChunk(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	f.Add(rawAnswer(1, `{"id":"a","key":"`+testKey+`","voice":"v","seq":2,"total":3,"size":30,"crc32c":7}`, testRecord(10, 2)))
	f.Add(rawAnswer(1, `{"id":"a","seq":1e9}`, nil))
	f.Add([]byte("MYR\x01\xff\xff"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, payload []byte) {
		c, err := DecodeChunk(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalidAnswer) {
				t.Fatalf("error %v does not wrap ErrInvalidAnswer", err)
			}
			return
		}
		if len(payload) > MaxAnswerBytes || len(c.Data) > MaxChunkData || c.Size > MaxRecordBytes || c.Total > MaxChunks {
			t.Fatalf("accepted over the limits: %d bytes, %+v", len(payload), c)
		}
		p, err := EncodeChunk(c)
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", c, err)
		}
		again, err := DecodeChunk(p)
		if err != nil || !reflect.DeepEqual(again, c) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, c)
		}
	})
}
