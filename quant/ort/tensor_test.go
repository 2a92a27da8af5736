package ort

import (
	"errors"
	"math"
	"strings"
	"testing"
)

func TestElementCount(t *testing.T) {
	tests := []struct {
		shape   []int64
		want    int
		wantErr string
	}{
		{nil, 1, ""}, // a scalar
		{[]int64{3}, 3, ""},
		{[]int64{2, 3, 4}, 24, ""},
		{[]int64{1, 2, 0, 64}, 0, ""}, // empty KV past
		{[]int64{-1, 3}, 0, "dynamic"},
		{[]int64{math.MaxInt64, 2}, 0, "more than"},
		{[]int64{1 << 32, 1 << 32}, 0, "more than"},
		{[]int64{0, math.MaxInt64, math.MaxInt64}, 0, ""}, // zero wins, no overflow
	}
	for _, tc := range tests {
		got, err := elementCount(tc.shape)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("elementCount(%v) = %d, %v; want error containing %q", tc.shape, got, err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("elementCount(%v) = %d, %v; want %d", tc.shape, got, err, tc.want)
		}
	}
}

var testInputs = []TensorInfo{
	{Name: "x", Type: Float32, Dims: []int64{-1, 3}},
	{Name: "ids", Type: Int64, Dims: []int64{1, -1}},
	{Name: "offset", Type: Int64}, // scalar
}

func TestMatchInputs(t *testing.T) {
	good := func() []Tensor {
		return []Tensor{
			{Name: "offset", Shape: nil, Int64: []int64{5}},
			{Name: "ids", Shape: []int64{1, 4}, Int64: []int64{1, 2, 3, 4}},
			{Name: "x", Type: Float32, Shape: []int64{2, 3}, Float32: make([]float32, 6)},
		}
	}
	ordered, err := matchInputs(testInputs, good())
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{"x", "ids", "offset"} {
		if ordered[i].Name != want {
			t.Fatalf("position %d holds %q, want %q (model order)", i, ordered[i].Name, want)
		}
	}
	if ordered[2].Type != Int64 {
		t.Errorf("type of offset not inferred from its slice: %v", ordered[2].Type)
	}

	// An empty tensor with no slice takes the model's type.
	emptyX := good()
	emptyX[2] = Tensor{Name: "x", Shape: []int64{0, 3}}
	if ordered, err := matchInputs(testInputs, emptyX); err != nil || ordered[0].Type != Float32 {
		t.Errorf("empty x: %v, type %v; want float32 from the model", err, ordered[0].Type)
	}

	tests := []struct {
		name    string
		edit    func([]Tensor) []Tensor
		mention string
	}{
		{"unknown name", func(in []Tensor) []Tensor { in[0].Name = "offest"; return in }, `"offest"`},
		{"missing input", func(in []Tensor) []Tensor { return in[1:] }, `"offset"`},
		{"duplicate", func(in []Tensor) []Tensor { return append(in, in[1]) }, `"ids" given twice`},
		{"wrong type", func(in []Tensor) []Tensor {
			in[1] = Tensor{Name: "ids", Shape: []int64{1, 4}, Int32: []int32{1, 2, 3, 4}}
			return in
		}, "model wants int64, got int32"},
		{"type field contradicts slice", func(in []Tensor) []Tensor { in[2].Type = Int64; return in }, "but its data is in the float32 slice"},
		{"two slices", func(in []Tensor) []Tensor { in[2].Int64 = []int64{1}; return in }, "more than one slice"},
		{"wrong rank", func(in []Tensor) []Tensor { in[2].Shape = []int64{6}; return in }, "rank 2"},
		{"fixed dim differs", func(in []Tensor) []Tensor { in[2].Shape = []int64{3, 2}; return in }, "dimension 1 must be 3"},
		{"too little data", func(in []Tensor) []Tensor { in[1].Int64 = in[1].Int64[:3]; return in }, "needs 4 elements"},
		{"too much data", func(in []Tensor) []Tensor { in[0].Int64 = []int64{1, 2}; return in }, "needs 1 elements"},
		{"negative dim", func(in []Tensor) []Tensor { in[1].Shape = []int64{1, -4}; return in }, "dynamic"},
		{"overflowing shape", func(in []Tensor) []Tensor {
			in[2].Shape = []int64{math.MaxInt64 / 2, 3}
			return in
		}, "more than"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := matchInputs(testInputs, tc.edit(good()))
			if !errors.Is(err, ErrInputMismatch) {
				t.Fatalf("got %v, want ErrInputMismatch", err)
			}
			if !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %q does not contain %q", err, tc.mention)
			}
		})
	}
}

