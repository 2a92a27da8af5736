package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

// speakerRecord is a speaker as stored in the speakers bucket under the
// key "owner/name":
//
//	[0] record version (1)  [1] precision (1 fp16, 2 int8)
//	[2:10] created ns  [10:18] last use ns  (big-endian)
//	[18:26] cosine  [26:34] relative L2  (float64 bits, big-endian)
//	[34] digest length d  [35:35+d] encoder digest
//	uvarint dims, then the embedding (vecpack.EncodeFP16 or vecpack.EncodeInt8)
//	uvarint prompt length, then each id as a (zigzag) varint
//	last 4 bytes: CRC-32C of key || everything before it, big-endian
//
// The CRC covers the key too, so a record that damage moved to another
// name, or a flipped byte anywhere in it, is found by Open and Check
// rather than handed to a voice as a wrong embedding.
type speakerRecord struct {
	precision byte
	created   int64
	used      int64
	cosine    float64
	relL2     float64
	digest    string
	embedding []byte // encoded
	prompt    []int64
}

const (
	speakerRecordVersion = 1
	speakerHeaderLen     = 35
	precisionCodeFP16    = 1
	precisionCodeInt8    = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func (r speakerRecord) precisionName() string {
	if r.precision == precisionCodeInt8 {
		return PrecisionInt8
	}
	return PrecisionFP16
}

func (r speakerRecord) dims() int {
	if r.precision == precisionCodeInt8 {
		return len(r.embedding) - vecpack.Int8Len(0)
	}
	return len(r.embedding) / 2
}

func (r speakerRecord) decodeEmbedding() ([]float32, error) {
	if r.precision == precisionCodeInt8 {
		return vecpack.DecodeInt8(r.embedding)
	}
	return vecpack.DecodeFP16(r.embedding)
}

// append appends the record stored under key to b.
func (r speakerRecord) append(b []byte, key string) []byte {
	start := len(b)
	b = append(b, speakerRecordVersion, r.precision)
	b = binary.BigEndian.AppendUint64(b, uint64(r.created))
	b = binary.BigEndian.AppendUint64(b, uint64(r.used))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(r.cosine))
	b = binary.BigEndian.AppendUint64(b, math.Float64bits(r.relL2))
	b = append(b, byte(len(r.digest)))
	b = append(b, r.digest...)
	b = binary.AppendUvarint(b, uint64(r.dims()))
	b = append(b, r.embedding...)
	b = binary.AppendUvarint(b, uint64(len(r.prompt)))
	for _, id := range r.prompt {
		b = binary.AppendVarint(b, id)
	}
	sum := crc32.Update(crc32.Checksum([]byte(key), castagnoli), castagnoli, b[start:])
	return binary.BigEndian.AppendUint32(b, sum)
}

// decodeSpeakerRecord reads the record stored under key and decodes its
// embedding. Every length is checked against the record and the limits
// before anything is allocated.
func decodeSpeakerRecord(key, v []byte) (speakerRecord, []float32, error) {
	var r speakerRecord
	if len(v) < speakerHeaderLen+4 {
		return r, nil, fmt.Errorf("speaker record of %d bytes is too short", len(v))
	}
	body := v[:len(v)-4]
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body)
	if got := binary.BigEndian.Uint32(v[len(body):]); got != sum {
		return r, nil, fmt.Errorf("speaker record CRC %08x, computed %08x", got, sum)
	}
	if body[0] != speakerRecordVersion {
		return r, nil, fmt.Errorf("speaker record version %d", body[0])
	}
	r.precision = body[1]
	if r.precision != precisionCodeFP16 && r.precision != precisionCodeInt8 {
		return r, nil, fmt.Errorf("speaker record precision code %d", r.precision)
	}
	r.created = int64(binary.BigEndian.Uint64(body[2:]))
	r.used = int64(binary.BigEndian.Uint64(body[10:]))
	r.cosine = math.Float64frombits(binary.BigEndian.Uint64(body[18:]))
	r.relL2 = math.Float64frombits(binary.BigEndian.Uint64(body[26:]))
	if !(r.cosine >= -1 && r.cosine <= 1) || !(r.relL2 >= 0) || math.IsInf(r.relL2, 0) {
		return r, nil, fmt.Errorf("speaker record quality figures %v, %v out of range", r.cosine, r.relL2)
	}
	d := int(body[34])
	rest := body[speakerHeaderLen:]
	if d == 0 || d > len(rest) {
		return r, nil, fmt.Errorf("speaker record digest of %d bytes in %d", d, len(rest))
	}
	r.digest, rest = string(rest[:d]), rest[d:]

	dims, n := binary.Uvarint(rest)
	if n <= 0 || dims == 0 || dims > MaxEmbeddingDims {
		return r, nil, fmt.Errorf("speaker record embedding length malformed or outside 1 to %d", MaxEmbeddingDims)
	}
	rest = rest[n:]
	size := vecpack.FP16Len(int(dims))
	if r.precision == precisionCodeInt8 {
		size = vecpack.Int8Len(int(dims))
	}
	if size > len(rest) {
		return r, nil, fmt.Errorf("speaker record embedding of %d bytes in %d", size, len(rest))
	}
	r.embedding, rest = append([]byte(nil), rest[:size]...), rest[size:]
	emb, err := r.decodeEmbedding()
	if err != nil {
		return r, nil, err
	}
	zero := true
	for _, x := range emb {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return r, nil, errors.New("speaker record embedding holds a NaN or infinity")
		}
		zero = zero && x == 0
	}
	if zero {
		return r, nil, errors.New("speaker record embedding is all zeros")
	}

	count, n := binary.Uvarint(rest)
	// Each id takes at least one byte: a count beyond the bytes left is
	// damage, whatever the limit.
	if n <= 0 || count > MaxPromptIDs || count > uint64(len(rest)-n) {
		return r, nil, fmt.Errorf("speaker record prompt length malformed or above %d", MaxPromptIDs)
	}
	rest = rest[n:]
	if count > 0 {
		r.prompt = make([]int64, count)
	}
	for i := range r.prompt {
		id, n := binary.Varint(rest)
		if n <= 0 {
			return r, nil, fmt.Errorf("speaker record prompt id %d malformed", i)
		}
		r.prompt[i], rest = id, rest[n:]
	}
	if len(rest) != 0 {
		return r, nil, fmt.Errorf("speaker record has %d bytes after its prompt", len(rest))
	}
	// Only one byte string encodes a record: anything else (an overlong
	// varint) was not written by append.
	if !bytes.Equal(r.append(make([]byte, 0, len(v)), string(key)), v) {
		return r, nil, errors.New("speaker record is not in canonical form")
	}
	return r, emb, nil
}
