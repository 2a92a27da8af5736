package gate

import "math"

// TensorMetrics compare a candidate tensor with the original's, element by
// element in storage order.
type TensorMetrics struct {
	// MaxAbs and MeanAbs are the largest and the mean absolute difference.
	MaxAbs, MeanAbs float64
	// RelativeError is ‖test − ref‖₂ / ‖ref‖₂ (0 when both are zero, +Inf
	// when only ref is).
	RelativeError float64
	// Cosine is the cosine similarity; 1 when both are all zeros, 0 when
	// only one is.
	Cosine float64
	// N is the number of elements compared; LengthDiff is len(test) −
	// len(ref). A length difference makes every measure NaN: tensors of
	// different sizes are not the same output.
	N, LengthDiff int
	// NonFinite counts NaN and ±Inf elements in test that are not the same
	// in ref. Any makes every measure NaN.
	NonFinite int
}

// CompareTensors measures test against ref.
func CompareTensors(ref, test []float32) TensorMetrics {
	m := TensorMetrics{N: len(ref), LengthDiff: len(test) - len(ref)}
	nan := math.NaN()
	if m.LengthDiff != 0 {
		m.N = min(len(ref), len(test))
		m.MaxAbs, m.MeanAbs, m.RelativeError, m.Cosine = nan, nan, nan, nan
		return m
	}
	var sumAbs, dot, rr, tt, dd float64
	for i := range ref {
		r, t := float64(ref[i]), float64(test[i])
		if !isFinite(r) || !isFinite(t) {
			// The same NaN or Inf on both sides (a model that emits -Inf
			// on purpose, a mask) is agreement, not error.
			if !(math.IsNaN(r) && math.IsNaN(t)) && r != t {
				m.NonFinite++
			}
			continue
		}
		d := math.Abs(r - t)
		m.MaxAbs = max(m.MaxAbs, d)
		sumAbs += d
		dot += r * t
		rr += r * r
		tt += t * t
		dd += d * d
	}
	if m.NonFinite > 0 {
		m.MaxAbs, m.MeanAbs, m.RelativeError, m.Cosine = nan, nan, nan, nan
		return m
	}
	if m.N > 0 {
		m.MeanAbs = sumAbs / float64(m.N)
	}
	switch {
	case dd == 0:
		m.RelativeError = 0
	case rr == 0:
		m.RelativeError = math.Inf(1)
	default:
		m.RelativeError = math.Sqrt(dd / rr)
	}
	switch {
	case rr == 0 && tt == 0:
		m.Cosine = 1
	case rr == 0 || tt == 0:
		m.Cosine = 0
	default:
		m.Cosine = max(-1, min(1, dot/math.Sqrt(rr*tt))) // rounding can step past ±1
	}
	return m
}

func isFinite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }
