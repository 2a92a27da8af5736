package audio

import (
	"encoding/binary"
	"fmt"
	"sync"
)

// The phrase codec's chunk decoder (see codec.go for the format).

// blockDesc is one block's side information.
type blockDesc struct {
	pred int // fixed order 0-4, or phraseLPCCode|order
	lpc  lpcFilter
	ks   [phraseBlockFrames / phrasePartFrames]uint8
}

// chunkDecoder is a PhraseDecoder's scratch space, sized once.
type chunkDecoder struct {
	channels int
	plain    []byte // zstd output, capacity phraseMaxPlain
	blocks   []blockDesc
	x        [][]int16 // per channel: phraseMaxOrder of history, then the chunk
	res      []int32
	raw      []byte // the chunk's raw bits, padded
}

// chunkDecoders keeps scratch space (about 70 KiB) between records, one
// pool per channel count, so that a cache hit allocates little.
var chunkDecoders [MaxChannels]sync.Pool

func getChunkDecoder(channels int) *chunkDecoder {
	if w, ok := chunkDecoders[channels-1].Get().(*chunkDecoder); ok {
		for _, x := range w.x {
			clear(x[:phraseMaxOrder]) // a record starts from silence
		}
		return w
	}
	cf := phraseChunkFrames(channels, 1)
	w := &chunkDecoder{
		channels: channels,
		plain:    make([]byte, 0, phraseMaxPlain),
		blocks:   make([]blockDesc, channels*(cf/phraseBlockFrames)),
		x:        make([][]int16, channels),
		res:      make([]int32, phraseBlockFrames),
	}
	for c := range w.x {
		w.x[c] = make([]int16, phraseMaxOrder+cf)
	}
	return w
}

func putChunkDecoder(w *chunkDecoder) { chunkDecoders[w.channels-1].Put(w) }

// decode decodes d's next chunk into dst, whose length is the chunk's
// sample count.
func (w *chunkDecoder) decode(d *PhraseDecoder, dst []int16) error {
	z, raw, err := d.readChunk()
	if err != nil {
		return err
	}
	_, dec, err := phraseCoders()
	if err != nil {
		return fmt.Errorf("decode phrase: %w", err)
	}
	plain, err := dec.DecodeAll(z, w.plain[:0])
	if err != nil {
		return corruptErr("zstd: %v", err)
	}
	frames := len(dst) / w.channels
	nb := (frames + phraseBlockFrames - 1) / phraseBlockFrames
	blocks := w.blocks[:nb*w.channels]
	side, qBytes, rawBytes, err := parseSide(plain, blocks, frames)
	if err != nil {
		return err
	}
	q := plain[side:]
	if len(q) < qBytes {
		return corruptErr("%d quotient bytes, want %d", len(q), qBytes)
	}
	q, esc := q[:qBytes], q[qBytes:]
	if len(raw) != rawBytes {
		return corruptErr("%d raw bytes, want %d", len(raw), rawBytes)
	}
	w.raw = append(append(w.raw[:0], raw...), make([]byte, rawPad)...)
	raw = w.raw
	for c, x := range w.x {
		for bi := range nb {
			b := &blocks[c*nb+bi]
			n := min(phraseBlockFrames, frames-bi*phraseBlockFrames)
			res := w.res[:n]
			if q, raw, esc, err = decodeResidual(res, b.ks[:], q, raw, esc); err != nil {
				return err
			}
			if !restore(x, phraseMaxOrder+bi*phraseBlockFrames, res, b) {
				return corruptErr("sample out of range")
			}
		}
	}
	if len(esc) != 0 {
		return corruptErr("%d unused escape bytes", len(esc))
	}
	if w.channels == 1 {
		copy(dst, w.x[0][phraseMaxOrder:])
	} else {
		for c, x := range w.x {
			for f, v := range x[phraseMaxOrder : phraseMaxOrder+frames] {
				dst[f*w.channels+c] = v
			}
		}
	}
	for _, x := range w.x {
		copy(x[:phraseMaxOrder], x[frames:frames+phraseMaxOrder])
	}
	return nil
}

