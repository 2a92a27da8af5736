// Package quant rewrites ONNX models so that they take less space, and
// less time where the hardware allows, and inspects what a model holds.
//
// Four modes (Options.Mode):
//
//   - fp16-store: float32 weights are stored as float16 and a Cast back to
//     float32 is inserted once per weight. ONNX Runtime folds the Casts at
//     load, so the file halves and compute stays float32. The safe choice
//     for conv-heavy voices and vocoders.
//   - int8: MatMul and Gemm with a constant 2-D weight become
//     DynamicQuantizeLinear → MatMulInteger → Cast → Mul, with symmetric
//     per-output-column int8 weights and one DynamicQuantizeLinear per
//     activation. Conv is included only with Options.IncludeConv (it
//     becomes ConvInteger); ConvTranspose and LSTM have no integer
//     operator in ONNX and stay float.
//   - nbits: MatMul and Gemm with a constant 2-D weight become
//     com.microsoft MatMulNBits: weight-only, block-wise symmetric 4-bit.
//   - auto: MatMul and Gemm weights of transformer size (K ≥ AutoMinK)
//     get AutoMatMul (int8 or nbits), every other float weight is stored as
//     fp16, and Gather tables (embeddings) are left alone (Options.RestFP16
//     stores them as fp16 too).
//
// A result must pass the quality gate (package quant/gate) before anyone
// runs it; this package only guarantees that the rewritten graph computes
// what the dequantized weights compute. The tests check exactly that in
// ONNX Runtime for every mode, against a Go reference, so a transposed
// weight or a swapped nibble fails them.
//
// Rewrites keep every name unique and the node order topological, follow
// If/Loop/Scan bodies, quantize a weight shared by several nodes once,
// and add the com.microsoft opset import when MatMulNBits needs it.
// Already-quantized models and weights holding NaN or Inf are refused.
package quant

import (
	"errors"
	"fmt"
	"math/bits"

	"google.golang.org/protobuf/proto"

	"github.com/mynah-tts/mynah/quant/cpuclass"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

// Errors returned by Quantize. Test for them with errors.Is; the wrapping
// error names the tensor, node or option at fault.
var (
	// ErrAlreadyQuantized means the model already holds quantized operators
	// (QLinear*, MatMulInteger, MatMulNBits, DequantizeLinear, ...) or
	// low-precision weights (float16, int8, uint8, 4-bit). Quantizing twice
	// compounds the error without saving much; start from the float model.
	ErrAlreadyQuantized = errors.New("model is already quantized")

	// ErrNonFinite means a weight the mode would rewrite holds NaN or Inf:
	// its scale would be meaningless, and the model is broken anyway.
	ErrNonFinite = errors.New("weight holds NaN or Inf")

	// ErrInvalidOptions means an Options field is out of range; the error
	// names the field.
	ErrInvalidOptions = errors.New("invalid quantization options")

	// ErrExternalData means a weight's external data could not be used:
	// no directory to read it from, a location outside that directory, or
	// a file shorter than the tensor says.
	ErrExternalData = errors.New("external tensor data unusable")

	// ErrTooLarge means the rewritten model would exceed MaxModelBytes.
	ErrTooLarge = errors.New("quantized model exceeds limit")
)

// Mode is a quantization mode.
type Mode string

// The modes; see the package documentation.
const (
	ModeFP16Store Mode = "fp16-store"
	ModeInt8      Mode = "int8"
	ModeNBits     Mode = "nbits"
	ModeAuto      Mode = "auto"
)

// ParseMode parses a command-line or config value.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(s); m {
	case ModeFP16Store, ModeInt8, ModeNBits, ModeAuto:
		return m, nil
	}
	return "", fmt.Errorf("%w: mode %q: want fp16-store, int8, nbits or auto", ErrInvalidOptions, s)
}

