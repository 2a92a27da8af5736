package wyoming

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
)

// ProtocolVersion is the version written into every event header: the
// Python wyoming library release whose event set (streaming synthesis
// included) this package speaks. Readers, that library's included, ignore
// it.
const ProtocolVersion = "1.8.0"

// Default limits for ReadEvent (Limits' zero values).
const (
	DefaultMaxHeaderBytes = 64 << 10
	DefaultMaxDataBytes   = 1 << 20
)

// Event is one Wyoming event. Data is a JSON object (or empty); Payload is
// the raw bytes that follow it (PCM for audio-chunk).
type Event struct {
	Type    string
	Data    json.RawMessage
	Payload []byte
}

// Limits bound what ReadEvent accepts, so that a peer cannot make the
// server allocate more than about MaxHeaderBytes+MaxDataBytes+
// MaxPayloadBytes per connection.
type Limits struct {
	// MaxHeaderBytes bounds the header line, newline included; 0 means
	// DefaultMaxHeaderBytes.
	MaxHeaderBytes int
	// MaxDataBytes bounds data_length; 0 means DefaultMaxDataBytes.
	MaxDataBytes int
	// MaxPayloadBytes bounds payload_length. 0 means no payload at all,
	// which is right for a TTS server: no event a client sends it carries
	// one. Negative means 0 too.
	MaxPayloadBytes int
}

func (l Limits) withDefaults() Limits {
	if l.MaxHeaderBytes <= 0 {
		l.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	if l.MaxDataBytes <= 0 {
		l.MaxDataBytes = DefaultMaxDataBytes
	}
	if l.MaxPayloadBytes < 0 {
		l.MaxPayloadBytes = 0
	}
	return l
}

// header is the first line of an event. The lengths stay raw so that a
// string, a fraction, an exponent or an overflow is refused, not coerced.
type header struct {
	Type          string          `json:"type"`
	Data          json.RawMessage `json:"data"`
	DataLength    json.RawMessage `json:"data_length"`
	PayloadLength json.RawMessage `json:"payload_length"`
}

// ReadEvent reads one event: a JSON header line, then data_length bytes of
// JSON data merged over the header's own data (the later keys win, as in
// the Python library), then payload_length bytes of payload. It returns
// io.EOF when the stream ends cleanly before an event, and otherwise wraps
// one of ErrHeaderTooLong, ErrDataTooLarge, ErrPayloadTooLarge,
// ErrMalformed, ErrTruncated, or the reader's error. After an error the
// stream's position is unknown: the caller should drop the connection.
func ReadEvent(r *bufio.Reader, lim Limits) (Event, error) {
	lim = lim.withDefaults()
	line, err := readLine(r, lim.MaxHeaderBytes)
	if err != nil {
		return Event{}, err
	}
	var h header
	if err := json.Unmarshal(line, &h); err != nil {
		return Event{}, fmt.Errorf("%w: header: %w", ErrMalformed, err)
	}
	if h.Type == "" {
		return Event{}, fmt.Errorf("%w: header has no type", ErrMalformed)
	}
	dataLen, err := length(h.DataLength, "data_length", lim.MaxDataBytes, ErrDataTooLarge)
	if err != nil {
		return Event{}, err
	}
	payloadLen, err := length(h.PayloadLength, "payload_length", lim.MaxPayloadBytes, ErrPayloadTooLarge)
	if err != nil {
		return Event{}, err
	}
	e := Event{Type: h.Type}
	if isNull(h.Data) {
		h.Data = nil
	} else if !isObject(h.Data) {
		return Event{}, fmt.Errorf("%w: header data is not a JSON object", ErrMalformed)
	}
	e.Data = h.Data
	if dataLen > 0 {
		buf := make([]byte, dataLen)
		if _, err := io.ReadFull(r, buf); err != nil {
			return Event{}, truncated("data", err)
		}
		if !isObject(buf) {
			return Event{}, fmt.Errorf("%w: data is not a JSON object", ErrMalformed)
		}
		if e.Data, err = merge(h.Data, buf); err != nil {
			return Event{}, err
		}
	}
	if payloadLen > 0 {
		e.Payload = make([]byte, payloadLen)
		if _, err := io.ReadFull(r, e.Payload); err != nil {
			return Event{}, truncated("payload", err)
		}
	}
	return e, nil
}

// readLine returns the next line without its newline, refusing lines of
// more than max bytes (newline included) before reading further.
func readLine(r *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		frag, err := r.ReadSlice('\n')
		if len(line)+len(frag) > max {
			return nil, fmt.Errorf("%w: over %d bytes", ErrHeaderTooLong, max)
		}
		line = append(line, frag...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && len(line) == 0:
			return nil, io.EOF
		default:
			return nil, truncated("header", err)
		}
	}
}

func truncated(part string, err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s: %w", ErrTruncated, part, io.ErrUnexpectedEOF)
	}
	return fmt.Errorf("read %s: %w", part, err)
}

