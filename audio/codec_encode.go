package audio

import (
	"encoding/binary"
	"math"
)

// The phrase codec's encoder: predictor choice, LPC analysis and residual
// coding (see codec.go for the format).

// chunkEncoder holds one chunk's streams and the encoder's scratch space.
type chunkEncoder struct {
	side, q, esc []byte
	bits         bitWriter
	zbuf         []byte
	x            []int16 // one channel: phraseMaxOrder of history, then the chunk
	res, try     []int32
	win          []float64
	prev         lpcFilter // the channel's last LPC filter in this chunk
}

func newChunkEncoder(chunkFrames int) *chunkEncoder {
	return &chunkEncoder{
		x:   make([]int16, phraseMaxOrder+chunkFrames),
		res: make([]int32, phraseBlockFrames),
		try: make([]int32, phraseBlockFrames),
		win: make([]float64, phraseBlockFrames),
	}
}

func (e *chunkEncoder) reset() {
	e.side, e.q, e.esc = e.side[:0], e.q[:0], e.esc[:0]
	e.bits.reset()
}

// encodeChannel appends channel c of the interleaved frames s[start:] (a
// chunk of frames frames) to the streams. History before the chunk comes
// from s too, so chunks depend on their predecessors exactly as the
// decoder, which runs in order, sees them.
func (e *chunkEncoder) encodeChannel(s []int16, start, frames, c, ch int) {
	x := e.x[:phraseMaxOrder+frames]
	for i := range phraseMaxOrder {
		f := start - phraseMaxOrder + i
		x[i] = 0
		if f >= 0 {
			x[i] = s[f*ch+c]
		}
	}
	for f := range frames {
		x[phraseMaxOrder+f] = s[(start+f)*ch+c]
	}
	e.prev = lpcFilter{}
	for b := 0; b < frames; b += phraseBlockFrames {
		e.encodeBlock(x, phraseMaxOrder+b, min(phraseBlockFrames, frames-b))
	}
}

// encodeBlock chooses the predictor for x[h:h+n] (x[:h] is history) and
// appends the block's side information, quotients, escapes and raw bits.
func (e *chunkEncoder) encodeBlock(x []int16, h, n int) {
	best, bestCost := -1, math.MaxInt
	res, try := e.res[:n], e.try[:n]
	for order := 0; order <= 4; order++ {
		fixedResidual(x, h, try, order)
		if c := residualCost(try) + decodeCost(order, n); c < bestCost {
			best, bestCost = order, c
			res, try = try, res
		}
	}
	lpc := e.prev
	if e.prev.order > 0 && lpcResidual(x, h, try, &e.prev) {
		if c := residualCost(try) + 8 + decodeCost(phraseLPCCode|e.prev.order, n); c < bestCost {
			best, bestCost = phraseReuseCode, c
			res, try = try, res
		}
	}
	for _, f := range e.lpcCandidates(x[h : h+n]) {
		if !lpcResidual(x, h, try, &f) {
			continue
		}
		if c := residualCost(try) + 8*(1+2*f.order) + decodeCost(phraseLPCCode|f.order, n); c < bestCost {
			best, bestCost, lpc = phraseLPCCode|f.order, c, f
			res, try = try, res
		}
	}
	e.side = append(e.side, byte(best))
	if best&phraseLPCCode != 0 {
		e.prev = lpc
		e.side = append(e.side, byte(lpc.shift))
		for _, c := range lpc.coefs[:lpc.order] {
			e.side = binary.LittleEndian.AppendUint16(e.side, uint16(int16(c)))
		}
	}
	for p := 0; p < n; p += phrasePartFrames {
		part := res[p:min(p+phrasePartFrames, n)]
		k := splitPosition(part)
		e.side = append(e.side, byte(k))
		for i := 0; i < len(part); i += 2 {
			b := e.quotient(part[i], k)
			if i+1 < len(part) {
				b |= e.quotient(part[i+1], k) << 4
			}
			e.q = append(e.q, b)
		}
		for _, v := range part {
			e.bits.write(uint32(v)&(1<<k-1), k)
		}
		e.bits.align()
	}
}

