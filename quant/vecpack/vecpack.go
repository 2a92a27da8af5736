// Package vecpack packs float32 vectors (speaker embeddings, style
// vectors) compactly and measures what the compression cost. It was
// package embed; it is named for what it does, packing vectors, so that
// it no longer shadows the standard library's embed in the files that
// use it.
//
// Two encodings, both little-endian and self-contained:
//
//   - fp16: IEEE 754 binary16, two bytes per value. Conversion rounds to
//     nearest, ties to even, keeps subnormals, infinities, signed zeros and
//     NaN payloads (their top ten mantissa bits), so every half value
//     survives a trip through float32 unchanged.
//   - int8: one float32 scale followed by one signed byte per value in
//     [-127, 127] (symmetric, per row: value = q × scale). -128 is never
//     written, so the range is the same on both sides of zero.
//
// On random unit vectors of 128 to 512 dimensions (the shape of speaker
// embeddings) fp16 keeps 1-cosine near 2e-8 with a relative L2 error of
// 2e-4; int8, half the size again, keeps 1-cosine near 2.5e-5 (worst seen
// 6e-5) with a relative L2 error of 7e-3. int8 degrades when one value is
// much larger than the rest, because the scale follows the largest.
// TestQuality checks the bounds and BenchmarkQuality reports the figures.
package vecpack

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// MaxValues is the most values a decoder accepts (4 MiB of float32), so a
// damaged or hostile length cannot make it allocate without bound.
const MaxValues = 1 << 20

// Errors of the decoders. Test for them with errors.Is.
var (
	// ErrMalformed is returned for bytes that are not a valid encoding: an
	// odd length for fp16; for int8, fewer than four bytes, a scale that is
	// negative, NaN or too large for 127 × scale to be finite, or a value of
	// -128.
	ErrMalformed = errors.New("malformed embedding encoding")

	// ErrTooLong is returned for an encoding of more than MaxValues values.
	ErrTooLong = errors.New("embedding too long")
)

// int8HeaderLen is the size of the int8 encoding's scale.
const int8HeaderLen = 4

// FP16Len is the length of the fp16 encoding of n values.
func FP16Len(n int) int { return 2 * n }

// Int8Len is the length of the int8 encoding of n values.
func Int8Len(n int) int { return int8HeaderLen + n }

// EncodeFP16 returns v as binary16 values. Values beyond ±65504 (the
// largest half) become infinities; callers that cannot store an infinity
// check the range first (see FitsFP16).
func EncodeFP16(v []float32) []byte {
	out := make([]byte, 2*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint16(out[2*i:], Float32ToHalf(x))
	}
	return out
}

// DecodeFP16 reads values written by EncodeFP16. Errors wrap ErrMalformed
// (odd length) or ErrTooLong (more than MaxValues values).
func DecodeFP16(b []byte) ([]float32, error) {
	if len(b)%2 != 0 {
		return nil, fmt.Errorf("decode fp16: %w: odd length %d", ErrMalformed, len(b))
	}
	n := len(b) / 2
	if n > MaxValues {
		return nil, fmt.Errorf("decode fp16: %w: %d values exceed the limit of %d (MaxValues)", ErrTooLong, n, MaxValues)
	}
	out := make([]float32, n)
	for i := range out {
		out[i] = HalfToFloat32(binary.LittleEndian.Uint16(b[2*i:]))
	}
	return out, nil
}

// MaxHalf is the largest finite binary16 value. Anything at or above
// 65520 in magnitude rounds to infinity.
const MaxHalf = 65504

// FitsFP16 reports whether every value of v is finite and stays finite in
// binary16.
func FitsFP16(v []float32) bool {
	for _, x := range v {
		if h := Float32ToHalf(x); h&0x7c00 == 0x7c00 {
			return false
		}
	}
	return true
}

// Float32ToHalf converts x to binary16 bits, rounding to nearest with ties
// to even.
func Float32ToHalf(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23) & 0xff
	mant := b & 0x7fffff
	if exp == 0xff {
		if mant == 0 {
			return sign | 0x7c00
		}
		// Keep the payload's top bits (the quiet bit among them); a payload
		// only in the low bits would vanish and turn the NaN into an
		// infinity, so keep it a (quiet) NaN.
		m := uint16(mant >> 13)
		if m == 0 {
			m = 0x200
		}
		return sign | 0x7c00 | m
	}
	e := exp - 127 + 15
	if e >= 31 {
		return sign | 0x7c00
	}
	if e >= 1 {
		h := uint32(e)<<10 | mant>>13
		// A carry out of the mantissa moves to the next exponent, and out
		// of exponent 30 to infinity: both are the right answers.
		h += roundUp(mant, 13, h)
		return sign | uint16(h)
	}
	// The result is subnormal or zero: its unit is 2^-24. The full 24-bit
	// significand sig stands for sig × 2^(exp-150), so the half mantissa is
	// sig × 2^(exp-126), a right shift by 126-exp (at least 14). Float32
	// subnormals (exp 0) are far below half of 2^-24 and become zero.
	if exp == 0 {
		return sign
	}
	shift := uint(126 - exp)
	if shift > 24 { // below 2^-25: less than half the smallest subnormal
		return sign
	}
	sig := mant | 0x800000
	h := sig >> shift
	h += roundUp(sig, shift, h)
	return sign | uint16(h)
}

