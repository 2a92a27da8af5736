package audio

// The phrase codec's predictors, run backwards: restore turns residuals
// into samples. With decodeResidual it is the decoder's hot loop, and the
// recurrence (each sample waits for the previous one) is what limits it,
// so every loop is written for a short dependency chain, a few registers
// and no bounds checks; the encoder's decodeCost knows what each costs.

// restore runs b's predictor over the residuals, writing x[h:h+len(res)]
// (x[:h] is history, at least phraseMaxOrder samples). False if a sample
// leaves the int16 range, which the encoder never produces: most loops OR
// each sample plus 32768 into a flag that must stay below 65536 instead of
// branching per sample, so that a block is checked at its end (the samples
// after a bad one are garbage, but they are never handed out).
func restore(x []int16, h int, res []int32, b *blockDesc) bool {
	if h < phraseMaxOrder || h+len(res) > len(x) {
		return false
	}
	hist := (*[phraseMaxOrder]int16)(x[h-phraseMaxOrder : h])
	out := x[h : h+len(res)]
	switch b.pred {
	case 0:
		return restoreVerbatim(out, res)
	case 1:
		return restoreFixed1(out, res, hist)
	case 2:
		return restoreFixed2(out, res, hist)
	case 3:
		return restoreFixed3(out, res, hist)
	case 4:
		return restoreFixed4(out, res, hist)
	}
	return restoreLPC(out, res, hist, &b.lpc)
}

func restoreVerbatim(out []int16, res []int32) bool {
	out = out[:len(res)]
	var flag uint32
	for i, r := range res {
		flag |= uint32(r + 32768)
		out[i] = int16(r)
	}
	return flag < 1<<16
}

// The fixed predictors (FLAC's polynomials) are written so that the
// previous sample passes through a single LEA or add on its way to the
// next; the rest of the sum depends only on older samples.

func restoreFixed1(out []int16, res []int32, hist *[phraseMaxOrder]int16) bool {
	out = out[:len(res)]
	var flag uint32
	p := int32(hist[11])
	for i, r := range res {
		p += r
		flag |= uint32(p + 32768)
		out[i] = int16(p)
	}
	return flag < 1<<16
}

func restoreFixed2(out []int16, res []int32, hist *[phraseMaxOrder]int16) bool {
	out = out[:len(res)]
	var flag uint32
	p1, p2 := int32(hist[11]), int32(hist[10])
	for i, r := range res {
		v := 2*p1 + (r - p2)
		flag |= uint32(v + 32768)
		out[i], p1, p2 = int16(v), v, p1
	}
	return flag < 1<<16
}

func restoreFixed3(out []int16, res []int32, hist *[phraseMaxOrder]int16) bool {
	out = out[:len(res)]
	var flag uint32
	p1, p2, p3 := int32(hist[11]), int32(hist[10]), int32(hist[9])
	for i, r := range res {
		v := 3*p1 + (r + p3 - 3*p2)
		flag |= uint32(v + 32768)
		out[i], p1, p2, p3 = int16(v), v, p1, p2
	}
	return flag < 1<<16
}

func restoreFixed4(out []int16, res []int32, hist *[phraseMaxOrder]int16) bool {
	out = out[:len(res)]
	var flag uint32
	p1, p2, p3, p4 := int32(hist[11]), int32(hist[10]), int32(hist[9]), int32(hist[8])
	for i, r := range res {
		v := 4*p1 + (r + 4*p3 - 6*p2 - p4)
		flag |= uint32(v + 32768)
		out[i], p1, p2, p3, p4 = int16(v), v, p1, p2, p3
	}
	return flag < 1<<16
}

// restoreLPC is restore for an LPC filter; filters run as order 4, 8 or
// 12, zero coefficients filling up.
func restoreLPC(out []int16, res []int32, hist *[phraseMaxOrder]int16, f *lpcFilter) bool {
	if f.order <= 4 {
		// Scaled by 2^(32-shift), the prediction is the high half of the
		// sum (a constant shift), and the residual joins the sum before
		// it: the newest sample, which the next prediction waits for,
		// passes through one multiply, one add and one shift.
		var c [4]int64
		for j, v := range f.coefs[:f.order] {
			c[j] = int64(v) << ((32 - f.shift) & 63)
		}
		return restoreLPC4(out, res, hist, &c)
	}
	// Longer filters are limited by the multiplier (one a cycle), so they
	// predict two samples at a time with two 32-bit lanes in each 64-bit
	// product: d[j] holds coefs[j] in the low lane and coefs[j+1] in the
	// high one, so that sum(d[j]*x[n-1-j]) is the prediction of x[n] in the
	// low lane and that of x[n+1] without its coefs[0]*x[n] term in the
	// high lane. A lane holds at most 12 products of a 10-bit coefficient
	// and a 16-bit sample (less than 2^30), so it never spills into the
	// other while the samples are in range; once one is not, the block
	// fails (its flag) and what follows is garbage never handed out.
	var d [phraseMaxOrder + 1]int64
	for j := range f.order {
		d[j] = int64(f.coefs[j])
		if j+1 < f.order {
			d[j] += int64(f.coefs[j+1]) << 32
		}
	}
	d[phraseMaxOrder] = int64(f.coefs[0])
	if f.order <= 8 {
		return restoreLPC8(out, res, hist, &d, f.shift)
	}
	return restoreLPC12(out, res, hist, &d, f.shift)
}

