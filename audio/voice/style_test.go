package voice_test

// The style-vector engine on the project's own style kit, in the real ONNX
// Runtime with the real libespeak-ng.

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/audio/voice/demo"
	"github.com/mynah-tts/mynah/audio/voice/internal/acoustic"
	"github.com/mynah-tts/mynah/quant/ort"
)

var styleKits sync.Map // row rule → *kitDir

type kitDir struct {
	once sync.Once
	dir  string
	err  error
}

// styleKit writes the style kit with a row rule once per test binary.
func styleKit(tb testing.TB, rowRule string) string {
	tb.Helper()
	k, _ := styleKits.LoadOrStore(rowRule, &kitDir{})
	kit := k.(*kitDir)
	kit.once.Do(func() {
		kit.dir, kit.err = os.MkdirTemp("", "mynah-style-kit-")
		if kit.err == nil {
			kit.err = demo.WriteStyle(kit.dir, &demo.StyleOptions{RowRule: rowRule})
		}
	})
	if kit.err != nil {
		tb.Fatalf("style kit: %v", kit.err)
	}
	return kit.dir
}

func loadStyle(tb testing.TB, dir string) *voice.Style {
	tb.Helper()
	return loadStyleWith(tb, dir, &voice.StyleOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1}})
}

func loadStyleWith(tb testing.TB, dir string, opts *voice.StyleOptions) *voice.Style {
	tb.Helper()
	v, err := voice.LoadStyle(enginetest.OpenRuntime(tb), dir, opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { v.Close() })
	return v
}

func speakStyle(t *testing.T, v *voice.Style, req voice.Request) ([]int16, []voice.Chunk) {
	t.Helper()
	var all []int16
	var chunks []voice.Chunk
	err := v.Synthesize(context.Background(), req, func(c voice.Chunk) error {
		chunks = append(chunks, c)
		all = append(all, c.PCM.Samples...)
		return nil
	})
	if err != nil {
		t.Fatalf("synthesize %q: %v", req.Text, err)
	}
	return all, chunks
}

const styleText = "The quick brown fox jumps over the lazy dog."

func TestStyleLoads(t *testing.T) {
	dir := styleKit(t, bundle.RowRuleTokens)
	v := loadStyle(t, dir)
	info := v.Info()
	manifest, err := os.ReadFile(filepath.Join(dir, bundle.ManifestName))
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(manifest)
	if info.Digest != hex.EncodeToString(sum[:]) {
		t.Errorf("digest %s is not voice.json's", info.Digest)
	}
	model, err := os.Stat(info.ModelPath)
	if err != nil || model.Size() != info.SizeBytes {
		t.Errorf("model path %s size %d: %v", info.ModelPath, info.SizeBytes, err)
	}
	if info.Name != demo.StyleName || info.SampleRate != demo.StyleSampleRate || info.Provider != "cpu" ||
		info.Phonemes != "espeak" || !slices.Equal(info.Speakers, []string{"amber", "iris", "jade"}) {
		t.Fatalf("info %+v", info)
	}
}