// Defaults and limits.
const (
	// DefaultBits, DefaultBlockSize and DefaultAccuracyLevel are the nbits
	// defaults: 4-bit blocks of 32 along K, int8 dot products.
	DefaultBits          = 4
	DefaultBlockSize     = 32
	DefaultAccuracyLevel = 4
	// MinBlockSize and MaxBlockSize bound BlockSize (a power of two), as
	// MatMulNBits does.
	MinBlockSize = 16
	MaxBlockSize = 256

	// MinElements is the size below which a float weight is never stored
	// as fp16: biases, norms and scalars cost nothing and some are read as
	// shapes or scales by the operators that consume them.
	MinElements = 64

	// NBitsMinDim is the smallest K and N of a MatMul weight that
	// ModeNBits (and auto with AutoMatMul nbits) stores in 4 bits; a
	// narrower one — an input projection of a few features, an output head
	// of a few values — is quantized to int8 instead. Four bits would save
	// a few hundred bytes there, and a head's error reaches the model's
	// output undamped (4-bit tools keep output heads at 8 bits or more
	// for the same reason).
	NBitsMinDim = 32

	// AutoMinK is the smallest inner dimension K of a MatMul weight that
	// ModeAuto quantizes to integers. Below it (small projections such as
	// a 3-wide prosody input) the quantization of the activation costs
	// more than the product, so such weights are stored as fp16 instead.
	AutoMinK = 16

	// MaxModelBytes is the largest model Quantize returns: a protobuf, and
	// so an ONNX file without external data, cannot exceed 2 GiB.
	MaxModelBytes = onnx.DefaultMaxBytes
)

// Options configure Quantize. A nil *Options means ModeFP16Store with the
// defaults.
type Options struct {
	// Mode is the rewrite; "" means ModeFP16Store.
	Mode Mode

	// Target is the class of CPU the model is for; "" means this one
	// (cpuclass.Host). It decides Int8Format when that is unset.
	Target cpuclass.Class

	// Int8Format is how int8 (and auto's int8) stores MatMul and Gemm
	// weights; "" means cpuclass.Int8FormatFor(Target): full-range int8
	// where ONNX Runtime computes it exactly (VNNI, arm64), 7-bit weights
	// elsewhere. Convolutions (ConvInteger takes uint8 weights) and
	// embedding tables are stored at full range in every format: no
	// kernel adds their products in 16 bits.
	Int8Format cpuclass.Int8Format

	// Bits is the nbits weight width: 4 (0 means 4). 2 and 3 are accepted
	// to show the gate refusing a destructive setting: their weights are
	// rounded to 4 or 8 levels but stored in MatMulNBits' 4-bit layout, so
	// the loss is real and the file is no smaller than at 4 bits.
	Bits int

	// BlockSize is the nbits block length along K: a power of two in
	// MinBlockSize..MaxBlockSize; 0 means DefaultBlockSize.
	BlockSize int

	// AccuracyLevel is MatMulNBits' accuracy_level: 0 (unset), 1 (fp32),
	// 2 (fp16), 3 (bf16) or 4 (int8 dot products); 0 here means
	// DefaultAccuracyLevel.
	AccuracyLevel int

	// IncludeConv (int8 and auto) also quantizes Conv to ConvInteger.
	// Off, convolutions are never made integer: on conv-heavy voices
	// int8 is usually slower and noisier than float.
	IncludeConv bool

	// RestFP16 (int8, nbits, auto) also stores the float weights the mode
	// leaves alone as fp16, Gather tables (embeddings) included: int8 and
	// nbits otherwise keep them float32, auto keeps only Gather tables.
	// Decoders whose embedding table is a large share of the file need it
	// to shrink 3×.
	RestFP16 bool

	// EmbeddingsInt8 (int8, nbits, auto) stores 2-D Gather tables read
	// along axis 0 (token embeddings) as int8 with one scale per row; the
	// rows a Gather picks are dequantized after the lookup. It takes
	// precedence over RestFP16 for those tables.
	EmbeddingsInt8 bool

	// AutoMatMul is what ModeAuto does with transformer MatMuls:
	// ModeInt8 (the default) or ModeNBits.
	AutoMatMul Mode

	// Dir is the directory external tensor data is read from (normally
	// the model's directory); "" refuses models with external data. Data
	// read from there is stored inline in the result.
	Dir string

	// Progress, if set, is called after each weight is handled, with the
	// count done, the total, and the weight's name.
	Progress func(done, total int, what string)
}