// phraseDecodeWeight is what the encoder pays for decoding speed, in
// sixteenths of a bit per nanosecond of restore time per sample: LPC
// filters, whose recurrence runs through a multiply, must save that much
// over a fixed predictor to be chosen. At 3, records of the demo voice are
// 0.7% larger than at 0 and the restore step is 28% faster (on the
// speech-like signal 1.3% and 32%); at 4 the speech-like signal would be
// larger than FLAC's.
const phraseDecodeWeight = 3

// restoreTenthsNs is restore's time per sample for a predictor, in tenths
// of a nanosecond, measured on the 2-core CI box (codec_restore.go).
func restoreTenthsNs(pred int) int {
	switch {
	case pred == 0:
		return 4
	case pred == 1:
		return 5
	case pred == 2:
		return 10
	case pred&phraseLPCCode == 0:
		return 14
	case pred&^phraseLPCCode <= 4:
		return 19
	case pred&^phraseLPCCode <= 8:
		return 29
	}
	return 37
}

// decodeCost is the decoding time of n samples with predictor pred (the
// LPC code for filters), in bits.
func decodeCost(pred, n int) int {
	return phraseDecodeWeight * restoreTenthsNs(pred) * n / 160
}

// quotient returns the nibble for residual v split at k, appending an
// escape if it does not fit.
func (e *chunkEncoder) quotient(v int32, k uint) byte {
	s := v >> k
	if s >= -phraseBias && s <= phraseBias {
		return byte(s + phraseBias)
	}
	e.esc = binary.AppendUvarint(e.esc, uint64(zigzag(s)))
	return phraseEscape
}

// splitPosition is the number of raw low bits for a partition: log2 of
// the mean zig-zagged residual (about twice its magnitude), minus one,
// rounded down. That leaves high parts within a few units of zero whatever
// the partition's loudness, so that one Huffman table fits a whole chunk and
// escapes (beyond ±7) are rare. Rice coding would split a bit higher and
// code the quotient in unary; Huffman models the distribution's shape
// instead. (Splits half a bit or a bit higher or lower were 0.1-3% larger.)
func splitPosition(part []int32) uint {
	var sum uint64
	for _, v := range part {
		sum += uint64(zigzag(v))
	}
	mean := float64(sum) / float64(len(part))
	if mean < 1 {
		return 0
	}
	return uint(max(0, min(phraseMaxK, int(math.Log2(mean))-1)))
}

// residualCost estimates a residual's coded size in bits as Rice codes with
// the best parameter per partition: a good proxy to compare predictors.
func residualCost(res []int32) int {
	total := 0
	for p := 0; p < len(res); p += phrasePartFrames {
		part := res[p:min(p+phrasePartFrames, len(res))]
		var sum uint64
		for _, v := range part {
			sum += uint64(zigzag(v))
		}
		best := math.MaxInt
		for k := range phraseMaxK + 1 {
			c := int(sum>>k) + (k+1)*len(part)
			if c >= best {
				break // the cost is convex in k
			}
			best = c
		}
		total += best + 8
	}
	return total
}

func zigzag(v int32) uint32 { return uint32(v<<1) ^ uint32(v>>31) }

// fixedResidual computes the residual of FLAC's fixed polynomial predictor
// of the given order (0-4) for x[h:h+len(res)]. int16 input keeps it within
// ±2^19.
func fixedResidual(x []int16, h int, res []int32, order int) {
	for i := range res {
		n := h + i
		x0, x1, x2, x3, x4 := int32(x[n]), int32(x[n-1]), int32(x[n-2]), int32(x[n-3]), int32(x[n-4])
		switch order {
		case 0:
			res[i] = x0
		case 1:
			res[i] = x0 - x1
		case 2:
			res[i] = x0 - 2*x1 + x2
		case 3:
			res[i] = x0 - 3*x1 + 3*x2 - x3
		default:
			res[i] = x0 - 4*x1 + 6*x2 - 4*x3 + x4
		}
	}
}

// lpcFilter is a quantized linear predictor: x[n] is predicted as
// (sum of coefs[j]*x[n-1-j]) >> shift, in exact integer arithmetic.
type lpcFilter struct {
	order int
	shift uint
	coefs [phraseMaxOrder]int32
}

// lpcOrders are the LPC orders the encoder tries per block, each costing it
// a residual pass. The decoder runs filters as order 4, 8 or 12, so
// orders in between would save only a few bytes of coefficients (trying
// all twelve made records 0.2% smaller and the encoder 10% slower).
var lpcOrders = [...]int{4, 8, 12}

