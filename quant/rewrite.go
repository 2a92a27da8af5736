package quant

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// action is what happens to one node.
type action int

const (
	keepNode     action = iota
	toInt8              // MatMul/Gemm → DynamicQuantizeLinear + MatMulInteger
	toNBits             // MatMul/Gemm → MatMulNBits
	toConvInt8          // Conv → DynamicQuantizeLinear + ConvInteger
	toGatherInt8        // Gather on a float table → Gather on int8 rows × row scales
)

// scope is one graph being rewritten, with the graphs around it: a
// subgraph may read its parents' initializers.
type scope struct {
	g      *onnxpb.GraphProto
	parent *scope
	// inits are this graph's initializers, except those that are also
	// graph inputs (a caller may override those, so they are not constant).
	inits map[string]*onnxpb.TensorProto
	// local are the names this graph defines itself; they hide a parent's
	// initializer of the same name.
	local map[string]bool
	// dql maps an activation to the outputs of its DynamicQuantizeLinear,
	// so that every integer consumer in this graph shares one.
	dql map[string][3]string
	// casts are the fp16 Casts to put at the start of the graph.
	casts []*onnxpb.NodeProto
	// added are new initializers for this graph.
	added []*onnxpb.TensorProto
}

func newScope(g *onnxpb.GraphProto, parent *scope) *scope {
	s := &scope{g: g, parent: parent, inits: make(map[string]*onnxpb.TensorProto),
		local: make(map[string]bool), dql: make(map[string][3]string)}
	for _, in := range g.GetInput() {
		s.local[in.GetName()] = true
	}
	for _, t := range g.GetInitializer() {
		if !s.local[t.GetName()] {
			s.inits[t.GetName()] = t
		}
	}
	for _, n := range g.GetNode() {
		for _, out := range n.GetOutput() {
			s.local[out] = true
		}
	}
	return s
}

// constant returns the initializer a name refers to from this scope, and
// the scope that owns it, or nil when the name is computed or an input.
func (s *scope) constant(name string) (*onnxpb.TensorProto, *scope) {
	for c := s; c != nil; c = c.parent {
		if t, ok := c.inits[name]; ok {
			return t, c
		}
		if c.local[name] {
			return nil, nil
		}
	}
	return nil, nil
}

// use is one read of an initializer by a node.
type use struct {
	node      *onnxpb.NodeProto
	slot      int
	rewritten bool // the node is rewritten and reads a quantized copy instead
}

type rewriter struct {
	mp     *onnxpb.ModelProto
	o      Options
	names  map[string]bool
	fresh  int
	report Report

	actions map[*onnxpb.NodeProto]action
	uses    map[*onnxpb.TensorProto][]use
	owner   map[*onnxpb.TensorProto]*scope
	order   []*onnxpb.TensorProto // initializers in graph order, for stable output
	fp16    map[*onnxpb.TensorProto]bool
	scopes  map[*onnxpb.GraphProto]*scope

	floatCache map[*onnxpb.TensorProto][]float32
	qcache     map[qkey][]string // quantized copies by weight and layout
	dropped    map[*onnxpb.TensorProto]bool

	done, total int
	progressed  map[*onnxpb.TensorProto]bool
	labels      map[*onnxpb.NodeProto]string
}

func newRewriter(mp *onnxpb.ModelProto, o Options) *rewriter {
	return &rewriter{
		mp: mp, o: o,
		names:      make(map[string]bool),
		actions:    make(map[*onnxpb.NodeProto]action),
		uses:       make(map[*onnxpb.TensorProto][]use),
		owner:      make(map[*onnxpb.TensorProto]*scope),
		fp16:       make(map[*onnxpb.TensorProto]bool),
		scopes:     make(map[*onnxpb.GraphProto]*scope),
		floatCache: make(map[*onnxpb.TensorProto][]float32),
		qcache:     make(map[qkey][]string),
		dropped:    make(map[*onnxpb.TensorProto]bool),
		progressed: make(map[*onnxpb.TensorProto]bool),
		labels:     make(map[*onnxpb.NodeProto]string),
	}
}

func (rw *rewriter) run() error {
	g := rw.mp.GetGraph()
	walkGraphs(g, func(sub *onnxpb.GraphProto) {
		for _, in := range sub.GetInput() {
			rw.names[in.GetName()] = true
		}
		for _, out := range sub.GetOutput() {
			rw.names[out.GetName()] = true
		}
		for _, t := range sub.GetInitializer() {
			rw.names[t.GetName()] = true
		}
		for _, n := range sub.GetNode() {
			rw.names[n.GetName()] = true
			for _, s := range append(slices.Clone(n.GetInput()), n.GetOutput()...) {
				rw.names[s] = true
			}
		}
	})
	if err := rw.inlineExternal(); err != nil {
		return err
	}
	rw.liftConstants()
	root := newScope(g, nil)
	if err := rw.plan(root); err != nil {
		return err
	}
	rw.choose()
	for _, t := range rw.order {
		if rw.fp16[t] || slices.ContainsFunc(rw.uses[t], func(u use) bool { return u.rewritten }) {
			rw.total++
		}
	}
	if err := rw.execute(root); err != nil {
		return err
	}
	rw.dropUnused()
	for _, r := range rw.report.Rows {
		rw.report.WeightBytesBefore += r.OldBytes
		rw.report.WeightBytesAfter += r.NewBytes
	}
	return nil
}

