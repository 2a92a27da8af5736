package gate

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/mynah-tts/mynah/quant/ort"
)

// Defaults of DecoderOptions: the common KV naming (see REFERENCE.md) and
// the cloning kit's other tensor names.
const (
	DefaultDecoderIDs      = "input_ids"
	DefaultDecoderPrev     = "prev_prosody"
	DefaultDecoderFeedback = "prosody"
	DefaultPastKey         = "past_key_values.{i}.key"
	DefaultPastValue       = "past_key_values.{i}.value"
	DefaultPresentKey      = "present.{i}.key"
	DefaultPresentValue    = "present.{i}.value"
	// DefaultPromptTokens and DefaultSteps size the default workload: two
	// prompts of 32 tokens, each followed by 24 single-token steps.
	DefaultPromptTokens = 32
	DefaultSteps        = 24
	// VocabMetadataKey is the model metadata CheckDecoder reads the
	// vocabulary size from when DecoderOptions.Vocab is 0 (the cloning kit
	// sets it).
	VocabMetadataKey = "mynah.clone.vocab"
	// maxLayers bounds the KV layers CheckDecoder looks for.
	maxLayers = 256
)

// DecoderOptions configure CheckDecoder. Every zero field means its
// default; a nil *DecoderOptions means all defaults, which fit the cloning
// kit's decoder (audio/voice/demo).
type DecoderOptions struct {
	Options
	// IDs is the int64 token input [1, S].
	IDs string
	// Prev is a float input [1, S, D] fed with the previous step's
	// Feedback output (zeros for the prompt); a model without that input
	// has no feedback.
	Prev, Feedback string
	// PastKey, PastValue, PresentKey and PresentValue name the per-layer
	// KV tensors with {i} for the layer; past tensors are [1, heads, P,
	// head_dim] with heads and head_dim fixed in the model.
	PastKey, PastValue, PresentKey, PresentValue string
	// Prompts are prefilled one run each (at most MaxRuns, each at most
	// MaxSteps tokens); Steps are then decoded one token per run after each
	// prompt (at most MaxSteps). Nil means fixed pseudo-random tokens below
	// Vocab: two prompts of DefaultPromptTokens and DefaultSteps steps.
	Prompts [][]int64
	Steps   []int64
	// Vocab bounds the default tokens; 0 reads VocabMetadataKey from the
	// original model.
	Vocab int
}

// decoderIO is the contract of one decoder, read from its session.
type decoderIO struct {
	ids, prev, feedback string
	prevDim             int64
	pastK, pastV        []string
	presentK, presentV  []string
	heads, headDim      int64
}

func (o *DecoderOptions) withDefaults() DecoderOptions {
	var r DecoderOptions
	if o != nil {
		r = *o
	}
	def := func(p *string, d string) {
		if *p == "" {
			*p = d
		}
	}
	def(&r.IDs, DefaultDecoderIDs)
	def(&r.Prev, DefaultDecoderPrev)
	def(&r.Feedback, DefaultDecoderFeedback)
	def(&r.PastKey, DefaultPastKey)
	def(&r.PastValue, DefaultPastValue)
	def(&r.PresentKey, DefaultPresentKey)
	def(&r.PresentValue, DefaultPresentValue)
	return r
}

