package quant

import (
	"github.com/mynah-tts/mynah/quant/cpuclass"

	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/onnx/onnxpb"
)

func TestBlockwise4Layout(t *testing.T) {
	ramp := make([]float32, 16)
	for j := range ramp {
		ramp[j] = float32(j-8) * 0.1 // extreme -0.8 → scale 0.1, q = j-8, stored j
	}
	for _, c := range []struct {
		name       string
		w          []float32
		k, n, bits int
		packed     []byte
		scales     []float32
	}{
		{"ramp: low nibble first", ramp, 16, 1, 4,
			[]byte{0x10, 0x32, 0x54, 0x76, 0x98, 0xba, 0xdc, 0xfe}, []float32{0.1}},
		{"positive extreme gives a negative scale", []float32{0.8, 0.4, 0, -0.4}, 4, 1, 4,
			// scale -0.1: 0.8 → -8 (0), 0.4 → -4 (4), 0 → 0 (8), -0.4 → 4 (12); padding 8.
			[]byte{0x40, 0xc8, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88}, []float32{-0.1}},
		{"zero column keeps scale 1", make([]float32, 16), 16, 1, 4,
			bytes.Repeat([]byte{0x88}, 8), []float32{1}},
		{"2-bit uses four levels", []float32{-1, -0.5, 0, 0.5, 0}, 5, 1, 2,
			// scale 0.5: -2 (6), -1 (7), 0 (8), 1 (9), 0 (8).
			[]byte{0x76, 0x98, 0x88, 0x88, 0x88, 0x88, 0x88, 0x88}, []float32{0.5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			packed, scales := blockwise4(c.w, c.k, c.n, c.bits, 16)
			if !bytes.Equal(packed, c.packed) {
				t.Errorf("packed % x, want % x", packed, c.packed)
			}
			for i := range scales {
				if math.Abs(float64(scales[i]-c.scales[i])) > 1e-7 {
					t.Errorf("scales %v, want %v", scales, c.scales)
				}
			}
		})
	}
}

// TestBlockwise4Columns checks the column-major order of blocks and
// scales and the round trip, on a matrix whose columns and blocks all
// differ in scale: every value comes back as its nearest level of its
// block's scale, clamped to [-8, 7] steps.
func TestBlockwise4Columns(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const k, n, bs = 70, 5, 32
	w := make([]float32, k*n)
	for r := range k {
		for c := range n {
			w[r*n+c] = float32(rng.NormFloat64()) * float32(c+1) * float32(r/bs+1)
		}
	}
	packed, scales := blockwise4(w, k, n, 4, bs)
	if len(packed) != n*3*bs/2 || len(scales) != n*3 {
		t.Fatalf("%d bytes and %d scales, want %d and %d", len(packed), len(scales), n*3*bs/2, n*3)
	}
	back := unblockwise4(packed, scales, k, n, bs)
	for r := range k {
		for c := range n {
			s := scales[c*3+r/bs]
			q := max(-8, min(7, math.RoundToEven(float64(w[r*n+c]/s))))
			if want := float32(q) * s; back[r*n+c] != want {
				t.Fatalf("w[%d,%d] = %v came back %v, want level %v × %v = %v", r, c, w[r*n+c], back[r*n+c], q, s, want)
			}
		}
	}
}

// TestBlockScaleLowersError: the searched scale never does worse than
// fitting the block's largest value, and on Gaussian weights (what
// randomly initialized and most trained layers look like) it lowers the
// 4-bit squared error by about a tenth.
func TestBlockScaleLowersError(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	sqErr := func(x []float32, s float32) float64 {
		var e float64
		for _, v := range x {
			d := float64(v - s*float32(level(v, s, -8, 7)))
			e += d * d
		}
		return e
	}
	var searched, absmax float64
	x := make([]float32, 32)
	for range 2000 {
		var extreme float32
		for i := range x {
			x[i] = float32(rng.NormFloat64())
			if math.Abs(float64(x[i])) > math.Abs(float64(extreme)) {
				extreme = x[i]
			}
		}
		a, b := sqErr(x, blockScale(x, -8, 7)), sqErr(x, extreme/-8)
		if a > b*(1+1e-6) {
			t.Fatalf("searched scale error %v > largest-value fit %v on %v", a, b, x)
		}
		searched += a
		absmax += b
	}
	ratio := searched / absmax
	t.Logf("4-bit squared error, searched scale / largest-value fit: %.3f", ratio)
	if ratio > 0.93 {
		t.Errorf("searched scale keeps %.3f of the error; want a gain (≤ 0.93)", ratio)
	}
}

