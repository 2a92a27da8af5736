package vecpack

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

// halfValue is an independent reading of binary16 bits, straight from the
// standard's formula, for finite values.
func halfValue(h uint16) float64 {
	sign := 1.0
	if h&0x8000 != 0 {
		sign = -1
	}
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	if exp == 0 {
		return sign * math.Ldexp(mant, -24)
	}
	return sign * math.Ldexp(1024+mant, exp-25)
}

// Every one of the 65536 half values converts to float32 exactly and back
// to the same bits, NaN payloads included.
func TestHalfRoundTripExhaustive(t *testing.T) {
	nans := 0
	for i := range 1 << 16 {
		h := uint16(i)
		f := HalfToFloat32(h)
		isNaN := h&0x7c00 == 0x7c00 && h&0x3ff != 0
		isInf := h&0x7fff == 0x7c00
		switch {
		case isNaN:
			nans++
			if !math.IsNaN(float64(f)) {
				t.Fatalf("%#04x: NaN became %v", h, f)
			}
		case isInf:
			if !math.IsInf(float64(f), 0) || math.Signbit(float64(f)) != (h&0x8000 != 0) {
				t.Fatalf("%#04x: infinity became %v", h, f)
			}
		default:
			if want := halfValue(h); float64(f) != want || math.Signbit(float64(f)) != math.Signbit(want) {
				t.Fatalf("%#04x: %v, want %v", h, f, want)
			}
		}
		if back := Float32ToHalf(f); back != h {
			t.Fatalf("%#04x → %v → %#04x", h, f, back)
		}
	}
	if nans != 2*1023 {
		t.Fatalf("%d NaN patterns seen, want %d", nans, 2*1023)
	}
}

// refHalf rounds x to binary16 the slow way, in float64: scale to the
// unit of the half's last place and round to even.
func refHalf(x float32) uint16 {
	v := float64(x)
	var sign uint16
	if math.Signbit(v) {
		sign, v = 0x8000, -v
	}
	if math.IsInf(v, 0) {
		return sign | 0x7c00
	}
	if v < math.Ldexp(1, -14) { // subnormal range: unit 2^-24
		return sign | uint16(math.RoundToEven(math.Ldexp(v, 24)))
	}
	_, e := math.Frexp(v) // v = f × 2^e, f in [0.5, 1): unit 2^(e-11)
	m := math.RoundToEven(math.Ldexp(v, 11-e))
	if m == 2048 {
		m, e = 1024, e+1
	}
	exp := e - 1 + 15
	if exp >= 31 {
		return sign | 0x7c00
	}
	return sign | uint16(exp)<<10 | uint16(m-1024)
}

func TestFloat32ToHalfMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	check := func(bits uint32) {
		x := math.Float32frombits(bits)
		if math.IsNaN(float64(x)) {
			return
		}
		if got, want := Float32ToHalf(x), refHalf(x); got != want {
			t.Fatalf("%v (%#08x): %#04x, want %#04x", x, bits, got, want)
		}
	}
	for range 1 << 20 {
		check(rng.Uint32())
	}
	// Every float32 whose exponent lies in or next to the half range, with
	// the low 8 mantissa bits fixed to the interesting rounding cases.
	for exp := uint32(100); exp <= 145; exp++ {
		for hi := uint32(0); hi < 1<<15; hi++ {
			for _, lo := range []uint32{0, 1, 0x7f, 0x80, 0x81, 0xff} {
				bits := exp<<23 | hi<<8 | lo
				check(bits)
				check(bits | 1<<31)
			}
		}
	}
}