// parseSide reads and checks the side information of a chunk of frames
// frames into blocks (channel by channel) and returns its length and the
// lengths of the quotient and raw streams it implies.
func parseSide(p []byte, blocks []blockDesc, frames int) (n, qBytes, rawBytes int, err error) {
	nb := (frames + phraseBlockFrames - 1) / phraseBlockFrames
	var prev *lpcFilter
	for i := range blocks {
		if i%nb == 0 {
			prev = nil // a new channel
		}
		size := min(phraseBlockFrames, frames-(i%nb)*phraseBlockFrames)
		if n >= len(p) {
			return 0, 0, 0, corruptErr("truncated side information")
		}
		b := &blocks[i]
		b.pred = int(p[n])
		n++
		switch order := b.pred &^ phraseLPCCode; {
		case b.pred <= 4:
		case b.pred == phraseReuseCode:
			if prev == nil {
				return 0, 0, 0, corruptErr("no LPC filter to reuse")
			}
			b.lpc = *prev
			b.pred = phraseLPCCode | prev.order
		case b.pred&phraseLPCCode != 0 && order >= 1 && order <= phraseMaxOrder:
			if len(p)-n < 1+2*order {
				return 0, 0, 0, corruptErr("truncated side information")
			}
			if p[n] > phraseMaxShift {
				return 0, 0, 0, corruptErr("LPC shift %d over %d", p[n], phraseMaxShift)
			}
			b.lpc.order, b.lpc.shift = order, uint(p[n])
			for j := range order {
				c := int32(int16(binary.LittleEndian.Uint16(p[n+1+2*j:])))
				if c < -1<<(phraseCoefBits-1) || c >= 1<<(phraseCoefBits-1) {
					return 0, 0, 0, corruptErr("LPC coefficient %d over %d bits", c, phraseCoefBits)
				}
				b.lpc.coefs[j] = c
			}
			n += 1 + 2*order
			prev = &b.lpc
		default:
			return 0, 0, 0, corruptErr("unknown predictor %#x", b.pred)
		}
		parts := (size + phrasePartFrames - 1) / phrasePartFrames
		if len(p)-n < parts {
			return 0, 0, 0, corruptErr("truncated side information")
		}
		for j, k := range p[n : n+parts] {
			if k > phraseMaxK {
				return 0, 0, 0, corruptErr("split position %d over %d", k, phraseMaxK)
			}
			b.ks[j] = k
			m := min(phrasePartFrames, size-j*phrasePartFrames)
			qBytes += (m + 1) / 2
			rawBytes += (int(k)*m + 7) / 8
		}
		n += parts
	}
	return n, qBytes, rawBytes, nil
}

// rawPad is how many zero bytes follow a chunk's raw bits in the decoder's
// copy: enough that a full partition's reads (at most byte 4*31+3, plus 8)
// stay inside a fixed-size array view, so the hot loop needs no bounds
// checks.
const rawPad = 136

// decodeResidual rebuilds len(res) residuals from quotient nibbles, raw
// bits (followed by rawPad bytes) and escapes, and returns what is left of
// each. With restore it is the decoder's hot loop.
func decodeResidual(res []int32, ks []uint8, q, raw, esc []byte) ([]byte, []byte, []byte, error) {
	for p := 0; p < len(res); p += phrasePartFrames {
		k := uint(ks[p/phrasePartFrames])
		rp := res[p:min(p+phrasePartFrames, len(res))]
		m := len(rp)
		qn, rn := (m+1)/2, (int(k)*m+7)/8
		if m == phrasePartFrames && !hasEscape((*[phrasePartFrames / 2]byte)(q)) {
			fullPartition((*[phrasePartFrames]int32)(rp), (*[phrasePartFrames / 2]byte)(q), (*[rawPad]byte)(raw), k)
		} else {
			var err error
			if esc, err = partition(rp, q[:qn], raw[:rn+8], k, esc); err != nil {
				return nil, nil, nil, err
			}
		}
		q, raw = q[qn:], raw[rn:]
	}
	return q, raw, esc, nil
}

