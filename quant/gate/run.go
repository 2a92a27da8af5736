package gate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/mynah-tts/mynah/quant/onnx"
	"github.com/mynah-tts/mynah/quant/ort"
	"github.com/mynah-tts/mynah/quant/vecpack"
)

// record is what one run (a sentence, a decoder step, an input set) of a
// workload produced.
type record struct {
	where   string
	outputs []ort.Tensor
}

// workload runs the check's fixed inputs through one session. It must do
// the same work on every call: speed runs repeat it.
type workload func(s *ort.Session) ([]record, error)

// pair is the original and the candidate loaded side by side.
type pair struct {
	orig, cand *ort.Session
}

func (p *pair) close() {
	if p.orig != nil {
		p.orig.Close()
	}
	if p.cand != nil {
		p.cand.Close()
	}
}

// openPair parses both models in Go first (a corrupt candidate must be an
// error here, not a crash inside ONNX Runtime), loads them, and checks that
// the candidate has the original's inputs and outputs.
func openPair(rt *ort.Runtime, original, candidate []byte, so *ort.SessionOptions) (*pair, error) {
	if rt == nil {
		return nil, fmt.Errorf("%w: nil runtime", ErrInvalidOptions)
	}
	if _, err := onnx.Decode(original, nil); err != nil {
		return nil, fmt.Errorf("original model: %w", err)
	}
	if _, err := onnx.Decode(candidate, nil); err != nil {
		return nil, fmt.Errorf("candidate model: %w", err)
	}
	p := &pair{}
	var err error
	if p.orig, err = rt.NewSession(original, so); err != nil {
		return nil, fmt.Errorf("original model: %w", err)
	}
	if p.cand, err = rt.NewSession(candidate, so); err != nil {
		p.close()
		return nil, fmt.Errorf("candidate model: %w", err)
	}
	if err := sameIO("input", p.orig.Inputs(), p.cand.Inputs()); err != nil {
		p.close()
		return nil, err
	}
	if err := sameIO("output", p.orig.Outputs(), p.cand.Outputs()); err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// sameIO checks names and element types; dimensions may legitimately
// differ (a rewrite can leave a dimension symbolic).
func sameIO(kind string, a, b []ort.TensorInfo) error {
	key := func(l []ort.TensorInfo) []string {
		out := make([]string, len(l))
		for i, t := range l {
			out[i] = t.Name + " " + t.Type.String()
		}
		slices.Sort(out)
		return out
	}
	ka, kb := key(a), key(b)
	if !slices.Equal(ka, kb) {
		return fmt.Errorf("%w: candidate %ss %q differ from the original's %q", ErrIncompatible, kind, kb, ka)
	}
	return nil
}

// check runs w on both models, lets judge compare the records, and times
// both when o.speed is set.
func check(rt *ort.Runtime, original, candidate []byte, o resolved, w workload, judge func(v *Verdict, a, b []record) error) (*Verdict, error) {
	p, err := openPair(rt, original, candidate, o.session)
	if err != nil {
		return nil, err
	}
	defer p.close()
	a, err := w(p.orig)
	if err != nil {
		return nil, fmt.Errorf("original model: %w", err)
	}
	b, err := w(p.cand)
	if err != nil {
		return nil, fmt.Errorf("candidate model: %w", err)
	}
	if len(a) != len(b) {
		return nil, fmt.Errorf("%w: original made %d results, candidate %d", ErrIncompatible, len(a), len(b))
	}
	v := &Verdict{Pass: true, Precision: o.precision, OriginalBytes: len(original), CandidateBytes: len(candidate)}
	if err := judge(v, a, b); err != nil {
		return nil, err
	}
	if o.speed {
		s, err := timePair(p, w, o.speedRuns)
		if err != nil {
			return nil, err
		}
		v.Speed = &s
		if o.th.MaxSlowdown != 0 {
			v.add(newCheck(CheckSpeed, "runtime", "", s.Ratio-1, o.th.MaxSlowdown, false,
				fmt.Sprintf("median of %d", s.Runs)))
		}
	}
	o.log.Debug("gate checked", "precision", o.precision, "pass", v.Pass, "checks", len(v.Checks))
	return v, nil
}

// timePair times runs workloads per model, interleaved ABBA so that a
// machine that speeds up or slows down during the measurement (turbo,
// thermal throttling, a neighbour's load) does so for both models. The
// quality runs before it served as warm-up.
func timePair(p *pair, w workload, runs int) (Speed, error) {
	ta := make([]time.Duration, 0, runs)
	tb := make([]time.Duration, 0, runs)
	timed := func(s *ort.Session, into *[]time.Duration) error {
		start := time.Now()
		if _, err := w(s); err != nil {
			return err
		}
		*into = append(*into, time.Since(start))
		return nil
	}
	for i := range runs {
		first, second := p.orig, p.cand
		fa, fb := &ta, &tb
		if i%2 == 1 {
			first, second, fa, fb = second, first, fb, fa
		}
		if err := timed(first, fa); err != nil {
			return Speed{}, fmt.Errorf("speed run: %w", err)
		}
		if err := timed(second, fb); err != nil {
			return Speed{}, fmt.Errorf("speed run: %w", err)
		}
	}
	s := Speed{Runs: runs, Original: median(ta), Candidate: median(tb)}
	s.Ratio = SpeedRatio(s.Original, s.Candidate)
	return s, nil
}

// worse reports whether x is a worse value than cur of a measure where
// higher is better (higherBetter) or lower is. NaN is the worst of all and,
// once seen, sticks.
func worse(x, cur float64, higherBetter bool) bool {
	switch {
	case math.IsNaN(cur):
		return false
	case math.IsNaN(x):
		return true
	case higherBetter:
		return x < cur
	}
	return x > cur
}

// SpeedRatio is candidate / original, guarding a zero original.
func SpeedRatio(original, candidate time.Duration) float64 {
	if original <= 0 {
		original = 1
	}
	return float64(candidate) / float64(original)
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// tensorJudge compares every output of every record. Per output name the
// values of all runs are taken together, the original's against the
// candidate's, for cosine and relative error: a decoder's prosody is a
// few values per step, too few for a cosine to mean anything, but its
// trajectory over a prompt is a vector worth comparing. Max abs error is
// the worst single element, with the run it came from.
func tensorJudge(th Thresholds) func(v *Verdict, a, b []record) error {
	return func(v *Verdict, a, b []record) error {
		type series struct {
			ref, test []float32
			abs       float64
			absAt     string
		}
		var order []string
		acc := map[string]*series{}
		for i := range a {
			if len(a[i].outputs) != len(b[i].outputs) {
				return fmt.Errorf("%w: %s: original has %d outputs, candidate %d", ErrIncompatible, a[i].where, len(a[i].outputs), len(b[i].outputs))
			}
			for j, ra := range a[i].outputs {
				rb := b[i].outputs[j]
				ta, tb, err := asFloats(ra, rb)
				if err != nil {
					return fmt.Errorf("%s: %w", a[i].where, err)
				}
				if len(ta) != len(tb) {
					return fmt.Errorf("%w: %s: output %q has %d values in the original, %d in the candidate",
						ErrIncompatible, a[i].where, ra.Name, len(ta), len(tb))
				}
				s, ok := acc[ra.Name]
				if !ok {
					s = &series{}
					acc[ra.Name] = s
					order = append(order, ra.Name)
				}
				s.ref = append(s.ref, ta...)
				s.test = append(s.test, tb...)
				if m := CompareTensors(ta, tb); s.absAt == "" || worse(m.MaxAbs, s.abs, false) {
					s.abs, s.absAt = m.MaxAbs, a[i].where
				}
			}
		}
		for _, name := range order {
			s := acc[name]
			m := CompareTensors(s.ref, s.test)
			all := fmt.Sprintf("%d runs together", len(a))
			if th.MinCosine != 0 {
				v.add(newCheck(CheckCosine, name, "", m.Cosine, th.MinCosine, true, all))
			}
			if th.MaxRelativeError != 0 {
				v.add(newCheck(CheckRelativeError, name, "", m.RelativeError, th.MaxRelativeError, false, all))
			}
			if th.MaxAbsError != 0 {
				v.add(newCheck(CheckMaxAbsError, name, "", s.abs, th.MaxAbsError, false, s.absAt))
			}
		}
		return nil
	}
}

// asFloats returns two outputs as float32 values. Integer and bool outputs
// (ids, lengths) are converted too: any difference in them shows up as
// error like any other.
func asFloats(a, b ort.Tensor) ([]float32, []float32, error) {
	if a.Type != b.Type {
		return nil, nil, fmt.Errorf("%w: output %q is %s in the original, %s in the candidate", ErrIncompatible, a.Name, a.Type, b.Type)
	}
	return floatsOf(a), floatsOf(b), nil
}

func floatsOf(t ort.Tensor) []float32 {
	switch t.Type {
	case ort.Float32:
		return t.Float32
	case ort.Float16:
		out := make([]float32, len(t.Float16))
		for i, h := range t.Float16 {
			out[i] = vecpack.HalfToFloat32(h)
		}
		return out
	}
	out := make([]float32, t.Len())
	for i := range out {
		switch t.Type {
		case ort.Float64:
			out[i] = float32(t.Float64[i])
		case ort.Int64:
			out[i] = float32(t.Int64[i])
		case ort.Int32:
			out[i] = float32(t.Int32[i])
		case ort.Int8:
			out[i] = float32(t.Int8[i])
		case ort.Uint8:
			out[i] = float32(t.Uint8[i])
		case ort.Bool:
			if t.Bool[i] {
				out[i] = 1
			}
		}
	}
	return out
}

// CheckModel runs original and candidate on each of inputs (at most
// MaxRuns sets, each naming every model input) and compares every output
// as tensors. It suits any model without a dedicated checker; each run is
// independent, so models with state between runs need their own loop
// (CheckDecoder).
func CheckModel(rt *ort.Runtime, original, candidate []byte, inputs [][]ort.Tensor, opts *Options) (*Verdict, error) {
	o, err := opts.resolve()
	if err != nil {
		return nil, err
	}
	switch {
	case len(inputs) == 0:
		return nil, fmt.Errorf("%w: no inputs given", ErrInvalidOptions)
	case len(inputs) > MaxRuns:
		return nil, fmt.Errorf("%w: %d input sets, limit %d (MaxRuns)", ErrInvalidOptions, len(inputs), MaxRuns)
	}
	w := func(s *ort.Session) ([]record, error) {
		recs := make([]record, len(inputs))
		for i, in := range inputs {
			out, err := s.Run(in)
			if err != nil {
				return nil, fmt.Errorf("input set %d: %w", i, err)
			}
			recs[i] = record{where: fmt.Sprintf("input set %d", i), outputs: out}
		}
		return recs, nil
	}
	v, err := check(rt, original, candidate, o, w, tensorJudge(o.th))
	if err != nil {
		return nil, fmt.Errorf("check model: %w", err)
	}
	return v, nil
}
