package audio

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"unsafe"

	"github.com/klauspost/compress/zstd"
)

// The phrase codec stores cached speech losslessly in about half the size
// of its PCM (smaller than FLAC), decodes it at several hundred MB/s, and
// refuses to hand out a damaged record.
//
// Why this design: speech is predictable from its recent past, so each
// block of 512 frames is replaced by the error of a linear predictor: one of
// FLAC's fixed polynomials (orders 0-4), an LPC filter of order 4, 8 or 12
// computed by the encoder (10-bit coefficients), or the previous block's
// filter again, whichever the estimated size favours; an LPC filter must
// also pay for its slower decoding (phraseDecodeWeight). The residual of
// each 32-frame partition is split at a bit position k chosen from the
// partition's mean, as in Rice coding: the low k bits (two's complement)
// are close to random and are stored raw, outside zstd; the high part,
// r >> k, is a small number stored as a nibble plus phraseBias (15 escapes
// to a zig-zag varint). Two nibbles share a byte and zstd (Huffman coding,
// with one table per chunk, which fits because k has already normalized the
// loudness) compresses those. Nibble pairs halve zstd's work and let Huffman
// spend less than a bit on a common quotient; reusing filters keeps short
// blocks (fast adaptation) from paying for coefficients each time. On the
// demo voice this is 4% smaller than FLAC -8, on a noisier speech-like
// signal 0.5% smaller (BenchmarkPhraseCodec, TestPhraseCodecVsSoxFLAC,
// testdata/codec/speech.flac-size.txt).
//
// Decoding is the hot path (every cache hit), so the format serves it: the
// biased high part makes a residual one table look-up plus the raw bits
// (no zig-zag), eight samples' raw bits start on a byte, big chunks spread
// zstd's per-frame cost (table set-up), blocks of digital silence are
// recognized and skipped, and the predictors' loops are written for the
// recurrence that limits them (codec_restore.go). On amd64 with AVX2 the
// residuals are unpacked eight at a time in assembly (codec_unpack_amd64.s;
// -tags purego builds without it). Version 1 records (zig-zag residuals,
// 8192-sample chunks) are rejected as corrupt; the cache synthesizes them
// again.
//
// A record is a header and a sequence of chunks of at most
// phraseChunkSamples samples, each with its own zstd frame, so that
// PhraseDecoder can hand the first chunk to a sink after decoding only it.
// Chunks are decoded in order: prediction runs on across their borders.
//
// Record layout (integers little-endian):
//
//	0  magic "MYPC"
//	4  version (2)
//	5  channels
//	6  reserved, zero (2 bytes)
//	8  rate in Hz (uint32)
//	12 samples, all channels (uint32)
//	16 CRC-32C of the PCM as little-endian int16
//	20 CRC-32C of bytes 0-19 and of everything after byte 23
//	24 chunks: uvarint zstd length, uvarint raw length, zstd frame, raw bits
//
// A chunk's zstd frame holds its side information (per channel and block:
// the predictor byte, for LPC the shift and the coefficients as int16, then
// one k per partition), the quotient nibbles (channel by channel, two per
// byte, low nibble first) and the escape varints. The raw bits are packed
// least significant bit first, each partition starting on a byte. The
// record CRC is checked before any sample is decoded, so damage in storage
// is caught before anything plays; the PCM CRC is checked before the last
// chunk is handed out, so that even a codec bug cannot pass as a good
// record.

// MaxPhraseSamples bounds the samples (all channels) of one phrase record:
// 60 s of 48 kHz stereo. A sentence is a few seconds; a record declaring
// more is corrupt, and EncodePhrase refuses longer PCM.
const MaxPhraseSamples = 60 * 48000 * 2

// ErrCorruptPhrase reports a phrase record that is truncated, damaged, of
// another format or version, or over a limit; the message says which. A
// cache that gets it should delete the record and synthesize again.
var ErrCorruptPhrase = errors.New("corrupt phrase record")

