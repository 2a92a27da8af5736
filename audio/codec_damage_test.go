package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math"
	"slices"
	"strings"
	"testing"
)

// fixRecordCRC recomputes a record's CRC, so that a test reaches the checks
// behind it.
func fixRecordCRC(b []byte) {
	if len(b) < phraseHeaderSize {
		return
	}
	crc := crc32.Update(0, castagnoli, b[:20])
	crc = crc32.Update(crc, castagnoli, b[phraseHeaderSize:])
	binary.LittleEndian.PutUint32(b[20:], crc)
}

// chunkSpans returns where chunk i of rec starts and where its zstd frame
// starts.
func chunkSpans(tb testing.TB, rec []byte, i int) (start, zstart int) {
	tb.Helper()
	pos := phraseHeaderSize
	for {
		zl, n1 := binary.Uvarint(rec[pos:])
		rl, n2 := binary.Uvarint(rec[pos+n1:])
		if n1 <= 0 || n2 <= 0 {
			tb.Fatalf("record has no chunk %d", i)
		}
		if i == 0 {
			return pos, pos + n1 + n2
		}
		pos += n1 + n2 + int(zl) + int(rl)
		i--
	}
}

func TestPhraseDamage(t *testing.T) {
	like := speechLike(16000, 1.5, 7)
	rec, err := EncodePhrase(like)
	if err != nil {
		t.Fatal(err)
	}
	small, err := EncodePhrase(PCM{Rate: 8000, Channels: 2, Samples: []int16{1, -2, 300, -400, 5000, -6000, 32767, -32768}})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := EncodePhrase(PCM{Rate: 8000, Channels: 1})
	if err != nil {
		t.Fatal(err)
	}
	mod := func(b []byte, f func([]byte) []byte) []byte { return f(bytes.Clone(b)) }
	header := func(off int, v uint32) func([]byte) []byte {
		return func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[off:], v)
			fixRecordCRC(b)
			return b
		}
	}
	c1, z1 := chunkSpans(t, rec, 1)
	// bomb is a chunk whose zstd frame inflates far beyond any real chunk.
	enc, _, err := phraseCoders()
	if err != nil {
		t.Fatal(err)
	}
	bomb := enc.EncodeAll(make([]byte, 4<<20), nil)
	tests := []struct {
		name, want string
		rec        []byte
	}{
		{"nil", "truncated header", nil},
		{"empty", "truncated header", []byte{}},
		{"short foreign", "not a phrase record", []byte("RIFF1234")},
		{"header only", "truncated header", rec[:phraseHeaderSize-1]},
		{"wrong magic", "not a phrase record", mod(rec, func(b []byte) []byte { copy(b, "MYPD"); fixRecordCRC(b); return b })},
		{"wav file", "not a phrase record", EncodeWAV(like)},
		{"version 1 (older format)", "version 1", mod(rec, func(b []byte) []byte { b[4] = 1; fixRecordCRC(b); return b })},
		{"version 3", "version 3", mod(rec, func(b []byte) []byte { b[4] = 3; fixRecordCRC(b); return b })},
		{"version 0", "version 0", mod(rec, func(b []byte) []byte { b[4] = 0; fixRecordCRC(b); return b })},
		{"record crc", "record CRC mismatch", mod(rec, func(b []byte) []byte { b[20]++; return b })},
		{"flipped payload byte", "record CRC mismatch", mod(rec, func(b []byte) []byte { b[len(b)/2] ^= 1; return b })},
		{"flipped rate", "record CRC mismatch", mod(rec, func(b []byte) []byte { b[8] ^= 1; return b })},
		{"truncated", "record CRC mismatch", rec[:len(rec)-1]},
		{"truncated, crc fixed", "runs past", mod(rec[:len(rec)-3], func(b []byte) []byte { fixRecordCRC(b); return b })},
		{"chunk cut, crc fixed", "runs past", mod(rec[:z1+10], func(b []byte) []byte { fixRecordCRC(b); return b })},
		{"trailing byte", "record CRC mismatch", append(bytes.Clone(rec), 0)},
		{"trailing byte, crc fixed", "bytes after the last chunk", mod(append(bytes.Clone(rec), 0), func(b []byte) []byte { fixRecordCRC(b); return b })},
		{"reserved", "reserved", mod(rec, func(b []byte) []byte { b[6] = 1; fixRecordCRC(b); return b })},
		{"0 channels", "channels", mod(rec, func(b []byte) []byte { b[5] = 0; fixRecordCRC(b); return b })},
		{"9 channels", "channels", mod(rec, func(b []byte) []byte { b[5] = 9; fixRecordCRC(b); return b })},
		{"rate 0", "rate 0", mod(rec, header(8, 0))},
		{"rate 4 GHz", "rate", mod(rec, header(8, math.MaxUint32))},
		{"absurd count", "over MaxPhraseSamples", mod(rec, header(12, math.MaxUint32))},
		{"count over limit", "over MaxPhraseSamples", mod(rec, header(12, MaxPhraseSamples+1))},
		{"count beyond payload", "cannot hold", mod(small, header(12, MaxPhraseSamples))},
		{"partial frame", "whole number", mod(small, header(12, 7))},
		// A wrong count trips whichever check comes first.
		{"count too small", "", mod(rec, header(12, uint32(len(like.Samples)-phraseChunkSamples)))},
		{"count of one chunk", "", mod(rec, header(12, phraseFirstChunkSamples))},
		{"count one short", "", mod(rec, header(12, uint32(len(like.Samples)-1)))},
		{"count too large", "", mod(rec, header(12, uint32(len(like.Samples)+1)))},
		{"pcm crc", "PCM CRC mismatch", mod(rec, header(16, binary.LittleEndian.Uint32(rec[16:])+1))},
		{"pcm crc small", "PCM CRC mismatch", mod(small, header(16, 0))},
		{"pcm crc empty", "PCM CRC mismatch", mod(empty, header(16, 0x30303030))},
		{"empty with payload", "bytes after the last chunk", mod(append(bytes.Clone(empty), 1, 2), func(b []byte) []byte { fixRecordCRC(b); return b })},
		{"zstd damaged", "zstd", mod(rec, func(b []byte) []byte { b[z1] ^= 0xff; fixRecordCRC(b); return b })},
		{"decompression bomb", "zstd", mod(rec, func(b []byte) []byte {
			b = append(b[:c1], binary.AppendUvarint(binary.AppendUvarint(nil, uint64(len(bomb))), 0)...)
			b = append(b, bomb...)
			fixRecordCRC(b)
			return b
		})},
	}
	for _, tt := range tests {
		_, err := DecodePhrase(tt.rec)
		if !errors.Is(err, ErrCorruptPhrase) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrCorruptPhrase saying %q", tt.name, err, tt.want)
		}
		// The streaming decoder fails too, at the latest at the end.
		d, err := NewPhraseDecoder(tt.rec)
		for err == nil {
			_, err = d.Next(0)
		}
		if !errors.Is(err, ErrCorruptPhrase) {
			t.Errorf("%s: streaming: err = %v, want ErrCorruptPhrase", tt.name, err)
		}
	}
}