// TestStyleVoicesDifferInPitch: the pack's voices are three speakers whose
// median f0 follows the voice the kit aimed at.
func TestStyleVoicesDifferInPitch(t *testing.T) {
	v := loadStyle(t, styleKit(t, bundle.RowRuleTokens))
	f0 := make(map[string]float64)
	for _, sv := range demo.StyleVoices() {
		pcm, chunks := speakStyle(t, v, voice.Request{Text: styleText, Speaker: sv.Name})
		if chunks[0].Unknown != 0 || chunks[0].PCM.Rate != demo.StyleSampleRate {
			t.Errorf("%s: %d unknown phonemes, rate %d", sv.Name, chunks[0].Unknown, chunks[0].PCM.Rate)
		}
		f0[sv.Name] = acoustic.MedianF0(acoustic.Float64s(pcm), demo.StyleSampleRate)
		t.Logf("%s: median f0 %.1f Hz (aimed at %.0f)", sv.Name, f0[sv.Name], sv.F0)
		if math.Abs(f0[sv.Name]-sv.F0) > 0.12*sv.F0 {
			t.Errorf("%s: median f0 %.1f Hz, want %.0f ± 12%%", sv.Name, f0[sv.Name], sv.F0)
		}
	}
	if !(f0["amber"]*1.2 < f0["jade"] && f0["jade"]*1.2 < f0["iris"]) {
		t.Errorf("median f0 amber %.1f, jade %.1f, iris %.1f: want each at least 20%% above the last", f0["amber"], f0["jade"], f0["iris"])
	}
	// The default voice is the first by name.
	def, _ := speakStyle(t, v, voice.Request{Text: styleText})
	amber, _ := speakStyle(t, v, voice.Request{Text: styleText, Speaker: "amber"})
	if !slices.Equal(def, amber) {
		t.Error("the default voice is not amber")
	}
}

func TestStyleRateChangesDuration(t *testing.T) {
	v := loadStyle(t, styleKit(t, bundle.RowRuleTokens))
	base, _ := speakStyle(t, v, voice.Request{Text: styleText, Speaker: "jade"})
	slowLS := float32(2)
	for _, c := range []struct {
		name  string
		req   voice.Request
		ratio float64
	}{
		{"rate 2", voice.Request{Text: styleText, Speaker: "jade", Rate: 2}, 0.5},
		{"rate 0.5", voice.Request{Text: styleText, Speaker: "jade", Rate: 0.5}, 2},
		{"length scale 2", voice.Request{Text: styleText, Speaker: "jade", LengthScale: &slowLS}, 2},
	} {
		got, _ := speakStyle(t, v, c.req)
		if r := float64(len(got)) / float64(len(base)); math.Abs(r-c.ratio) > 0.07*c.ratio {
			t.Errorf("%s: duration × %.3f, want × %.2f ± 7%%", c.name, r, c.ratio)
		}
	}
}