const (
	phraseMagic      = "MYPC"
	phraseVersion    = 2
	phraseHeaderSize = 24

	// Block and partition sizes: on the demo voice and the speech-like
	// test signal, 512 and 32 frames gave the smallest records (speech
	// changes fast: 2048-frame blocks were 1.5% larger, 256 1%).
	phraseBlockFrames = 512 // frames sharing one predictor
	phrasePartFrames  = 32  // frames sharing one split position k
	// phraseChunkSamples is the most samples in one chunk: 32768 frames of
	// mono, 16384 of stereo. zstd's set-up per frame (Huffman and sequence
	// tables) costs as much as decoding a few thousand samples, so big
	// chunks decode faster: 32768 was 5% faster than 16384 and 12% faster
	// than 8192, and 0.4% and 0.9% smaller (the split positions already
	// normalize the loudness, so one Huffman table fits). The first chunk is small, so
	// that a cache hit reaches the sink after decoding 2048 samples.
	phraseChunkSamples      = 32768
	phraseFirstChunkSamples = 2048

	phraseMaxOrder    = 12        // longest LPC filter
	phraseCoefBits    = 10        // LPC coefficient precision, sign included
	phraseMaxShift    = 15        // LPC coefficient scale is 2^-shift
	phraseMaxK        = 20        // most raw bits per sample
	phraseMaxResidual = 1<<20 - 1 // largest residual magnitude (LPC filters that need more are not used)
	phraseLPCCode     = 0x10      // predictor byte 0x10|order is LPC; 0..4 are fixed orders
	phraseReuseCode   = 0x0f      // predictor byte: the channel's previous LPC filter in this chunk
	phraseEscape      = 15        // quotient nibble meaning "varint in the escape stream"
	phraseBias        = 7         // a quotient nibble is the high part of the residual plus this

	// phraseMinChunk is less than the smallest chunk a record can hold (two
	// one-byte varints and a zstd frame of magic, frame header, window or
	// size byte and one block), so a header declaring more chunks than the
	// payload could hold is rejected before anything is allocated.
	phraseMinChunk = 2 + 9
	// phraseMaxPlain bounds a chunk's decompressed zstd content: half a
	// byte of quotient per sample (plus a nibble per odd partition), at
	// most 3 escape bytes per sample, and at most 42 bytes of side
	// information per block of at least 512 samples. zstd's output is
	// capped at it, so a forged frame cannot inflate (no decompression
	// bombs).
	phraseMaxPlain   = 4*phraseChunkSamples + 2048
	phraseZstdWindow = 1 << 18 // a chunk's content fits: no match reaches further
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// The zstd coders are shared: EncodeAll and DecodeAll are safe for
// concurrent use, and one of each with concurrency 1 keeps memory small on
// a device (concurrent callers take turns).
var phraseZstd struct {
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
	err  error
}

func phraseCoders() (*zstd.Encoder, *zstd.Decoder, error) {
	z := &phraseZstd
	z.once.Do(func() {
		z.enc, z.err = zstd.NewWriter(nil,
			zstd.WithEncoderConcurrency(1),
			zstd.WithWindowSize(phraseZstdWindow),
			zstd.WithEncoderCRC(false), // the record has its own CRCs
			// Quotients rarely repeat, so zstd finds few matches; without this
			// it would store such blocks without Huffman coding, 30% larger.
			zstd.WithAllLitEntropyCompression(true),
			zstd.WithEncoderLevel(zstd.SpeedDefault))
		if z.err != nil {
			return
		}
		z.dec, z.err = zstd.NewReader(nil,
			zstd.WithDecoderConcurrency(1),
			zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxMemory(phraseMaxPlain),
			zstd.WithDecoderMaxWindow(phraseZstdWindow),
			zstd.WithDecodeAllCapLimit(true))
	})
	return z.enc, z.dec, z.err
}

// phraseChunkFrames is the frames in chunk i (but the last) for a channel
// count: a whole number of blocks, at most phraseFirstChunkSamples or
// phraseChunkSamples samples, at least one block.
func phraseChunkFrames(channels, i int) int {
	budget := phraseChunkSamples
	if i == 0 {
		budget = phraseFirstChunkSamples
	}
	return max(1, budget/phraseBlockFrames/channels) * phraseBlockFrames
}

// pcmCRC continues a CRC-32C over s as little-endian int16. On
// little-endian machines (all that mynah targets) it reads the samples'
// memory directly, which makes it nearly free next to decoding.
func pcmCRC(crc uint32, s []int16) uint32 {
	if len(s) > 0 && littleEndian {
		return crc32.Update(crc, castagnoli, unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), 2*len(s)))
	}
	var buf [512]byte
	for len(s) > 0 {
		n := min(len(s), len(buf)/2)
		for i, v := range s[:n] {
			binary.LittleEndian.PutUint16(buf[2*i:], uint16(v))
		}
		crc = crc32.Update(crc, castagnoli, buf[:2*n])
		s = s[n:]
	}
	return crc
}

var littleEndian = binary.NativeEndian.Uint16([]byte{1, 0}) == 1

func corruptErr(format string, args ...any) error {
	return fmt.Errorf("decode phrase: %w: "+format, append([]any{ErrCorruptPhrase}, args...)...)
}

