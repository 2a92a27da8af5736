//go:build cgo

package ort

// This is the only file that touches onnxruntime_go (and through it cgo and
// the C API). Everything it exports to the rest of the package is plain Go:
// TensorInfo, Tensor, errors.

import (
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"unsafe"

	onnx "github.com/yalue/onnxruntime_go"
)

const cgoEnabled = true

// lib is the process-wide state behind every Runtime: onnxruntime_go keeps a
// single environment per process, so this reference-counts it.
var lib struct {
	mu      sync.Mutex
	refs    int
	path    string
	version string
	// providerErr remembers providers whose Append failed (their library is
	// missing from this build); asking again would fail the same way and
	// print ONNX Runtime's own error line again.
	providerErr map[Provider]error
}

func loadLibrary(path string) (string, error) {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs > 0 {
		if path != lib.path {
			return "", fmt.Errorf("%s requested while %s is loaded: %w", path, lib.path, ErrLibraryConflict)
		}
		lib.refs++
		return lib.version, nil
	}
	if onnx.IsInitialized() {
		return "", fmt.Errorf("onnxruntime_go was initialized outside this package: %w", ErrLibraryConflict)
	}
	if err := checkLibrary(path); err != nil {
		return "", fmt.Errorf("load %s: %w: %v", path, ErrBadLibrary, err)
	}
	onnx.SetSharedLibraryPath(path)
	// ONNX Runtime's own log goes to stderr, outside slog, and repeats
	// errors that come back to the caller anyway: keep it to fatal ones.
	if err := onnx.InitializeEnvironment(onnx.WithLogLevelFatal()); err != nil {
		return "", fmt.Errorf("load %s: %w: %s", path, ErrBadLibrary, explainLoadError(err))
	}
	lib.refs, lib.path, lib.version = 1, path, onnx.GetVersion()
	lib.providerErr = make(map[Provider]error)
	return lib.version, nil
}

// ortMessage keeps the part of an ONNX Runtime error a person can act on:
// ORT prefixes its messages with a C++ source location and a status code
// ("/onnxruntime_src/...cc:83 ... [ONNXRuntimeError] : 2 : INVALID_ARGUMENT : "),
// and onnxruntime_go adds its own prefixes on top.
func ortMessage(err error) string {
	msg := err.Error()
	const marker = "[ONNXRuntimeError] : "
	if i := strings.LastIndex(msg, marker); i >= 0 {
		rest := msg[i+len(marker):]
		// Skip "<code> : <CODE NAME> : ".
		if parts := strings.SplitN(rest, " : ", 3); len(parts) == 3 {
			return strings.ToLower(parts[1]) + ": " + parts[2]
		}
		return rest
	}
	return msg
}

// explainLoadError turns onnxruntime_go's loader messages into advice.
func explainLoadError(err error) string {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "OrtGetApiBase"):
		return "the file is a shared library but not ONNX Runtime (no OrtGetApiBase)"
	case strings.Contains(msg, "Error setting ORT API base"):
		return "the ONNX Runtime release is too old for onnxruntime_go v1.27.0 (API version 24, ONNX Runtime 1.24 or newer; scripts/setup.sh installs 1.30.0)"
	}
	return msg
}

func releaseLibrary() error {
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if lib.refs == 0 {
		return nil
	}
	lib.refs--
	if lib.refs > 0 {
		return nil
	}
	lib.path, lib.version, lib.providerErr = "", "", nil
	return onnx.DestroyEnvironment()
}

// ortModelIO asks ONNX Runtime for the model's inputs and outputs, which
// onnxruntime_go offers only through a temporary CPU session: the model is
// parsed twice. modelIO does it only when the file cannot tell.
func ortModelIO(model []byte) (inputs, outputs []TensorInfo, err error) {
	in, out, err := onnx.GetInputOutputInfoWithONNXData(model)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %s", ErrInvalidModel, ortMessage(err))
	}
	if inputs, err = convertInfos("input", in); err != nil {
		return nil, nil, err
	}
	if outputs, err = convertInfos("output", out); err != nil {
		return nil, nil, err
	}
	return inputs, outputs, nil
}

