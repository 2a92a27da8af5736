package ort

import (
	"fmt"
	"log/slog"
	"strings"
)

// Limits. They are checked before anything reaches ONNX Runtime so that an
// oversized request fails with an error naming the limit instead of an
// allocation failure deep inside C++.
const (
	// MaxModelBytes is the largest model NewSession accepts: protobuf
	// messages, and so ONNX models without external data, cannot exceed 2 GiB.
	MaxModelBytes = 2<<30 - 1

	// MaxThreads bounds IntraOpThreads and InterOpThreads; more threads than
	// this is a configuration mistake on any device this project targets.
	MaxThreads = 256
)

// Options configure Open. A nil *Options means defaults.
type Options struct {
	// LibraryPath is the configured libonnxruntime path, passed to
	// FindLibrary; "" searches $MYNAH_ORT_LIB, the project's .ort/ and the
	// system directories.
	LibraryPath string

	// Logger receives the package's few log lines (library loaded, provider
	// fallback). nil discards them.
	Logger *slog.Logger

	// Building, when set, is called with the work of building each
	// session (ONNX Runtime parsing and optimizing the model), which it
	// must call once; LoadThreshold makes one that tunes the C allocator
	// for it.
	Building func(build func())
}

// GraphOptimization is ONNX Runtime's graph optimization level. The zero
// value is GraphOptimizationAll, ONNX Runtime's own default.
type GraphOptimization int

const (
	// GraphOptimizationAll applies every rewrite, including layout changes
	// that are specific to the CPU it runs on.
	GraphOptimizationAll GraphOptimization = iota
	// GraphOptimizationExtended applies fusions (attention, GELU, ...).
	GraphOptimizationExtended
	// GraphOptimizationBasic applies semantics-preserving rewrites only
	// (constant folding, redundant node removal).
	GraphOptimizationBasic
	// GraphOptimizationDisabled runs the graph as written; useful when
	// comparing a quantized graph with its source node by node.
	GraphOptimizationDisabled
)

var graphOptimizationNames = [...]string{"all", "extended", "basic", "disabled"}

func (g GraphOptimization) String() string {
	if g >= 0 && int(g) < len(graphOptimizationNames) {
		return graphOptimizationNames[g]
	}
	return fmt.Sprintf("GraphOptimization(%d)", int(g))
}

// ParseGraphOptimization parses a config value: all, extended, basic or
// disabled (case-insensitive); "" means all.
func ParseGraphOptimization(s string) (GraphOptimization, error) {
	v := strings.ToLower(strings.TrimSpace(s))
	if v == "" {
		return GraphOptimizationAll, nil
	}
	for i, name := range graphOptimizationNames {
		if v == name {
			return GraphOptimization(i), nil
		}
	}
	return 0, fmt.Errorf("graph optimization %q: want one of %s: %w",
		s, strings.Join(graphOptimizationNames[:], ", "), ErrInvalidOptions)
}

// Provider names an ONNX Runtime execution provider.
type Provider string

const (
	// ProviderAuto uses the best provider that works: TensorRT (only when
	// SessionOptions.TensorRTCacheDir is set), then CUDA, then the CPU. A
	// fallback is logged once per Runtime; it is never an error.
	ProviderAuto Provider = "auto"
	// ProviderCPU is ONNX Runtime's default CPU provider.
	ProviderCPU Provider = "cpu"
	// ProviderCUDA requires a CUDA build of ONNX Runtime with
	// libonnxruntime_providers_cuda.so next to it; failing that, NewSession
	// returns ErrProviderUnavailable.
	ProviderCUDA Provider = "cuda"
	// ProviderTensorRT requires a TensorRT build; nodes TensorRT cannot run
	// go to CUDA. Without TensorRTCacheDir every process start rebuilds the
	// engines, which takes tens of seconds to minutes on a Jetson.
	ProviderTensorRT Provider = "tensorrt"
)

// ParseProvider parses a config value: auto, cpu, cuda or tensorrt
// (case-insensitive); "" means auto.
func ParseProvider(s string) (Provider, error) {
	switch p := Provider(strings.ToLower(strings.TrimSpace(s))); p {
	case "":
		return ProviderAuto, nil
	case ProviderAuto, ProviderCPU, ProviderCUDA, ProviderTensorRT:
		return p, nil
	}
	return "", fmt.Errorf("provider %q: want auto, cpu, cuda or tensorrt: %w", s, ErrInvalidOptions)
}