// EncodePhrase compresses p losslessly into a phrase record. p must pass
// Validate and hold at most MaxPhraseSamples samples; an empty p gives a
// header-only record.
func EncodePhrase(p PCM) ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("encode phrase: %w", err)
	}
	if len(p.Samples) > MaxPhraseSamples {
		return nil, fmt.Errorf("encode phrase: %w: %d samples over MaxPhraseSamples (%d)", ErrInvalidPCM, len(p.Samples), MaxPhraseSamples)
	}
	enc, _, err := phraseCoders()
	if err != nil {
		return nil, fmt.Errorf("encode phrase: %w", err)
	}
	out := make([]byte, phraseHeaderSize, phraseHeaderSize+len(p.Samples))
	copy(out, phraseMagic)
	out[4] = phraseVersion
	out[5] = byte(p.Channels)
	binary.LittleEndian.PutUint32(out[8:], uint32(p.Rate))
	binary.LittleEndian.PutUint32(out[12:], uint32(len(p.Samples)))
	binary.LittleEndian.PutUint32(out[16:], pcmCRC(0, p.Samples))

	ch := p.Channels
	e := newChunkEncoder(phraseChunkFrames(ch, 1))
	for start, i := 0, 0; start < p.Frames(); i++ {
		frames := min(phraseChunkFrames(ch, i), p.Frames()-start)
		e.reset()
		for c := 0; c < ch; c++ {
			e.encodeChannel(p.Samples, start, frames, c, ch)
		}
		plain := append(append(e.side, e.q...), e.esc...)
		z := enc.EncodeAll(plain, e.zbuf[:0])
		e.zbuf = z
		raw := e.bits.finish()
		out = binary.AppendUvarint(out, uint64(len(z)))
		out = binary.AppendUvarint(out, uint64(len(raw)))
		out = append(out, z...)
		out = append(out, raw...)
		start += frames
	}
	crc := crc32.Update(0, castagnoli, out[:20])
	crc = crc32.Update(crc, castagnoli, out[phraseHeaderSize:])
	binary.LittleEndian.PutUint32(out[20:], crc)
	return out, nil
}

// DecodePhrase decodes a whole phrase record. Any damage, including a CRC
// mismatch, is an error wrapping ErrCorruptPhrase.
func DecodePhrase(data []byte) (PCM, error) {
	d, err := NewPhraseDecoder(data)
	if err != nil {
		return PCM{}, err
	}
	out := make([]int16, d.total)
	for d.done < d.total {
		if err := d.decodeChunk(out[:d.done+d.nextChunk()]); err != nil {
			return PCM{}, err
		}
	}
	return PCM{Rate: d.rate, Channels: d.channels, Samples: out}, nil
}

// PhraseDecoder decodes a phrase record chunk by chunk, so that playback can
// start after the first chunk (at most 2048 samples; later ones hold up to
// 32768) is decoded. It is not safe for concurrent use.
type PhraseDecoder struct {
	rate, channels int
	total          int    // samples declared in the header
	wantCRC        uint32 // PCM CRC from the header
	crc            uint32 // PCM CRC of the samples decoded so far
	payload        []byte // chunks not yet decoded
	done           int    // samples decoded
	chunks         int    // chunks decoded

	cur  []int16 // decoded samples of the current chunk
	off  int     // of cur already returned by Next
	err  error   // sticky
	work *chunkDecoder
}

// NewPhraseDecoder checks data's header and record CRC and returns a
// decoder for it. data must not change while the decoder is used.
func NewPhraseDecoder(data []byte) (*PhraseDecoder, error) {
	if len(data) < phraseHeaderSize {
		if len(data) >= 4 && string(data[:4]) != phraseMagic {
			return nil, corruptErr("not a phrase record (magic %q)", data[:4])
		}
		return nil, corruptErr("truncated header: %d of %d bytes", len(data), phraseHeaderSize)
	}
	if string(data[:4]) != phraseMagic {
		return nil, corruptErr("not a phrase record (magic %q)", data[:4])
	}
	if data[4] != phraseVersion {
		return nil, corruptErr("version %d, want %d", data[4], phraseVersion)
	}
	le := binary.LittleEndian
	d := &PhraseDecoder{
		channels: int(data[5]),
		rate:     int(le.Uint32(data[8:])),
		total:    int(le.Uint32(data[12:])),
		wantCRC:  le.Uint32(data[16:]),
		payload:  data[phraseHeaderSize:],
	}
	crc := crc32.Update(0, castagnoli, data[:20])
	if crc = crc32.Update(crc, castagnoli, d.payload); crc != le.Uint32(data[20:]) {
		return nil, corruptErr("record CRC mismatch")
	}
	if data[6] != 0 || data[7] != 0 {
		return nil, corruptErr("reserved header bytes set")
	}
	if err := (PCM{Rate: d.rate, Channels: d.channels}).Validate(); err != nil {
		return nil, corruptErr("%v", err)
	}
	if d.total > MaxPhraseSamples {
		return nil, corruptErr("%d samples over MaxPhraseSamples (%d)", d.total, MaxPhraseSamples)
	}
	if d.total%d.channels != 0 {
		return nil, corruptErr("%d samples is not a whole number of %d-channel frames", d.total, d.channels)
	}
	chunks := 0
	if frames := d.total / d.channels; frames > 0 {
		f0, cf := phraseChunkFrames(d.channels, 0), phraseChunkFrames(d.channels, 1)
		chunks = 1 + (max(0, frames-f0)+cf-1)/cf
	}
	if chunks > len(d.payload)/phraseMinChunk {
		return nil, corruptErr("%d bytes cannot hold %d chunks", len(d.payload), chunks)
	}
	if chunks == 0 {
		// No chunk will reach the checks in decodeChunk.
		if d.wantCRC != 0 { // the CRC of nothing
			return nil, corruptErr("PCM CRC mismatch")
		}
		if len(d.payload) != 0 {
			return nil, corruptErr("%d bytes after the last chunk", len(d.payload))
		}
	}
	return d, nil
}