func TestFloat32ToHalfEdges(t *testing.T) {
	f := func(bits uint32) float32 { return math.Float32frombits(bits) }
	cases := []struct {
		name string
		in   float32
		want uint16
	}{
		{"zero", 0, 0x0000},
		{"negative zero", float32(math.Copysign(0, -1)), 0x8000},
		{"one", 1, 0x3c00},
		{"minus two", -2, 0xc000},
		{"1 + 2^-11 ties to even (down)", 1 + 1.0/2048, 0x3c00},
		{"1 + 3×2^-11 ties to even (up)", 1 + 3.0/2048, 0x3c02},
		{"just above the tie rounds up", f(math.Float32bits(1+1.0/2048) + 1), 0x3c01},
		{"just below the tie rounds down", f(math.Float32bits(1+1.0/2048) - 1), 0x3c00},
		{"largest half", 65504, 0x7bff},
		{"just below 65520 stays finite", f(math.Float32bits(65520) - 1), 0x7bff},
		{"65520 rounds to infinity", 65520, 0x7c00},
		{"1e6 overflows", 1e6, 0x7c00},
		{"-1e6 overflows", -1e6, 0xfc00},
		{"max float32", math.MaxFloat32, 0x7c00},
		{"+Inf", float32(math.Inf(1)), 0x7c00},
		{"-Inf", float32(math.Inf(-1)), 0xfc00},
		{"smallest normal 2^-14", float32(math.Ldexp(1, -14)), 0x0400},
		{"largest subnormal", float32(math.Ldexp(1023, -24)), 0x03ff},
		{"largest subnormal + half unit rounds to normal", float32(math.Ldexp(2047, -25)), 0x0400},
		{"smallest subnormal 2^-24", float32(math.Ldexp(1, -24)), 0x0001},
		{"2^-25 ties to even (zero)", float32(math.Ldexp(1, -25)), 0x0000},
		{"just above 2^-25 rounds up", f(math.Float32bits(float32(math.Ldexp(1, -25))) + 1), 0x0001},
		{"3×2^-25 ties to even (two)", float32(math.Ldexp(3, -25)), 0x0002},
		{"5×2^-25 ties to even (two)", float32(math.Ldexp(5, -25)), 0x0002},
		{"-2^-24", float32(-math.Ldexp(1, -24)), 0x8001},
		{"2^-26 underflows", float32(math.Ldexp(1, -26)), 0x0000},
		{"-2^-26 underflows to -0", float32(-math.Ldexp(1, -26)), 0x8000},
		{"float32 subnormal", f(1), 0x0000},
		{"negative float32 subnormal", f(1<<31 | 0x7fffff), 0x8000},
		{"quiet NaN", f(0x7fc00000), 0x7e00},
		{"NaN payload in high bits kept", f(0x7f802000 | 0x155<<13), 0x7c00 | 0x155},
		{"NaN payload only in low bits stays NaN", f(0x7f800001), 0x7e00},
		{"negative NaN", f(0xffc00000), 0xfe00},
		{"pi", math.Pi, 0x4248},
		{"0.1", 0.1, 0x2e66},
	}
	for _, c := range cases {
		if got := Float32ToHalf(c.in); got != c.want {
			t.Errorf("%s: Float32ToHalf(%v) = %#04x, want %#04x", c.name, c.in, got, c.want)
		}
	}
}

func TestFP16Codec(t *testing.T) {
	in := []float32{0, 1, -2.5, 65504, 1e-7, float32(math.Inf(-1))}
	b := EncodeFP16(in)
	if len(b) != FP16Len(len(in)) {
		t.Fatalf("%d bytes for %d values", len(b), len(in))
	}
	if got := binary.LittleEndian.Uint16(b[4:]); got != 0xc100 {
		t.Errorf("-2.5 encoded as %#04x, want 0xc100 little-endian", got)
	}
	out, err := DecodeFP16(b)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{0, 1, -2.5, 65504, HalfToFloat32(Float32ToHalf(1e-7)), float32(math.Inf(-1))}
	for i := range want {
		if out[i] != want[i] {
			t.Errorf("value %d: %v, want %v", i, out[i], want[i])
		}
	}
	if out, err := DecodeFP16(nil); err != nil || len(out) != 0 {
		t.Errorf("empty: %v %v", out, err)
	}
	if _, err := DecodeFP16([]byte{1, 2, 3}); !errors.Is(err, ErrMalformed) {
		t.Errorf("odd length: %v, want ErrMalformed", err)
	}
	if _, err := DecodeFP16(make([]byte, 2*MaxValues+2)); !errors.Is(err, ErrTooLong) {
		t.Errorf("MaxValues+1 values: %v, want ErrTooLong", err)
	}
	if _, err := DecodeFP16(make([]byte, 2*MaxValues)); err != nil {
		t.Errorf("MaxValues values: %v", err)
	}
}

func TestFitsFP16(t *testing.T) {
	cases := []struct {
		in   []float32
		want bool
	}{
		{nil, true},
		{[]float32{0, -65504, 65504, 1e-30}, true},
		{[]float32{65519}, true},
		{[]float32{65520}, false},
		{[]float32{1, float32(math.NaN())}, false},
		{[]float32{float32(math.Inf(1))}, false},
	}
	for _, c := range cases {
		if got := FitsFP16(c.in); got != c.want {
			t.Errorf("FitsFP16(%v) = %v", c.in, got)
		}
	}
}

