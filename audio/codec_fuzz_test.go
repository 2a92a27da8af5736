package audio

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"slices"
	"testing"
)

// Fuzz targets of the phrase codec (go test -fuzz=FuzzDecodePhrase etc.).

func FuzzDecodePhrase(f *testing.F) {
	for _, p := range []PCM{
		{Rate: 8000, Channels: 1},
		{Rate: 8000, Channels: 1, Samples: []int16{-32768}},
		{Rate: 16000, Channels: 2, Samples: []int16{1, -2, 300, -400, 5000, -6000, 32767, -32768}},
		speechLike(8000, 0.2, 3),
		{Rate: 8000, Channels: 1, Samples: fullScaleNoise(700, 4)},
		interleave(8000, speechLike(8000, 0.1, 5).Samples, fullScaleNoise(800, 6)),
	} {
		rec, err := EncodePhrase(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(rec, false)
		f.Add(rec, true)
	}
	f.Add([]byte("MYPC"), false)
	f.Add([]byte("MYPC\x02\x01\x00\x00\x40\x1f\x00\x00\x10\x00\x00\x00"), true)
	f.Fuzz(func(t *testing.T, data []byte, fixCRC bool) {
		if fixCRC {
			// Reach the parser behind the record CRC, which random bytes
			// would practically never pass.
			data = bytes.Clone(data)
			fixRecordCRC(data)
		}
		p, err := DecodePhrase(data)
		if err != nil {
			if !errors.Is(err, ErrCorruptPhrase) {
				t.Fatalf("error does not wrap ErrCorruptPhrase: %v", err)
			}
		} else {
			// Whatever decodes has passed its PCM CRC and is valid PCM.
			if crc := pcmCRC(0, p.Samples); crc != binary.LittleEndian.Uint32(data[16:]) {
				t.Fatalf("decoded PCM has CRC %08x, header says %08x", crc, binary.LittleEndian.Uint32(data[16:]))
			}
			if err := p.Validate(); err != nil || len(p.Samples) > MaxPhraseSamples {
				t.Fatalf("decoded invalid PCM: %v", err)
			}
		}
		// The streaming decoder agrees with the whole decoder.
		d, serr := NewPhraseDecoder(data)
		var all []int16
		for serr == nil {
			var s []int16
			if s, serr = d.Next(1000 - 1000%max(1, d.channels)); serr == nil {
				all = append(all, s...)
			}
		}
		if (err == nil) != (serr == io.EOF) || (err == nil && !slices.Equal(all, p.Samples)) {
			t.Fatalf("streaming decode (%v) disagrees with DecodePhrase (%v)", serr, err)
		}
	})
}

// FuzzDecodePhraseChunk reaches the parser behind zstd, which mutated
// compressed bytes rarely get through: the fuzzer writes a chunk's plain
// content (side information, quotients, escapes) and raw bits, and the
// test compresses them into a record with valid CRCs.
func FuzzDecodePhraseChunk(f *testing.F) {
	_, dec, err := phraseCoders()
	if err != nil {
		f.Fatal(err)
	}
	for _, p := range []PCM{
		speechLike(8000, 0.25, 12),
		{Rate: 8000, Channels: 1, Samples: fullScaleNoise(1500, 13)},
		interleave(8000, speechLike(8000, 0.1, 14).Samples, fullScaleNoise(800, 15)),
	} {
		rec, err := EncodePhrase(p)
		if err != nil {
			f.Fatal(err)
		}
		_, z0 := chunkSpans(f, rec, 0)
		zl, n1 := binary.Uvarint(rec[phraseHeaderSize:])
		rl, _ := binary.Uvarint(rec[phraseHeaderSize+n1:])
		plain, err := dec.DecodeAll(rec[z0:z0+int(zl)], make([]byte, 0, phraseMaxPlain))
		if err != nil {
			f.Fatal(err)
		}
		frames := min(p.Frames(), phraseChunkFrames(p.Channels, 0))
		f.Add(plain, bytes.Clone(rec[z0+int(zl):z0+int(zl)+int(rl)]), uint8(p.Channels), uint16(frames))
	}
	f.Fuzz(func(t *testing.T, plain, raw []byte, channels uint8, frames uint16) {
		ch := int(channels%MaxChannels) + 1
		n := (int(frames)%phraseChunkFrames(ch, 0) + 1) * ch
		enc, _, err := phraseCoders()
		if err != nil {
			t.Fatal(err)
		}
		z := enc.EncodeAll(plain, nil)
		rec := make([]byte, phraseHeaderSize)
		copy(rec, phraseMagic)
		rec[4], rec[5] = phraseVersion, byte(ch)
		binary.LittleEndian.PutUint32(rec[8:], 16000)
		binary.LittleEndian.PutUint32(rec[12:], uint32(n))
		rec = binary.AppendUvarint(binary.AppendUvarint(rec, uint64(len(z))), uint64(len(raw)))
		rec = append(append(rec, z...), raw...)
		fixRecordCRC(rec)
		// Decode the chunk without the PCM CRC, then give the record the
		// CRC of what came out: the decoders must then agree on it.
		d, err := NewPhraseDecoder(rec)
		if err != nil {
			if !errors.Is(err, ErrCorruptPhrase) {
				t.Fatal(err)
			}
			return
		}
		out := make([]int16, n)
		w := getChunkDecoder(ch)
		if err := w.decode(d, out); err != nil {
			if !errors.Is(err, ErrCorruptPhrase) {
				t.Fatalf("error does not wrap ErrCorruptPhrase: %v", err)
			}
			return
		}
		binary.LittleEndian.PutUint32(rec[16:], pcmCRC(0, out))
		fixRecordCRC(rec)
		got, err := DecodePhrase(rec)
		if err != nil || !slices.Equal(got.Samples, out) {
			t.Fatalf("chunk decodes to %d samples, the record to %d: %v", len(out), len(got.Samples), err)
		}
		// Whatever a record holds, the encoder reproduces it.
		rec2, err := EncodePhrase(got)
		if err != nil {
			t.Fatal(err)
		}
		if again, err := DecodePhrase(rec2); err != nil || !slices.Equal(again.Samples, out) {
			t.Fatalf("re-encoded record: %v", err)
		}
	})
}

func FuzzPhraseRoundTrip(f *testing.F) {
	f.Add([]byte{}, uint8(1))
	f.Add([]byte{0, 0x80}, uint8(1))
	f.Add(AppendS16LE(nil, fullScaleNoise(600, 8)), uint8(2))
	f.Add(AppendS16LE(nil, speechLike(8000, 0.1, 9).Samples), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, channels uint8) {
		ch := int(channels%MaxChannels) + 1
		n := len(data) / 2 / ch * ch
		p := PCM{Rate: 16000, Channels: ch, Samples: make([]int16, n)}
		for i := range p.Samples {
			p.Samples[i] = int16(binary.LittleEndian.Uint16(data[2*i:]))
		}
		rec, err := EncodePhrase(p)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodePhrase(rec)
		if err != nil {
			t.Fatal(err)
		}
		if got.Rate != p.Rate || got.Channels != p.Channels || !slices.Equal(got.Samples, p.Samples) {
			t.Fatal("round trip differs")
		}
	})
}
