//go:build amd64 && !purego

package audio

import "golang.org/x/sys/cpu"

// The phrase decoder's residual unpacking with AVX2, eight samples per
// vector instruction: about four times as fast as fullPartitionGo, which
// takes a quarter to a third of the decoding time on amd64 (where every
// variable shift needs the CL register and the compiler runs out of
// registers). Build with -tags purego for the pure Go path; the tests run
// both on a CPU with AVX2.

// useAVX2 reports whether fullPartition may use unpackAVX2. Tests turn it
// off to check the pure Go path on the same machine.
var useAVX2 = cpu.X86.HasAVX2 // and the OS saves the YMM registers

func fullPartition(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	if useAVX2 {
		unpackAVX2(res, q, raw, k, &unpackControls[k])
		return
	}
	fullPartitionGo(res, q, raw, k)
}

// unpackControl holds unpackAVX2's vectors for one split position k (the
// field offsets are part of the assembly).
type unpackControl struct {
	rawShuffle [32]byte  // per lane: the 4 bytes that hold its raw bits
	rawShift   [8]uint32 // per lane: where its raw bits start in them
	rawMask    [8]uint32 // 1<<k - 1
	nibShuffle [32]byte  // per lane: the byte that holds its nibble
	nibShift   [8]uint32 // 0 or 4
	nibMask    [8]uint32 // 15
	bias       [8]uint32 // phraseBias
}

var unpackControls = func() (t [fastMaxK + 1]unpackControl) {
	for k := range t {
		c := &t[k]
		for i := range 8 {
			// Sample i of a group of eight starts at bit i*k. A lane's
			// bytes past the sixteen the shuffle sees are never among its k
			// bits (8k bits end within byte k-1), so they read as zero.
			b := i * k / 8
			for j := range 4 {
				c.rawShuffle[4*i+j] = 0x80
				if b+j < 16 {
					c.rawShuffle[4*i+j] = byte(b + j)
				}
				c.nibShuffle[4*i+j] = 0x80
			}
			c.rawShift[i] = uint32(i * k % 8)
			c.rawMask[i] = 1<<k - 1
			// Each 128-bit half of the shuffle sees the four quotient
			// bytes of the group: lanes 0-3 take bytes 0 and 1, lanes 4-7
			// bytes 2 and 3.
			c.nibShuffle[4*i] = byte(i / 2)
			c.nibShift[i] = uint32(4 * (i & 1))
			c.nibMask[i] = 15
			c.bias[i] = phraseBias
		}
	}
	return t
}()

// unpackAVX2 is fullPartitionGo with AVX2 for k <= fastMaxK.
//
//go:noescape
func unpackAVX2(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint, ctl *unpackControl)
