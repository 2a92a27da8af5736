package audio

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// The decoder's hot loops against plain implementations of the format, on
// random input: every predictor and split position, whole and partial
// blocks and partitions, escapes, and samples that leave the int16 range.

// referenceRestore is restore written as the format defines it.
func referenceRestore(x []int16, h int, res []int32, b *blockDesc) bool {
	for i, r := range res {
		n := h + i
		var pred int64
		switch {
		case b.pred == 0:
		case b.pred&phraseLPCCode == 0:
			// FLAC's fixed polynomials: binomial coefficients.
			coefs := [][]int64{nil, {1}, {2, -1}, {3, -3, 1}, {4, -6, 4, -1}}[b.pred]
			for j, c := range coefs {
				pred += c * int64(x[n-1-j])
			}
		default:
			for j, c := range b.lpc.coefs[:b.lpc.order] {
				pred += int64(c) * int64(x[n-1-j])
			}
			pred >>= b.lpc.shift
		}
		v := pred + int64(r)
		if v < -32768 || v > 32767 {
			return false
		}
		x[n] = int16(v)
	}
	return true
}

// randomBlock makes a predictor, history and residuals whose output mostly
// stays in range (the residual is what the predictor needs to follow a
// random walk), and sometimes leaves it.
func randomBlock(rng *rand.Rand, pred, n int) (*blockDesc, []int16, []int32) {
	b := &blockDesc{pred: pred}
	if pred&phraseLPCCode != 0 {
		b.lpc.order = pred &^ phraseLPCCode
		b.lpc.shift = uint(rng.IntN(phraseMaxShift + 1))
		for j := range b.lpc.order {
			b.lpc.coefs[j] = int32(rng.IntN(1<<phraseCoefBits)) - 1<<(phraseCoefBits-1)
		}
	}
	x := make([]int16, phraseMaxOrder+n)
	for i := range phraseMaxOrder {
		x[i] = int16(rng.IntN(2000) - 1000)
	}
	res := make([]int32, n)
	walk := make([]int16, len(x))
	copy(walk, x)
	for i := range res {
		target := int64(walk[phraseMaxOrder+i-1]) + int64(rng.IntN(201)-100)
		if rng.IntN(1000) == 0 {
			target += int64(rng.IntN(80000) - 40000) // may leave the range
		}
		// The residual that reaches target from the reference prediction.
		one := []int32{0}
		tmp := slices.Clone(walk[:phraseMaxOrder+i+1])
		referenceRestore(tmp, phraseMaxOrder+i, one, b)
		r := target - int64(tmp[phraseMaxOrder+i])
		r = max(-phraseMaxResidual, min(phraseMaxResidual, r))
		res[i] = int32(r)
		one[0] = res[i]
		if !referenceRestore(walk, phraseMaxOrder+i, one, b) {
			break // the rest of walk does not matter: the block fails
		}
	}
	return b, x, res
}

func TestRestoreMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	preds := []int{0, 1, 2, 3, 4}
	for order := 1; order <= phraseMaxOrder; order++ {
		preds = append(preds, phraseLPCCode|order)
	}
	fails := 0
	for _, pred := range preds {
		whole := 0 // blocks of phraseBlockFrames samples that stayed in range
		for _, n := range []int{1, 2, 3, 31, 32, 33, 511, phraseBlockFrames} {
			for trial := range 20 {
				b, x, res := randomBlock(rng, pred, n)
				want := slices.Clone(x)
				wantOK := referenceRestore(want, phraseMaxOrder, res, b)
				got := slices.Clone(x)
				gotOK := restore(got, phraseMaxOrder, res, b)
				name := fmt.Sprintf("pred %#x, %d samples, trial %d", pred, n, trial)
				if gotOK != wantOK {
					t.Fatalf("%s: restore says %v, reference %v", name, gotOK, wantOK)
				}
				if !wantOK {
					fails++
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: samples differ from the reference", name)
				}
				if n == phraseBlockFrames {
					whole++
				}
			}
		}
		if whole == 0 {
			t.Errorf("pred %#x: no whole block stayed in range: the test checked nothing", pred)
		}
	}
	if fails == 0 {
		t.Error("no block left the int16 range: the range checks went untested")
	}
}

// referenceResidual decodes a partition as the format defines it: nibble n
// is the high part plus phraseBias, 15 escapes to a zig-zag varint, the
// low k bits come least significant bit first.
func referenceResidual(m int, q, raw []byte, k uint, esc []byte) ([]int32, []byte, bool) {
	out := make([]int32, m)
	for i := range out {
		var low int64
		for b := range k {
			bit := uint(i)*k + b
			low |= int64(raw[bit/8]>>(bit%8)&1) << b
		}
		high := int64(q[i/2]>>(4*(i%2))&15) - phraseBias
		if high+phraseBias == phraseEscape {
			var x uint64
			var s uint
			for {
				if len(esc) == 0 || s > 63 {
					return nil, nil, false
				}
				c := esc[0]
				esc = esc[1:]
				x |= uint64(c&0x7f) << s
				s += 7
				if c < 0x80 {
					break
				}
			}
			if x > 2*phraseMaxResidual+1 {
				return nil, nil, false
			}
			high = int64(x>>1) ^ -int64(x&1)
		}
		r := high<<k | low
		if r < -phraseMaxResidual || r > phraseMaxResidual {
			return nil, nil, false
		}
		out[i] = int32(r)
	}
	return out, esc, true
}