// CheckDecoder runs an autoregressive decoder and its candidate through the
// same prompts and steps, each model feeding back its own outputs (as the
// engine does, so errors that grow through the KV cache and the feedback
// are measured), and compares every output of every run as tensors.
func CheckDecoder(rt *ort.Runtime, original, candidate []byte, opts *DecoderOptions) (*Verdict, error) {
	d := opts.withDefaults()
	o, err := d.Options.resolve()
	if err != nil {
		return nil, fmt.Errorf("check decoder: %w", err)
	}
	if len(d.Prompts) > MaxRuns {
		return nil, fmt.Errorf("check decoder: %w: %d prompts, limit %d (MaxRuns)", ErrInvalidOptions, len(d.Prompts), MaxRuns)
	}
	if len(d.Steps) > MaxSteps {
		return nil, fmt.Errorf("check decoder: %w: %d steps, limit %d (MaxSteps)", ErrInvalidOptions, len(d.Steps), MaxSteps)
	}
	for i, p := range d.Prompts {
		if len(p) == 0 || len(p) > MaxSteps {
			return nil, fmt.Errorf("check decoder: %w: prompt %d has %d tokens, want 1..%d (MaxSteps)", ErrInvalidOptions, i, len(p), MaxSteps)
		}
	}
	var (
		io      *decoderIO
		prompts = d.Prompts
		steps   = d.Steps
	)
	w := func(s *ort.Session) ([]record, error) {
		if io == nil { // the original runs first and settles the contract
			var err error
			if io, err = readDecoderIO(s, d); err != nil {
				return nil, err
			}
			if prompts == nil || steps == nil {
				if err := defaultTokens(s, d.Vocab, &prompts, &steps); err != nil {
					return nil, err
				}
			}
		}
		return io.run(s, prompts, steps)
	}
	v, err := check(rt, original, candidate, o, w, tensorJudge(o.th))
	if err != nil {
		return nil, fmt.Errorf("check decoder: %w", err)
	}
	return v, nil
}

// defaultTokens fills nil prompts and steps with fixed pseudo-random tokens
// below the vocabulary size.
func defaultTokens(s *ort.Session, vocab int, prompts *[][]int64, steps *[]int64) error {
	if vocab == 0 {
		if md, ok := s.Metadata()[VocabMetadataKey]; ok {
			vocab, _ = strconv.Atoi(md)
		}
	}
	if vocab < 2 {
		return fmt.Errorf("%w: Vocab: set it, or Prompts and Steps (model metadata %q is missing or under 2)", ErrInvalidOptions, VocabMetadataKey)
	}
	// PCG's output is part of its definition: the same tokens on every
	// machine and Go version.
	rng := rand.NewPCG(0x67617465, 0) // "gate"
	tokens := func(n int) []int64 {
		t := make([]int64, n)
		for i := range t {
			t[i] = int64(rng.Uint64() % uint64(vocab))
		}
		return t
	}
	if *prompts == nil {
		*prompts = [][]int64{tokens(DefaultPromptTokens), tokens(DefaultPromptTokens)}
	}
	if *steps == nil {
		*steps = tokens(DefaultSteps)
	}
	return nil
}

func kvName(pattern string, i int) string { return strings.ReplaceAll(pattern, "{i}", strconv.Itoa(i)) }

