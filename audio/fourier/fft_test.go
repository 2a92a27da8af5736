package fourier

import (
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"
)

func TestFFTMatchesDFT(t *testing.T) {
	for _, n := range []int{2, 8, 64, 1024} {
		f, err := NewFFT(n)
		if err != nil {
			t.Fatal(err)
		}
		r := rand.New(rand.NewPCG(7, uint64(n)))
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(r.NormFloat64(), r.NormFloat64())
		}
		want := make([]complex128, n)
		for k := range want {
			for i, v := range x {
				want[k] += v * cmplx.Exp(complex(0, -2*math.Pi*float64(k*i)/float64(n)))
			}
		}
		got := append([]complex128(nil), x...)
		f.Transform(got)
		for k := range want {
			if cmplx.Abs(got[k]-want[k]) > 1e-9*float64(n) {
				t.Fatalf("n=%d bin %d: %v, want %v", n, k, got[k], want[k])
			}
		}
		f.Inverse(got)
		for i := range x {
			if cmplx.Abs(got[i]-x[i]) > 1e-12*float64(n) {
				t.Fatalf("n=%d: inverse at %d: %v, want %v", n, i, got[i], x[i])
			}
		}
	}
	for _, n := range []int{0, 1, 3, 100} {
		if _, err := NewFFT(n); err == nil {
			t.Errorf("NewFFT(%d) accepted", n)
		}
	}
}
