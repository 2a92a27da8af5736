package gate

import (
	"math"
	"testing"
)

func TestCompareTensors(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name                  string
		ref, test             []float32
		maxAbs, meanAbs, rel  float64
		cosine                float64
		nonFinite, lengthDiff int
		allNaN                bool
	}{
		{name: "identical", ref: []float32{1, -2, 3}, test: []float32{1, -2, 3}, cosine: 1},
		{name: "scaled", ref: []float32{1, 2}, test: []float32{2, 4}, maxAbs: 2, meanAbs: 1.5, rel: 1, cosine: 1},
		{name: "opposite", ref: []float32{1, 0}, test: []float32{-1, 0}, maxAbs: 2, meanAbs: 1, rel: 2, cosine: -1},
		{name: "orthogonal", ref: []float32{1, 0}, test: []float32{0, 1}, maxAbs: 1, meanAbs: 1, rel: math.Sqrt2, cosine: 0},
		{name: "both zero", ref: []float32{0, 0}, test: []float32{0, 0}, cosine: 1},
		{name: "zero ref", ref: []float32{0, 0}, test: []float32{0, 1}, maxAbs: 1, meanAbs: 0.5, rel: math.Inf(1), cosine: 0},
		{name: "empty", cosine: 1},
		{name: "length mismatch", ref: []float32{1, 2}, test: []float32{1}, lengthDiff: -1, allNaN: true},
		{name: "NaN in candidate", ref: []float32{1, 2}, test: []float32{1, nan}, nonFinite: 1, allNaN: true},
		{name: "Inf in candidate", ref: []float32{1, 2}, test: []float32{inf, 2}, nonFinite: 1, allNaN: true},
		{name: "same NaN and Inf both sides", ref: []float32{nan, inf, 1}, test: []float32{nan, inf, 1}, cosine: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := CompareTensors(tt.ref, tt.test)
			if m.NonFinite != tt.nonFinite || m.LengthDiff != tt.lengthDiff {
				t.Fatalf("NonFinite %d LengthDiff %d, want %d %d", m.NonFinite, m.LengthDiff, tt.nonFinite, tt.lengthDiff)
			}
			if tt.allNaN {
				if !math.IsNaN(m.MaxAbs) || !math.IsNaN(m.MeanAbs) || !math.IsNaN(m.RelativeError) || !math.IsNaN(m.Cosine) {
					t.Errorf("want every measure NaN, got %+v", m)
				}
				return
			}
			near := func(a, b float64) bool { return a == b || math.Abs(a-b) < 1e-9 }
			if !near(m.MaxAbs, tt.maxAbs) || !near(m.MeanAbs, tt.meanAbs) || !near(m.RelativeError, tt.rel) || !near(m.Cosine, tt.cosine) {
				t.Errorf("got %+v, want max %v mean %v rel %v cos %v", m, tt.maxAbs, tt.meanAbs, tt.rel, tt.cosine)
			}
		})
	}
}

func FuzzCompareTensors(f *testing.F) {
	f.Add([]byte{0, 0, 128, 63}, []byte{0, 0, 128, 63})
	f.Add([]byte{0, 0, 192, 127}, []byte{0, 0, 0, 0, 1, 1, 1, 1})
	f.Add([]byte{}, []byte{0, 0, 128, 255})
	f.Fuzz(func(t *testing.T, a, b []byte) {
		ref, test := bytesToFloats(a), bytesToFloats(b)
		m := CompareTensors(ref, test)
		if m.LengthDiff != len(test)-len(ref) {
			t.Fatalf("LengthDiff %d", m.LengthDiff)
		}
		if m.LengthDiff == 0 && m.NonFinite == 0 {
			if math.IsNaN(m.Cosine) || m.Cosine < -1 || m.Cosine > 1 || m.MaxAbs < 0 || m.MeanAbs > m.MaxAbs+1e-9*m.MaxAbs {
				t.Fatalf("inconsistent measures %+v", m)
			}
		}
	})
}
