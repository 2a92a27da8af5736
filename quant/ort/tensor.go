package ort

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ElementType is the element type of a tensor, as far as this package can
// exchange it with Go.
type ElementType uint8

const (
	// Undefined is the zero value; on an input Tensor it means "infer from
	// the one data slice that is set, or from the model for an empty tensor".
	Undefined ElementType = iota
	Float32
	// Float16 is IEEE 754 half precision, carried as raw bit patterns in
	// Tensor.Float16 because Go has no float16 type.
	Float16
	Float64
	Int64
	Int32
	Int8
	Uint8
	Bool
)

var elementTypeNames = [...]string{"undefined", "float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool"}

func (e ElementType) String() string {
	if int(e) < len(elementTypeNames) {
		return elementTypeNames[e]
	}
	return "ElementType(" + strconv.Itoa(int(e)) + ")"
}

// TensorInfo describes one model input or output (Session.Inputs, Outputs).
type TensorInfo struct {
	Name string
	Type ElementType
	// Dims has -1 for a dynamic (named or unnamed) dimension. An empty Dims
	// is a scalar, or a tensor whose shape the model does not declare (ONNX
	// Runtime reports both the same way), so Run checks no rank for it.
	Dims []int64
}

func (i TensorInfo) String() string {
	dims := make([]string, len(i.Dims))
	for k, d := range i.Dims {
		if d < 0 {
			dims[k] = "?"
		} else {
			dims[k] = strconv.FormatInt(d, 10)
		}
	}
	return fmt.Sprintf("%s %s[%s]", i.Name, i.Type, strings.Join(dims, ","))
}

// static reports whether every dimension is known, so a buffer can be
// allocated before the run.
func (i TensorInfo) static() bool {
	for _, d := range i.Dims {
		if d < 0 {
			return false
		}
	}
	return true
}

// Tensor is a named tensor in Go memory: the value type of Run. Exactly one
// data slice is used, the one matching Type; its length must equal the
// product of Shape (1 for a scalar, whose Shape is empty). Inputs are passed
// to ONNX Runtime without a copy and must not be modified during Run.
// Outputs are fresh Go slices owned by the caller.
type Tensor struct {
	Name string
	// Type may be left Undefined on inputs: it is taken from the one
	// non-nil data slice, or from the model when no slice is set (an empty
	// tensor such as a zero-length KV past). Outputs always have it set.
	Type  ElementType
	Shape []int64

	Float32 []float32
	Float16 []uint16 // IEEE 754 half-precision bit patterns
	Float64 []float64
	Int64   []int64
	Int32   []int32
	Int8    []int8
	Uint8   []uint8
	Bool    []bool
}

// Len is the length of the data slice selected by Type.
func (t *Tensor) Len() int {
	switch t.Type {
	case Float32:
		return len(t.Float32)
	case Float16:
		return len(t.Float16)
	case Float64:
		return len(t.Float64)
	case Int64:
		return len(t.Int64)
	case Int32:
		return len(t.Int32)
	case Int8:
		return len(t.Int8)
	case Uint8:
		return len(t.Uint8)
	case Bool:
		return len(t.Bool)
	}
	return 0
}

// setTypes lists which data slices are non-nil.
func (t *Tensor) setTypes() []ElementType {
	var set []ElementType
	add := func(ok bool, e ElementType) {
		if ok {
			set = append(set, e)
		}
	}
	add(t.Float32 != nil, Float32)
	add(t.Float16 != nil, Float16)
	add(t.Float64 != nil, Float64)
	add(t.Int64 != nil, Int64)
	add(t.Int32 != nil, Int32)
	add(t.Int8 != nil, Int8)
	add(t.Uint8 != nil, Uint8)
	add(t.Bool != nil, Bool)
	return set
}

// allocate gives t a zeroed slice of n elements of its Type.
func (t *Tensor) allocate(n int) {
	switch t.Type {
	case Float32:
		t.Float32 = make([]float32, n)
	case Float16:
		t.Float16 = make([]uint16, n)
	case Float64:
		t.Float64 = make([]float64, n)
	case Int64:
		t.Int64 = make([]int64, n)
	case Int32:
		t.Int32 = make([]int32, n)
	case Int8:
		t.Int8 = make([]int8, n)
	case Uint8:
		t.Uint8 = make([]uint8, n)
	case Bool:
		t.Bool = make([]bool, n)
	}
}

