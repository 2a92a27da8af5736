//go:build cgo

package gate_test

import (
	"math"
	"math/rand/v2"
	"os"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/quant/benchmodel"
	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

var shared struct {
	rt *ort.Runtime
}

// TestMain opens ONNX Runtime once for the package: the tests need the
// real library (scripts/setup.sh installs it) and fail, not skip, without.
func TestMain(m *testing.M) {
	rt, err := ort.Open(nil)
	if err != nil {
		os.Stderr.WriteString("quant/gate tests need ONNX Runtime (run scripts/setup.sh): " + err.Error() + "\n")
		os.Exit(1)
	}
	shared.rt = rt
	code := m.Run()
	if err := rt.Close(); err != nil && code == 0 {
		os.Stderr.WriteString("close runtime: " + err.Error() + "\n")
		code = 1
	}
	os.Exit(code)
}

// cpu keeps every session on one thread: tests compare outputs, and one
// thread makes ONNX Runtime's float sums come out the same every run.
var cpu = &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1}

var models = struct {
	demoOnce, cloneOnce, benchOnce sync.Once
	demo, decoder, bench           []byte
	demoErr, cloneErr, benchErr    error
}{}

func demoVoice(t testing.TB) []byte {
	t.Helper()
	models.demoOnce.Do(func() { models.demo, _, models.demoErr = demo.Build(nil) })
	if models.demoErr != nil {
		t.Fatal(models.demoErr)
	}
	return models.demo
}

func cloneDecoder(t testing.TB) []byte {
	t.Helper()
	models.cloneOnce.Do(func() {
		files, err := demo.BuildCloning(nil)
		models.decoder, models.cloneErr = files[demo.DecoderFile], err
	})
	if models.cloneErr != nil {
		t.Fatal(models.cloneErr)
	}
	return models.decoder
}

// smallBench is a narrow PiperMedium: the same graph, fast enough for
// tests.
var smallBenchOptions = &benchmodel.Options{Hidden: 64, Filter: 128, EncoderLayers: 2, FlowLayers: 2, WaveNetLayers: 2, DecoderChannels: 64}

func smallBench(t testing.TB) []byte {
	t.Helper()
	models.benchOnce.Do(func() { models.bench, models.benchErr = benchmodel.PiperMedium(smallBenchOptions) })
	if models.benchErr != nil {
		t.Fatal(models.benchErr)
	}
	return models.bench
}

// weightFilter picks initializers to rewrite: name, dims and the op types
// that read it.
type weightFilter func(name string, dims []int64, readers map[string]bool) bool

// rewriteWeights decodes model, replaces the float initializers of the
// main graph that keep says to with f(dims, values), and re-encodes it:
// a quantization simulated in Go, or a deliberate perturbation.
func rewriteWeights(t testing.TB, model []byte, keep weightFilter, f func(dims []int64, v []float32) []float32) []byte {
	t.Helper()
	m, err := onnx.Decode(model, nil)
	if err != nil {
		t.Fatal(err)
	}
	readers := map[string]map[string]bool{}
	for _, n := range m.Graph().GetNode() {
		for _, in := range n.GetInput() {
			if readers[in] == nil {
				readers[in] = map[string]bool{}
			}
			readers[in][n.GetOpType()] = true
		}
	}
	changed := 0
	for i, init := range m.Graph().GetInitializer() {
		if onnx.DataType(init.GetDataType()) != onnx.Float || !keep(init.GetName(), init.GetDims(), readers[init.GetName()]) {
			continue
		}
		v, err := onnx.Float32Data(init)
		if err != nil {
			t.Fatal(err)
		}
		m.Graph().Initializer[i] = onnx.Float32Tensor(init.GetName(), init.GetDims(), f(init.GetDims(), v))
		changed++
	}
	if changed == 0 {
		t.Fatal("rewriteWeights: no initializer matched")
	}
	out, err := onnx.Encode(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// largeFloats is what fp16-store converts: float initializers of at least
// 64 elements.
func largeFloats(_ string, dims []int64, _ map[string]bool) bool {
	n, _ := onnx.NumElements(dims)
	return n >= 64
}

// layerWeights are the weights of MatMul, Conv and ConvTranspose (inputs
// of rank 2 or 3), what int8 and nbits quantize.
func layerWeights(_ string, dims []int64, readers map[string]bool) bool {
	return (readers["MatMul"] || readers["Conv"] || readers["ConvTranspose"]) && len(dims) >= 2
}

func fp16Round(_ []int64, v []float32) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = vecpack.HalfToFloat32(vecpack.Float32ToHalf(x))
	}
	return out
}

// blockQuant simulates symmetric weight quantization with bits per value
// and one scale per block of block values along the reduction axis (axis
// 0 of a MatMul weight [K, N]; the input axes of a Conv weight [out, in,
// k]). block ≤ 0 means one block per output channel (int8 per-channel).
func blockQuant(bits, block int) func(dims []int64, v []float32) []float32 {
	levels := float64(int(1)<<(bits-1) - 1)
	if bits == 2 {
		levels = 1 // {-1, 0, 1}·scale: what a symmetric 2-bit code keeps
	}
	return func(dims []int64, v []float32) []float32 {
		out := make([]float32, len(v))
		// Channels: columns of a 2-D MatMul weight, rows of a conv weight.
		var channels, length int
		index := func(c, j int) int { return c*length + j }
		if len(dims) == 2 {
			channels, length = int(dims[1]), int(dims[0])
			index = func(c, j int) int { return j*channels + c }
		} else {
			channels = int(dims[0])
			length = len(v) / channels
		}
		bl := block
		if bl <= 0 {
			bl = length
		}
		for c := range channels {
			for start := 0; start < length; start += bl {
				end := min(start+bl, length)
				var peak float64
				for j := start; j < end; j++ {
					peak = max(peak, math.Abs(float64(v[index(c, j)])))
				}
				scale := peak / levels
				for j := start; j < end; j++ {
					x := float64(v[index(c, j)])
					if scale > 0 {
						x = math.Round(x/scale) * scale
					}
					out[index(c, j)] = float32(x)
				}
			}
		}
		return out
	}
}

// scaled multiplies every value by k.
func scaled(k float32) func(_ []int64, v []float32) []float32 {
	return func(_ []int64, v []float32) []float32 {
		out := make([]float32, len(v))
		for i, x := range v {
			out[i] = x * k
		}
		return out
	}
}

// addNoise returns x plus white noise snr dB under x's power, from a fixed
// seed.
func addNoise(x []float32, snr float64, seed uint64) []float32 {
	var p float64
	for _, v := range x {
		p += float64(v) * float64(v)
	}
	p /= float64(len(x))
	std := math.Sqrt(p / math.Pow(10, snr/10))
	r := rand.New(rand.NewPCG(seed, 1))
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = v + float32(r.NormFloat64()*std)
	}
	return out
}

// matmulWeights are the 2-D weights of MatMuls: what int8 and nbits
// rewrite in a transformer.
func matmulWeights(_ string, dims []int64, readers map[string]bool) bool {
	return readers["MatMul"] && len(dims) == 2
}
