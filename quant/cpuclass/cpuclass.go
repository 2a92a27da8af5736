// Package cpuclass names the classes of CPU on which ONNX Runtime's
// integer MatMul kernels behave alike, and the int8 weight format that
// each computes exactly.
//
// ONNX Runtime multiplies uint8 activations by int8 weights. On x86-64
// without VNNI its kernel (vpmaddubsw) adds each pair of u8·s8 products
// in a 16-bit register, which saturates when both weights of a pair are
// near ±127 and the activations near 255: 2·255·127 = 64770 > 32767.
// VNNI's vpdpbusd and arm64's sdot/udot (and its plain NEON kernels,
// which widen to 16 bits before adding) accumulate in 32 bits and never
// saturate. Where no pair saturates the integer product is exact, so a
// model quantized in a format exact on two classes computes the same
// integers on both, and a quality gate's verdict holds on both.
package cpuclass

import (
	"fmt"
	"runtime"
	"strings"

	"golang.org/x/sys/cpu"
)

// Class is a class of CPU as ONNX Runtime's integer kernels see it.
type Class string

// The classes.
const (
	// VNNI is x86-64 with AVX-VNNI or AVX512-VNNI (Intel since Ice Lake
	// and Alder Lake, AMD since Zen 4).
	VNNI Class = "vnni"
	// AVX2 is every other x86-64 CPU: AVX2 without VNNI (AMD Zen 1–3,
	// Intel Haswell to Comet Lake, Atom-class mini PCs) and older.
	AVX2 Class = "avx2"
	// ARM64 is 64-bit Arm: Raspberry Pi 4 and 5, Jetson, Apple silicon.
	ARM64 Class = "arm64"
)

// Classes are the classes in the order they are documented.
var Classes = []Class{VNNI, AVX2, ARM64}

// Parse parses a class name; "" is an error (use Host).
func Parse(s string) (Class, error) { return parse(s, Classes, "cpu class") }

// parse returns the one of all that is s.
func parse[T ~string](s string, all []T, what string) (T, error) {
	names := make([]string, len(all))
	for i, v := range all {
		if string(v) == s {
			return v, nil
		}
		names[i] = string(v)
	}
	return "", fmt.Errorf("%s %q: want %s", what, s, strings.Join(names, ", "))
}

// Host returns the class of the CPU this process runs on. It reads the
// CPU's feature flags through golang.org/x/sys/cpu, which also checks
// that the kernel saves the registers the features need. A CPU of
// another architecture is reported as AVX2, the class whose format is
// exact everywhere.
func Host() Class {
	return classify(runtime.GOARCH, cpu.X86.HasAVXVNNI, cpu.X86.HasAVX512VNNI)
}

func classify(goarch string, avxVNNI, avx512VNNI bool) Class {
	switch {
	case goarch == "arm64":
		return ARM64
	case (goarch == "amd64" || goarch == "386") && (avxVNNI || avx512VNNI):
		return VNNI
	}
	return AVX2
}

// Int8Format is how int8 quantization stores MatMul and Gemm weights.
type Int8Format string

// The formats.
const (
	// FullRange is signed weights in [-127, 127], multiplied by uint8
	// activations (ONNX Runtime's U8S8 kernels). Exact on VNNI and arm64.
	FullRange Int8Format = "s8"
	// ReducedRange is signed weights in [-63, 63]: a pair of products is
	// at most 2·255·63 = 32130 and fits 16 bits, so the U8S8 kernels are
	// exact on every CPU, at the cost of one bit of weight precision.
	ReducedRange Int8Format = "s8-7bit"
	// Unsigned is the same [-127, 127] weights stored as uint8 offset by
	// 128 with a zero point of 128 (ONNX Runtime's U8U8 kernels, which
	// widen both operands to 16 bits): exact on every CPU at full
	// precision, but those kernels do half the work per instruction.
	Unsigned Int8Format = "u8"
)

// Formats are the formats in the order they are documented.
var Formats = []Int8Format{FullRange, ReducedRange, Unsigned}

// ParseInt8Format parses a format name.
func ParseInt8Format(s string) (Int8Format, error) { return parse(s, Formats, "int8 format") }

// Int8FormatFor is the format int8 quantization uses for CPUs of class
// c: full range where it is exact, else 7-bit weights. On the AVX2 CPUs
// measured (README, quantization) 7-bit weights were as accurate as U8U8
// for the voices' decoders and faster; see the README for the numbers.
func Int8FormatFor(c Class) Int8Format {
	if c == VNNI || c == ARM64 {
		return FullRange
	}
	return ReducedRange
}

// ExactOn reports whether ONNX Runtime computes MatMulInteger with
// weights of format f exactly on CPUs of class c.
func (f Int8Format) ExactOn(c Class) bool {
	switch f {
	case ReducedRange, Unsigned:
		return true
	case FullRange:
		return c == VNNI || c == ARM64
	}
	return false
}

// ExactClasses are the classes on which f is exact.
func (f Int8Format) ExactClasses() []Class {
	var cs []Class
	for _, c := range Classes {
		if f.ExactOn(c) {
			cs = append(cs, c)
		}
	}
	return cs
}

// List writes classes as "vnni, avx2, arm64".
func List(cs []Class) string {
	var b strings.Builder
	for i, c := range cs {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(string(c))
	}
	return b.String()
}