func TestInt8Codec(t *testing.T) {
	cases := []struct {
		name  string
		in    []float32
		scale float32
		q     []int8
	}{
		{"empty", nil, 0, nil},
		{"zeros", []float32{0, 0, 0}, 0, []int8{0, 0, 0}},
		{"symmetric", []float32{-1, 0.5, 1}, 1.0 / 127, []int8{-127, 64, 127}},
		{"negative largest", []float32{-254, 1, 3}, 2, []int8{-127, 0, 2}},
		{"ties to even", []float32{127, 0.5, 1.5, -2.5}, 1, []int8{127, 0, 2, -2}},
		{"NaN becomes 0, Inf saturates", []float32{float32(math.NaN()), float32(math.Inf(-1)), 127}, 1, []int8{0, -127, 127}},
		{"largest float32", []float32{math.MaxFloat32, -math.MaxFloat32 / 2}, math.Nextafter32(math.MaxFloat32/127, 0), []int8{127, -64}},
	}
	for _, c := range cases {
		b := EncodeInt8(c.in)
		if len(b) != Int8Len(len(c.in)) {
			t.Fatalf("%s: %d bytes", c.name, len(b))
		}
		if got := math.Float32frombits(binary.LittleEndian.Uint32(b)); got != c.scale {
			t.Errorf("%s: scale %v, want %v", c.name, got, c.scale)
		}
		for i, want := range c.q {
			if got := int8(b[4+i]); got != want {
				t.Errorf("%s: q[%d] = %d, want %d", c.name, i, got, want)
			}
		}
		out, err := DecodeInt8(b)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for i, q := range c.q {
			if want := float32(q) * c.scale; out[i] != want {
				t.Errorf("%s: value %d: %v, want %v", c.name, i, out[i], want)
			}
		}
	}
	bad := []struct {
		name string
		in   []byte
		want error
	}{
		{"no scale", []byte{1, 2, 3}, ErrMalformed},
		{"negative scale", append(le32(-1), 1), ErrMalformed},
		{"negative zero scale", append(le32(float32(math.Copysign(0, -1))), 1), ErrMalformed},
		{"NaN scale", append(le32(float32(math.NaN())), 1), ErrMalformed},
		{"infinite scale", append(le32(float32(math.Inf(1))), 1), ErrMalformed},
		{"scale overflowing at 127 (found by FuzzDecodeInt8)", append(le32(2.3419433e38/127*127), 127), ErrMalformed},
		{"scale overflowing at 127, value 0", append(le32(float32(math.MaxFloat32)/100), 0), ErrMalformed},
		{"-128", append(le32(1), 5, 0x80), ErrMalformed},
		{"too long", make([]byte, 4+MaxValues+1), ErrTooLong},
	}
	for _, c := range bad {
		if _, err := DecodeInt8(c.in); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
}

func le32(f float32) []byte { return binary.LittleEndian.AppendUint32(nil, math.Float32bits(f)) }

func TestCosineAndRelativeL2(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	cases := []struct {
		name     string
		a, b     []float32
		cos, rel float64
	}{
		{"same", []float32{1, 2, 3}, []float32{1, 2, 3}, 1, 0},
		{"opposite", []float32{1, 2}, []float32{-1, -2}, -1, 2},
		{"orthogonal", []float32{1, 0}, []float32{0, 3}, 0, math.Sqrt(10)},
		{"scaled", []float32{3, 4}, []float32{6, 8}, 1, 1},
		{"length differs", []float32{1}, []float32{1, 2}, nan, nan},
		{"empty", nil, nil, nan, 0},
		{"zero reference", []float32{0, 0}, []float32{0, 1}, nan, inf},
		{"both zero", []float32{0, 0}, []float32{0, 0}, nan, 0},
		{"NaN", []float32{1, float32(nan)}, []float32{1, 1}, nan, nan},
		{"Inf", []float32{1, float32(inf)}, []float32{1, float32(inf)}, nan, nan},
	}
	same := func(got, want float64) bool {
		if math.IsNaN(want) {
			return math.IsNaN(got)
		}
		return math.Abs(got-want) < 1e-12 || got == want
	}
	for _, c := range cases {
		if got := Cosine(c.a, c.b); !same(got, c.cos) {
			t.Errorf("%s: Cosine = %v, want %v", c.name, got, c.cos)
		}
		if got := RelativeL2(c.a, c.b); !same(got, c.rel) {
			t.Errorf("%s: RelativeL2 = %v, want %v", c.name, got, c.rel)
		}
	}
}

// unitVector returns a random direction of dim dimensions (normal
// components, normalized), the shape of a speaker embedding.
func unitVector(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		x := rng.NormFloat64()
		v[i] = float32(x)
		n += x * x
	}
	n = math.Sqrt(n)
	for i := range v {
		v[i] = float32(float64(v[i]) / n)
	}
	return v
}

