package voice

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"runtime"

	"golang.org/x/sys/cpu"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
	"github.com/mynah-tts/mynah/quant/ort"
)

// readModelFile reads the model file at path once, checks it in Go
// (checkModel) and hands ONNX Runtime the very bytes that were checked, or
// the checked model with its 1-D convolutions lifted to 2-D (liftModel)
// unless keep1D; saveOptimized is ort.SessionOptions.SaveOptimized. ONNX
// Runtime fails a session whose optimized model it cannot write (a full
// disk, the directory gone): then the session is built again without, and
// saveErr says why nothing was saved. The returned model carries the
// file's sha256 and size only. The digest names the model for caches (it
// is not compared with anything), so it is computed while the model is
// checked, lifted and built into a session, on another core where there
// is one: on a 60 MB voice it is 35 ms, a fifth of the load. The bytes are
// freed before it returns (newModelBuffer), those of the file as soon as
// they are hashed when the session is built from a lifted copy.
func readModelFile(rt *ort.Runtime, path string, so *ort.SessionOptions, rw rewrites, saveOptimized string) (sess *ort.Session, model *onnx.Model, saveErr, err error) {
	data, free, err := readModel(path)
	if err != nil {
		return nil, nil, nil, err
	}
	size := int64(len(data))
	digest := make(chan string, 1)
	drop := make(chan bool, 1) // true: nothing reads data once it is hashed
	go func() {
		sum := sha256.Sum256(data)
		if <-drop {
			free()
		}
		digest <- hex.EncodeToString(sum[:])
	}()
	fail := func(err error) (*ort.Session, *onnx.Model, error, error) {
		drop <- true
		<-digest
		return nil, nil, nil, err
	}
	// The checked model points into data: it must not outlive this call.
	m, err := checkModel(data, &onnx.ReadOptions{Dir: filepath.Dir(path)})
	if err != nil {
		return fail(fmt.Errorf("read model %s: %w", path, err))
	}
	input, freeInput, lifted := data, free, false
	if !rw.keep1D {
		out, freeOut, err := liftModel(m, rw.block(so))
		if err != nil {
			return fail(fmt.Errorf("%s: %w", path, err))
		}
		if out != nil {
			input, freeInput, lifted = out, freeOut, true
		}
	}
	drop <- lifted
	var o ort.SessionOptions
	if so != nil {
		o = *so
	}
	o.SaveOptimized = saveOptimized
	sess, err = rt.NewSession(input, &o)
	if err != nil && saveOptimized != "" {
		o.SaveOptimized = ""
		if s, err2 := rt.NewSession(input, &o); err2 == nil {
			sess, saveErr, err = s, err, nil
		}
	}
	sum := <-digest
	freeInput()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return sess, &onnx.Model{Digest: sum, Size: size}, saveErr, nil
}

// rewrites says which load-time rewrites (liftModel) a model gets.
type rewrites struct {
	keep1D    bool // none: the model as the file has it (KeepConv1D)
	keepLeaky bool // no onnx.BlockLeakyRelu (KeepLeakyRelu)
}

// block is the blocked layout's channel block ONNX Runtime uses for
// sessions of so on this CPU, for onnx.BlockLeakyRelu: 16 with AVX-512,
// 8 with AVX2, at graph optimization level "all" on the CPU provider; 0
// where it has none (its NCHWc kernels are x86-only) or rw leaves the
// rewrite out.
func (rw rewrites) block(so *ort.SessionOptions) int64 {
	if rw.keepLeaky || rw.keep1D || runtime.GOARCH != "amd64" {
		return 0
	}
	if so != nil && (so.GraphOptimization != ort.GraphOptimizationAll || !cpuProvider(so.Provider)) {
		return 0
	}
	switch {
	case cpu.X86.HasAVX512F:
		return 16
	case cpu.X86.HasAVX2:
		return 8
	}
	return 0
}

// cpuProvider reports whether p runs on the CPU provider where it has
// the choice ("" and auto count: on x86 they take the CPU unless a GPU
// provider is there, which no rewrite here is for anyway).
func cpuProvider(p ort.Provider) bool {
	q, err := ort.ParseProvider(string(p))
	return err == nil && (q == ort.ProviderAuto || q == ort.ProviderCPU)
}

// liftModel encodes m, a checked model, with its 1-D convolutions as 2-D
// ones (onnx.LiftConv1D, which ONNX Runtime's CPU kernels run faster),
// two patterns its generic kernels run an element at a time rewritten for
// its faster ones: gathers along the last axis of a constant table as
// gathers of rows (onnx.GatherTableRows, the same values bit for bit) and
// linear upsampling of the last axis as a small matrix product
// (onnx.ResizeLinearMatMul, the same to float rounding), and, with block
// > 0, its residual stacks' LeakyRelus kept in the blocked layout
// (onnx.BlockLeakyRelu, bit for bit), into a newModelBuffer, and returns
// it and the function that frees it; nil when m has none of them. m is
// changed.
func liftModel(m *onnx.Model, block int64) ([]byte, func(), error) {
	total := 0
	rewrite := []func(*onnx.Model) (int, error){onnx.LiftConv1D, onnx.GatherTableRows, onnx.ResizeLinearMatMul}
	if block > 0 {
		rewrite = append(rewrite, func(m *onnx.Model) (int, error) { return onnx.BlockLeakyRelu(m, block) })
	}
	for _, rewrite := range rewrite {
		n, err := rewrite(m)
		if err != nil {
			return nil, nil, err
		}
		total += n
	}
	if total == 0 {
		return nil, nil, nil
	}
	size := proto.Size(m.Proto)
	buf, free, err := newModelBuffer(size)
	if err != nil {
		return nil, nil, fmt.Errorf("lift convolutions: %w", err)
	}
	out, err := proto.MarshalOptions{}.MarshalAppend(buf[:0], m.Proto)
	if err != nil || len(out) != size || (size > 0 && &out[0] != &buf[0]) {
		free()
		return nil, nil, fmt.Errorf("lift convolutions: encode %d bytes: %d written: %v", size, len(out), err)
	}
	return out, free, nil
}