func TestSymmetricInt8(t *testing.T) {
	for _, c := range []struct {
		name       string
		w          []float32
		rows, cols int
		qmax       int
		q          []int8
		scale      []float32
	}{
		{"per column", []float32{1, -4, -2, 2, 0.5, 1}, 3, 2, 127,
			[]int8{64, -127, -127, 64, 32, 32}, []float32{2.0 / 127, 4.0 / 127}},
		{"reduce range", []float32{-1, 0.6}, 2, 1, 63, []int8{-63, 38}, []float32{1.0 / 63}},
		{"zero column", []float32{0, 0}, 2, 1, 127, []int8{0, 0}, []float32{1}},
	} {
		t.Run(c.name, func(t *testing.T) {
			q, s := SymmetricInt8(c.w, c.rows, c.cols, c.qmax)
			if !slices.Equal(q, c.q) {
				t.Errorf("q %v, want %v", q, c.q)
			}
			for i := range s {
				if math.Abs(float64(s[i]-c.scale[i])) > 1e-7 {
					t.Errorf("scale %v, want %v", s, c.scale)
				}
			}
		})
	}
}

func TestOptions(t *testing.T) {
	for _, c := range []struct {
		opts  Options
		field string
	}{
		{Options{Mode: "int4"}, "Mode"},
		{Options{Mode: ModeNBits, Bits: 8}, "Bits"},
		{Options{Mode: ModeNBits, BlockSize: 48}, "BlockSize"},
		{Options{Mode: ModeNBits, BlockSize: 512}, "BlockSize"},
		{Options{Mode: ModeNBits, AccuracyLevel: 5}, "AccuracyLevel"},
		{Options{Mode: ModeAuto, AutoMatMul: ModeFP16Store}, "AutoMatMul"},
		{Options{Mode: ModeInt8, Target: "sse2"}, "Target"},
		{Options{Mode: ModeInt8, Int8Format: "s4"}, "Int8Format"},
	} {
		_, err := Quantize(matMulModel(t, make([]float32, 64), 8, 8), &c.opts)
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), c.field) {
			t.Errorf("%+v: %v, want ErrInvalidOptions naming %s", c.opts, err, c.field)
		}
	}
	if _, err := ParseMode("nbits"); err != nil {
		t.Error(err)
	}
	// The target picks the format; an explicit format wins.
	m := matMulModel(t, make([]float32, 64*64), 64, 64)
	for _, c := range []struct {
		opts Options
		want cpuclass.Int8Format
	}{
		{Options{Mode: ModeInt8, Target: cpuclass.AVX2}, cpuclass.ReducedRange},
		{Options{Mode: ModeInt8, Target: cpuclass.VNNI}, cpuclass.FullRange},
		{Options{Mode: ModeInt8, Target: cpuclass.ARM64}, cpuclass.FullRange},
		{Options{Mode: ModeInt8, Target: cpuclass.AVX2, Int8Format: cpuclass.Unsigned}, cpuclass.Unsigned},
		{Options{Mode: ModeInt8}, cpuclass.Int8FormatFor(cpuclass.Host())},
		{Options{Mode: ModeFP16Store, Target: cpuclass.AVX2}, ""}, // no int8 weights
	} {
		res, err := Quantize(m, &c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if res.Report.Int8Format != c.want {
			t.Errorf("%+v: int8 format %q, want %q", c.opts, res.Report.Int8Format, c.want)
		}
	}
}

func TestRefusals(t *testing.T) {
	w := make([]float32, 64)
	nan := slices.Clone(w)
	nan[17] = float32(math.NaN())
	inf := slices.Clone(w)
	inf[3] = float32(math.Inf(-1))
	half := onnx.NewGraph("half")
	x := half.Input("x", onnx.Float16, onnx.Fixed(1), onnx.Fixed(8))
	half.Initializer(&onnxpb.TensorProto{Name: "W", Dims: []int64{8, 8}, DataType: int32(onnx.Float16), RawData: make([]byte, 128)})
	half.Node("MatMul", []string{x, "W"}, []string{"y"})
	half.Output("y", onnx.Float16, onnx.Fixed(1), onnx.Fixed(8))
	int8Model, err := Quantize(matMulModel(t, randn(rand.New(rand.NewPCG(1, 2)), 64, 1), 8, 8), &Options{Mode: ModeInt8})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		m    *onnx.Model
		mode Mode
		want error
		says string
	}{
		{"NaN weight", matMulModel(t, nan, 8, 8), ModeInt8, ErrNonFinite, `"W" element 17 is NaN`},
		{"Inf weight", matMulModel(t, inf, 8, 8), ModeFP16Store, ErrNonFinite, "-Inf"},
		{"NaN weight nbits", matMulModel(t, nan, 8, 8), ModeNBits, ErrNonFinite, "NaN"},
		{"fp16 weights", build(t, half, nil), ModeFP16Store, ErrAlreadyQuantized, `"W" is FLOAT16`},
		{"quantized twice", int8Model.Model, ModeNBits, ErrAlreadyQuantized, "DynamicQuantizeLinear"},
		{"nil model", &onnx.Model{}, ModeInt8, onnx.ErrInvalidModel, "no graph"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Quantize(c.m, &Options{Mode: c.mode})
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v, want %v saying %q", err, c.want, c.says)
			}
		})
	}
}