// SessionOptions configure NewSession. A nil *SessionOptions means defaults,
// and every zero field means its default, so a config file can leave out
// whatever it does not care about.
type SessionOptions struct {
	// IntraOpThreads is how many threads one operator (a MatMul, a Conv) may
	// use. 0 lets ONNX Runtime choose: one per physical core. On a shared
	// 2- or 4-core board, 1 or 2 leaves room for audio and MQTT.
	IntraOpThreads int

	// InterOpThreads is how many independent graph branches may run at
	// once. 0 or 1 runs the graph sequentially (ONNX Runtime's default);
	// above 1 switches the session to ONNX Runtime's parallel execution
	// mode, which only pays off for graphs with wide independent branches.
	InterOpThreads int

	// GraphOptimization is the rewrite level applied at load; the zero
	// value is GraphOptimizationAll.
	GraphOptimization GraphOptimization

	// CPUArena turns on ONNX Runtime's CPU memory arena: a run's tensors
	// come from a few large regions the session keeps, instead of malloc
	// and free per tensor per run. Off (this package's default) keeps the
	// memory of a run for no longer than the run; on, the arena keeps
	// what its largest run needed until ReleaseArena, Close, or (with
	// ArenaShrink) the end of each run. What it buys depends on the C
	// allocator: under mynahd's glibc settings (256 KiB mmap threshold,
	// every larger tensor its own mapping, faulted in again each run)
	// synthesis on one thread takes about half the time (audio/voice
	// BenchmarkSynthesizeOneThread: the 15 M-parameter bench voice
	// 1305 -> 728 ms a sentence, the demo voice 28.5 -> 13.7 ms, system
	// time 7.7 s -> 0.7 s).
	CPUArena bool

	// ArenaShrink, with CPUArena, has the arena give back its free regions
	// at the end of every run (ONNX Runtime's run option
	// memory.enable_memory_arena_shrinkage): a run's tensors still come
	// from a few large regions instead of a malloc each, but the memory
	// of a run lasts no longer than the run, and the next run maps and
	// faults its regions in again. Without it the arena keeps its regions
	// until Session.ReleaseArena (which mynah's Piper voices call once the
	// engine is idle) or Close.
	ArenaShrink bool

	// MemoryPattern turns on ONNX Runtime's memory patterns: a run's
	// tensors planned into one block, from a plan kept per input shape.
	// A plan only exists for shapes seen before, and every sentence is a
	// new shape, so for speech it adds nothing (BenchmarkSynthesizeOneThread
	// within noise) but memory: 22 MB more peak in the demo soak with
	// CPUArena. For fixed-shape models it saves allocations.
	MemoryPattern bool

	// Spin lets ONNX Runtime's worker threads busy-wait for the next piece
	// of work between operators. Off (the default) keeps an idle daemon at
	// 0% CPU and leaves the cores to audio; on can shave latency off many
	// tiny runs (autoregressive decoding) on an otherwise idle machine.
	Spin bool

	// SaveOptimized, when set, is a file ONNX Runtime writes the model to
	// once it has optimized it, in its own format (the graph rewrites of
	// GraphOptimization done, the weights laid out for this CPU's
	// kernels), when it builds the session on the CPU provider: a later
	// NewSessionORT of that file skips the optimizing. The file is only
	// good for the same ONNX Runtime release on a CPU with the same
	// instruction set.
	SaveOptimized string

	// Provider selects the execution provider; "" means ProviderAuto.
	Provider Provider

	// TensorRTCacheDir is where TensorRT keeps built engines between runs.
	// Setting it also makes ProviderAuto try TensorRT first.
	TensorRTCacheDir string

	// CUDADevice is the GPU index for the cuda and tensorrt providers.
	CUDADevice int

	// ortFormat: the model is in ONNX Runtime's format and its buffer
	// outlives the session (NewSessionORT).
	ortFormat bool
}

// normalize fills defaults and checks ranges, naming the bad field.
func (o *SessionOptions) normalize() (SessionOptions, error) {
	var so SessionOptions
	if o != nil {
		so = *o
	}
	p, err := ParseProvider(string(so.Provider))
	if err != nil {
		return so, fmt.Errorf("session options: Provider: %w", err)
	}
	so.Provider = p
	switch {
	case so.IntraOpThreads < 0 || so.IntraOpThreads > MaxThreads:
		return so, fmt.Errorf("session options: IntraOpThreads %d outside 0..%d (MaxThreads): %w",
			so.IntraOpThreads, MaxThreads, ErrInvalidOptions)
	case so.InterOpThreads < 0 || so.InterOpThreads > MaxThreads:
		return so, fmt.Errorf("session options: InterOpThreads %d outside 0..%d (MaxThreads): %w",
			so.InterOpThreads, MaxThreads, ErrInvalidOptions)
	case so.GraphOptimization < GraphOptimizationAll || so.GraphOptimization > GraphOptimizationDisabled:
		return so, fmt.Errorf("session options: GraphOptimization %d unknown: %w",
			int(so.GraphOptimization), ErrInvalidOptions)
	case so.CUDADevice < 0:
		return so, fmt.Errorf("session options: CUDADevice %d is negative: %w", so.CUDADevice, ErrInvalidOptions)
	}
	return so, nil
}

// providerPlan is the order NewSession tries providers in.
func (o SessionOptions) providerPlan() []Provider {
	switch o.Provider {
	case ProviderAuto:
		if o.TensorRTCacheDir != "" {
			return []Provider{ProviderTensorRT, ProviderCUDA, ProviderCPU}
		}
		return []Provider{ProviderCUDA, ProviderCPU}
	default:
		return []Provider{o.Provider}
	}
}