// readModel reads a model file, a regular file of at most
// onnx.DefaultMaxBytes, whole into a newModelBuffer (readModelBytes); the
// caller frees it.
func readModel(path string) (data []byte, free func(), err error) {
	f, size, err := onnx.OpenFile(path, onnx.DefaultMaxBytes)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	if data, free, err = readModelBytes(f, int(size)); err != nil {
		return nil, nil, fmt.Errorf("read model %s: %w", path, err)
	}
	return data, free, nil
}

// checkModel decodes and checks model bytes as onnx.Decode does (the same
// onnx.Check, the same errors) without copying the weights: the graph's
// initializers' raw_data in the returned model points into data. Decode
// copies every weight into the decoded model, which for a 60 MB voice
// doubled the Go heap at load and cost a third of the check's time
// (BenchmarkCheckModel); the model mynah checks is only looked at, never
// kept, so the copy bought nothing. Digest and Size are left for the
// caller. opts is as for onnx.Decode.
func checkModel(data []byte, opts *onnx.ReadOptions) (*onnx.Model, error) {
	if len(data) == 0 {
		return nil, fmt.Errorf("%w: file is empty", onnx.ErrInvalidModel)
	}
	maxBytes := int64(onnx.DefaultMaxBytes)
	if opts != nil && opts.MaxBytes > 0 {
		maxBytes = opts.MaxBytes
	}
	if int64(len(data)) > maxBytes {
		return nil, fmt.Errorf("%w: %d bytes, limit %d", onnx.ErrTooLarge, len(data), maxBytes)
	}
	// The model without its initializers' raw_data, field by field in
	// the same order, and those payloads in initializer order.
	lean, raws, err := stripWeights(data)
	if err != nil {
		return nil, fmt.Errorf("%w: not an onnx protobuf (truncated or another format): %v", onnx.ErrInvalidModel, err)
	}
	var mp onnxpb.ModelProto
	// As onnx.Decode: a recursion limit well under protobuf's default.
	uo := proto.UnmarshalOptions{RecursionLimit: 200}
	if err := uo.Unmarshal(lean, &mp); err != nil {
		return nil, fmt.Errorf("%w: not an onnx protobuf (truncated or another format): %v", onnx.ErrInvalidModel, err)
	}
	// Repeated graph fields merge, and their initializers with them, in
	// the order stripWeights saw them.
	inits := mp.GetGraph().GetInitializer()
	if len(inits) != len(raws) {
		return nil, fmt.Errorf("%w: %d initializers, %d read", onnx.ErrInvalidModel, len(inits), len(raws))
	}
	for i, raw := range raws {
		if raw != nil {
			inits[i].RawData = raw
		}
	}
	m := &onnx.Model{Proto: &mp}
	if err := onnx.Check(m, opts); err != nil {
		return nil, err
	}
	return m, nil
}

// Field numbers stripWeights looks for.
const (
	modelGraphField       = 7 // ModelProto.graph
	graphInitializerField = 5 // GraphProto.initializer
	tensorRawDataField    = 9 // TensorProto.raw_data
)

// stripWeights re-encodes a ModelProto with the raw_data of its graph's
// initializers left out, and returns those payloads (aliasing data; nil
// for an initializer without raw_data; the last one where a tensor has
// several, as protobuf keeps the last).
func stripWeights(data []byte) (lean []byte, raws [][]byte, err error) {
	lean = make([]byte, 0, 64<<10)
	err = eachField(data, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
		if num != modelGraphField || typ != protowire.BytesType {
			lean = append(lean, field...)
			return nil
		}
		var graph []byte
		err := eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
			if num != graphInitializerField || typ != protowire.BytesType {
				graph = append(graph, field...)
				return nil
			}
			var tensor, raw []byte
			err := eachField(value, func(num protowire.Number, typ protowire.Type, field, value []byte) error {
				if num == tensorRawDataField && typ == protowire.BytesType {
					// Decode, too, keeps the last, and makes an empty one nil.
					raw = nil
					if len(value) > 0 {
						raw = value[:len(value):len(value)]
					}
					return nil
				}
				tensor = append(tensor, field...)
				return nil
			})
			if err != nil {
				return err
			}
			raws = append(raws, raw)
			graph = protowire.AppendTag(graph, graphInitializerField, protowire.BytesType)
			graph = protowire.AppendBytes(graph, tensor)
			return nil
		})
		if err != nil {
			return err
		}
		lean = protowire.AppendTag(lean, modelGraphField, protowire.BytesType)
		lean = protowire.AppendBytes(lean, graph)
		return nil
	})
	return lean, raws, err
}

// eachField calls f for each field of the protobuf message b, in order,
// with the whole field as encoded and, for a length-delimited one, its
// payload.
func eachField(b []byte, f func(num protowire.Number, typ protowire.Type, field, value []byte) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		m := protowire.ConsumeFieldValue(num, typ, b[n:])
		if m < 0 {
			return fmt.Errorf("field %d: %w", num, protowire.ParseError(m))
		}
		var value []byte
		if typ == protowire.BytesType {
			value, _ = protowire.ConsumeBytes(b[n:])
		}
		if err := f(num, typ, b[:n+m], value); err != nil {
			return err
		}
		b = b[n+m:]
	}
	return nil
}
