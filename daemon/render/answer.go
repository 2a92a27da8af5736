package render

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"unicode/utf8"
)

// Limits of an answer.
const (
	// MaxRecordBytes is the largest phrase record an answer carries: a
	// long sentence of 24 kHz audio is well under 1 MiB compressed.
	MaxRecordBytes = 8 << 20
	// MaxChunkData is the most record bytes in one answer message, so
	// that a message stays far below the brokers' packet limits
	// (Mosquitto's default max_packet_size is 2 MB, EMQX's 1 MB).
	MaxChunkData = 256 << 10
	// MaxChunks is the most messages one answer is split into.
	MaxChunks = 64
	// MaxHeaderBytes bounds an answer message's JSON header.
	MaxHeaderBytes = 4 << 10
	// MaxErrorBytes bounds an error answer's text.
	MaxErrorBytes = 512
	// MaxAnswerBytes is the largest answer message.
	MaxAnswerBytes = answerPrefixLen + MaxHeaderBytes + MaxChunkData
)

// An answer message is
//
//	magic "MYR" (3 bytes) | version 1 (1 byte) | header length n (2 bytes, big-endian)
//	| JSON header (n bytes) | the chunk's record bytes (the rest)
//
// The binary prefix lets a decoder refuse a foreign payload, and bound
// the JSON it parses, before it parses anything.
const (
	answerMagic     = "MYR"
	answerVersion   = 1
	answerPrefixLen = 6
)

// castagnoli is the CRC-32C table, the checksum mynah's phrase records
// and answers use.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checksum returns the CRC-32C of a record, as Chunk.CRC32C carries it.
func Checksum(record []byte) uint32 { return crc32.Checksum(record, castagnoli) }