// elementCount is the number of elements of shape, refusing negative
// dimensions and products that overflow an int.
func elementCount(shape []int64) (int, error) {
	n := int64(1)
	for i, d := range shape {
		if d < 0 {
			return 0, fmt.Errorf("dimension %d is %d; shapes of real tensors have no dynamic dimensions", i, d)
		}
		if d != 0 && n > math.MaxInt/d {
			return 0, fmt.Errorf("shape %v has more than %d elements", shape, math.MaxInt)
		}
		n *= d
	}
	return int(n), nil
}

// resolve checks t against the model's declaration of that tensor and
// settles its Type. needData says whether the data slice must already be
// there (inputs) or may be allocated later (caller-shaped outputs).
func (t *Tensor) resolve(info TensorInfo, needData bool) error {
	set := t.setTypes()
	switch {
	case len(set) > 1:
		return fmt.Errorf("%q has data in more than one slice (%v): %w", t.Name, set, ErrInputMismatch)
	case t.Type == Undefined && len(set) == 1:
		t.Type = set[0]
	case t.Type == Undefined:
		t.Type = info.Type
	case len(set) == 1 && set[0] != t.Type:
		return fmt.Errorf("%q says Type %s but its data is in the %s slice: %w", t.Name, t.Type, set[0], ErrInputMismatch)
	}
	if t.Type != info.Type {
		return fmt.Errorf("%q: model wants %s, got %s: %w", t.Name, info.Type, t.Type, ErrInputMismatch)
	}
	if len(info.Dims) > 0 {
		if len(t.Shape) != len(info.Dims) {
			return fmt.Errorf("%q: model wants rank %d (%v), got shape %v: %w", t.Name, len(info.Dims), info.Dims, t.Shape, ErrInputMismatch)
		}
		for i, d := range info.Dims {
			if d >= 0 && t.Shape[i] != d {
				return fmt.Errorf("%q: dimension %d must be %d, got shape %v: %w", t.Name, i, d, t.Shape, ErrInputMismatch)
			}
		}
	}
	n, err := elementCount(t.Shape)
	if err != nil {
		return fmt.Errorf("%q: %v: %w", t.Name, err, ErrInputMismatch)
	}
	if len(set) == 0 && !needData {
		t.allocate(n)
		return nil
	}
	if t.Len() != n {
		return fmt.Errorf("%q: shape %v needs %d elements, the %s slice has %d: %w", t.Name, t.Shape, n, t.Type, t.Len(), ErrInputMismatch)
	}
	return nil
}

// matchInputs checks a Run's inputs against the model and returns them in
// the model's input order: every model input exactly once, nothing else.
func matchInputs(model []TensorInfo, given []Tensor) ([]Tensor, error) {
	ordered := make([]Tensor, len(model))
	have := make([]bool, len(model))
	for _, t := range given {
		i := indexOf(model, t.Name)
		switch {
		case i < 0:
			return nil, fmt.Errorf("input %q: model has no such input (inputs: %s): %w", t.Name, names(model), ErrInputMismatch)
		case have[i]:
			return nil, fmt.Errorf("input %q given twice: %w", t.Name, ErrInputMismatch)
		}
		if err := t.resolve(model[i], true); err != nil {
			return nil, fmt.Errorf("input %w", err)
		}
		ordered[i], have[i] = t, true
	}
	for i, ok := range have {
		if !ok {
			return nil, fmt.Errorf("input %q (%s) missing: %w", model[i].Name, model[i], ErrInputMismatch)
		}
	}
	return ordered, nil
}

// matchOutputs places caller-shaped outputs at their model positions; the
// other positions stay zero (Name "") and are allocated by ONNX Runtime.
func matchOutputs(model []TensorInfo, given []Tensor) ([]Tensor, error) {
	ordered := make([]Tensor, len(model))
	for _, t := range given {
		i := indexOf(model, t.Name)
		switch {
		case i < 0:
			return nil, fmt.Errorf("output %q: model has no such output (outputs: %s): %w", t.Name, names(model), ErrInputMismatch)
		case ordered[i].Name != "":
			return nil, fmt.Errorf("output %q given twice: %w", t.Name, ErrInputMismatch)
		}
		if err := t.resolve(model[i], false); err != nil {
			return nil, fmt.Errorf("output %w", err)
		}
		ordered[i] = t
	}
	return ordered, nil
}

func indexOf(list []TensorInfo, name string) int {
	for i, t := range list {
		if t.Name == name {
			return i
		}
	}
	return -1
}

func names(list []TensorInfo) string {
	n := make([]string, len(list))
	for i, t := range list {
		n[i] = strconv.Quote(t.Name)
	}
	return strings.Join(n, ", ")
}