// readDecoderIO matches the session's inputs and outputs to the options.
func readDecoderIO(s *ort.Session, d DecoderOptions) (*decoderIO, error) {
	ins := map[string]ort.TensorInfo{}
	for _, t := range s.Inputs() {
		ins[t.Name] = t
	}
	outs := map[string]bool{}
	for _, t := range s.Outputs() {
		outs[t.Name] = true
	}
	io := &decoderIO{ids: d.IDs}
	if t, ok := ins[d.IDs]; !ok || t.Type != ort.Int64 {
		return nil, fmt.Errorf("%w: decoder has no int64 input %q (DecoderOptions.IDs)", ErrIncompatible, d.IDs)
	}
	used := map[string]bool{d.IDs: true}
	if t, ok := ins[d.Prev]; ok {
		if t.Type != ort.Float32 || len(t.Dims) != 3 || t.Dims[2] < 1 {
			return nil, fmt.Errorf("%w: feedback input %s: want float32 [1, S, D] with D fixed", ErrIncompatible, t)
		}
		if !outs[d.Feedback] {
			return nil, fmt.Errorf("%w: decoder has input %q but no output %q to feed it (DecoderOptions.Feedback)", ErrIncompatible, d.Prev, d.Feedback)
		}
		io.prev, io.feedback, io.prevDim = d.Prev, d.Feedback, t.Dims[2]
		used[d.Prev] = true
	}
	for i := 0; i < maxLayers; i++ {
		k, v := kvName(d.PastKey, i), kvName(d.PastValue, i)
		tk, okK := ins[k]
		tv, okV := ins[v]
		if !okK && !okV {
			break
		}
		if !okK || !okV {
			return nil, fmt.Errorf("%w: layer %d has only one of %q and %q", ErrIncompatible, i, k, v)
		}
		for _, t := range []ort.TensorInfo{tk, tv} {
			if t.Type != ort.Float32 || len(t.Dims) != 4 || t.Dims[1] < 1 || t.Dims[3] < 1 {
				return nil, fmt.Errorf("%w: past input %s: want float32 [1, heads, P, head_dim] with heads and head_dim fixed", ErrIncompatible, t)
			}
		}
		if i == 0 {
			io.heads, io.headDim = tk.Dims[1], tk.Dims[3]
		}
		pk, pv := kvName(d.PresentKey, i), kvName(d.PresentValue, i)
		if !outs[pk] || !outs[pv] {
			return nil, fmt.Errorf("%w: layer %d: outputs %q and %q missing", ErrIncompatible, i, pk, pv)
		}
		io.pastK, io.pastV = append(io.pastK, k), append(io.pastV, v)
		io.presentK, io.presentV = append(io.presentK, pk), append(io.presentV, pv)
		used[k], used[v] = true, true
	}
	if len(io.pastK) == 0 {
		return nil, fmt.Errorf("%w: decoder has no input %q (DecoderOptions.PastKey)", ErrIncompatible, kvName(d.PastKey, 0))
	}
	for name, t := range ins {
		if !used[name] {
			return nil, fmt.Errorf("%w: decoder input %s is not one CheckDecoder knows how to feed", ErrIncompatible, t)
		}
	}
	return io, nil
}

// run prefills each prompt from an empty cache, then decodes steps one
// token at a time, feeding back the session's own outputs.
func (io *decoderIO) run(s *ort.Session, prompts [][]int64, steps []int64) ([]record, error) {
	var recs []record
	for p, prompt := range prompts {
		layers := len(io.pastK)
		past := make(map[string]ort.Tensor, 2*layers)
		for i := range layers {
			for _, name := range []string{io.pastK[i], io.pastV[i]} {
				past[name] = ort.Tensor{Name: name, Shape: []int64{1, io.heads, 0, io.headDim}, Float32: []float32{}}
			}
		}
		prev := make([]float32, int64(len(prompt))*io.prevDim)
		tokens := prompt
		for step := -1; step < len(steps); step++ {
			if step >= 0 {
				tokens = steps[step : step+1]
			}
			in := []ort.Tensor{{Name: io.ids, Shape: []int64{1, int64(len(tokens))}, Int64: tokens}}
			if io.prev != "" {
				in = append(in, ort.Tensor{Name: io.prev, Shape: []int64{1, int64(len(tokens)), io.prevDim}, Float32: prev})
			}
			for _, t := range past {
				in = append(in, t)
			}
			where := fmt.Sprintf("prompt %d prefill", p)
			if step >= 0 {
				where = fmt.Sprintf("prompt %d step %d", p, step)
			}
			out, err := s.Run(in)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", where, err)
			}
			recs = append(recs, record{where: where, outputs: out})
			byName := make(map[string]ort.Tensor, len(out))
			for _, t := range out {
				byName[t.Name] = t
			}
			for i := range layers {
				k, v := byName[io.presentK[i]], byName[io.presentV[i]]
				k.Name, v.Name = io.pastK[i], io.pastV[i]
				past[k.Name], past[v.Name] = k, v
			}
			if io.prev != "" {
				fb := byName[io.feedback]
				if fb.Type != ort.Float32 || int64(len(fb.Float32)) < io.prevDim {
					return nil, fmt.Errorf("%w: %s: feedback output %q is not float32 with at least %d values", ErrIncompatible, where, io.feedback, io.prevDim)
				}
				// The next step sees the last position's output.
				prev = append([]float32(nil), fb.Float32[int64(len(fb.Float32))-io.prevDim:]...)
			}
		}
	}
	return recs, nil
}