func TestMatchOutputsAllocates(t *testing.T) {
	model := []TensorInfo{{Name: "a", Type: Float32, Dims: []int64{-1}}, {Name: "b", Type: Float16, Dims: []int64{2, -1}}}
	out, err := matchOutputs(model, []Tensor{{Name: "b", Shape: []int64{2, 5}}})
	if err != nil {
		t.Fatal(err)
	}
	if out[0].Name != "" {
		t.Errorf("unlisted output a should stay for ORT to allocate, got %+v", out[0])
	}
	if out[1].Type != Float16 || len(out[1].Float16) != 10 {
		t.Errorf("b: type %v with %d elements; want float16 with 10", out[1].Type, len(out[1].Float16))
	}
	if _, err := matchOutputs(model, []Tensor{{Name: "c", Shape: []int64{1}}}); !errors.Is(err, ErrInputMismatch) {
		t.Errorf("unknown output: %v, want ErrInputMismatch", err)
	}
	if _, err := matchOutputs(model, []Tensor{{Name: "a", Shape: []int64{2}, Float32: make([]float32, 3)}}); !errors.Is(err, ErrInputMismatch) {
		t.Errorf("output buffer of the wrong size: %v, want ErrInputMismatch", err)
	}
}

func TestTensorInfoString(t *testing.T) {
	got := TensorInfo{Name: "past", Type: Float16, Dims: []int64{1, 8, -1, 64}}.String()
	if got != "past float16[1,8,?,64]" {
		t.Errorf("String() = %q", got)
	}
	if s := ElementType(200).String(); s != "ElementType(200)" {
		t.Errorf("unknown element type prints %q", s)
	}
}

// FuzzMatchInputs feeds arbitrary shapes and data lengths through the
// validation that stands between callers and ONNX Runtime: it must never
// panic, and whatever it accepts must be exactly consistent.
func FuzzMatchInputs(f *testing.F) {
	f.Add(int64(2), int64(3), 6, uint8(0), int64(4), 4, true)
	f.Add(int64(0), int64(3), 0, uint8(1), int64(0), 0, false)
	f.Add(int64(-1), int64(3), 3, uint8(2), int64(1), 1, true)
	f.Add(int64(math.MaxInt64), int64(2), 0, uint8(3), int64(-5), 0, true)
	f.Fuzz(func(t *testing.T, d0, d1 int64, n int, typ uint8, seq int64, m int, setType bool) {
		if n < 0 || n > 1<<16 || m < 0 || m > 1<<16 {
			return
		}
		x := Tensor{Name: "x", Shape: []int64{d0, d1}}
		switch typ % 3 {
		case 0:
			x.Float32 = make([]float32, n)
		case 1:
			x.Int64 = make([]int64, n)
		}
		if setType {
			x.Type = ElementType(typ % 10)
		}
		ids := Tensor{Name: "ids", Shape: []int64{1, seq}, Int64: make([]int64, m)}
		off := Tensor{Name: "offset", Int64: []int64{1}}
		ordered, err := matchInputs(testInputs, []Tensor{x, ids, off})
		if err != nil {
			if !errors.Is(err, ErrInputMismatch) {
				t.Fatalf("error %v does not wrap ErrInputMismatch", err)
			}
			return
		}
		for i, in := range ordered {
			if in.Type != testInputs[i].Type {
				t.Fatalf("%s accepted with type %v, model says %v", in.Name, in.Type, testInputs[i].Type)
			}
			want, err := elementCount(in.Shape)
			if err != nil || want != in.Len() {
				t.Fatalf("%s accepted with shape %v and %d elements (%v)", in.Name, in.Shape, in.Len(), err)
			}
		}
	})
}