type quality struct {
	minCos, meanCos, maxRel, meanRel float64
}

func measure(rng *rand.Rand, dim, n int, roundTrip func([]float32) []float32) quality {
	q := quality{minCos: 1}
	for range n {
		v := unitVector(rng, dim)
		w := roundTrip(v)
		c, r := Cosine(v, w), RelativeL2(v, w)
		q.minCos = min(q.minCos, c)
		q.maxRel = max(q.maxRel, r)
		q.meanCos += c / float64(n)
		q.meanRel += r / float64(n)
	}
	return q
}

func fp16Trip(v []float32) []float32 {
	out, err := DecodeFP16(EncodeFP16(v))
	if err != nil {
		panic(err)
	}
	return out
}

func int8Trip(v []float32) []float32 {
	out, err := DecodeInt8(EncodeInt8(v))
	if err != nil {
		panic(err)
	}
	return out
}

// The speaker cache's promise: fp16 keeps random unit vectors at cosine
// ≥ 0.9995 and int8 at ≥ 0.999 (the worst of 2000 vectors, not the mean).
func TestQuality(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	for _, dim := range []int{128, 192, 256, 512} {
		for _, c := range []struct {
			name   string
			trip   func([]float32) []float32
			minCos float64
		}{{"fp16", fp16Trip, 0.9995}, {"int8", int8Trip, 0.999}} {
			q := measure(rng, dim, 2000, c.trip)
			t.Logf("%s dim %d: 1-cosine mean %.2e worst %.2e; relative L2 mean %.2e worst %.2e",
				c.name, dim, 1-q.meanCos, 1-q.minCos, q.meanRel, q.maxRel)
			if q.minCos < c.minCos {
				t.Errorf("%s dim %d: worst cosine %.7f below %v", c.name, dim, q.minCos, c.minCos)
			}
		}
	}
}

func FuzzDecodeFP16(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0x00, 0x3c})
	f.Add([]byte{0xff, 0x7f, 0x01, 0x7c, 0x00, 0x80})
	f.Add([]byte{1, 2, 3})
	f.Add(EncodeFP16([]float32{0.1, -0.2, 65504, 1e-7}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeFP16(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("%v wraps no sentinel", err)
			}
			if len(b)%2 == 0 && len(b)/2 <= MaxValues {
				t.Fatalf("%d bytes refused: %v", len(b), err)
			}
			return
		}
		// Every half survives float32: the bytes come back exactly.
		if back := EncodeFP16(v); !bytes.Equal(back, b) {
			t.Fatalf("%x → %v → %x", b, v, back)
		}
	})
}

func FuzzDecodeInt8(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 0})
	f.Add(append(le32(0.01), 1, 0x81, 127, 0))
	f.Add(append(le32(1), 0x80))
	f.Add(append(le32(float32(math.NaN())), 1))
	f.Add(EncodeInt8([]float32{0.3, -0.1, 0.02}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := DecodeInt8(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrTooLong) {
				t.Fatalf("%v wraps no sentinel", err)
			}
			return
		}
		if len(v) != len(b)-4 {
			t.Fatalf("%d values from %d bytes", len(v), len(b))
		}
		scale := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		for i, x := range v {
			if math.IsNaN(float64(x)) || math.Abs(float64(x)) > 127*scale*(1+1e-6) {
				t.Fatalf("value %d = %v outside ±127 × %v", i, x, scale)
			}
		}
		// Encoding the decoded values again reproduces them to within
		// half the new step, plus float32 rounding: relative, and absolute
		// for subnormal scales, where the scale's own rounding error (up
		// to half the smallest subnormal) is multiplied by up to 127.
		again, err := DecodeInt8(EncodeInt8(v))
		if err != nil {
			t.Fatal(err)
		}
		step := float64(math.Float32frombits(binary.LittleEndian.Uint32(EncodeInt8(v))))
		for i := range v {
			if d := math.Abs(float64(again[i]) - float64(v[i])); d > step/2*(1+1e-5)+1e-6*math.Abs(float64(v[i]))+128*math.SmallestNonzeroFloat32 {
				t.Fatalf("value %d: %v re-encoded as %v (step %v)", i, v[i], again[i], step)
			}
		}
	})
}