// Chunk is one answer message: a part of a phrase record, or an error
// answer (Error and Reason set, Total 0, no Data).
type Chunk struct {
	// ID is the request's id.
	ID string `json:"id"`
	// Seq (0..Total-1) places the chunk; Total is how many the answer
	// has (1..MaxChunks).
	Seq   int `json:"seq"`
	Total int `json:"total"`
	// Key is the record's phrase key (lower-case hex); Voice the voice
	// that rendered it.
	Key   string `json:"key,omitempty"`
	Voice string `json:"voice,omitempty"`
	// Size (1..MaxRecordBytes) and CRC32C are the whole record's.
	Size   int    `json:"size"`
	CRC32C uint32 `json:"crc32c"`
	// Error and Reason make an error answer.
	Error  string `json:"error,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Data is the chunk's part of the record (not in the JSON header).
	Data []byte `json:"-"`
}

// IsError reports whether c is an error answer.
func (c *Chunk) IsError() bool { return c.Error != "" || c.Reason != "" }

// Validate checks c against the protocol, on its own: whether the
// chunks of one answer agree is the receiver's business. Errors wrap
// ErrInvalidAnswer.
func (c *Chunk) Validate() error {
	if err := validateName(c.ID); err != nil {
		return fmt.Errorf("%w: id: %w", ErrInvalidAnswer, err)
	}
	if c.IsError() {
		switch {
		case c.Error == "" || len(c.Error) > MaxErrorBytes || !utf8.ValidString(c.Error):
			return fmt.Errorf("%w: error answer: error must be 1..%d bytes of UTF-8 (MaxErrorBytes)", ErrInvalidAnswer, MaxErrorBytes)
		case !validReason(c.Reason):
			return fmt.Errorf("%w: error answer: reason %s is not 1..32 of a-z 0-9 _", ErrInvalidAnswer, quoteShort(c.Reason))
		case c.Seq != 0 || c.Total != 0 || c.Size != 0 || c.CRC32C != 0 || len(c.Data) != 0:
			return fmt.Errorf("%w: error answer with seq, total, size, crc32c or data", ErrInvalidAnswer)
		case c.Key != "" && validateKey(c.Key) != nil:
			return fmt.Errorf("%w: error answer: key: %w", ErrInvalidAnswer, validateKey(c.Key))
		case c.Voice != "" && validateName(c.Voice) != nil:
			return fmt.Errorf("%w: error answer: voice: %w", ErrInvalidAnswer, validateName(c.Voice))
		}
		return nil
	}
	if err := validateKey(c.Key); err != nil {
		return fmt.Errorf("%w: key: %w", ErrInvalidAnswer, err)
	}
	if err := validateName(c.Voice); err != nil {
		return fmt.Errorf("%w: voice: %w", ErrInvalidAnswer, err)
	}
	switch {
	case c.Size < 1 || c.Size > MaxRecordBytes:
		return fmt.Errorf("%w: %w: size %d is outside 1..%d (MaxRecordBytes)", ErrInvalidAnswer, ErrTooLarge, c.Size, MaxRecordBytes)
	case c.Total < 1 || c.Total > MaxChunks:
		return fmt.Errorf("%w: %w: total %d is outside 1..%d (MaxChunks)", ErrInvalidAnswer, ErrTooLarge, c.Total, MaxChunks)
	case c.Total > c.Size:
		return fmt.Errorf("%w: total %d is over size %d (every chunk holds a byte)", ErrInvalidAnswer, c.Total, c.Size)
	case c.Seq < 0 || c.Seq >= c.Total:
		return fmt.Errorf("%w: seq %d is outside 0..%d", ErrInvalidAnswer, c.Seq, c.Total-1)
	case len(c.Data) > MaxChunkData:
		return fmt.Errorf("%w: %w: chunk of %d bytes is over MaxChunkData (%d)", ErrInvalidAnswer, ErrTooLarge, len(c.Data), MaxChunkData)
	case len(c.Data) < 1 || len(c.Data) > c.Size:
		return fmt.Errorf("%w: chunk of %d bytes for a record of %d", ErrInvalidAnswer, len(c.Data), c.Size)
	}
	return nil
}

// EncodeChunk validates c and returns its message.
func EncodeChunk(c Chunk) ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	h, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidAnswer, err)
	}
	if len(h) > MaxHeaderBytes {
		return nil, fmt.Errorf("%w: %w: header of %d bytes is over MaxHeaderBytes (%d)", ErrInvalidAnswer, ErrTooLarge, len(h), MaxHeaderBytes)
	}
	out := make([]byte, answerPrefixLen, answerPrefixLen+len(h)+len(c.Data))
	copy(out, answerMagic)
	out[3] = answerVersion
	binary.BigEndian.PutUint16(out[4:], uint16(len(h)))
	out = append(out, h...)
	return append(out, c.Data...), nil
}

// DecodeChunk decodes and validates one answer message of at most
// MaxAnswerBytes. The returned Data aliases payload (no copy). Errors
// wrap ErrInvalidAnswer, and ErrTooLarge too where a limit was broken.
func DecodeChunk(payload []byte) (Chunk, error) {
	switch {
	case len(payload) > MaxAnswerBytes:
		return Chunk{}, fmt.Errorf("%w: %w: %d bytes is over MaxAnswerBytes (%d)", ErrInvalidAnswer, ErrTooLarge, len(payload), MaxAnswerBytes)
	case len(payload) < answerPrefixLen || string(payload[:3]) != answerMagic:
		return Chunk{}, fmt.Errorf("%w: not a mynah render answer", ErrInvalidAnswer)
	case payload[3] != answerVersion:
		return Chunk{}, fmt.Errorf("%w: version %d, this node speaks %d", ErrInvalidAnswer, payload[3], answerVersion)
	}
	n := int(binary.BigEndian.Uint16(payload[4:]))
	switch {
	case n > MaxHeaderBytes:
		return Chunk{}, fmt.Errorf("%w: %w: header of %d bytes is over MaxHeaderBytes (%d)", ErrInvalidAnswer, ErrTooLarge, n, MaxHeaderBytes)
	case n > len(payload)-answerPrefixLen:
		return Chunk{}, fmt.Errorf("%w: header of %d bytes in a message of %d", ErrInvalidAnswer, n, len(payload))
	}
	h := payload[answerPrefixLen : answerPrefixLen+n]
	if t := bytes.TrimSpace(h); len(t) == 0 || t[0] != '{' {
		return Chunk{}, fmt.Errorf("%w: header is not a JSON object", ErrInvalidAnswer)
	}
	var c Chunk
	if err := json.Unmarshal(h, &c); err != nil {
		return Chunk{}, fmt.Errorf("%w: header: %w", ErrInvalidAnswer, err)
	}
	if rest := payload[answerPrefixLen+n:]; len(rest) > 0 {
		c.Data = rest
	}
	if err := c.Validate(); err != nil {
		return Chunk{}, err
	}
	return c, nil
}

// SplitRecord cuts a record into the chunks of its answer, chunkSize
// (1..MaxChunkData) bytes each but the last. The chunks' Data alias
// record.
func SplitRecord(id, voice, key string, record []byte, chunkSize int) ([]Chunk, error) {
	if chunkSize < 1 || chunkSize > MaxChunkData {
		return nil, fmt.Errorf("%w: chunk size %d is outside 1..%d (MaxChunkData)", ErrInvalidAnswer, chunkSize, MaxChunkData)
	}
	if len(record) == 0 {
		return nil, fmt.Errorf("%w: empty record", ErrInvalidAnswer)
	}
	if len(record) > MaxRecordBytes {
		return nil, fmt.Errorf("%w: %w: record of %d bytes is over MaxRecordBytes (%d)", ErrInvalidAnswer, ErrTooLarge, len(record), MaxRecordBytes)
	}
	total := (len(record) + chunkSize - 1) / chunkSize
	if total > MaxChunks {
		return nil, fmt.Errorf("%w: %w: %d chunks of %d bytes is over MaxChunks (%d)", ErrInvalidAnswer, ErrTooLarge, total, chunkSize, MaxChunks)
	}
	crc := Checksum(record)
	chunks := make([]Chunk, total)
	for i := range chunks {
		end := min((i+1)*chunkSize, len(record))
		chunks[i] = Chunk{
			ID: id, Seq: i, Total: total, Key: key, Voice: voice,
			Size: len(record), CRC32C: crc, Data: record[i*chunkSize : end],
		}
		if err := chunks[i].Validate(); err != nil {
			return nil, err
		}
	}
	return chunks, nil
}

// errorChunk is the error answer to id for err.
func errorChunk(id, voice string, err error, reason string) Chunk {
	msg := err.Error()
	if len(msg) > MaxErrorBytes {
		msg = msg[:MaxErrorBytes]
	}
	msg = string(bytes.ToValidUTF8([]byte(msg), nil))
	if msg == "" {
		msg = reason
	}
	if validateName(voice) != nil {
		voice = ""
	}
	return Chunk{ID: id, Voice: voice, Error: msg, Reason: reason}
}

// isTooLarge reports whether err broke a limit.
func isTooLarge(err error) bool { return errors.Is(err, ErrTooLarge) }