func TestDecodeResidualMatchesReference(t *testing.T) {
	// Both unpackers: the assembly where the CPU has it, and pure Go.
	saved := useAVX2
	defer func() { useAVX2 = saved }()
	for _, avx2 := range []bool{false, saved} {
		useAVX2 = avx2
		t.Run(fmt.Sprintf("avx2=%v", avx2), testDecodeResidualMatchesReference)
	}
}

func testDecodeResidualMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for k := uint(0); k <= phraseMaxK; k++ {
		for _, n := range []int{1, 2, 31, 32, 33, 63, 64, 100, phraseBlockFrames} {
			for trial := range 10 {
				parts := (n + phrasePartFrames - 1) / phrasePartFrames
				ks := make([]uint8, parts)
				var q, raw, esc []byte
				for p := range parts {
					// Mostly this k, sometimes another, so that partitions
					// of different widths follow each other.
					ks[p] = uint8(k)
					if rng.IntN(4) == 0 {
						ks[p] = uint8(rng.IntN(phraseMaxK + 1))
					}
					m := min(phrasePartFrames, n-p*phrasePartFrames)
					for range (m + 1) / 2 {
						b := byte(rng.IntN(256))
						if rng.IntN(3) > 0 {
							b = b&0xee | 0x66 // no escape nibble
						}
						q = append(q, b)
					}
					for range (int(ks[p])*m + 7) / 8 {
						raw = append(raw, byte(rng.IntN(256)))
					}
				}
				for range rng.IntN(20) * 8 {
					esc = append(esc, byte(rng.IntN(256)))
				}
				padded := append(slices.Clone(raw), make([]byte, rawPad)...)
				got := make([]int32, n)
				gq, graw, gesc, err := decodeResidual(got, ks, q, padded, esc)

				want := make([]int32, 0, n)
				rq, rraw, resc, ok := q, raw, esc, true
				for p := 0; p < parts && ok; p++ {
					m := min(phrasePartFrames, n-p*phrasePartFrames)
					var part []int32
					part, resc, ok = referenceResidual(m, rq, rraw, uint(ks[p]), resc)
					want = append(want, part...)
					rq, rraw = rq[(m+1)/2:], rraw[(int(ks[p])*m+7)/8:]
				}
				name := fmt.Sprintf("k %d, %d samples, trial %d", k, n, trial)
				if (err == nil) != ok {
					t.Fatalf("%s: decodeResidual error %v, reference ok %v (ks %v q %x raw %x esc %x got %v)", name, err, ok, ks, q, raw, esc, got)
				}
				if !ok {
					continue
				}
				if !slices.Equal(got, want) {
					t.Fatalf("%s: residuals differ from the reference", name)
				}
				if len(gq) != len(rq) || len(graw) != len(rraw)+rawPad || len(gesc) != len(resc) {
					t.Fatalf("%s: left %d/%d/%d bytes, reference %d/%d/%d", name,
						len(gq), len(graw)-rawPad, len(gesc), len(rq), len(rraw), len(resc))
				}
			}
		}
	}
}

// The unpackers agree on every split position and every byte value: the
// assembly (where the CPU has it) against pure Go, pure Go against the
// reference.
func TestFullPartitionMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for k := uint(0); k <= fastMaxK; k++ {
		for trial := range 200 {
			var q [phrasePartFrames / 2]byte
			var raw [rawPad]byte
			for i := range q {
				q[i] = byte(rng.IntN(256))
				if q[i]&15 == phraseEscape {
					q[i]-- // no escapes on this path
				}
				if q[i]>>4 == phraseEscape {
					q[i] -= 16
				}
			}
			if trial == 0 { // the extremes: all ones, all zeros
				for i := range q {
					q[i] = 0xee
				}
			}
			for i := range 4 * k {
				raw[i] = byte(rng.IntN(256))
				if trial == 0 {
					raw[i] = 0xff
				}
			}
			want, _, ok := referenceResidual(phrasePartFrames, q[:], raw[:], k, nil)
			if !ok {
				t.Fatalf("k %d: reference rejects the partition", k)
			}
			var goRes, res [phrasePartFrames]int32
			fullPartitionGo(&goRes, &q, &raw, k)
			fullPartition(&res, &q, &raw, k)
			if !slices.Equal(goRes[:], want) {
				t.Fatalf("k %d trial %d: fullPartitionGo differs from the reference", k, trial)
			}
			if res != goRes {
				t.Fatalf("k %d trial %d: fullPartition (avx2 %v) differs from fullPartitionGo", k, trial, useAVX2)
			}
		}
	}
}