// liftConstants turns each Constant node that holds a float tensor of at
// least MinElements values (some exporters store weights so) into an
// initializer named as its output, so that the weight is seen and
// rewritten like any other. The graph computes the same: an initializer
// is there before any node runs. Models of IR version 3 and older, whose
// initializers must also be graph inputs, are left as they are.
func (rw *rewriter) liftConstants() {
	if rw.mp.GetIrVersion() < 4 {
		return
	}
	walkGraphs(rw.mp.GetGraph(), func(g *onnxpb.GraphProto) {
		kept := g.Node[:0]
		for _, n := range g.GetNode() {
			if t := liftable(n); t != nil {
				t.Name = n.GetOutput()[0]
				g.Initializer = append(g.Initializer, t)
				rw.report.ConstantsLifted++
				continue
			}
			kept = append(kept, n)
		}
		g.Node = kept
	})
}

// liftable returns the tensor of a Constant node liftConstants lifts, or
// nil.
func liftable(n *onnxpb.NodeProto) *onnxpb.TensorProto {
	if n.GetOpType() != "Constant" || n.GetDomain() != "" && n.GetDomain() != "ai.onnx" ||
		len(n.GetOutput()) != 1 || n.GetOutput()[0] == "" || len(n.GetAttribute()) != 1 {
		return nil
	}
	a := n.GetAttribute()[0]
	t := a.GetT()
	if a.GetName() != "value" || t == nil || onnx.DataType(t.GetDataType()) != onnx.Float || t.GetDataLocation() == onnxpb.TensorProto_EXTERNAL {
		return nil
	}
	if count, err := onnx.NumElements(t.GetDims()); err != nil || count < MinElements {
		return nil
	}
	if _, err := onnx.Float32Data(t); err != nil {
		return nil // damaged: left to fail where ONNX Runtime reads it
	}
	return t
}

// walkGraphs calls fn for g and every subgraph inside it.
func walkGraphs(g *onnxpb.GraphProto, fn func(*onnxpb.GraphProto)) {
	fn(g)
	for _, n := range g.GetNode() {
		for _, a := range n.GetAttribute() {
			if a.GetG() != nil {
				walkGraphs(a.GetG(), fn)
			}
			for _, sg := range a.GetGraphs() {
				walkGraphs(sg, fn)
			}
		}
	}
}

// name returns a fresh value or node name starting with base.
func (rw *rewriter) name(base string) string {
	for {
		rw.fresh++
		n := base + "_q" + strconv.Itoa(rw.fresh)
		if !rw.names[n] {
			rw.names[n] = true
			return n
		}
	}
}

func (rw *rewriter) label(n *onnxpb.NodeProto) string {
	if l, ok := rw.labels[n]; ok {
		return l
	}
	return n.GetName()
}

