package audio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"time"
)

// WAV format tags this package reads.
const (
	wavFormatPCM        = 1
	wavFormatFloat      = 3
	wavFormatExtensible = 0xFFFE
)

// wavHeaderSize is the size of the canonical header WriteWAV emits, and the
// smallest well-formed PCM WAV file (RIFF header, 16-byte fmt, empty data).
const wavHeaderSize = 44

// The GUID tail shared by the KSDATAFORMAT_SUBTYPE_* GUIDs; the first two
// bytes of a SubFormat hold the plain format tag.
var guidTail = []byte{0x00, 0x00, 0x00, 0x00, 0x10, 0x00, 0x80, 0x00, 0x00, 0xAA, 0x00, 0x38, 0x9B, 0x71}

// WAVOptions bounds what ReadWAV and DecodeWAV accept. The zero value and
// nil mean the defaults. Rate (MinRate..MaxRate) and channel
// (1..MaxChannels) bounds are fixed by the PCM type.
type WAVOptions struct {
	// MaxBytes bounds the size of the whole file. Default 64 MiB.
	MaxBytes int64
	// MaxDuration bounds the declared length of the audio, checked before
	// any sample is read so a 10-hour header costs nothing. Default 10 min.
	MaxDuration time.Duration
	// Streaming accepts the header of a WAV file written to a pipe, whose
	// writer could not go back to fill in the sizes (ffmpeg writing to
	// stdout leaves 0xFFFFFFFF; so does a WAVWriter never flushed): a
	// RIFF size of 0 or 0xFFFFFFFF means the rest of the file, and so does
	// a data size of 0xFFFFFFFF, or of 0 where nothing could follow the
	// data (the RIFF size is unknown too, or ends at the data header). A
	// partial frame at the end, where the pipe was cut, is dropped.
	// MaxBytes and MaxDuration bound what is read as always. Off, such
	// files are rejected as unfinished: a recording left by a crash must
	// not pass for a short one.
	Streaming bool
}

// Defaults for WAVOptions.
const (
	DefaultWAVMaxBytes    = 64 << 20
	DefaultWAVMaxDuration = 10 * time.Minute
)

func (o *WAVOptions) withDefaults() WAVOptions {
	var v WAVOptions
	if o != nil {
		v = *o
	}
	if v.MaxBytes <= 0 {
		v.MaxBytes = DefaultWAVMaxBytes
	}
	if v.MaxDuration <= 0 {
		v.MaxDuration = DefaultWAVMaxDuration
	}
	return v
}

// ReadWAV reads a whole WAV file from r and decodes it like DecodeWAV. It
// reads at most opts.MaxBytes+1 bytes, so an endless reader cannot exhaust
// memory.
func ReadWAV(r io.Reader, opts *WAVOptions) (PCM, error) {
	o := opts.withDefaults()
	data, err := io.ReadAll(io.LimitReader(r, o.MaxBytes+1))
	if err != nil {
		return PCM{}, fmt.Errorf("read wav: %w", err)
	}
	return DecodeWAV(data, &o)
}

// wavFormat is the decoded fmt chunk.
type wavFormat struct {
	tag        uint16 // wavFormatPCM or wavFormatFloat after unwrapping extensible
	channels   int
	rate       int
	byteRate   int
	blockAlign int
	bits       int
}

func wavErr(format string, args ...any) error {
	return fmt.Errorf("decode wav: %w: "+format, append([]any{ErrInvalidWAV}, args...)...)
}

func wavLimitErr(format string, args ...any) error {
	return fmt.Errorf("decode wav: %w: %w: "+format, append([]any{ErrInvalidWAV, ErrLimit}, args...)...)
}

