package voice

import (
	"context"
	"fmt"
	"math"

	"github.com/mynah-tts/mynah/audio/voice/bundle"
	"github.com/mynah-tts/mynah/quant/ort"
)

// prosodyDim is the decoder's last axis: duration, pitch and energy
// adjustments per phoneme id.
const prosodyDim = 3

// kvSession is a session whose outputs can be written into caller
// buffers: the decoder's present tensors go straight into the sentence's
// own KV buffers.
type kvSession interface {
	session
	RunWithOutputs(inputs, outputs []ort.Tensor) ([]ort.Tensor, error)
}

var _ kvSession = (*ort.Session)(nil)

// kvState is the decoder's cache after seq tokens: for each layer, keys
// and values [1, heads, seq, head_dim] in row-major order. A kvState that
// is cached (a speaker prefix, a session between sentences) is never
// written again; runs only read it.
type kvState struct {
	seq          int
	keys, values [][]float32
}

// bytes is the memory the state holds.
func (s *kvState) bytes() int64 {
	var n int64
	for i := range s.keys {
		n += int64(cap(s.keys[i])+cap(s.values[i])) * 4
	}
	return n
}

// arDecoder drives the autoregressive decoder of a pipeline bundle.
type arDecoder struct {
	sess                 kvSession
	ids, prev, prosody   string
	names                [][4]string // per layer: past key, past value, present key, present value
	heads, headDim       int
	maxSteps, maxContext int
}

func newARDecoder(sess kvSession, d *bundle.DecoderRole) *arDecoder {
	a := &arDecoder{
		sess:       sess,
		ids:        d.Inputs["ids"],
		prev:       d.Inputs["prev"],
		prosody:    d.Outputs["prosody"],
		heads:      d.KV.Heads,
		headDim:    d.KV.HeadDim,
		maxSteps:   d.MaxSteps,
		maxContext: d.KV.MaxContext,
	}
	for i := range d.KV.Layers {
		a.names = append(a.names, d.KV.Names(i))
	}
	return a
}

// layerLen is the float count of one layer's keys (or values) for seq
// tokens.
func (d *arDecoder) layerLen(seq int) int { return d.heads * seq * d.headDim }

// empty is the state before any token: seq 0, no memory.
func (d *arDecoder) empty() *kvState {
	n := len(d.names)
	return &kvState{keys: make([][]float32, n), values: make([][]float32, n)}
}

// alloc returns a state of seq tokens with fresh buffers.
func (d *arDecoder) alloc(seq int) *kvState {
	s := d.empty()
	s.seq = seq
	for i := range s.keys {
		s.keys[i] = make([]float32, d.layerLen(seq))
		s.values[i] = make([]float32, d.layerLen(seq))
	}
	return s
}

// view is buf cut to seq tokens; buf must hold at least that many.
func (d *arDecoder) view(buf *kvState, seq int) *kvState {
	v := &kvState{seq: seq, keys: make([][]float32, len(buf.keys)), values: make([][]float32, len(buf.values))}
	n := d.layerLen(seq)
	for i := range buf.keys {
		v.keys[i], v.values[i] = buf.keys[i][:n:n], buf.values[i][:n:n]
	}
	return v
}

// run runs the decoder once over ids with their previous prosody
// ([len(ids)·3]) after past, and writes the present KV into dst, whose
// seq must be past.seq+len(ids). past is only read; dst must not share
// memory with it. It returns the prosody [len(ids)·3].
func (d *arDecoder) run(ids []int64, prev []float32, past, dst *kvState) ([]float32, error) {
	s := int64(len(ids))
	pastShape := []int64{1, int64(d.heads), int64(past.seq), int64(d.headDim)}
	presentShape := []int64{1, int64(d.heads), int64(dst.seq), int64(d.headDim)}
	in := make([]ort.Tensor, 0, 2+2*len(d.names))
	in = append(in,
		ort.Tensor{Name: d.ids, Shape: []int64{1, s}, Int64: ids},
		ort.Tensor{Name: d.prev, Shape: []int64{1, s, prosodyDim}, Float32: prev})
	out := make([]ort.Tensor, 0, 2*len(d.names))
	for i, n := range d.names {
		// Type is set because a zero-length past has no slice to tell it.
		in = append(in,
			ort.Tensor{Name: n[0], Type: ort.Float32, Shape: pastShape, Float32: past.keys[i]},
			ort.Tensor{Name: n[1], Type: ort.Float32, Shape: pastShape, Float32: past.values[i]})
		out = append(out,
			ort.Tensor{Name: n[2], Type: ort.Float32, Shape: presentShape, Float32: dst.keys[i]},
			ort.Tensor{Name: n[3], Type: ort.Float32, Shape: presentShape, Float32: dst.values[i]})
	}
	res, err := d.sess.RunWithOutputs(in, out)
	if err != nil {
		return nil, fmt.Errorf("run decoder: %w", err)
	}
	for _, o := range res {
		if o.Name != d.prosody {
			continue
		}
		if len(o.Float32) != int(s)*prosodyDim {
			return nil, fmt.Errorf("run decoder: %w: prosody has shape %v for %d ids, want [1 %d %d]", bundle.ErrModelMismatch, o.Shape, s, s, prosodyDim)
		}
		for i, v := range o.Float32 {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				return nil, fmt.Errorf("run decoder: %w: prosody[%d] is %v", bundle.ErrModelMismatch, i, v)
			}
		}
		return o.Float32, nil
	}
	return nil, fmt.Errorf("run decoder: %w: no output %q", bundle.ErrModelMismatch, d.prosody)
}

