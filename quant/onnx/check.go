package onnx

import (
	"fmt"
	"math"
	"math/bits"
	"path/filepath"
	"strings"

	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Check verifies what ONNX Runtime would otherwise find out the hard way: a
// supported IR version, an imported opset for every domain a node uses, a
// graph whose every value is produced once and before its use, tensors whose
// data length matches their shape, and external data that stays inside
// opts.Dir. It does not run ONNX's operator schemas; ONNX Runtime does that
// when the session is created and returns an error, not a crash.
func Check(m *Model, opts *ReadOptions) error {
	o := opts.withDefaults()
	p := m.Proto
	if p == nil {
		return fmt.Errorf("%w: nil model", ErrInvalidModel)
	}
	if v := p.GetIrVersion(); v < MinIRVersion || v > MaxIRVersion {
		if v == 0 {
			return fmt.Errorf("%w: no ir_version (not an onnx model, or truncated)", ErrInvalidModel)
		}
		return fmt.Errorf("%w: ir_version %d not supported (want %d..%d)", ErrInvalidModel, v, MinIRVersion, MaxIRVersion)
	}
	if p.GetGraph() == nil {
		return fmt.Errorf("%w: no graph", ErrInvalidModel)
	}
	opsets := make(map[string]int64)
	for _, op := range p.GetOpsetImport() {
		d := op.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if op.GetVersion() <= 0 {
			return fmt.Errorf("%w: opset %q has version %d", ErrInvalidModel, op.GetDomain(), op.GetVersion())
		}
		opsets[d] = op.GetVersion()
	}
	if _, ok := opsets[""]; !ok {
		return fmt.Errorf("%w: no opset_import for the default onnx domain", ErrInvalidModel)
	}
	c := checker{opts: o, opsets: opsets}
	if err := c.graph(p.GetGraph(), nil, 0, true); err != nil {
		return err
	}
	return nil
}

type checker struct {
	opts   ReadOptions
	opsets map[string]int64
	nodes  int
}

// graph checks one graph. outer holds the names visible from enclosing
// graphs; subgraphs of If/Loop/Scan may read them.
func (c *checker) graph(g *onnxpb.GraphProto, outer map[string]bool, depth int, main bool) error {
	where := "graph"
	if !main {
		where = fmt.Sprintf("subgraph %q", g.GetName())
	}
	if depth > c.opts.MaxGraphDepth {
		return fmt.Errorf("%w: subgraphs nested deeper than %d", ErrTooLarge, c.opts.MaxGraphDepth)
	}
	c.nodes += len(g.GetNode())
	if c.nodes > c.opts.MaxNodes {
		return fmt.Errorf("%w: more than %d nodes", ErrTooLarge, c.opts.MaxNodes)
	}
	if main && len(g.GetOutput()) == 0 {
		return fmt.Errorf("%w: %s has no outputs", ErrGraph, where)
	}
	defined := make(map[string]bool, len(g.GetInput())+len(g.GetInitializer())+len(g.GetNode()))
	visible := func(name string) bool { return defined[name] || outer[name] }
	define := func(name, what string) error {
		if name == "" {
			return fmt.Errorf("%w: %s: %s with an empty name", ErrGraph, where, what)
		}
		if defined[name] {
			return fmt.Errorf("%w: %s: %q is defined twice (%s)", ErrGraph, where, name, what)
		}
		defined[name] = true
		return nil
	}
	for _, in := range g.GetInput() {
		if err := define(in.GetName(), "input"); err != nil {
			return err
		}
	}
	for _, t := range g.GetInitializer() {
		// Before IR 4 every initializer also had to be an input; allow that
		// one overlap and nothing else.
		if defined[t.GetName()] && isInput(g, t.GetName()) {
			if err := c.tensor(t, where); err != nil {
				return err
			}
			continue
		}
		if err := define(t.GetName(), "initializer"); err != nil {
			return err
		}
		if err := c.tensor(t, where); err != nil {
			return err
		}
	}
	for _, t := range g.GetSparseInitializer() {
		if err := define(t.GetValues().GetName(), "sparse initializer"); err != nil {
			return err
		}
	}
	// Names seen by subgraphs: everything visible here.
	for i, n := range g.GetNode() {
		label := n.GetName()
		if label == "" {
			label = fmt.Sprintf("#%d", i)
		}
		if n.GetOpType() == "" {
			return fmt.Errorf("%w: %s: node %s has no op_type", ErrGraph, where, label)
		}
		d := n.GetDomain()
		if d == "ai.onnx" {
			d = ""
		}
		if _, ok := c.opsets[d]; !ok {
			return fmt.Errorf("%w: %s: node %s (%s) uses domain %q, which the model does not import", ErrGraph, where, label, n.GetOpType(), n.GetDomain())
		}
		for _, in := range n.GetInput() {
			if in == "" { // an omitted optional input
				continue
			}
			if !visible(in) {
				return fmt.Errorf("%w: %s: node %s (%s) reads %q before anything produces it", ErrGraph, where, label, n.GetOpType(), in)
			}
		}
		for _, a := range n.GetAttribute() {
			subs := a.GetGraphs()
			if a.GetG() != nil {
				subs = append([]*onnxpb.GraphProto{a.GetG()}, subs...)
			}
			for _, sg := range subs {
				scope := make(map[string]bool, len(outer)+len(defined))
				for k := range outer {
					scope[k] = true
				}
				for k := range defined {
					scope[k] = true
				}
				if err := c.graph(sg, scope, depth+1, false); err != nil {
					return err
				}
			}
			if t := a.GetT(); t != nil {
				if err := c.tensor(t, where); err != nil {
					return err
				}
			}
		}
		for _, out := range n.GetOutput() {
			if out == "" {
				continue
			}
			if err := define(out, fmt.Sprintf("output of node %s (%s)", label, n.GetOpType())); err != nil {
				return err
			}
		}
	}
	for _, out := range g.GetOutput() {
		if !visible(out.GetName()) {
			return fmt.Errorf("%w: %s: output %q is never produced", ErrGraph, where, out.GetName())
		}
	}
	return nil
}

func isInput(g *onnxpb.GraphProto, name string) bool {
	for _, in := range g.GetInput() {
		if in.GetName() == name {
			return true
		}
	}
	return false
}

// tensor checks that a tensor's stored data matches its declared shape.
func (c *checker) tensor(t *onnxpb.TensorProto, where string) error {
	n, err := NumElements(t.GetDims())
	if err != nil {
		return fmt.Errorf("%w: %s: tensor %q: %v", ErrGraph, where, t.GetName(), err)
	}
	dt := DataType(t.GetDataType())
	if t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return c.external(t, where)
	}
	if raw := t.GetRawData(); raw != nil {
		bitsPer := dt.Bits()
		if bitsPer == 0 {
			return fmt.Errorf("%w: %s: tensor %q: raw_data for data type %s", ErrGraph, where, t.GetName(), dt)
		}
		want, ok := rawSize(n, bitsPer)
		if !ok || int64(len(raw)) != want {
			return fmt.Errorf("%w: %s: tensor %q: %d bytes of raw_data for shape %v of %s (want %d)",
				ErrGraph, where, t.GetName(), len(raw), t.GetDims(), dt, want)
		}
		return nil
	}
	have := int64(len(t.GetFloatData()) + len(t.GetInt32Data()) + len(t.GetInt64Data()) +
		len(t.GetDoubleData()) + len(t.GetUint64Data()) + len(t.GetStringData()))
	want := n
	switch dt {
	case Complex64, Complex128:
		want = 2 * n
	case Int4, Uint4, Float4E2M1:
		want = (n + 1) / 2
	}
	if have != want {
		return fmt.Errorf("%w: %s: tensor %q: %d stored values for shape %v (want %d)",
			ErrGraph, where, t.GetName(), have, t.GetDims(), want)
	}
	return nil
}