// hasEscape reports whether a partition's quotients hold an escape nibble.
func hasEscape(q *[phrasePartFrames / 2]byte) bool {
	const ones = 0x1111111111111111
	for i := 0; i < len(q); i += 8 {
		v := binary.LittleEndian.Uint64(q[i:])
		if v&(v>>1)&(v>>2)&(v>>3)&ones != 0 {
			return true
		}
	}
	return false
}

// fullPartition decodes a whole partition without escapes: the common
// case, written so that the compiler proves every index in range and no
// sample waits for the previous one. With k <= 16, the raw bits of four
// samples (at most 64 bits from a nibble boundary) come from one load.
func fullPartition(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	k &= 31
	mask := uint32(1)<<k - 1
	if k > 16 {
		for i := 0; i < phrasePartFrames; i++ {
			bp := uint(i) * k
			u := uint32(q[i/2]>>(4*(i&1)))&15<<k | uint32(binary.LittleEndian.Uint64(raw[bp>>3&127:])>>(bp&7))&mask
			res[i] = int32(u>>1) ^ -int32(u&1)
		}
		return
	}
	k2, k3 := 2*k, 3*k
	for g := 0; g < phrasePartFrames/4; g++ {
		bp := uint(g) * 4 * k
		w := binary.LittleEndian.Uint64(raw[bp>>3&127:]) >> (bp & 7)
		n := uint32(binary.LittleEndian.Uint16(q[2*g&15:]))
		u0 := n&15<<k | uint32(w)&mask
		u1 := n>>4&15<<k | uint32(w>>k)&mask
		u2 := n>>8&15<<k | uint32(w>>k2)&mask
		u3 := n>>12<<k | uint32(w>>k3)&mask
		r := res[4*g&31:]
		r[0] = int32(u0>>1) ^ -int32(u0&1)
		r[1] = int32(u1>>1) ^ -int32(u1&1)
		r[2] = int32(u2>>1) ^ -int32(u2&1)
		r[3] = int32(u3>>1) ^ -int32(u3&1)
	}
}

// partition decodes a partition in the general case: escapes, or fewer
// samples than phrasePartFrames.
func partition(res []int32, q, raw []byte, k uint, esc []byte) ([]byte, error) {
	k &= 31
	mask := uint32(1)<<k - 1
	for i := range res {
		u := uint32(q[i/2]>>(4*(i&1))) & 15
		if u == phraseEscape {
			x, n := binary.Uvarint(esc)
			if n <= 0 {
				return nil, corruptErr("truncated escape")
			}
			if x > phraseMaxZigzag>>k || x+phraseEscape > phraseMaxZigzag>>k {
				return nil, corruptErr("escaped residual over the limit")
			}
			u, esc = uint32(x)+phraseEscape, esc[n:]
		}
		bp := uint(i) * k
		u = u<<k | uint32(binary.LittleEndian.Uint64(raw[bp>>3:])>>(bp&7))&mask
		res[i] = int32(u>>1) ^ -int32(u&1)
	}
	return esc, nil
}