func (o *Options) resolve() (Options, error) {
	var r Options
	if o != nil {
		r = *o
	}
	if r.Mode == "" {
		r.Mode = ModeFP16Store
	}
	if _, err := ParseMode(string(r.Mode)); err != nil {
		return r, fmt.Errorf("options: Mode: %w", err)
	}
	if r.Bits == 0 {
		r.Bits = DefaultBits
	}
	if r.Bits < 2 || r.Bits > 4 {
		return r, fmt.Errorf("%w: Bits %d: want 2, 3 or 4", ErrInvalidOptions, r.Bits)
	}
	if r.BlockSize == 0 {
		r.BlockSize = DefaultBlockSize
	}
	if r.BlockSize < MinBlockSize || r.BlockSize > MaxBlockSize || bits.OnesCount(uint(r.BlockSize)) != 1 {
		return r, fmt.Errorf("%w: BlockSize %d: want a power of two in %d..%d (MinBlockSize..MaxBlockSize)",
			ErrInvalidOptions, r.BlockSize, MinBlockSize, MaxBlockSize)
	}
	if r.AccuracyLevel == 0 {
		r.AccuracyLevel = DefaultAccuracyLevel
	}
	if r.AccuracyLevel < 1 || r.AccuracyLevel > 4 {
		return r, fmt.Errorf("%w: AccuracyLevel %d: want 1..4", ErrInvalidOptions, r.AccuracyLevel)
	}
	if r.AutoMatMul == "" {
		r.AutoMatMul = ModeInt8
	}
	if r.Target == "" {
		r.Target = cpuclass.Host()
	}
	if _, err := cpuclass.Parse(string(r.Target)); err != nil {
		return r, fmt.Errorf("%w: Target: %w", ErrInvalidOptions, err)
	}
	if r.Int8Format == "" {
		r.Int8Format = cpuclass.Int8FormatFor(r.Target)
	}
	if _, err := cpuclass.ParseInt8Format(string(r.Int8Format)); err != nil {
		return r, fmt.Errorf("%w: Int8Format: %w", ErrInvalidOptions, err)
	}
	if r.AutoMatMul != ModeInt8 && r.AutoMatMul != ModeNBits {
		return r, fmt.Errorf("%w: AutoMatMul %q: want int8 or nbits", ErrInvalidOptions, r.AutoMatMul)
	}
	return r, nil
}

// Result is a quantized model and what was done to it.
type Result struct {
	// Model is the rewritten model with Digest and Size set. The input
	// model is never modified.
	Model  *onnx.Model
	Report Report
}

// Quantize rewrites a copy of m according to opts.
func Quantize(m *onnx.Model, opts *Options) (*Result, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	if m == nil || m.Proto == nil || m.Proto.GetGraph() == nil {
		return nil, fmt.Errorf("quantize: %w: no graph", onnx.ErrInvalidModel)
	}
	if why := quantizedReason(m.Proto); why != "" {
		return nil, fmt.Errorf("quantize: %w: %s", ErrAlreadyQuantized, why)
	}
	mp := proto.Clone(m.Proto).(*onnxpb.ModelProto)
	rw := newRewriter(mp, o)
	if err := rw.run(); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	out := &onnx.Model{Proto: mp}
	size := proto.Size(mp)
	if int64(size) > MaxModelBytes {
		return nil, fmt.Errorf("quantize: %w: %d bytes, MaxModelBytes %d", ErrTooLarge, size, int64(MaxModelBytes))
	}
	if err := onnx.Check(out, &onnx.ReadOptions{Dir: o.Dir}); err != nil {
		// A failed check here is a bug in a rewrite, never the input's fault.
		return nil, fmt.Errorf("quantize: rewritten graph fails its check: %w", err)
	}
	if _, err := onnx.Encode(out); err != nil {
		return nil, fmt.Errorf("quantize: %w", err)
	}
	rw.report.Mode, rw.report.Target = o.Mode, o.Target
	rw.report.BytesBefore = int64(proto.Size(m.Proto))
	rw.report.BytesAfter = out.Size
	return &Result{Model: out, Report: rw.report}, nil
}