// TestTruncatedFile is the refusal the CLI meets first: ReadFile of a cut
// model fails before Quantize sees it.
func TestTruncatedFile(t *testing.T) {
	data, err := onnx.Encode(matMulModel(t, make([]float32, 64), 8, 8))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "cut.onnx")
	if err := os.WriteFile(path, data[:len(data)-10], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := onnx.ReadFile(path, nil); !errors.Is(err, onnx.ErrInvalidModel) {
		t.Errorf("truncated model: %v, want ErrInvalidModel", err)
	}
}

// externalModel is a MatMul whose weight lives in another file.
func externalModel(t *testing.T, w []float32, loc string) *onnx.Model {
	m := matMulModel(t, w, 8, 8)
	for _, init := range m.Graph().GetInitializer() {
		if init.GetName() == "W" {
			init.RawData = nil
			init.DataLocation = onnxpb.TensorProto_EXTERNAL
			init.ExternalData = []*onnxpb.StringStringEntryProto{{Key: "location", Value: loc}, {Key: "offset", Value: "4"}, {Key: "length", Value: "256"}}
		}
	}
	return m
}

func TestExternalData(t *testing.T) {
	dir := t.TempDir()
	w := randn(rand.New(rand.NewPCG(3, 3)), 64, 1)
	raw := append([]byte{1, 2, 3, 4}, onnx.Float32Tensor("", nil, w).RawData...)
	if err := os.WriteFile(filepath.Join(dir, "w.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.WriteFile(filepath.Join(outside, "secret.bin"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.bin"), filepath.Join(dir, "link.bin")); err != nil {
		t.Fatal(err)
	}

	res, err := Quantize(externalModel(t, w, "w.bin"), &Options{Mode: ModeFP16Store, Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	back := dequantized(t, res.Model, "W", 8, 8, 0)
	for i := range w {
		if math.Abs(float64(back[i]-w[i])) > 1e-3*math.Abs(float64(w[i]))+1e-6 {
			t.Fatalf("W[%d] = %v, came back %v", i, w[i], back[i])
		}
	}
	for _, c := range []struct {
		name, loc, dir, says string
	}{
		{"no directory", "w.bin", "", "Options.Dir"},
		{"parent directory", "../w.bin", dir, "leaves the model's directory"},
		{"absolute path", "/etc/passwd", dir, "plain relative path"},
		{"symlink out", "link.bin", dir, "through a symlink"},
		{"missing file", "nope.bin", dir, "no such file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Quantize(externalModel(t, w, c.loc), &Options{Mode: ModeInt8, Dir: c.dir})
			if !errors.Is(err, ErrExternalData) || !strings.Contains(err.Error(), c.says) {
				t.Errorf("got %v, want ErrExternalData saying %q", err, c.says)
			}
		})
	}
	short := filepath.Join(dir, "short.bin")
	if err := os.WriteFile(short, raw[:100], 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Quantize(externalModel(t, w, "short.bin"), &Options{Mode: ModeInt8, Dir: dir}); !errors.Is(err, ErrExternalData) {
		t.Errorf("short file: %v, want ErrExternalData", err)
	}
}

// TestFP16Choice checks which weights fp16-store and auto convert.
func TestFP16Choice(t *testing.T) {
	g := onnx.NewGraph("choice")
	ids := g.Input("ids", onnx.Int64, onnx.Fixed(1), onnx.Fixed(4))
	emb := g.Op("Gather", []string{g.Float32s("E", []int64{16, 32}, make([]float32, 512)), ids})
	big := make([]float32, 32*32)
	big[5] = 1e5 // beyond float16
	h := g.Op("MatMul", []string{emb, g.Float32s("Big", []int64{32, 32}, big)})
	h = g.Op("MatMul", []string{h, g.Float32s("P", []int64{32, 32}, make([]float32, 1024))})
	h = g.Op("Add", []string{h, g.Float32s("b", []int64{32}, make([]float32, 32))}) // under MinElements
	g.Node("Reshape", []string{h, g.Ints(4, 32)}, []string{"y"})
	g.Output("y", onnx.Float, onnx.Fixed(4), onnx.Fixed(32))
	m := build(t, g, nil)
	converted := func(o Options) []string {
		res, err := Quantize(m, &o)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, r := range res.Report.Rows {
			if r.Mode == ModeFP16Store {
				names = append(names, r.Weight)
			}
		}
		slices.Sort(names)
		return names
	}
	if got := converted(Options{Mode: ModeFP16Store}); !slices.Equal(got, []string{"E", "P"}) {
		t.Errorf("fp16-store converted %v, want E and P (Big overflows float16, b is small)", got)
	}
	if got := converted(Options{Mode: ModeAuto}); len(got) != 0 {
		t.Errorf("auto stored %v as fp16; want none: E is a Gather table, Big and P are MatMuls", got)
	}
	if got := converted(Options{Mode: ModeAuto, RestFP16: true}); !slices.Equal(got, []string{"E"}) {
		t.Errorf("auto with RestFP16 converted %v, want E", got)
	}
	if got := converted(Options{Mode: ModeInt8}); len(got) != 0 {
		t.Errorf("int8 stored %v as fp16", got)
	}
}

// TestNBitsNarrowMatMuls: nbits stores wide MatMuls in 4 bits and a
// narrow one (here an output head of 3 values, and its mirror, an input
// projection of 3 features) as int8.
func TestNBitsNarrowMatMuls(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	const d = 64
	for _, c := range []struct {
		name    string
		k, h, n int
	}{
		{"narrow head", d, d, 3},
		{"narrow input", 3, d, d},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := mlpModel(t, randn(rng, c.k*c.h, 0.1), randn(rng, c.h, 0.1), randn(rng, c.h*c.n, 0.1), randn(rng, c.n, 0.1), c.k, c.h, c.n)
			res, err := Quantize(m, &Options{Mode: ModeNBits})
			if err != nil {
				t.Fatal(err)
			}
			modes := map[string]Mode{}
			for _, r := range res.Report.Rows {
				modes[r.Weight] = r.Mode
			}
			wide, narrow := "W1", "W2"
			if c.k < NBitsMinDim {
				wide, narrow = "W2", "W1"
			}
			if modes[wide] != ModeNBits || modes[narrow] != ModeInt8 {
				t.Errorf("modes %v: want %s nbits and %s int8", modes, wide, narrow)
			}
			if ops := Inspect(res.Model).Ops; ops["com.microsoft.MatMulNBits"] != 1 || ops["MatMulInteger"] != 1 {
				t.Errorf("ops %v: want one MatMulNBits and one MatMulInteger", ops)
			}
		})
	}
}