// roundUp returns 1 if the low `drop` bits of v, about to be shifted out
// of a result whose current value is kept, call for rounding it up: more
// than half a unit, or exactly half with an odd kept value.
func roundUp(v uint32, drop uint, kept uint32) uint32 {
	rem := v & (1<<drop - 1)
	half := uint32(1) << (drop - 1)
	if rem > half || (rem == half && kept&1 == 1) {
		return 1
	}
	return 0
}

// HalfToFloat32 converts binary16 bits to float32. Every half value is
// exactly representable.
func HalfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch exp {
	case 0:
		if mant == 0 {
			return math.Float32frombits(sign)
		}
		// Subnormal: normalize so the leading one becomes implicit.
		e := uint32(127 - 15 + 1)
		for mant&0x400 == 0 {
			mant <<= 1
			e--
		}
		return math.Float32frombits(sign | e<<23 | (mant&0x3ff)<<13)
	case 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}

// EncodeInt8 returns v as a float32 scale (the largest finite magnitude
// divided by 127) and one byte per value, q = round(x / scale) in
// [-127, 127]. An all-zero vector has scale 0. Non-finite values are the
// caller's to reject; here NaN becomes 0 and ±Inf becomes ±127 × scale, so
// the encoding is always decodable.
func EncodeInt8(v []float32) []byte {
	var maxAbs float32
	for _, x := range v {
		if a := float32(math.Abs(float64(x))); a > maxAbs && !math.IsInf(float64(a), 0) {
			maxAbs = a
		}
	}
	scale := maxAbs / 127
	if math.IsInf(float64(127*scale), 0) {
		// Near float32's largest value the rounded quotient can be a hair
		// too big for 127 × scale to be finite again: step down once.
		scale = math.Nextafter32(scale, 0)
	}
	out := make([]byte, Int8Len(len(v)))
	binary.LittleEndian.PutUint32(out, math.Float32bits(scale))
	q := out[int8HeaderLen:]
	if scale == 0 { // all zero (or all non-finite): every q stays 0
		return out
	}
	// Dividing in float64 keeps the quotient of the largest value at
	// exactly 127 and the rounding honest for the rest.
	inv := 1 / float64(scale)
	for i, x := range v {
		var r float64
		switch {
		case math.IsNaN(float64(x)):
			r = 0
		default:
			r = math.RoundToEven(float64(x) * inv)
		}
		r = max(-127, min(127, r))
		q[i] = byte(int8(r))
	}
	return out
}

// DecodeInt8 reads values written by EncodeInt8. Errors wrap ErrMalformed
// (fewer than four bytes; a negative or NaN scale, or one so large that
// 127 × scale overflows float32; a value of -128) or ErrTooLong (more than MaxValues values).
func DecodeInt8(b []byte) ([]float32, error) {
	if len(b) < int8HeaderLen {
		return nil, fmt.Errorf("decode int8: %w: %d bytes, shorter than the %d-byte scale", ErrMalformed, len(b), int8HeaderLen)
	}
	n := len(b) - int8HeaderLen
	if n > MaxValues {
		return nil, fmt.Errorf("decode int8: %w: %d values exceed the limit of %d (MaxValues)", ErrTooLong, n, MaxValues)
	}
	scale := math.Float32frombits(binary.LittleEndian.Uint32(b))
	if !(scale >= 0) || math.Signbit(float64(scale)) || math.IsInf(float64(127*scale), 0) {
		return nil, fmt.Errorf("decode int8: %w: scale %v is not a non-negative number whose 127 multiple is a finite float32", ErrMalformed, scale)
	}
	out := make([]float32, n)
	for i, c := range b[int8HeaderLen:] {
		q := int8(c)
		if q == -128 {
			return nil, fmt.Errorf("decode int8: %w: value %d is -128, outside [-127, 127]", ErrMalformed, i)
		}
		out[i] = float32(q) * scale
	}
	return out, nil
}

// Cosine returns the cosine similarity of a and b, computed in float64.
// It is NaN when the lengths differ, a vector is empty or all zero, or a
// value is not finite.
func Cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return math.NaN()
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return math.NaN()
	}
	// Rounding can push the quotient of nearly parallel vectors a hair
	// past ±1; a similarity is never beyond it.
	return max(-1, min(1, dot/math.Sqrt(na*nb)))
}

// RelativeL2 returns ‖b − a‖ / ‖a‖: the error of b as a copy of the
// reference a, computed in float64. It is 0 for identical vectors (both
// zero included), +Inf when a is zero and b is not, and NaN when the
// lengths differ or a value is not finite.
func RelativeL2(a, b []float32) float64 {
	if len(a) != len(b) {
		return math.NaN()
	}
	var diff, norm float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		diff += (y - x) * (y - x)
		norm += x * x
	}
	if diff == 0 && !math.IsNaN(norm) && !math.IsInf(norm, 0) {
		return 0
	}
	return math.Sqrt(diff) / math.Sqrt(norm)
}