// plan decides what happens to each node of s and its subgraphs, and
// records every read of every float initializer.
func (rw *rewriter) plan(s *scope) error {
	rw.scopes[s.g] = s
	for _, t := range s.g.GetInitializer() {
		if s.inits[t.GetName()] == t && onnx.DataType(t.GetDataType()) == onnx.Float {
			rw.owner[t] = s
			rw.order = append(rw.order, t)
		}
	}
	for i, n := range s.g.GetNode() {
		if n.GetName() == "" {
			rw.labels[n] = n.GetOpType() + "#" + strconv.Itoa(i)
		}
		act, weightSlot, why := rw.decide(s, n)
		if why != "" {
			w := ""
			if weightSlot >= 0 && weightSlot < len(n.GetInput()) {
				w = n.GetInput()[weightSlot]
			}
			rw.report.Skipped = append(rw.report.Skipped, Skip{Node: rw.label(n), OpType: n.GetOpType(), Weight: w, Reason: why})
		}
		if act != keepNode {
			rw.actions[n] = act
		}
		for slot, in := range n.GetInput() {
			t, _ := s.constant(in)
			if t == nil || onnx.DataType(t.GetDataType()) != onnx.Float {
				continue
			}
			rw.uses[t] = append(rw.uses[t], use{node: n, slot: slot, rewritten: act != keepNode && slot == weightSlot})
		}
		for _, a := range n.GetAttribute() {
			subs := a.GetGraphs()
			if a.GetG() != nil {
				subs = append([]*onnxpb.GraphProto{a.GetG()}, subs...)
			}
			for _, sg := range subs {
				if err := rw.plan(newScope(sg, s)); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// decide returns the action for n, the input slot of its weight (-1 when
// none), and why a candidate was left alone ("" when it was not one).
func (rw *rewriter) decide(s *scope, n *onnxpb.NodeProto) (action, int, string) {
	mode := rw.o.Mode
	if mode == ModeFP16Store || n.GetDomain() != "" && n.GetDomain() != "ai.onnx" ||
		len(n.GetOutput()) == 0 || n.GetOutput()[0] == "" {
		return keepNode, -1, ""
	}
	switch n.GetOpType() {
	case "MatMul", "Gemm":
		in := n.GetInput()
		if len(in) < 2 {
			return keepNode, -1, ""
		}
		w, _ := s.constant(in[1])
		if w == nil || onnx.DataType(w.GetDataType()) != onnx.Float {
			return keepNode, -1, ""
		}
		if len(w.GetDims()) != 2 {
			return keepNode, 1, fmt.Sprintf("weight has rank %d, want 2", len(w.GetDims()))
		}
		if empty(w) {
			return keepNode, 1, "empty weight"
		}
		if in[0] == "" {
			return keepNode, -1, ""
		}
		if c, _ := s.constant(in[0]); c != nil {
			return keepNode, 1, "both inputs are constant"
		}
		if n.GetOpType() == "Gemm" && attrInt(n, "transA", 0) != 0 {
			return keepNode, 1, "Gemm with transA"
		}
		k, cols := w.GetDims()[0], w.GetDims()[1]
		if n.GetOpType() == "Gemm" && attrInt(n, "transB", 0) != 0 {
			k, cols = cols, k
		}
		if mode == ModeAuto {
			if k < AutoMinK {
				return keepNode, 1, fmt.Sprintf("K=%d below AutoMinK (%d): stored as fp16 instead", k, AutoMinK)
			}
			mode = rw.o.AutoMatMul
		}
		if mode == ModeNBits && (k < NBitsMinDim || cols < NBitsMinDim) {
			mode = ModeInt8 // a narrow projection or an output head
		}
		if mode == ModeInt8 && rw.defaultOpset() < 11 {
			return keepNode, 1, "int8 needs opset 11 or later"
		}
		if mode == ModeNBits {
			return toNBits, 1, ""
		}
		return toInt8, 1, ""
	case "Conv":
		if !rw.o.IncludeConv || (mode != ModeInt8 && mode != ModeAuto) {
			return keepNode, -1, ""
		}
		in := n.GetInput()
		if len(in) < 2 {
			return keepNode, -1, ""
		}
		w, _ := s.constant(in[1])
		if w == nil || onnx.DataType(w.GetDataType()) != onnx.Float {
			return keepNode, -1, ""
		}
		if len(w.GetDims()) < 3 {
			return keepNode, 1, fmt.Sprintf("Conv weight has rank %d", len(w.GetDims()))
		}
		if empty(w) {
			return keepNode, 1, "empty weight"
		}
		if len(in) > 2 && in[2] != "" {
			if b, _ := s.constant(in[2]); b == nil {
				return keepNode, 1, "Conv bias is not constant"
			}
		}
		if rw.defaultOpset() < 11 {
			return keepNode, 1, "int8 needs opset 11 or later"
		}
		return toConvInt8, 1, ""
	case "Gather":
		in := n.GetInput()
		if !rw.o.EmbeddingsInt8 || len(in) < 2 {
			return keepNode, -1, ""
		}
		w, _ := s.constant(in[0])
		if w == nil || onnx.DataType(w.GetDataType()) != onnx.Float || len(w.GetDims()) != 2 || attrInt(n, "axis", 0) != 0 || empty(w) {
			return keepNode, -1, ""
		}
		return toGatherInt8, 0, ""
	case "ConvTranspose", "LSTM", "GRU", "RNN":
		if rw.o.IncludeConv && mode == ModeInt8 && len(n.GetInput()) > 1 {
			return keepNode, 1, n.GetOpType() + " has no integer operator in ONNX"
		}
	}
	return keepNode, -1, ""
}

// empty reports a weight without elements. Every dimension of a
// non-empty weight is at most its element count, which Check has matched
// with the stored data, so the loops over its dimensions are bounded.
func empty(t *onnxpb.TensorProto) bool {
	n, err := onnx.NumElements(t.GetDims())
	return err != nil || n == 0
}

func (rw *rewriter) defaultOpset() int64 {
	for _, o := range rw.mp.GetOpsetImport() {
		if o.GetDomain() == "" || o.GetDomain() == "ai.onnx" {
			return o.GetVersion()
		}
	}
	return 0
}

// protectedSlots are inputs that operators read as shapes, indices, scales
// or bounds; their initializers stay exactly as they are.
var protectedSlots = map[string][]int{
	"Reshape": {1}, "Expand": {1}, "Tile": {1}, "Slice": {1, 2, 3, 4}, "Resize": {1, 2, 3},
	"Upsample": {1}, "Pad": {1, 2, 3}, "Gather": {1}, "GatherElements": {1}, "GatherND": {1},
	"ScatterND": {1}, "ScatterElements": {1}, "ConstantOfShape": {0}, "Range": {0, 1, 2},
	"Clip": {1, 2}, "TopK": {1}, "OneHot": {0, 1, 2}, "Squeeze": {1}, "Unsqueeze": {1},
	"Split": {1}, "CumSum": {1}, "Loop": {0, 1}, "If": {0}, "ReduceSum": {1}, "ReduceMean": {1},
	"ReduceMax": {1}, "ReduceMin": {1}, "ReduceProd": {1}, "ReduceL2": {1},
}

// choose picks the initializers stored as fp16.
func (rw *rewriter) choose() {
	if rw.o.Mode != ModeFP16Store && rw.o.Mode != ModeAuto && !rw.o.RestFP16 {
		return
	}
	for _, t := range rw.order {
		n, err := onnx.NumElements(t.GetDims())
		if err != nil || n < MinElements {
			continue
		}
		uses := rw.uses[t]
		ok, read := true, len(uses) == 0
		for _, u := range uses {
			if u.rewritten {
				continue
			}
			read = true
			if slices.Contains(protectedSlots[u.node.GetOpType()], u.slot) {
				ok = false
			}
			if rw.o.Mode == ModeAuto && !rw.o.RestFP16 && u.node.GetOpType() == "Gather" && u.slot == 0 {
				ok = false // embeddings stay as they are in auto
			}
		}
		if ok && read {
			rw.fp16[t] = true
		}
	}
}

func attrInt(n *onnxpb.NodeProto, name string, def int64) int64 {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a.GetI()
		}
	}
	return def
}

func attrFloat(n *onnxpb.NodeProto, name string, def float32) float32 {
	for _, a := range n.GetAttribute() {
		if a.GetName() == name {
			return a.GetF()
		}
	}
	return def
}

// execute rewrites the nodes of s and its subgraphs in place.
func (rw *rewriter) execute(s *scope) error {
	var nodes []*onnxpb.NodeProto
	for _, n := range s.g.GetNode() {
		for _, a := range n.GetAttribute() {
			subs := a.GetGraphs()
			if a.GetG() != nil {
				subs = append([]*onnxpb.GraphProto{a.GetG()}, subs...)
			}
			for _, sg := range subs {
				if err := rw.execute(rw.scopes[sg]); err != nil {
					return err
				}
			}
		}
		var repl []*onnxpb.NodeProto
		var err error
		switch rw.actions[n] {
		case toInt8:
			repl, err = rw.matMulInt8(s, n)
		case toNBits:
			repl, err = rw.matMulNBits(s, n)
		case toConvInt8:
			repl, err = rw.convInt8(s, n)
		case toGatherInt8:
			repl, err = rw.gatherInt8(s, n)
		default:
			repl = []*onnxpb.NodeProto{n}
		}
		if err != nil {
			return err
		}
		nodes = append(nodes, repl...)
	}
	if err := rw.storeFP16(s); err != nil {
		return err
	}
	s.g.Node = append(s.casts, nodes...)
	s.g.Initializer = append(s.g.Initializer, s.added...)
	return nil
}

// dropUnused removes rewritten initializers that nothing reads any more.
func (rw *rewriter) dropUnused() {
	read := make(map[string]bool)
	walkGraphs(rw.mp.GetGraph(), func(g *onnxpb.GraphProto) {
		for _, n := range g.GetNode() {
			for _, in := range n.GetInput() {
				read[in] = true
			}
		}
		for _, out := range g.GetOutput() {
			read[out.GetName()] = true
		}
	})
	walkGraphs(rw.mp.GetGraph(), func(g *onnxpb.GraphProto) {
		g.Initializer = slices.DeleteFunc(g.Initializer, func(t *onnxpb.TensorProto) bool {
			return rw.dropped[t] || (rw.progressed[t] && !read[t.GetName()])
		})
	})
}

// step reports progress once per weight.
func (rw *rewriter) step(t *onnxpb.TensorProto) {
	if rw.progressed[t] {
		return
	}
	rw.progressed[t] = true
	rw.done++
	if rw.o.Progress != nil {
		rw.o.Progress(rw.done, max(rw.total, rw.done), t.GetName())
	}
}
