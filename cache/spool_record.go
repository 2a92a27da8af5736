package cache

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// A spool record is a key and a value in the spool bucket. The key is the
// receive time (8 bytes, big-endian ns) and the id. The value, as SpoolPut
// writes it:
//
//	[0]      spoolValueMark
//	[1:5]    CRC-32C of the key
//	[5:9]    CRC-32C of value[9:]
//	[9:17]   txid of the commit that wrote it, big-endian
//	[17:25]  expiry ns, big-endian, 0 = never
//	[25:]    payload
//
// Two checksums, so that a damaged value can still be reported under its
// id when the key's checksum holds. The txid orders two versions of one
// key found on different pages of a damaged file (salvage.go): bbolt's
// pages carry no transaction of their own.
//
// An older mynahd wrote the expiry and the payload alone, with no
// checksum. Its expiry is a non-negative int64, so its first byte is below
// 0x80; spoolValueMark is not, which tells the two apart. Such a record
// is read as it is (nothing can prove it sound) and rewritten in the new
// form only when a salvage carries it.
const (
	spoolValueMark   = 0xA7
	spoolValueHeader = 25
	oldValueHeader   = 8
)

// errBadSpoolRecord is what decodeSpoolRecord wraps.
var errBadSpoolRecord = errors.New("malformed spool record")

// spoolRecord is a decoded spool record.
type spoolRecord struct {
	id       string
	received int64 // ns
	expires  int64 // ns, 0 = never
	txid     uint64
	payload  []byte // aliases the value
	checked  bool   // both checksums held (false for an older record)
}

// appendSpoolValue appends the value of a record written by commit txid.
func appendSpoolValue(b, key []byte, txid uint64, expires int64, payload []byte) []byte {
	start := len(b)
	b = append(b, spoolValueMark)
	b = binary.BigEndian.AppendUint32(b, crc32.Checksum(key, castagnoli))
	b = append(b, 0, 0, 0, 0) // the value's checksum, below
	b = binary.BigEndian.AppendUint64(b, txid)
	b = binary.BigEndian.AppendUint64(b, uint64(expires))
	b = append(b, payload...)
	binary.BigEndian.PutUint32(b[start+5:], crc32.Checksum(b[start+9:], castagnoli))
	return b
}

// spoolKeyShape reports whether k can be a spool key: a receive time from
// 1970 on (SpoolPut refuses earlier ones) and an id of 1 to maxSpoolID
// bytes.
func spoolKeyShape(k []byte) bool {
	return len(k) > 8 && len(k) <= 8+maxSpoolID && k[0] < 0x80
}

// decodeSpoolRecord reads one record of the spool bucket, from a sound
// file or from a damaged one's pages: nothing is trusted. On error,
// keyOK says whether the key can still be believed (its checksum held,
// or it is an older record of the right shape), so that the request can
// be reported lost under its id.
func decodeSpoolRecord(k, v []byte, maxPayload int) (r spoolRecord, keyOK bool, err error) {
	shape := spoolKeyShape(k)
	keySum := len(v) >= 5 && binary.BigEndian.Uint32(v[1:]) == crc32.Checksum(k, castagnoli)
	bad := func(format string, args ...any) (spoolRecord, bool, error) {
		return spoolRecord{}, keyOK, fmt.Errorf("%w: "+format, append([]any{errBadSpoolRecord}, args...)...)
	}
	var head int
	switch {
	case len(v) > 0 && v[0] == spoolValueMark:
		keyOK = shape && keySum
		switch {
		case !shape:
			return bad("key of %d bytes", len(k))
		case len(v) < spoolValueHeader:
			return bad("value of %d bytes", len(v))
		case !keySum:
			return bad("key checksum mismatch")
		case binary.BigEndian.Uint32(v[5:]) != crc32.Checksum(v[9:], castagnoli):
			return bad("value checksum mismatch")
		}
		r.txid = binary.BigEndian.Uint64(v[9:])
		r.expires = int64(binary.BigEndian.Uint64(v[17:]))
		r.checked, head = true, spoolValueHeader
	case len(v) == 0 || v[0] < 0x80: // written by an older mynahd
		keyOK = shape
		switch {
		case !shape:
			return bad("key of %d bytes", len(k))
		case keySum: // a current record whose mark was damaged
			return bad("value begins with %#x", v[0])
		case len(v) < oldValueHeader:
			return bad("value of %d bytes", len(v))
		}
		r.expires = int64(binary.BigEndian.Uint64(v))
		head = oldValueHeader
	default: // a damaged mark, or a value of another kind
		keyOK = shape && keySum
		return bad("value begins with %#x", v[0])
	}
	if n := len(v) - head; n > maxPayload {
		return bad("payload of %d bytes over the limit of %d", n, maxPayload)
	}
	if r.expires < 0 {
		return bad("expiry before 1970")
	}
	r.id = string(k[8:])
	r.received = int64(binary.BigEndian.Uint64(k))
	r.payload = v[head:]
	return r, true, nil
}