func (c *checker) external(t *onnxpb.TensorProto, where string) error {
	var loc string
	for _, kv := range t.GetExternalData() {
		if kv.GetKey() == "location" {
			loc = kv.GetValue()
		}
	}
	if err := ConfinedPath(c.opts.Dir, loc); err != nil {
		return fmt.Errorf("%w: %s: tensor %q: external data: %v", ErrGraph, where, t.GetName(), err)
	}
	return nil
}

// ConfinedPath reports an error unless loc is a relative path that stays
// inside dir. An ONNX file names its external data files itself, so a
// downloaded model could otherwise make mynah read any file on the device.
func ConfinedPath(dir, loc string) error {
	if dir == "" {
		return fmt.Errorf("external data is not allowed here")
	}
	if loc == "" {
		return fmt.Errorf("no location")
	}
	if strings.ContainsRune(loc, 0) || filepath.IsAbs(loc) || strings.HasPrefix(loc, "/") || strings.Contains(loc, `\`) {
		return fmt.Errorf("location %q must be a plain relative path", loc)
	}
	clean := filepath.Clean(loc)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return fmt.Errorf("location %q leaves the model's directory", loc)
	}
	return nil
}

// NumElements returns the product of dims, refusing negative dimensions and
// products that overflow.
func NumElements(dims []int64) (int64, error) {
	n := int64(1)
	for _, d := range dims {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension %d", d)
		}
		hi, lo := bits.Mul64(uint64(n), uint64(d))
		if hi != 0 || lo > math.MaxInt64 {
			return 0, fmt.Errorf("shape %v has too many elements", dims)
		}
		n = int64(lo)
	}
	return n, nil
}

func rawSize(n int64, bitsPer int) (int64, bool) {
	if n > math.MaxInt64/int64(bitsPer) {
		return 0, false
	}
	return (n*int64(bitsPer) + 7) / 8, true
}