func convertInfos(kind string, list []onnx.InputOutputInfo) ([]TensorInfo, error) {
	out := make([]TensorInfo, len(list))
	for i, info := range list {
		if info.OrtValueType != onnx.ONNXTypeTensor {
			return nil, fmt.Errorf("%s %q is a %s, only tensors are supported: %w",
				kind, info.Name, info.OrtValueType, ErrUnsupportedModel)
		}
		t, ok := onnxElementTypes[int32(info.DataType)]
		if !ok {
			return nil, fmt.Errorf("%s %q has element type %s, which has no Tensor field: %w",
				kind, info.Name, info.DataType, ErrUnsupportedModel)
		}
		out[i] = TensorInfo{Name: info.Name, Type: t, Dims: append([]int64{}, info.Dimensions...)}
	}
	return out, nil
}

var graphLevels = map[GraphOptimization]onnx.GraphOptimizationLevel{
	GraphOptimizationAll:      onnx.GraphOptimizationLevelEnableAll,
	GraphOptimizationExtended: onnx.GraphOptimizationLevelEnableExtended,
	GraphOptimizationBasic:    onnx.GraphOptimizationLevelEnableBasic,
	GraphOptimizationDisabled: onnx.GraphOptimizationLevelDisableAll,
}

type backendSession struct {
	ds      *onnx.DynamicAdvancedSession
	outputs []TensorInfo
	ro      *onnx.RunOptions // every run's; nil: ONNX Runtime's defaults
	shrink  *onnx.RunOptions // ReleaseArena's; nil without the arena
}

// newBackendSession creates the session on exactly one provider.
func newBackendSession(model []byte, inputs, outputs []TensorInfo, so SessionOptions, p Provider) (*backendSession, error) {
	opts, err := onnx.NewSessionOptions()
	if err != nil {
		return nil, fmt.Errorf("session options: %w", err)
	}
	defer opts.Destroy()
	if err := configure(opts, so); err != nil {
		return nil, fmt.Errorf("session options: %w", err)
	}
	save := so.SaveOptimized != "" && p == ProviderCPU
	if save {
		// ONNX Runtime writes the file only once it has built the whole
		// session, and fails the session, after the work, with a message
		// that names neither the cause nor the option.
		if err := checkSaveOptimized(so.SaveOptimized); err != nil {
			return nil, err
		}
		if err := opts.SetOptimizedModelFilePath(so.SaveOptimized); err != nil {
			return nil, fmt.Errorf("session options: save optimized: %w", err)
		}
		if err := opts.AddSessionConfigEntry("session.save_model_format", "ORT"); err != nil {
			return nil, fmt.Errorf("session options: save format: %w", err)
		}
	}
	if err := appendProvider(opts, so, p); err != nil {
		return nil, fmt.Errorf("provider %s: %w: %s (it needs a GPU build of ONNX Runtime with libonnxruntime_providers_%s.so next to the library)",
			p, ErrProviderUnavailable, ortMessage(err), p)
	}
	in := make([]string, len(inputs))
	for i, t := range inputs {
		in[i] = t.Name
	}
	out := make([]string, len(outputs))
	for i, t := range outputs {
		out[i] = t.Name
	}
	ds, err := onnx.NewDynamicAdvancedSessionWithONNXData(model, in, out, opts)
	if err != nil {
		msg := ortMessage(err)
		if p != ProviderCPU {
			return nil, fmt.Errorf("provider %s: %w: %s", p, ErrProviderUnavailable, msg)
		}
		if save && strings.Contains(msg, "Failed to save") {
			return nil, fmt.Errorf("save optimized model to %s: onnx runtime could not write the file (%s); SaveOptimized must name a writable file in an existing directory",
				so.SaveOptimized, msg)
		}
		return nil, fmt.Errorf("%w: %s", ErrInvalidModel, msg)
	}
	b := &backendSession{ds: ds, outputs: outputs}
	if so.CPUArena {
		if b.shrink, err = newRunConfig(map[string]string{runKeyArenaShrink: "cpu:0"}); err != nil {
			ds.Destroy()
			return nil, err
		}
		if so.ArenaShrink {
			b.ro = b.shrink
		}
	}
	return b, nil
}