// length checks an optional length field: absent, null and 0 are 0.
func length(n json.RawMessage, field string, max int, tooLarge error) (int, error) {
	if isNull(n) {
		return 0, nil
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("%w: %s %.20q is not a non-negative integer", ErrMalformed, field, n)
	}
	if v > int64(max) {
		return 0, fmt.Errorf("%w: %s %d over %d", tooLarge, field, v, max)
	}
	return int(v), nil
}

func isNull(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) == 0 || string(b) == "null"
}

func isObject(b []byte) bool {
	b = bytes.TrimSpace(b)
	return len(b) > 0 && b[0] == '{' && json.Valid(b)
}

// merge returns over's keys laid over base's (both JSON objects).
func merge(base, over []byte) (json.RawMessage, error) {
	if base == nil {
		return over, nil
	}
	var m, o map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, fmt.Errorf("%w: header data: %w", ErrMalformed, err)
	}
	if err := json.Unmarshal(over, &o); err != nil {
		return nil, fmt.Errorf("%w: data: %w", ErrMalformed, err)
	}
	if m == nil {
		m = o
	} else {
		for k, v := range o {
			m[k] = v
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("%w: merge data: %w", ErrMalformed, err)
	}
	return out, nil
}

// outHeader is the header line WriteEvent writes. Like the Python library
// it sends data as a separate block after the line (data_length), never
// inline, and leaves out lengths that are zero.
type outHeader struct {
	Type          string `json:"type"`
	Version       string `json:"version"`
	DataLength    int    `json:"data_length,omitempty"`
	PayloadLength int    `json:"payload_length,omitempty"`
}

// WriteEvent writes e in the framing ReadEvent reads. e.Data must be empty
// or a JSON object. On a net.Conn the three parts go out in one writev.
func WriteEvent(w io.Writer, e Event) error {
	_, err := writeEvent(w, e)
	return err
}

// writeEvent is WriteEvent that also says how many bytes it wrote.
func writeEvent(w io.Writer, e Event) (int64, error) {
	bufs, err := encodeEvent(e)
	if err != nil {
		return 0, err
	}
	n, err := bufs.WriteTo(w)
	if err != nil {
		return n, fmt.Errorf("write event %s: %w", e.Type, err)
	}
	return n, nil
}

// encodeEvent returns the event as written: its header line, then its
// data and payload as they are (not copied).
func encodeEvent(e Event) (net.Buffers, error) {
	if e.Type == "" {
		return nil, fmt.Errorf("write event: %w: no type", ErrMalformed)
	}
	data := bytes.TrimSpace(e.Data)
	if isNull(data) || string(data) == "{}" {
		data = nil
	} else if !isObject(data) {
		return nil, fmt.Errorf("write event %s: %w: data is not a JSON object", e.Type, ErrMalformed)
	}
	line, err := json.Marshal(outHeader{Type: e.Type, Version: ProtocolVersion, DataLength: len(data), PayloadLength: len(e.Payload)})
	if err != nil {
		return nil, fmt.Errorf("write event %s: %w", e.Type, err)
	}
	bufs := net.Buffers{append(line, '\n')}
	if len(data) > 0 {
		bufs = append(bufs, data)
	}
	if len(e.Payload) > 0 {
		bufs = append(bufs, e.Payload)
	}
	return bufs, nil
}

// maxChunkHeader bounds what an audio-chunk frame has besides its samples
// (appendAudioChunkHeader):
// the header line and the format's JSON at their longest (MaxRate,
// MaxChannels, a 19-digit payload length and timestamp) are 165 bytes.
const maxChunkHeader = 165

// appendAudioChunkHeader appends what an audio-chunk frame of n samples
// in format f has before its payload (the samples, s16le): the header line
// and the format, byte for byte what encodeEvent makes of them.
func appendAudioChunkHeader(dst []byte, f audioFormat, n int) []byte {
	var d [96]byte
	data := append(d[:0], `{"rate":`...)
	data = strconv.AppendInt(data, int64(f.Rate), 10)
	data = append(data, `,"width":`...)
	data = strconv.AppendInt(data, int64(f.Width), 10)
	data = append(data, `,"channels":`...)
	data = strconv.AppendInt(data, int64(f.Channels), 10)
	data = append(data, `,"timestamp":`...)
	data = strconv.AppendInt(data, f.Timestamp, 10)
	data = append(data, '}')
	dst = append(dst, `{"type":"`+typeAudioChunk+`","version":"`+ProtocolVersion+`","data_length":`...)
	dst = strconv.AppendInt(dst, int64(len(data)), 10)
	if n > 0 {
		dst = append(dst, `,"payload_length":`...)
		dst = strconv.AppendInt(dst, int64(2*n), 10)
	}
	dst = append(dst, "}\n"...)
	return append(dst, data...)
}
