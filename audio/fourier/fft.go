// Package fourier is the fast Fourier transform that mynah's spectral code
// shares: the acoustic front end of the cloning pipeline and the quality
// gate's mel spectrograms. It imports nothing of mynah's, so that a
// package outside audio (quant/gate) can use it without depending on the
// audio package. The name follows gonum's dsp/fourier (fourier.NewFFT,
// *fourier.FFT) and leaves "fft" free for the local helpers and variables
// that call it.
package fourier

import (
	"fmt"
	"math"
	"math/cmplx"
)

// FFT is an in-place radix-2 fast Fourier transform of one size, with its
// twiddle factors computed once (a table, not a running product, so the
// error does not grow with the size). It is safe for concurrent use.
type FFT struct {
	twiddle []complex128 // twiddle[i] = exp(−2πi·i/n), i < n/2
}

// NewFFT prepares transforms of n points; n must be a power of two, 2 or
// more.
func NewFFT(n int) (*FFT, error) {
	if n < 2 || n&(n-1) != 0 {
		return nil, fmt.Errorf("fft of %d points: want a power of two, 2 or more", n)
	}
	f := &FFT{twiddle: make([]complex128, n/2)}
	for i := range f.twiddle {
		f.twiddle[i] = cmplx.Exp(complex(0, -2*math.Pi*float64(i)/float64(n)))
	}
	return f, nil
}

// Size is the number of points.
func (f *FFT) Size() int { return 2 * len(f.twiddle) }

// Transform replaces x (of Size points) by its discrete Fourier transform.
func (f *FFT) Transform(x []complex128) {
	n := len(x)
	if n != f.Size() {
		panic(fmt.Sprintf("fourier: fft of %d points given %d", f.Size(), n))
	}
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			x[i], x[j] = x[j], x[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for k := range half {
				t := f.twiddle[k*step] * x[start+k+half]
				x[start+k+half] = x[start+k] - t
				x[start+k] += t
			}
		}
	}
}

// Inverse replaces x by its inverse transform, scaled by 1/Size.
func (f *FFT) Inverse(x []complex128) {
	for i := range x {
		x[i] = cmplx.Conj(x[i])
	}
	f.Transform(x)
	n := complex(float64(len(x)), 0)
	for i := range x {
		x[i] = cmplx.Conj(x[i]) / n
	}
}