func configure(opts *onnx.SessionOptions, so SessionOptions) error {
	if err := opts.SetIntraOpNumThreads(so.IntraOpThreads); err != nil {
		return fmt.Errorf("intra-op threads: %w", err)
	}
	if so.InterOpThreads > 1 {
		if err := opts.SetExecutionMode(onnx.ExecutionModeParallel); err != nil {
			return fmt.Errorf("execution mode: %w", err)
		}
		if err := opts.SetInterOpNumThreads(so.InterOpThreads); err != nil {
			return fmt.Errorf("inter-op threads: %w", err)
		}
	}
	if err := opts.SetGraphOptimizationLevel(graphLevels[so.GraphOptimization]); err != nil {
		return fmt.Errorf("graph optimization: %w", err)
	}
	if err := opts.SetCpuMemArena(so.CPUArena); err != nil {
		return fmt.Errorf("cpu arena: %w", err)
	}
	if err := opts.SetMemPattern(so.MemoryPattern); err != nil {
		return fmt.Errorf("memory pattern: %w", err)
	}
	if so.ortFormat {
		// ONNX Runtime reads the model, weights included, where it lies
		// instead of copying it: the caller keeps it for the session.
		for _, key := range []string{"session.use_ort_model_bytes_directly", "session.use_ort_model_bytes_for_initializers"} {
			if err := opts.AddSessionConfigEntry(key, "1"); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	if !so.Spin {
		for _, key := range []string{"session.intra_op.allow_spinning", "session.inter_op.allow_spinning"} {
			if err := opts.AddSessionConfigEntry(key, "0"); err != nil {
				return fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return nil
}

func appendProvider(opts *onnx.SessionOptions, so SessionOptions, p Provider) error {
	if p == ProviderCPU {
		return nil // ONNX Runtime always has the CPU provider, last in line
	}
	lib.mu.Lock()
	defer lib.mu.Unlock()
	if err := lib.providerErr[p]; err != nil {
		return err
	}
	device := map[string]string{"device_id": strconv.Itoa(so.CUDADevice)}
	var err error
	switch p {
	case ProviderCUDA:
		err = appendCUDA(opts, device)
	case ProviderTensorRT:
		trt, terr := onnx.NewTensorRTProviderOptions()
		if terr != nil {
			return terr
		}
		defer trt.Destroy()
		settings := map[string]string{"device_id": device["device_id"]}
		if so.TensorRTCacheDir != "" {
			settings["trt_engine_cache_enable"] = "1"
			settings["trt_engine_cache_path"] = so.TensorRTCacheDir
		}
		if uerr := trt.Update(settings); uerr != nil {
			return fmt.Errorf("tensorrt options: %w", uerr)
		}
		if err = opts.AppendExecutionProviderTensorRT(trt); err == nil {
			// Nodes TensorRT cannot take should go to the GPU, not the CPU.
			err = appendCUDA(opts, device)
		}
	default:
		return fmt.Errorf("unknown provider %q", p)
	}
	if err != nil {
		lib.providerErr[p] = err
	}
	return err
}

func appendCUDA(opts *onnx.SessionOptions, settings map[string]string) error {
	cuda, err := onnx.NewCUDAProviderOptions()
	if err != nil {
		return err
	}
	defer cuda.Destroy()
	if err := cuda.Update(settings); err != nil {
		return fmt.Errorf("cuda options: %w", err)
	}
	return opts.AppendExecutionProviderCUDA(cuda)
}

func (b *backendSession) metadata() (map[string]string, error) {
	md, err := b.ds.GetModelMetadata()
	if err != nil {
		return nil, err
	}
	defer md.Destroy()
	keys, err := md.GetCustomMetadataMapKeys()
	if err != nil {
		return nil, err
	}
	meta := make(map[string]string, len(keys))
	for _, k := range keys {
		v, ok, err := md.LookupCustomMetadataMap(k)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", k, err)
		}
		if ok {
			meta[k] = v
		}
	}
	return meta, nil
}

func (b *backendSession) destroy() error {
	if b == nil || b.ds == nil {
		return nil
	}
	err := b.ds.Destroy()
	b.ds = nil
	if b.ro != nil && b.ro != b.shrink {
		b.ro.Destroy()
	}
	if b.shrink != nil {
		b.shrink.Destroy()
	}
	b.shrink, b.ro = nil, nil
	return err
}

// run executes the session, with the arena shrunk at the end when shrink
// (and there is an arena). in is in model order and validated; out is in
// model order with caller-shaped outputs filled in and the rest zero.
func (b *backendSession) run(in, out []Tensor, shrink bool) ([]Tensor, error) {
	// The tensors below point ONNX Runtime at Go slices for the length of
	// the run; pinning makes that legal under the cgo pointer rules.
	var pin runtime.Pinner
	defer pin.Unpin()

	inVals := make([]onnx.Value, len(in))
	defer destroyAll(inVals)
	for i := range in {
		v, err := goValue(&in[i], &pin)
		if err != nil {
			return nil, fmt.Errorf("input %q: %w", in[i].Name, err)
		}
		inVals[i] = v
	}

	outVals := make([]onnx.Value, len(out))
	for i := range out {
		info := b.outputs[i]
		if out[i].Name == "" {
			// onnxruntime_go v1.27.0 cannot turn an ORT-allocated scalar or
			// float16 tensor into a Go value; when the model fixes the shape
			// we allocate the output ourselves instead.
			if len(info.Dims) > 0 && info.Type != Float16 {
				continue
			}
			if !info.static() || (info.Type == Float16 && len(info.Dims) == 0) {
				destroyAll(outVals)
				return nil, fmt.Errorf("output %q (%s): onnxruntime_go cannot allocate it; pass its shape with RunWithOutputs: %w",
					info.Name, info, ErrUnsupportedModel)
			}
			out[i] = Tensor{Name: info.Name, Type: info.Type, Shape: append([]int64{}, info.Dims...)}
			n, _ := elementCount(info.Dims)
			out[i].allocate(n)
		}
		v, err := goValue(&out[i], &pin)
		if err != nil {
			destroyAll(outVals)
			return nil, fmt.Errorf("output %q: %w", out[i].Name, err)
		}
		outVals[i] = v
	}

	ro := b.ro
	if shrink {
		ro = b.shrink
	}
	if err := b.ds.RunWithOptions(inVals, outVals, ro); err != nil {
		destroyAll(outVals)
		return nil, errors.New(ortMessage(err))
	}
	defer destroyAll(outVals)
	res := make([]Tensor, len(out))
	for i, v := range outVals {
		if out[i].Name != "" {
			res[i] = out[i]
			if len(res[i].Shape) == 0 {
				readScalar(&res[i], v)
			}
			continue
		}
		t, err := tensorFromValue(b.outputs[i].Name, v)
		if err != nil {
			return nil, err
		}
		res[i] = t
	}
	return res, nil
}

func destroyAll(vals []onnx.Value) {
	for i, v := range vals {
		if v != nil {
			v.Destroy()
			vals[i] = nil
		}
	}
}

// goValue wraps t's slice in an ONNX Runtime value without copying.
func goValue(t *Tensor, pin *runtime.Pinner) (onnx.Value, error) {
	switch t.Type {
	case Float32:
		return newValue(t.Shape, t.Float32, pin)
	case Float64:
		return newValue(t.Shape, t.Float64, pin)
	case Int64:
		return newValue(t.Shape, t.Int64, pin)
	case Int32:
		return newValue(t.Shape, t.Int32, pin)
	case Int8:
		return newValue(t.Shape, t.Int8, pin)
	case Uint8:
		return newValue(t.Shape, t.Uint8, pin)
	case Bool:
		return newValue(t.Shape, t.Bool, pin)
	case Float16:
		if len(t.Shape) == 0 {
			return nil, errors.New("float16 scalars are not supported by onnxruntime_go")
		}
		// onnxruntime_go has no float16 Go type; a custom-data tensor over
		// the same memory carries the bit patterns. It refuses zero bytes,
		// so an empty tensor gets a 2-byte dummy buffer ORT never reads.
		var raw []byte
		if len(t.Float16) == 0 {
			raw = make([]byte, 2)
		} else {
			pin.Pin(&t.Float16[0])
			raw = unsafe.Slice((*byte)(unsafe.Pointer(&t.Float16[0])), 2*len(t.Float16))
		}
		return onnx.NewCustomDataTensor(onnx.Shape(t.Shape), raw, onnx.TensorElementDataTypeFloat16)
	}
	return nil, fmt.Errorf("element type %s not supported", t.Type)
}

func newValue[T onnx.TensorData](shape []int64, data []T, pin *runtime.Pinner) (onnx.Value, error) {
	if len(shape) == 0 {
		// A rank-0 tensor; onnxruntime_go's Tensor refuses empty shapes.
		return onnx.NewScalar(data[0])
	}
	if len(data) > 0 {
		pin.Pin(&data[0])
	}
	return onnx.NewTensor(onnx.Shape(shape), data)
}

// readScalar copies a scalar output out of onnxruntime_go's own buffer.
func readScalar(t *Tensor, v onnx.Value) {
	switch s := v.(type) {
	case *onnx.Scalar[float32]:
		t.Float32[0] = s.GetData()
	case *onnx.Scalar[float64]:
		t.Float64[0] = s.GetData()
	case *onnx.Scalar[int64]:
		t.Int64[0] = s.GetData()
	case *onnx.Scalar[int32]:
		t.Int32[0] = s.GetData()
	case *onnx.Scalar[int8]:
		t.Int8[0] = s.GetData()
	case *onnx.Scalar[uint8]:
		t.Uint8[0] = s.GetData()
	case *onnx.Scalar[bool]:
		t.Bool[0] = s.GetData()
	}
}

// tensorFromValue takes the Go slice onnxruntime_go copied an ORT-allocated
// output into; the caller destroys v, which frees only the C side.
func tensorFromValue(name string, v onnx.Value) (Tensor, error) {
	t := Tensor{Name: name, Shape: append([]int64{}, v.GetShape()...)}
	switch x := v.(type) {
	case *onnx.Tensor[float32]:
		t.Type, t.Float32 = Float32, nonNil(x.GetData())
	case *onnx.Tensor[float64]:
		t.Type, t.Float64 = Float64, nonNil(x.GetData())
	case *onnx.Tensor[int64]:
		t.Type, t.Int64 = Int64, nonNil(x.GetData())
	case *onnx.Tensor[int32]:
		t.Type, t.Int32 = Int32, nonNil(x.GetData())
	case *onnx.Tensor[int8]:
		t.Type, t.Int8 = Int8, nonNil(x.GetData())
	case *onnx.Tensor[uint8]:
		t.Type, t.Uint8 = Uint8, nonNil(x.GetData())
	case *onnx.Tensor[bool]:
		t.Type, t.Bool = Bool, nonNil(x.GetData())
	default:
		return Tensor{}, fmt.Errorf("output %q: onnx runtime returned %T: %w", name, v, ErrUnsupportedModel)
	}
	return t, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}