// DecodeWAV parses a RIFF/WAVE file strictly. It accepts integer PCM of 8,
// 16, 24 and 32 bits and IEEE float of 32 and 64 bits, plain or in
// WAVE_FORMAT_EXTENSIBLE, and converts to int16 (by truncating extra
// precision; floats are clamped to -1..1). Anything malformed, ambiguous
// or over a limit fails with an error wrapping ErrInvalidWAV (and ErrLimit
// for limits) that says what is wrong: sizes of 0xFFFFFFFF (unfinished
// streams, unless opts.Streaming), chunks running past the file, a missing
// pad byte after an odd-sized chunk, data before fmt, duplicate fmt or
// data chunks, inconsistent block align or byte rate, and compressed
// formats. Chunks other than fmt and data are skipped; bytes after the
// RIFF chunk are ignored.
func DecodeWAV(data []byte, opts *WAVOptions) (PCM, error) {
	o := opts.withDefaults()
	if int64(len(data)) > o.MaxBytes {
		return PCM{}, wavLimitErr("file is over MaxBytes (%d bytes)", o.MaxBytes)
	}
	if len(data) < wavHeaderSize {
		return PCM{}, wavErr("%d bytes is shorter than the %d-byte minimum header", len(data), wavHeaderSize)
	}
	if string(data[0:4]) != "RIFF" || string(data[8:12]) != "WAVE" {
		return PCM{}, wavErr("not a RIFF/WAVE file")
	}
	riffSize := binary.LittleEndian.Uint32(data[4:8])
	riffUnsized := o.Streaming && (riffSize == 0 || riffSize == math.MaxUint32)
	// end is where the RIFF chunk ends in data.
	end := len(data)
	switch {
	case riffUnsized:
	case riffSize == math.MaxUint32:
		return PCM{}, wavErr("RIFF size 0xFFFFFFFF (unfinished stream; WAVOptions.Streaming reads it)")
	case riffSize < 4:
		return PCM{}, wavErr("RIFF size %d is too small to hold the WAVE tag", riffSize)
	case int64(riffSize)+8 > int64(len(data)):
		return PCM{}, wavErr("RIFF size %d runs past the %d-byte file", riffSize, len(data))
	default:
		end = 8 + int(riffSize)
	}

	var (
		format  *wavFormat
		samples []byte
		found   bool
	)
	for off := 12; off < end; {
		if end-off < 8 {
			return PCM{}, wavErr("%d stray bytes at the end of the RIFF chunk", end-off)
		}
		id := string(data[off : off+4])
		size := binary.LittleEndian.Uint32(data[off+4 : off+8])
		off += 8
		if id == "data" && format != nil && !found && o.Streaming &&
			(size == math.MaxUint32 || size == 0 && (riffUnsized || off == end)) {
			// Written to a pipe: the samples run to the end of the file,
			// even past a RIFF size written before any of them.
			n := len(data) - off
			n -= n % format.blockAlign
			if d := durationOf(int64(n), format); d > o.MaxDuration {
				return PCM{}, wavLimitErr("data holds %v of audio, over MaxDuration (%v)", d.Round(time.Second), o.MaxDuration)
			}
			samples, found = data[off:off+n], true
			break
		}
		if size == math.MaxUint32 {
			return PCM{}, wavErr("chunk %q size 0xFFFFFFFF (unfinished stream)", printableID(id))
		}
		if id == "data" && format != nil {
			// Check the declared length before the size, so a header that
			// claims ten hours is reported as over the limit, not truncated.
			if d := durationOf(int64(size), format); d > o.MaxDuration {
				return PCM{}, wavLimitErr("data declares %v of audio, over MaxDuration (%v)", d.Round(time.Second), o.MaxDuration)
			}
		}
		if int64(size) > int64(end-off) {
			return PCM{}, wavErr("chunk %q size %d runs past the end of the file (%d bytes left)", printableID(id), size, end-off)
		}
		chunk := data[off : off+int(size)]
		off += int(size)
		if size%2 == 1 {
			// RIFF pads odd chunks with a zero byte. A writer that forgot it
			// shifts every later chunk by one, so insist on seeing the zero.
			if off >= end || data[off] != 0 {
				return PCM{}, wavErr("chunk %q has odd size %d and no zero pad byte after it", printableID(id), size)
			}
			off++
		}
		switch id {
		case "fmt ":
			if format != nil {
				return PCM{}, wavErr("duplicate fmt chunk")
			}
			if found {
				return PCM{}, wavErr("fmt chunk after data chunk")
			}
			f, err := parseFormat(chunk)
			if err != nil {
				return PCM{}, err
			}
			format = f
		case "data":
			if format == nil {
				return PCM{}, wavErr("data chunk before fmt chunk")
			}
			if found {
				return PCM{}, wavErr("duplicate data chunk")
			}
			if len(chunk)%format.blockAlign != 0 {
				return PCM{}, wavErr("data size %d is not a multiple of block align %d", len(chunk), format.blockAlign)
			}
			samples, found = chunk, true
		}
	}
	if format == nil {
		return PCM{}, wavErr("no fmt chunk")
	}
	if !found {
		return PCM{}, wavErr("no data chunk")
	}
	return convertSamples(samples, format), nil
}

