package quant

import (
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

// maxFP16 is the largest finite float16; a weight beyond it stays float32.
const maxFP16 = 65504

// floats returns t's values, decoded once, refusing NaN and Inf.
func (rw *rewriter) floats(t *onnxpb.TensorProto) ([]float32, error) {
	if v, ok := rw.floatCache[t]; ok {
		return v, nil
	}
	n, err := onnx.NumElements(t.GetDims())
	if err != nil {
		return nil, fmt.Errorf("weight %q: %w", t.GetName(), err)
	}
	v, err := onnx.Float32Data(t)
	if err != nil {
		return nil, fmt.Errorf("weight %q: %w", t.GetName(), err)
	}
	if int64(len(v)) != n {
		return nil, fmt.Errorf("weight %q: %d values for shape %v", t.GetName(), len(v), t.GetDims())
	}
	for i, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("%w: %q element %d is %v", ErrNonFinite, t.GetName(), i, x)
		}
	}
	rw.floatCache[t] = v
	return v, nil
}

// storeFP16 replaces the initializers of s chosen for fp16 with a float16
// copy and a Cast back to float32 under the original name, so that every
// reader, in this graph or a subgraph, is left untouched.
func (rw *rewriter) storeFP16(s *scope) error {
	for _, t := range s.g.GetInitializer() {
		if !rw.fp16[t] {
			continue
		}
		v, err := rw.floats(t)
		if err != nil {
			return err
		}
		raw := make([]byte, 2*len(v))
		over := false
		for i, x := range v {
			if x > maxFP16 || x < -maxFP16 {
				over = true
				break
			}
			h := vecpack.Float32ToHalf(x)
			raw[2*i], raw[2*i+1] = byte(h), byte(h>>8)
		}
		first := rw.firstUse(t)
		if over {
			rw.report.Skipped = append(rw.report.Skipped, Skip{Node: rw.label(first.node), OpType: first.node.GetOpType(),
				Weight: t.GetName(), Reason: "values beyond float16's range (65504)"})
			continue
		}
		half := &onnxpb.TensorProto{Name: rw.name(t.GetName() + "_fp16"), Dims: t.GetDims(),
			DataType: int32(onnx.Float16), RawData: raw}
		s.added = append(s.added, half)
		s.casts = append(s.casts, rw.node("Cast", []string{half.Name}, []string{t.GetName()}, onnx.AttrInt("to", int64(onnx.Float))))
		rw.dropped[t] = true
		rw.addRow(first, t, int64(len(raw)), ModeFP16Store)
		rw.step(t)
	}
	return nil
}

// firstUse returns the first node reading t (an empty use when none does).
func (rw *rewriter) firstUse(t *onnxpb.TensorProto) use {
	if u := rw.uses[t]; len(u) > 0 {
		return u[0]
	}
	return use{node: &onnxpb.NodeProto{}}
}

func (rw *rewriter) addRow(u use, t *onnxpb.TensorProto, newBytes int64, m Mode) {
	n, _ := onnx.NumElements(t.GetDims())
	rw.report.Rows = append(rw.report.Rows, Row{Node: rw.label(u.node), OpType: u.node.GetOpType(),
		Weight: t.GetName(), Shape: append([]int64(nil), t.GetDims()...), OldBytes: 4 * n, NewBytes: newBytes, Mode: m})
}

// node returns a new node with a fresh name.
func (rw *rewriter) node(op string, in, out []string, attrs ...*onnxpb.AttributeProto) *onnxpb.NodeProto {
	return &onnxpb.NodeProto{Name: rw.name(op), OpType: op, Input: in, Output: out, Attribute: attrs}
}

// inlineExternal reads every tensor stored in an external file into the
// model, so the rewritten model is one self-contained file wherever it is
// written. The location must stay inside Options.Dir (onnx.ConfinedPath,
// plus a check that symlinks do not lead out of it).
func (rw *rewriter) inlineExternal() error {
	var err error
	var total int64
	walkGraphs(rw.mp.GetGraph(), func(g *onnxpb.GraphProto) {
		for _, t := range g.GetInitializer() {
			if err != nil || t.GetDataLocation() != onnxpb.TensorProto_EXTERNAL {
				continue
			}
			var n int64
			n, err = rw.readExternal(t, MaxModelBytes-total)
			total += n
		}
	})
	return err
}

func (rw *rewriter) readExternal(t *onnxpb.TensorProto, budget int64) (int64, error) {
	fail := func(format string, args ...any) error {
		return fmt.Errorf("%w: tensor %q: %s", ErrExternalData, t.GetName(), fmt.Sprintf(format, args...))
	}
	if rw.o.Dir == "" {
		return 0, fail("the model keeps it in another file; set Options.Dir to the model's directory")
	}
	var loc string
	var offset, length int64 = 0, -1
	for _, kv := range t.GetExternalData() {
		var perr error
		switch kv.GetKey() {
		case "location":
			loc = kv.GetValue()
		case "offset":
			offset, perr = strconv.ParseInt(kv.GetValue(), 10, 64)
		case "length":
			length, perr = strconv.ParseInt(kv.GetValue(), 10, 64)
		}
		if perr != nil || offset < 0 {
			return 0, fail("bad %s %q", kv.GetKey(), kv.GetValue())
		}
	}
	if err := onnx.ConfinedPath(rw.o.Dir, loc); err != nil {
		return 0, fail("%v", err)
	}
	dir, err := filepath.EvalSymlinks(rw.o.Dir)
	if err != nil {
		return 0, fail("%v", err)
	}
	path, err := filepath.EvalSymlinks(filepath.Join(dir, loc))
	if err != nil {
		return 0, fail("%v", err)
	}
	if rel, err := filepath.Rel(dir, path); err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return 0, fail("location %q leads out of %s through a symlink", loc, rw.o.Dir)
	}
	n, err := onnx.NumElements(t.GetDims())
	if err != nil {
		return 0, fail("%v", err)
	}
	bitsPer := onnx.DataType(t.GetDataType()).Bits()
	if bitsPer == 0 {
		return 0, fail("data type %s cannot be external", onnx.DataType(t.GetDataType()))
	}
	want := (n*int64(bitsPer) + 7) / 8
	if n > math.MaxInt64/int64(bitsPer) {
		return 0, fail("shape %v too large", t.GetDims())
	}
	if length >= 0 && length != want {
		return 0, fail("length %d does not match shape %v (%d bytes)", length, t.GetDims(), want)
	}
	if want > budget {
		return 0, fmt.Errorf("%w: external data of %q would take the model past MaxModelBytes (%d)", ErrTooLarge, t.GetName(), int64(MaxModelBytes))
	}
	f, err := os.Open(path)
	if err != nil {
		return 0, fail("%v", err)
	}
	defer f.Close()
	buf := make([]byte, want)
	if _, err := f.ReadAt(buf, offset); err != nil {
		if err == io.EOF {
			return 0, fail("%s ends before offset %d + %d bytes", loc, offset, want)
		}
		return 0, fail("%v", err)
	}
	t.RawData = buf
	t.ExternalData = nil
	t.DataLocation = onnxpb.TensorProto_DEFAULT
	return want, nil
}