// lpcCandidates computes LPC filters of the orders in lpcOrders for block
// by the autocorrelation method (Tukey window, Levinson-Durbin recursion).
// A silent or too short block gets none.
func (e *chunkEncoder) lpcCandidates(block []int16) []lpcFilter {
	n := len(block)
	if n <= 2*phraseMaxOrder {
		return nil
	}
	w := e.win[:n]
	for i, v := range block {
		// Tukey window, half of it tapered: the edges of a block would
		// otherwise look like a jump to the autocorrelation.
		t, g := float64(i)/float64(n-1), 1.0
		if t < 0.25 {
			g = 0.5 * (1 - math.Cos(4*math.Pi*t))
		} else if t > 0.75 {
			g = 0.5 * (1 - math.Cos(4*math.Pi*(1-t)))
		}
		w[i] = float64(v) * g
	}
	var r [phraseMaxOrder + 1]float64
	for lag := range r {
		s := 0.0
		for i := lag; i < n; i++ {
			s += w[i] * w[i-lag]
		}
		r[lag] = s
	}
	if r[0] == 0 {
		return nil
	}
	r[0] *= 1 + 1e-9 // a touch of white noise keeps the recursion stable
	var a, prev [phraseMaxOrder + 1]float64
	out := make([]lpcFilter, 0, len(lpcOrders))
	errPow := r[0]
	next := 0
	for m := 1; m <= phraseMaxOrder; m++ {
		acc := r[m]
		for j := 1; j < m; j++ {
			acc -= a[j] * r[m-j]
		}
		k := acc / errPow
		prev = a
		a[m] = k
		for j := 1; j < m; j++ {
			a[j] = prev[j] - k*prev[m-j]
		}
		if errPow *= 1 - k*k; errPow <= 0 {
			break
		}
		if m == lpcOrders[next] {
			if f, ok := quantizeLPC(a[1 : m+1]); ok {
				out = append(out, f)
			}
			if next++; next == len(lpcOrders) {
				break
			}
		}
	}
	return out
}

// quantizeLPC scales coefficients to phraseCoefBits-bit integers, carrying
// each rounding error into the next coefficient.
func quantizeLPC(a []float64) (lpcFilter, bool) {
	peak := 0.0
	for _, v := range a {
		peak = math.Max(peak, math.Abs(v))
	}
	if peak == 0 || math.IsNaN(peak) || math.IsInf(peak, 0) {
		return lpcFilter{}, false
	}
	shift := phraseCoefBits - 1 - int(math.Ceil(math.Log2(peak)+1e-9))
	if shift < 0 {
		return lpcFilter{}, false
	}
	f := lpcFilter{order: len(a), shift: uint(min(shift, phraseMaxShift))}
	lim := float64(int(1)<<(phraseCoefBits-1)) - 1
	carry := 0.0
	for j, v := range a {
		s := v*float64(int(1)<<f.shift) + carry
		q := math.Max(-lim-1, math.Min(lim, math.Round(s)))
		carry = s - q
		f.coefs[j] = int32(q)
	}
	return f, true
}

// lpcResidual computes the residual of f for x[h:h+len(res)]; false if a
// residual is too large for the format (a filter unfit for this block).
func lpcResidual(x []int16, h int, res []int32, f *lpcFilter) bool {
	c := f.coefs[:f.order]
	for i := range res {
		n := h + i
		var s int64
		for j, cj := range c {
			s += int64(cj) * int64(x[n-1-j])
		}
		r := int64(x[n]) - s>>f.shift
		if r > phraseMaxResidual || r < -phraseMaxResidual {
			return false
		}
		res[i] = int32(r)
	}
	return true
}

// bitWriter packs values least significant bit first.
type bitWriter struct {
	buf  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) reset() { w.buf, w.acc, w.nacc = w.buf[:0], 0, 0 }

func (w *bitWriter) write(v uint32, k uint) {
	w.acc |= uint64(v) << w.nacc
	w.nacc += k
	for w.nacc >= 8 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

// align pads to a whole byte with zero bits.
func (w *bitWriter) align() {
	if w.nacc > 0 {
		w.write(0, 8-w.nacc)
	}
}

// finish flushes the partial byte (zero-padded) and returns the bytes.
func (w *bitWriter) finish() []byte {
	if w.nacc > 0 {
		w.buf = append(w.buf, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
	return w.buf
}