func printableID(id string) string {
	for _, c := range []byte(id) {
		if c < 0x20 || c > 0x7E {
			return fmt.Sprintf("%x", id)
		}
	}
	return id
}

// durationOf is the play time of size bytes of data in format f, computed
// without overflow for any 32-bit size.
func durationOf(size int64, f *wavFormat) time.Duration {
	frames, r := size/int64(f.blockAlign), int64(f.rate)
	return time.Duration(frames/r)*time.Second + time.Duration(frames%r)*time.Second/time.Duration(r)
}

func parseFormat(c []byte) (*wavFormat, error) {
	if len(c) < 16 {
		return nil, wavErr("fmt chunk size %d, need at least 16", len(c))
	}
	le := binary.LittleEndian
	f := &wavFormat{
		tag:        le.Uint16(c[0:2]),
		channels:   int(le.Uint16(c[2:4])),
		rate:       int(le.Uint32(c[4:8])),
		byteRate:   int(le.Uint32(c[8:12])),
		blockAlign: int(le.Uint16(c[12:14])),
		bits:       int(le.Uint16(c[14:16])),
	}
	if f.tag == wavFormatExtensible {
		if len(c) < 40 {
			return nil, wavErr("extensible fmt chunk size %d, need 40", len(c))
		}
		if cb := le.Uint16(c[16:18]); cb < 22 {
			return nil, wavErr("extensible fmt extension size %d, need 22", cb)
		}
		valid := int(le.Uint16(c[18:20]))
		if valid == 0 || valid > f.bits {
			return nil, wavErr("valid bits %d outside 1..%d", valid, f.bits)
		}
		if !bytes.Equal(c[26:40], guidTail) {
			return nil, wavErr("unsupported extensible subformat %x", c[24:40])
		}
		f.tag = le.Uint16(c[24:26])
	}
	switch {
	case f.tag == wavFormatPCM && (f.bits == 8 || f.bits == 16 || f.bits == 24 || f.bits == 32):
	case f.tag == wavFormatFloat && (f.bits == 32 || f.bits == 64):
	case f.tag == wavFormatPCM || f.tag == wavFormatFloat:
		return nil, wavErr("unsupported %d-bit samples for format %d", f.bits, f.tag)
	default:
		return nil, wavErr("unsupported format %d (%s); only PCM and IEEE float are read", f.tag, formatName(f.tag))
	}
	if f.channels == 0 {
		return nil, wavErr("0 channels")
	}
	if f.channels > MaxChannels {
		return nil, wavLimitErr("%d channels, over the %d-channel maximum", f.channels, MaxChannels)
	}
	if f.rate == 0 {
		return nil, wavErr("sample rate 0 Hz")
	}
	if f.rate < MinRate || f.rate > MaxRate {
		return nil, wavLimitErr("sample rate %d Hz outside %d..%d", f.rate, MinRate, MaxRate)
	}
	if want := f.channels * f.bits / 8; f.blockAlign != want {
		return nil, wavErr("block align %d, want %d for %d channels of %d bits", f.blockAlign, want, f.channels, f.bits)
	}
	if want := f.rate * f.blockAlign; f.byteRate != want {
		return nil, wavErr("byte rate %d, want %d", f.byteRate, want)
	}
	return f, nil
}