// TestStyleRowRule: the engine feeds the row the manifest's rule names.
// The test runs the model itself with rows n and n−1 of the pack, for n
// the sentence's token count, and compares, sample for sample: the voices
// load the model as the file has it (KeepConv1D), without the load-time
// rewrites, whose rounding differs.
func TestStyleRowRule(t *testing.T) {
	asFile := &voice.StyleOptions{Session: &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1}, KeepConv1D: true}
	plain := loadStyleWith(t, styleKit(t, bundle.RowRuleTokens), asFile)
	minus := loadStyleWith(t, styleKit(t, bundle.RowRuleTokensMinusOne), asFile)
	dir := styleKit(t, bundle.RowRuleTokens)
	tokens, unknown, err := plain.Tokens(styleText)
	if err != nil || unknown != 0 || len(tokens) < 20 {
		t.Fatalf("tokens %v, %d unknown: %v", tokens, unknown, err)
	}
	model, err := os.ReadFile(filepath.Join(dir, demo.StyleModelFile))
	if err != nil {
		t.Fatal(err)
	}
	sess, err := enginetest.OpenRuntime(t).NewSession(model, &ort.SessionOptions{Provider: ort.ProviderCPU, IntraOpThreads: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()
	pack, err := os.ReadFile(filepath.Join(dir, "voices", "iris.bin"))
	if err != nil {
		t.Fatal(err)
	}
	direct := func(row int) []int16 {
		style := make([]float32, demo.StyleDim)
		for i := range style {
			style[i] = math.Float32frombits(binary.LittleEndian.Uint32(pack[4*(row*demo.StyleDim+i):]))
		}
		padded := append(append([]int64{0}, tokens...), 0)
		out, err := sess.Run([]ort.Tensor{
			{Name: "tokens", Shape: []int64{1, int64(len(padded))}, Int64: padded},
			{Name: "style", Shape: []int64{1, demo.StyleDim}, Float32: style},
			{Name: "speed", Shape: []int64{1}, Float32: []float32{1}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return audio.FromFloat32(out[0].Float32, demo.StyleSampleRate).Samples
	}
	n := len(tokens)
	rowN, rowN1 := direct(n), direct(n-1)
	if slices.Equal(rowN, rowN1) {
		t.Fatalf("rows %d and %d of the pack sound the same; the test cannot tell them apart", n, n-1)
	}
	gotPlain, _ := speakStyle(t, plain, voice.Request{Text: styleText, Speaker: "iris"})
	gotMinus, _ := speakStyle(t, minus, voice.Request{Text: styleText, Speaker: "iris"})
	if !slices.Equal(gotPlain, rowN) {
		t.Errorf("row rule %q: the engine's audio is not row %d's (%s)", bundle.RowRuleTokens, n, closest(gotPlain, rowN, rowN1))
	}
	if !slices.Equal(gotMinus, rowN1) {
		t.Errorf("row rule %q: the engine's audio is not row %d's (%s)", bundle.RowRuleTokensMinusOne, n-1, closest(gotMinus, rowN, rowN1))
	}
}

// closest says which of two references got is nearer, for a failure
// message.
func closest(got, a, b []int16) string {
	dist := func(x []int16) float64 {
		if len(x) != len(got) {
			return math.Inf(1)
		}
		var d float64
		for i := range x {
			d += math.Abs(float64(x[i]) - float64(got[i]))
		}
		return d
	}
	if dist(a) < dist(b) {
		return "closer to row n than to row n-1"
	}
	return "closer to row n-1 than to row n"
}

func TestStyleRequestErrors(t *testing.T) {
	v := loadStyle(t, styleKit(t, bundle.RowRuleTokens))
	bad := float32(-1)
	for _, c := range []struct {
		name string
		req  voice.Request
		is   error
		want string
	}{
		{"unknown voice", voice.Request{Text: "Hi.", Speaker: "heron"}, voice.ErrUnknownSpeaker, `"heron" (this voice has 3: amber, iris, jade)`},
		{"path as voice", voice.Request{Text: "Hi.", Speaker: "../amber"}, voice.ErrUnknownSpeaker, `"../amber"`},
		{"file name as voice", voice.Request{Text: "Hi.", Speaker: "amber.bin"}, voice.ErrUnknownSpeaker, `"amber.bin"`},
		{"rate too high", voice.Request{Text: "Hi.", Rate: 10}, voice.ErrBadParameter, "rate 10"},
		{"rate NaN", voice.Request{Text: "Hi.", Rate: math.NaN()}, voice.ErrBadParameter, "rate NaN"},
		{"negative length scale", voice.Request{Text: "Hi.", LengthScale: &bad}, voice.ErrBadParameter, "length_scale -1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			emitted := false
			err := v.Synthesize(context.Background(), c.req, func(voice.Chunk) error { emitted = true; return nil })
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.is, c.want)
			}
			if emitted {
				t.Error("audio came before the error")
			}
		})
	}
}

func TestStyleStreamsSentences(t *testing.T) {
	v := loadStyle(t, styleKit(t, bundle.RowRuleTokens))
	_, chunks := speakStyle(t, v, voice.Request{Text: "Good morning. The bread is ready! Shall we eat?", Speaker: "jade"})
	if len(chunks) != 3 {
		t.Fatalf("%d chunks, want 3", len(chunks))
	}
	for i, c := range chunks {
		if c.Index != i || c.Last != (i == 2) || (c.Silence > 0) == c.Last || len(c.PCM.Samples) == 0 {
			t.Errorf("chunk %d: index %d last %v silence %v, %d samples", i, c.Index, c.Last, c.Silence, len(c.PCM.Samples))
		}
	}
	stop := errors.New("stop")
	n := 0
	err := v.Synthesize(context.Background(), voice.Request{Text: "One. Two. Three."}, func(voice.Chunk) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Errorf("emit error: %v after %d chunks", err, n)
	}
}

// TestStyleConcurrent: one voice, several requests at once (run with
// -race), each the same as when spoken alone.
func TestStyleConcurrent(t *testing.T) {
	v := loadStyle(t, styleKit(t, bundle.RowRuleTokens))
	names := v.Info().Speakers
	alone := make(map[string][]int16)
	for _, name := range names {
		alone[name], _ = speakStyle(t, v, voice.Request{Text: "Hello there.", Speaker: name})
	}
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			name := names[i%len(names)]
			var got []int16
			err := v.Synthesize(context.Background(), voice.Request{Text: "Hello there.", Speaker: name}, func(c voice.Chunk) error {
				got = append(got, c.PCM.Samples...)
				return nil
			})
			if err != nil || !slices.Equal(got, alone[name]) {
				t.Errorf("%s concurrently: %v, same audio %v", name, err, slices.Equal(got, alone[name]))
			}
		})
	}
	wg.Wait()
}