func restoreLPC4(out []int16, res []int32, hist *[phraseMaxOrder]int16, c *[4]int64) bool {
	out = out[:len(res)]
	h1, h2, h3, h4 := int64(hist[11]), int64(hist[10]), int64(hist[9]), int64(hist[8])
	for i, r := range res {
		t := (c[1]*h2 + c[2]*h3) + (c[3]*h4 + int64(r)<<32)
		v := (t + c[0]*h1) >> 32
		if uint64(v+32768) >= 1<<16 {
			return false
		}
		out[i] = int16(v)
		h4, h3, h2, h1 = h3, h2, h1, v
	}
	return true
}

// restoreLPC8 and restoreLPC12 take d as restoreLPC makes it, with
// coefs[0] at d[phraseMaxOrder].
func restoreLPC8(out []int16, res []int32, hist *[phraseMaxOrder]int16, d *[phraseMaxOrder + 1]int64, shift uint) bool {
	out = out[:len(res)]
	sh := shift & 31
	h1, h2, h3, h4 := int64(hist[11]), int64(hist[10]), int64(hist[9]), int64(hist[8])
	h5, h6, h7, h8 := int64(hist[7]), int64(hist[6]), int64(hist[5]), int64(hist[4])
	var flag uint64
	i := 0
	for ; i+1 < len(res); i += 2 {
		s := ((d[7]*h8 + d[6]*h7) + (d[5]*h6 + d[4]*h5)) + ((d[3]*h4 + d[2]*h3) + d[1]*h2) + d[0]*h1
		lo := int64(int32(s))
		v0 := lo>>sh + int64(res[i])
		v1 := ((s-lo)>>32+d[phraseMaxOrder]*v0)>>sh + int64(res[i+1])
		flag |= uint64(v0+32768) | uint64(v1+32768)
		out[i], out[i+1] = int16(v0), int16(v1)
		h8, h7, h6, h5, h4, h3, h2, h1 = h6, h5, h4, h3, h2, h1, v0, v1
	}
	if i < len(res) {
		s := ((d[7]*h8 + d[6]*h7) + (d[5]*h6 + d[4]*h5)) + ((d[3]*h4 + d[2]*h3) + d[1]*h2) + d[0]*h1
		v := int64(int32(s))>>sh + int64(res[i])
		flag |= uint64(v + 32768)
		out[i] = int16(v)
	}
	return flag < 1<<16
}

func restoreLPC12(out []int16, res []int32, hist *[phraseMaxOrder]int16, d *[phraseMaxOrder + 1]int64, shift uint) bool {
	out = out[:len(res)]
	sh := shift & 31
	h1, h2, h3, h4 := int64(hist[11]), int64(hist[10]), int64(hist[9]), int64(hist[8])
	h5, h6, h7, h8 := int64(hist[7]), int64(hist[6]), int64(hist[5]), int64(hist[4])
	h9, h10, h11, h12 := int64(hist[3]), int64(hist[2]), int64(hist[1]), int64(hist[0])
	var flag uint64
	i := 0
	for ; i+1 < len(res); i += 2 {
		s := ((d[11]*h12 + d[10]*h11) + (d[9]*h10 + d[8]*h9)) + ((d[7]*h8 + d[6]*h7) + (d[5]*h6 + d[4]*h5)) +
			((d[3]*h4 + d[2]*h3) + d[1]*h2) + d[0]*h1
		lo := int64(int32(s))
		v0 := lo>>sh + int64(res[i])
		v1 := ((s-lo)>>32+d[phraseMaxOrder]*v0)>>sh + int64(res[i+1])
		flag |= uint64(v0+32768) | uint64(v1+32768)
		out[i], out[i+1] = int16(v0), int16(v1)
		h12, h11, h10, h9, h8, h7, h6, h5 = h10, h9, h8, h7, h6, h5, h4, h3
		h4, h3, h2, h1 = h2, h1, v0, v1
	}
	if i < len(res) {
		s := ((d[11]*h12 + d[10]*h11) + (d[9]*h10 + d[8]*h9)) + ((d[7]*h8 + d[6]*h7) + (d[5]*h6 + d[4]*h5)) +
			((d[3]*h4 + d[2]*h3) + d[1]*h2) + d[0]*h1
		v := int64(int32(s))>>sh + int64(res[i])
		flag |= uint64(v + 32768)
		out[i] = int16(v)
	}
	return flag < 1<<16
}