func formatName(tag uint16) string {
	switch tag {
	case 2:
		return "MS ADPCM"
	case 6:
		return "A-law"
	case 7:
		return "mu-law"
	case 0x11:
		return "IMA ADPCM"
	case 0x50, 0x55:
		return "MPEG"
	default:
		return "unknown"
	}
}

func convertSamples(b []byte, f *wavFormat) PCM {
	width := f.bits / 8
	n := len(b) / width
	out := PCM{Rate: f.rate, Channels: f.channels, Samples: make([]int16, n)}
	s := out.Samples
	le := binary.LittleEndian
	switch {
	case f.tag == wavFormatPCM && width == 1:
		for i := range s {
			s[i] = int16(int(b[i])-128) << 8
		}
	case f.tag == wavFormatPCM && width == 2:
		for i := range s {
			s[i] = int16(le.Uint16(b[2*i:]))
		}
	case f.tag == wavFormatPCM && width == 3:
		for i := range s {
			s[i] = int16(uint16(b[3*i+1]) | uint16(b[3*i+2])<<8)
		}
	case f.tag == wavFormatPCM && width == 4:
		for i := range s {
			s[i] = int16(le.Uint32(b[4*i:]) >> 16)
		}
	case width == 4: // float32
		for i := range s {
			s[i] = floatToInt16(float64(math.Float32frombits(le.Uint32(b[4*i:]))))
		}
	default: // float64
		for i := range s {
			s[i] = floatToInt16(math.Float64frombits(le.Uint64(b[8*i:])))
		}
	}
	return out
}

func floatToInt16(v float64) int16 {
	if math.IsNaN(v) {
		return 0
	}
	return clampInt16(v * math.MaxInt16)
}

// maxWAVData is the largest data chunk a RIFF file can describe: the RIFF
// size field (32 bits) also counts the 36 header bytes after it.
const maxWAVData = math.MaxUint32 - 36

// WriteWAV writes p as a canonical 44-byte-header 16-bit PCM WAV file.
func WriteWAV(w io.Writer, p PCM) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("write wav: %w", err)
	}
	if int64(len(p.Samples))*2 > maxWAVData {
		return fmt.Errorf("write wav: %w: %d bytes of samples do not fit a WAV file", ErrInvalidPCM, len(p.Samples)*2)
	}
	var hdr [wavHeaderSize]byte
	putWAVHeader(hdr[:], p.Rate, p.Channels, uint32(len(p.Samples)*2))
	if _, err := w.Write(hdr[:]); err != nil {
		return fmt.Errorf("write wav: %w", err)
	}
	if _, err := w.Write(AppendS16LE(nil, p.Samples)); err != nil {
		return fmt.Errorf("write wav: %w", err)
	}
	return nil
}

// EncodeWAV returns p as a WAV file in memory (see WriteWAV). p must be
// valid (see PCM.Validate): an invalid PCM yields a header that DecodeWAV
// rejects rather than an error here.
func EncodeWAV(p PCM) []byte {
	out := make([]byte, wavHeaderSize, wavHeaderSize+2*len(p.Samples))
	putWAVHeader(out, p.Rate, p.Channels, uint32(min(int64(len(p.Samples))*2, maxWAVData)))
	return AppendS16LE(out, p.Samples)
}

func putWAVHeader(b []byte, rate, channels int, dataSize uint32) {
	le := binary.LittleEndian
	copy(b[0:4], "RIFF")
	le.PutUint32(b[4:8], 36+dataSize)
	copy(b[8:16], "WAVEfmt ")
	le.PutUint32(b[16:20], 16)
	le.PutUint16(b[20:22], wavFormatPCM)
	le.PutUint16(b[22:24], uint16(channels))
	le.PutUint32(b[24:28], uint32(rate))
	le.PutUint32(b[28:32], uint32(rate*channels*2))
	le.PutUint16(b[32:34], uint16(channels*2))
	le.PutUint16(b[34:36], 16)
	copy(b[36:40], "data")
	le.PutUint32(b[40:44], dataSize)
}

