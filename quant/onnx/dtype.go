package onnx

import (
	"fmt"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// DataType is an ONNX tensor element type (TensorProto.DataType).
type DataType int32

// The element types mynah uses by name; the others keep their numbers.
const (
	Undefined  = DataType(onnxpb.TensorProto_UNDEFINED)
	Float      = DataType(onnxpb.TensorProto_FLOAT)
	Uint8      = DataType(onnxpb.TensorProto_UINT8)
	Int8       = DataType(onnxpb.TensorProto_INT8)
	Uint16     = DataType(onnxpb.TensorProto_UINT16)
	Int16      = DataType(onnxpb.TensorProto_INT16)
	Int32      = DataType(onnxpb.TensorProto_INT32)
	Int64      = DataType(onnxpb.TensorProto_INT64)
	String     = DataType(onnxpb.TensorProto_STRING)
	Bool       = DataType(onnxpb.TensorProto_BOOL)
	Float16    = DataType(onnxpb.TensorProto_FLOAT16)
	Double     = DataType(onnxpb.TensorProto_DOUBLE)
	Uint32     = DataType(onnxpb.TensorProto_UINT32)
	Uint64     = DataType(onnxpb.TensorProto_UINT64)
	Complex64  = DataType(onnxpb.TensorProto_COMPLEX64)
	Complex128 = DataType(onnxpb.TensorProto_COMPLEX128)
	BFloat16   = DataType(onnxpb.TensorProto_BFLOAT16)
	Uint4      = DataType(onnxpb.TensorProto_UINT4)
	Int4       = DataType(onnxpb.TensorProto_INT4)
	Float4E2M1 = DataType(onnxpb.TensorProto_FLOAT4E2M1)
)

// Bits returns the storage width of one element in raw_data, or 0 for types
// that have no fixed width (strings, undefined, unknown).
func (d DataType) Bits() int {
	switch d {
	case Bool, Uint8, Int8:
		return 8
	case Float16, BFloat16, Int16, Uint16:
		return 16
	case Float, Int32, Uint32:
		return 32
	case Int64, Uint64, Double, Complex64:
		return 64
	case Complex128:
		return 128
	case Uint4, Int4, Float4E2M1:
		return 4
	case DataType(onnxpb.TensorProto_FLOAT8E4M3FN), DataType(onnxpb.TensorProto_FLOAT8E4M3FNUZ),
		DataType(onnxpb.TensorProto_FLOAT8E5M2), DataType(onnxpb.TensorProto_FLOAT8E5M2FNUZ):
		return 8
	}
	return 0
}

func (d DataType) String() string {
	if s, ok := onnxpb.TensorProto_DataType_name[int32(d)]; ok {
		return s
	}
	return fmt.Sprintf("DataType(%d)", int32(d))
}