// restore runs b's predictor over the residuals, writing x[h:h+len(res)]
// (x[:h] is history). False if a sample leaves the int16 range, which the
// encoder never produces.
func restore(x []int16, h int, res []int32, b *blockDesc) bool {
	x = x[:h+len(res)]
	switch b.pred {
	case 0:
		for i, r := range res {
			if r != int32(int16(r)) {
				return false
			}
			x[h+i] = int16(r)
		}
		return true
	case 1:
		p := int32(x[h-1])
		for i, r := range res {
			v := p + r
			if v != int32(int16(v)) {
				return false
			}
			x[h+i], p = int16(v), v
		}
		return true
	case 2:
		p1, p2 := int32(x[h-1]), int32(x[h-2])
		for i, r := range res {
			v := 2*p1 - p2 + r
			if v != int32(int16(v)) {
				return false
			}
			x[h+i], p1, p2 = int16(v), v, p1
		}
		return true
	case 3:
		p1, p2, p3 := int32(x[h-1]), int32(x[h-2]), int32(x[h-3])
		for i, r := range res {
			v := 3*(p1-p2) + p3 + r
			if v != int32(int16(v)) {
				return false
			}
			x[h+i], p1, p2, p3 = int16(v), v, p1, p2
		}
		return true
	case 4:
		p1, p2, p3, p4 := int32(x[h-1]), int32(x[h-2]), int32(x[h-3]), int32(x[h-4])
		for i, r := range res {
			v := 4*(p1+p3) - 6*p2 - p4 + r
			if v != int32(int16(v)) {
				return false
			}
			x[h+i], p1, p2, p3, p4 = int16(v), v, p1, p2, p3
		}
		return true
	}
	return restoreLPC(x, h, res, &b.lpc)
}

// restoreLPC is restore for an LPC filter. Filters run as order 4, 8 or
// 12, zero coefficients filling up, with the history in local variables:
// the compiler keeps them in registers, and the newest sample, which the
// next prediction waits for, never goes through memory.
func restoreLPC(x []int16, h int, res []int32, f *lpcFilter) bool {
	var c [phraseMaxOrder]int64
	for j, v := range f.coefs[:f.order] {
		c[j] = int64(v)
	}
	sh := f.shift & 31
	out := x[h : h+len(res)]
	out = out[:len(res)]
	h1, h2, h3, h4 := int64(x[h-1]), int64(x[h-2]), int64(x[h-3]), int64(x[h-4])
	switch {
	case f.order <= 4:
		c0, c1, c2, c3 := c[0], c[1], c[2], c[3]
		for i, r := range res {
			v := (c1*h2 + c2*h3 + c3*h4 + int64(r)<<sh + c0*h1) >> sh
			if v != int64(int16(v)) {
				return false
			}
			out[i] = int16(v)
			h4, h3, h2, h1 = h3, h2, h1, v
		}
	case f.order <= 8:
		h5, h6, h7, h8 := int64(x[h-5]), int64(x[h-6]), int64(x[h-7]), int64(x[h-8])
		for i, r := range res {
			v := (c[1]*h2 + c[2]*h3 + c[3]*h4 + c[4]*h5 + c[5]*h6 + c[6]*h7 + c[7]*h8 + int64(r)<<sh + c[0]*h1) >> sh
			if v != int64(int16(v)) {
				return false
			}
			out[i] = int16(v)
			h8, h7, h6, h5, h4, h3, h2, h1 = h7, h6, h5, h4, h3, h2, h1, v
		}
	default:
		h5, h6, h7, h8 := int64(x[h-5]), int64(x[h-6]), int64(x[h-7]), int64(x[h-8])
		h9, h10, h11, h12 := int64(x[h-9]), int64(x[h-10]), int64(x[h-11]), int64(x[h-12])
		for i, r := range res {
			v := (c[1]*h2 + c[2]*h3 + c[3]*h4 + c[4]*h5 + c[5]*h6 + c[6]*h7 + c[7]*h8 +
				c[8]*h9 + c[9]*h10 + c[10]*h11 + c[11]*h12 + int64(r)<<sh + c[0]*h1) >> sh
			if v != int64(int16(v)) {
				return false
			}
			out[i] = int16(v)
			h12, h11, h10, h9, h8, h7, h6, h5 = h11, h10, h9, h8, h7, h6, h5, h4
			h4, h3, h2, h1 = h3, h2, h1, v
		}
	}
	return true
}
