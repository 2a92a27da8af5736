//go:build amd64 && !purego

#include "textflag.h"

// func unpackAVX2(res *[32]int32, q *[16]byte, raw *[72]byte, k uint, ctl *unpackControl)
//
// Eight samples per round: their raw bits (k bytes from a byte boundary)
// are spread to one 32-bit lane each by a byte shuffle and a per-lane
// shift, their nibbles likewise from four quotient bytes, and the lanes
// combine as (nibble-phraseBias)<<k + low bits. Only VEX instructions, so
// that no SSE/AVX transition stalls, and VZEROUPPER before returning to Go.
// Reads raw[:3k+16] (at most 64 bytes) and q[:16], writes res.
TEXT ·unpackAVX2(SB), NOSPLIT, $0-40
	MOVQ res+0(FP), DI
	MOVQ q+8(FP), SI
	MOVQ raw+16(FP), DX
	MOVQ k+24(FP), CX
	MOVQ ctl+32(FP), R8
	VMOVDQU 0(R8), Y8     // rawShuffle
	VMOVDQU 32(R8), Y9    // rawShift
	VMOVDQU 64(R8), Y10   // rawMask
	VMOVDQU 96(R8), Y11   // nibShuffle
	VMOVDQU 128(R8), Y12  // nibShift
	VMOVDQU 160(R8), Y13  // nibMask
	VMOVDQU 192(R8), Y14  // bias
	VMOVQ CX, X7          // k, the shift count of the high parts
	MOVL $4, R11

loop:
	VBROADCASTI128 (DX), Y0
	VPSHUFB Y8, Y0, Y0
	VPSRLVD Y9, Y0, Y0
	VPAND Y10, Y0, Y0
	VPBROADCASTD (SI), Y1
	VPSHUFB Y11, Y1, Y1
	VPSRLVD Y12, Y1, Y1
	VPAND Y13, Y1, Y1
	VPSUBD Y14, Y1, Y1
	VPSLLD X7, Y1, Y1
	VPADDD Y1, Y0, Y0
	VMOVDQU Y0, (DI)
	ADDQ CX, DX
	ADDQ $4, SI
	ADDQ $32, DI
	DECQ R11
	JNZ loop
	VZEROUPPER
	RET