// TestLoadStyleRejects: a damaged or mismatched bundle fails at load with
// an error that says what is wrong.
func TestLoadStyleRejects(t *testing.T) {
	rt := enginetest.OpenRuntime(t)
	copyKit := func(t *testing.T) string {
		src := styleKit(t, bundle.RowRuleTokens)
		dst := t.TempDir()
		if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	editManifest := func(t *testing.T, dir string, edit func(m map[string]any)) {
		p := filepath.Join(dir, bundle.ManifestName)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil {
			t.Fatal(err)
		}
		edit(m)
		data, _ = json.Marshal(m)
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name string
		dir  func(t *testing.T) string
		is   error
		want string
	}{
		{"damaged voice file", func(t *testing.T) string {
			dir := copyKit(t)
			p := filepath.Join(dir, "voices", "jade.bin")
			data, _ := os.ReadFile(p)
			data[100] ^= 1
			os.WriteFile(p, data, 0o644)
			return dir
		}, bundle.ErrFileMismatch, "voices.jade (voices/jade.bin) has sha256"},
		{"wrong tensor name", func(t *testing.T) string {
			dir := copyKit(t)
			editManifest(t, dir, func(m map[string]any) {
				m["model"].(map[string]any)["inputs"].(map[string]any)["tokens"] = "input_ids"
			})
			return dir
		}, bundle.ErrModelMismatch, `model input tokens: model has no input "input_ids"`},
		{"wrong style dim", func(t *testing.T) string {
			dir := copyKit(t)
			editManifest(t, dir, func(m map[string]any) {
				m["style"].(map[string]any)["dim"] = 128
				m["style"].(map[string]any)["rows"] = 1020
			})
			return dir
		}, bundle.ErrModelMismatch, "has dimension 1 = 256 in the model (style float32[1,256]), the manifest implies 128"},
		{"a piper voice", func(t *testing.T) string { return demoVoice(t) }, bundle.ErrNoManifest, "no voice.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v, err := voice.LoadStyle(rt, c.dir(t), nil)
			if err == nil {
				v.Close()
			}
			if !errors.Is(err, c.is) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %v mentioning %q", err, c.is, c.want)
			}
		})
	}
}

// BenchmarkStyleSentence: one sentence through the whole engine (espeak,
// tokens, model); rtf is synthesis time over audio duration.
func BenchmarkStyleSentence(b *testing.B) {
	v := loadStyle(b, styleKit(b, bundle.RowRuleTokens))
	prm, err := v.Resolve(voice.Request{Speaker: "jade"})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	var pcm audio.PCM
	for b.Loop() {
		if pcm, _, err = v.SynthesizeSentence(styleText, prm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/pcm.Duration().Seconds(), "rtf")
}