// prefill runs the speaker prompt in one decoder run from an empty cache,
// with zero previous prosody, and returns the speaker prefix.
func (d *arDecoder) prefill(prompt []int64) (*kvState, error) {
	dst := d.alloc(len(prompt))
	if _, err := d.run(prompt, make([]float32, prosodyDim*len(prompt)), d.empty(), dst); err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	return dst, nil
}

// steps runs one decoder step per id after start, greedily: each step is
// fed the previous step's prosody (zeros for the first), or zeros every
// time when feedback is false (a prompt, as prefill reads it). It returns
// the stacked prosody [len(ids)·3] and the state after the last step;
// start is only read.
//
// Two buffers sized for the final length take turns: step t reads the
// one step t−1 wrote and writes the other, so nothing is allocated per
// step and the last present is exactly the final state.
func (d *arDecoder) steps(ctx context.Context, ids []int64, start *kvState, feedback bool) ([]float32, *kvState, error) {
	total := start.seq + len(ids)
	bufs := [2]*kvState{d.alloc(total), d.alloc(total)}
	prosody := make([]float32, 0, prosodyDim*len(ids))
	prev := make([]float32, prosodyDim)
	zero := make([]float32, prosodyDim)
	past := start
	for t, id := range ids {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		dst := d.view(bufs[t%2], start.seq+t+1)
		in := prev
		if !feedback {
			in = zero
		}
		out, err := d.run([]int64{id}, in, past, dst)
		if err != nil {
			return nil, nil, fmt.Errorf("decoder step %d of %d: %w", t+1, len(ids), err)
		}
		prosody = append(prosody, out...)
		prev, past = out, dst
	}
	return prosody, past, nil
}

// prefix returns the speaker's prefix KV, from the cache or prefilled
// (and then cached).
func (p *Pipeline) prefix(ctx context.Context, prm PipelineParams) (*kvState, error) {
	key := p.info.DecoderDigest + "/" + prm.SpeakerDigest
	if kv, ok := p.caches.prefix(key); ok {
		return kv, nil
	}
	var kv *kvState
	var err error
	if p.stepwisePrefill {
		_, kv, err = p.dec.steps(ctx, prm.Speaker.Prompt, p.dec.empty(), false)
	} else {
		kv, err = p.dec.prefill(prm.Speaker.Prompt)
	}
	if err != nil {
		return nil, err
	}
	return p.caches.putPrefix(key, kv), nil
}

// decodeSentence runs the decoder over a sentence's ids: from the speaker
// prefix, or, in a session, from the session's state (restarting from the
// prefix when the speaker changed or the sentence would overflow
// max_context). It returns the prosody [len(ids)·3].
func (p *Pipeline) decodeSentence(ctx context.Context, ids []int64, prm PipelineParams) ([]float32, error) {
	k := len(prm.Speaker.Prompt)
	if need := k + len(ids); need > p.dec.maxContext {
		return nil, fmt.Errorf("%w: %d speaker prompt tokens and %d phoneme ids need %d tokens of context, over the voice's decoder.kv.max_context (%d); split the sentence",
			ErrTooManySteps, k, len(ids), need, p.dec.maxContext)
	}
	prefix, err := p.prefix(ctx, prm)
	if err != nil {
		return nil, err
	}
	if prm.Session == "" || !p.caches.sessionsOn() {
		prosody, _, err := p.dec.steps(ctx, ids, prefix, true)
		return prosody, err
	}
	sess, kv, speaker, err := p.caches.checkout(prm.Session)
	if err != nil {
		return nil, err
	}
	start := kv
	switch {
	case kv == nil:
		start = prefix
	case speaker != prm.SpeakerDigest:
		p.log.Info("session speaker changed, restarting its context", "session", prm.Session)
		start = prefix
	case kv.seq+len(ids) > p.dec.maxContext:
		p.log.Info("session context full, restarting from the speaker prefix",
			"session", prm.Session, "tokens", kv.seq, "sentence_ids", len(ids), "max_context", p.dec.maxContext)
		p.caches.countRestart()
		start = prefix
	}
	prosody, end, err := p.dec.steps(ctx, ids, start, true)
	if err != nil {
		// The old state is intact (runs only read it): keep it.
		p.caches.checkin(sess, kv, speaker)
		return nil, err
	}
	p.caches.checkin(sess, end, prm.SpeakerDigest)
	return prosody, nil
}
