package ort

import (
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/mynah-tts/mynah/quant/onnx"
)

// modelIO returns a model's inputs and outputs as ONNX Runtime reports
// them. The session needs their names before it exists, and
// onnxruntime_go reads them only through a throwaway session, which cost
// as much as the real one (BenchmarkNewSession); so they are read from
// the protobuf (scanModelIO), and ONNX Runtime is asked only for a model
// whose file cannot tell what Run needs to know.
func modelIO(model []byte) (inputs, outputs []TensorInfo, err error) {
	inputs, outputs, complete, err := scanModelIO(model)
	if err != nil || complete {
		return inputs, outputs, err
	}
	return ortModelIO(model)
}

// scanModelIO reads a model's inputs and outputs from its protobuf: the
// graph's inputs that are not initializers, its outputs, each tensor's
// element type, and its dims with -1 for a symbolic or unknown one (none
// at all when the shape is left out). That is what ONNX Runtime reports
// for inputs. For outputs, ONNX Runtime merges in what its shape inference
// finds: an output the file declares [N, 3] may be [2, 3] there, and one
// declared without a shape gets the inferred rank. Only two such cases
// change what Run does — an output of unknown rank (Run takes it for a
// scalar) and a float16 output with a dimension left open (Run allocates
// float16 outputs itself, so it needs the shape) — and for them complete
// is false: the caller asks ONNX Runtime.
//
// A full protobuf decode would copy every weight; this walks the wire
// format instead, reads only ModelProto.graph's input, output and
// initializer names, and steps over weight payloads without touching
// them. Repeated occurrences of a message field merge, as protobuf
// parsers (ONNX Runtime's included) merge them.
func scanModelIO(model []byte) (inputs, outputs []TensorInfo, complete bool, err error) {
	var g graphIO
	if err := scanMessage(model, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == 7 && typ == protowire.BytesType { // ModelProto.graph
			g.present = true
			return g.scan(v)
		}
		return nil
	}); err != nil {
		return nil, nil, false, fmt.Errorf("%w: %v", ErrInvalidModel, err)
	}
	if !g.present {
		return nil, nil, false, fmt.Errorf("%w: no graph", ErrInvalidModel)
	}
	complete = true
	for _, v := range g.inputs {
		// Before IR version 4 every initializer was listed as an input
		// too; ONNX Runtime leaves those out (they can be overridden, but
		// need not be fed).
		if g.initializers[v.name] {
			continue
		}
		t, err := v.info("input")
		if err != nil {
			return nil, nil, false, err
		}
		inputs = append(inputs, t)
	}
	for _, v := range g.outputs {
		t, err := v.info("output")
		if err != nil {
			return nil, nil, false, err
		}
		if !v.hasShape || (t.Type == Float16 && !t.static()) {
			complete = false
		}
		outputs = append(outputs, t)
	}
	return inputs, outputs, complete, nil
}

// graphIO is what modelIO keeps of a GraphProto.
type graphIO struct {
	present         bool
	inputs, outputs []valueIO
	initializers    map[string]bool
}

func (g *graphIO) scan(b []byte) error {
	return scanMessage(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 5: // initializer: TensorProto
			name, err := tensorName(v)
			if err != nil {
				return fmt.Errorf("graph initializer: %w", err)
			}
			g.initialize(name)
		case 15: // sparse_initializer: SparseTensorProto, named by its values
			var name string
			err := scanMessage(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
				if num != 1 || typ != protowire.BytesType {
					return nil
				}
				n, err := tensorName(v)
				if n != "" || err != nil {
					name = n // a merged message keeps the last name set
				}
				return err
			})
			if err != nil {
				return fmt.Errorf("graph sparse initializer: %w", err)
			}
			g.initialize(name)
		case 11, 12: // input, output: ValueInfoProto
			var vi valueIO
			if err := vi.scan(v); err != nil {
				return fmt.Errorf("graph value: %w", err)
			}
			if num == 11 {
				g.inputs = append(g.inputs, vi)
			} else {
				g.outputs = append(g.outputs, vi)
			}
		}
		return nil
	})
}

func (g *graphIO) initialize(name string) {
	if g.initializers == nil {
		g.initializers = make(map[string]bool)
	}
	g.initializers[name] = true
}

// tensorName is a TensorProto's name; its data is stepped over.
func tensorName(b []byte) (string, error) {
	var name string
	err := scanMessage(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num == 8 && typ == protowire.BytesType {
			name = string(v)
		}
		return nil
	})
	return name, err
}