// WAVWriter streams 16-bit PCM into a WAV file whose length is not known in
// advance. The header carries 0xFFFFFFFF sizes until Flush or Close patches
// them, so a file left by a crash is recognizably unfinished (DecodeWAV
// rejects it unless WAVOptions.Streaming asks for what it holds) rather
// than silently short.
type WAVWriter struct {
	w        io.WriteSeeker
	rate     int
	channels int
	data     int64 // bytes of samples written
	buf      []byte
	err      error // sticky: after a failed write the file is inconsistent
	closed   bool
}

// NewWAVWriter writes a provisional header to w and returns a writer for
// samples at rate and channels.
func NewWAVWriter(w io.WriteSeeker, rate, channels int) (*WAVWriter, error) {
	if err := (PCM{Rate: rate, Channels: channels}).Validate(); err != nil {
		return nil, fmt.Errorf("new wav writer: %w", err)
	}
	ww := &WAVWriter{w: w, rate: rate, channels: channels}
	var hdr [wavHeaderSize]byte
	putWAVHeader(hdr[:], rate, channels, 0)
	binary.LittleEndian.PutUint32(hdr[4:8], math.MaxUint32)
	binary.LittleEndian.PutUint32(hdr[40:44], math.MaxUint32)
	if _, err := w.Write(hdr[:]); err != nil {
		return nil, fmt.Errorf("new wav writer: %w", err)
	}
	return ww, nil
}

// Write appends interleaved samples; len(samples) must be a whole number of
// frames.
func (ww *WAVWriter) Write(samples []int16) error {
	if ww.closed {
		return fmt.Errorf("write wav: %w", ErrClosed)
	}
	if ww.err != nil {
		return ww.err
	}
	if len(samples)%ww.channels != 0 {
		return fmt.Errorf("write wav: %w: %d samples is not a whole number of %d-channel frames", ErrInvalidPCM, len(samples), ww.channels)
	}
	if ww.data+2*int64(len(samples)) > maxWAVData {
		return fmt.Errorf("write wav: %w: file would pass the 4 GiB WAV size limit", ErrInvalidPCM)
	}
	ww.buf = AppendS16LE(ww.buf[:0], samples)
	n, err := ww.w.Write(ww.buf)
	ww.data += int64(n)
	if err != nil {
		ww.err = fmt.Errorf("write wav: %w", err)
		return ww.err
	}
	return nil
}

// Flush patches the header with the sizes written so far, so the file is a
// valid WAV even if the process dies before Close, and moves back to the end.
func (ww *WAVWriter) Flush() error {
	if ww.closed {
		return fmt.Errorf("flush wav: %w", ErrClosed)
	}
	if ww.err != nil {
		return ww.err
	}
	var sz [4]byte
	patch := func(off int64, v uint32) error {
		if _, err := ww.w.Seek(off, io.SeekStart); err != nil {
			return err
		}
		binary.LittleEndian.PutUint32(sz[:], v)
		_, err := ww.w.Write(sz[:])
		return err
	}
	err := patch(4, uint32(36+ww.data))
	if err == nil {
		err = patch(40, uint32(ww.data))
	}
	if err == nil {
		_, err = ww.w.Seek(0, io.SeekEnd)
	}
	if err != nil {
		ww.err = fmt.Errorf("flush wav: %w", err)
		return ww.err
	}
	return nil
}

// Close patches the header. It does not close the underlying writer.
func (ww *WAVWriter) Close() error {
	if ww.closed {
		return nil
	}
	err := ww.Flush()
	ww.closed = true
	return err
}

// Frames returns how many frames have been written.
func (ww *WAVWriter) Frames() int64 { return ww.data / 2 / int64(ww.channels) }