// nextChunk returns the number of samples in the next chunk.
func (d *PhraseDecoder) nextChunk() int {
	return min(phraseChunkFrames(d.channels, d.chunks)*d.channels, d.total-d.done)
}

// Format returns the record's sample rate and channel count.
func (d *PhraseDecoder) Format() (rate, channels int) { return d.rate, d.channels }

// Len returns the record's total number of samples (all channels).
func (d *PhraseDecoder) Len() int { return d.total }

// Next returns up to limit samples (whole frames; limit <= 0 means the rest of
// the current chunk), decoding the next chunk when the current one is used
// up. The slice is the decoder's own and valid until the next call: copy it
// to keep it. After the last sample Next returns io.EOF; a damaged chunk or
// a PCM CRC mismatch (checked before the last chunk is returned) gives an
// error wrapping ErrCorruptPhrase, and so do all later calls.
func (d *PhraseDecoder) Next(limit int) ([]int16, error) {
	if d.err != nil {
		return nil, d.err
	}
	if limit > 0 && limit < d.channels {
		return nil, fmt.Errorf("decode phrase: next: limit %d is less than one %d-channel frame", limit, d.channels)
	}
	if d.off == len(d.cur) {
		if d.done == d.total {
			return nil, io.EOF
		}
		n := d.nextChunk()
		if cap(d.cur) < n {
			d.cur = make([]int16, min(phraseChunkFrames(d.channels, 1)*d.channels, d.total-d.done))
		}
		d.cur, d.off = d.cur[:n], 0
		if err := d.decodeChunk(d.cur); err != nil {
			d.err, d.cur = err, d.cur[:0]
			return nil, err
		}
	}
	n := len(d.cur) - d.off
	if limit > 0 && limit < n {
		n = limit - limit%d.channels
	}
	s := d.cur[d.off : d.off+n]
	d.off += n
	return s, nil
}

// decodeChunk decodes the next chunk into the end of out, whose length
// is the chunk's sample count plus what came before it: a mono record is
// restored in place, with the samples before the chunk as the predictors'
// history. The scratch space goes back to its pool after the last chunk
// or an error.
func (d *PhraseDecoder) decodeChunk(out []int16) error {
	if d.work == nil {
		d.work = getChunkDecoder(d.channels)
	}
	dst := out[len(out)-d.nextChunk():]
	err := d.work.decode(d, out)
	if err != nil {
		err = fmt.Errorf("%w (chunk %d)", err, d.chunks)
	} else {
		d.chunks++
		d.done += len(dst)
		d.crc = pcmCRC(d.crc, dst)
		if d.done == d.total && d.crc != d.wantCRC {
			err = corruptErr("PCM CRC mismatch")
		} else if d.done == d.total && len(d.payload) != 0 {
			err = corruptErr("%d bytes after the last chunk", len(d.payload))
		}
	}
	if err != nil || d.done == d.total {
		putChunkDecoder(d.work)
		d.work = nil
	}
	return err
}

// readChunk splits the next chunk off d.payload.
func (d *PhraseDecoder) readChunk() (z, raw []byte, err error) {
	zl, n1 := binary.Uvarint(d.payload)
	if n1 <= 0 {
		return nil, nil, corruptErr("truncated chunk header")
	}
	rl, n2 := binary.Uvarint(d.payload[n1:])
	if n2 <= 0 {
		return nil, nil, corruptErr("truncated chunk header")
	}
	rest := d.payload[n1+n2:]
	if zl > uint64(len(rest)) || rl > uint64(len(rest))-zl {
		return nil, nil, corruptErr("chunk of %d+%d bytes runs past the record's %d", zl, rl, len(rest))
	}
	z, raw = rest[:zl], rest[zl:zl+rl]
	d.payload = rest[zl+rl:]
	return z, raw, nil
}