// Kinds of TypeProto's value (its oneof), named as in errors.
const (
	typeNone     = ""
	typeTensor   = "tensor"
	typeSequence = "sequence"
	typeMap      = "map"
	typeOptional = "optional"
	typeSparse   = "sparse tensor"
)

// valueIO is what modelIO keeps of a ValueInfoProto.
type valueIO struct {
	name     string
	kind     string // of its TypeProto's value
	elem     int32
	hasShape bool
	dims     []int64
}

func (vi *valueIO) scan(b []byte) error {
	return scanMessage(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		switch num {
		case 1:
			vi.name = string(v)
		case 2:
			return vi.scanType(v)
		}
		return nil
	})
}

// scanType reads a TypeProto. Its value is a oneof: a member seen again
// merges into what is there, another member replaces it.
func (vi *valueIO) scanType(b []byte) error {
	return scanMessage(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if typ != protowire.BytesType {
			return nil
		}
		var kind string
		switch num {
		case 1:
			kind = typeTensor
		case 4:
			kind = typeSequence
		case 5:
			kind = typeMap
		case 9:
			kind = typeOptional
		case 8:
			kind = typeSparse
		default:
			return nil
		}
		if vi.kind != kind {
			vi.kind, vi.elem, vi.hasShape, vi.dims = kind, 0, false, nil
		}
		if kind != typeTensor {
			return nil
		}
		return scanMessage(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case num == 1 && typ == protowire.VarintType: // elem_type
				x, _ := protowire.ConsumeVarint(v)
				vi.elem = int32(x)
			case num == 2 && typ == protowire.BytesType: // shape
				vi.hasShape = true
				return vi.scanShape(v)
			}
			return nil
		})
	})
}

// scanShape appends a TensorShapeProto's dims.
func (vi *valueIO) scanShape(b []byte) error {
	return scanMessage(b, func(num protowire.Number, typ protowire.Type, v []byte) error {
		if num != 1 || typ != protowire.BytesType {
			return nil
		}
		d := int64(-1) // dim_param, or neither: ONNX Runtime says -1
		err := scanMessage(v, func(num protowire.Number, typ protowire.Type, v []byte) error {
			switch {
			case num == 1 && typ == protowire.VarintType: // dim_value
				x, _ := protowire.ConsumeVarint(v)
				d = int64(x)
			case num == 2 && typ == protowire.BytesType: // dim_param
				d = -1
			}
			return nil
		})
		vi.dims = append(vi.dims, d)
		return err
	})
}

// info is the value as a TensorInfo; kind says which list it is in.
func (vi *valueIO) info(kind string) (TensorInfo, error) {
	switch vi.kind {
	case typeTensor:
	case typeNone:
		return TensorInfo{}, fmt.Errorf("%w: %s %q has no type", ErrInvalidModel, kind, vi.name)
	default:
		return TensorInfo{}, fmt.Errorf("%s %q is a %s, only tensors are supported: %w",
			kind, vi.name, vi.kind, ErrUnsupportedModel)
	}
	t, ok := onnxElementTypes[vi.elem]
	if !ok {
		return TensorInfo{}, fmt.Errorf("%s %q has element type %s, which has no Tensor field: %w",
			kind, vi.name, onnx.DataType(vi.elem), ErrUnsupportedModel)
	}
	dims := []int64{}
	if vi.hasShape {
		dims = append(dims, vi.dims...)
	}
	return TensorInfo{Name: vi.name, Type: t, Dims: dims}, nil
}

// onnxElementTypes maps TensorProto.DataType to the types Tensor carries.
var onnxElementTypes = map[int32]ElementType{
	int32(onnx.Float):   Float32,
	int32(onnx.Float16): Float16,
	int32(onnx.Double):  Float64,
	int32(onnx.Int64):   Int64,
	int32(onnx.Int32):   Int32,
	int32(onnx.Int8):    Int8,
	int32(onnx.Uint8):   Uint8,
	int32(onnx.Bool):    Bool,
}

// scanMessage calls field for each field of the protobuf message b, in
// order, with its value: a varint's bytes, a fixed32 or fixed64's, a
// length-delimited field's payload, a group's contents. Any malformed field
// is an error.
func scanMessage(b []byte, field func(num protowire.Number, typ protowire.Type, v []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return fmt.Errorf("bad field tag: %w", protowire.ParseError(n))
		}
		b = b[n:]
		var v []byte
		if typ == protowire.BytesType {
			v, n = protowire.ConsumeBytes(b)
		} else {
			n = protowire.ConsumeFieldValue(num, typ, b)
			if n >= 0 {
				v = b[:n]
			}
		}
		if n < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(n))
		}
		b = b[n:]
		if err := field(num, typ, v); err != nil {
			return err
		}
	}
	return nil
}