// Every truncation and every single-bit flip of a record is detected.
func TestPhraseEveryDamage(t *testing.T) {
	rec, err := EncodePhrase(speechLike(8000, 0.3, 9))
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(rec) {
		if _, err := DecodePhrase(rec[:n]); !errors.Is(err, ErrCorruptPhrase) {
			t.Fatalf("truncated to %d of %d bytes: %v", n, len(rec), err)
		}
	}
	for i := range len(rec) * 8 {
		b := bytes.Clone(rec)
		b[i/8] ^= 1 << (i % 8)
		if _, err := DecodePhrase(b); !errors.Is(err, ErrCorruptPhrase) {
			t.Fatalf("bit %d flipped: %v", i, err)
		}
	}
}

// Damage behind a matching record CRC (a codec bug, or a forged record)
// is caught by the format checks or the PCM CRC, never played.
func TestPhraseDamageBehindCRC(t *testing.T) {
	p := speechLike(16000, 0.5, 11)
	rec, err := EncodePhrase(p)
	if err != nil {
		t.Fatal(err)
	}
	for i := phraseHeaderSize; i < len(rec); i++ {
		b := bytes.Clone(rec)
		b[i] ^= 0x24
		fixRecordCRC(b)
		got, err := DecodePhrase(b)
		if err == nil && !slices.Equal(got.Samples, p.Samples) {
			t.Fatalf("byte %d damaged: decoded to different samples without an error", i)
		}
		if err != nil && !errors.Is(err, ErrCorruptPhrase) {
			t.Fatalf("byte %d damaged: %v", i, err)
		}
	}
}