func TestProgressAndDeterminism(t *testing.T) {
	m := decoderModel(t)
	for _, mode := range []Mode{ModeFP16Store, ModeInt8, ModeNBits, ModeAuto} {
		var calls, total int
		seen := map[string]bool{}
		o := &Options{Mode: mode, Progress: func(done, tot int, what string) {
			calls++
			if done != calls || done > tot || seen[what] {
				t.Errorf("%s: progress(%d, %d, %q) after %d calls", mode, done, tot, what, calls-1)
			}
			seen[what] = true
			total = tot
		}}
		a, err := Quantize(m, o)
		if err != nil {
			t.Fatal(err)
		}
		if calls == 0 || calls != total {
			t.Errorf("%s: %d progress calls, total %d", mode, calls, total)
		}
		b, err := Quantize(m, &Options{Mode: mode})
		if err != nil {
			t.Fatal(err)
		}
		if a.Model.Digest != b.Model.Digest {
			t.Errorf("%s: two runs give different models", mode)
		}
		s := a.Report.String()
		if !strings.Contains(s, string(mode)) || !strings.Contains(s, "layers.0.q") {
			t.Errorf("%s: report table lacks the mode or a weight:\n%s", mode, s)
		}
	}
}

func TestInspect(t *testing.T) {
	m := decoderModel(t)
	in := Inspect(m)
	if in.Quantized || in.Ops["MatMul"] == 0 || in.Opsets[""] == 0 || in.BytesByDType["FLOAT"] == 0 {
		t.Errorf("inspection of the float decoder: %+v", in)
	}
	var sum int64
	for _, b := range in.BytesByOp {
		sum += b
	}
	if sum != in.WeightBytes {
		t.Errorf("bytes by op add up to %d, weights %d", sum, in.WeightBytes)
	}
	res, err := Quantize(m, &Options{Mode: ModeNBits})
	if err != nil {
		t.Fatal(err)
	}
	q := Inspect(res.Model)
	if !q.Quantized || q.Ops["com.microsoft.MatMulNBits"] == 0 || q.Opsets["com.microsoft"] != 1 || q.BytesByDType["UINT8"] == 0 {
		t.Errorf("inspection of the nbits decoder: %+v", q)
	}
	if !slices.Equal(res.Report.OpsetsAdded, []string{"com.microsoft"}) {
		t.Errorf("opsets added %v", res.Report.OpsetsAdded)
	}
	if s := q.String(); !strings.Contains(s, "already quantized") || !strings.Contains(s, "MatMulNBits") {
		t.Errorf("inspection table:\n%s", s)
	}
}
