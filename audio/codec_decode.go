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

// chunkDecoders keeps scratch space (about 250 KiB: the zstd output
// buffer, 130 KiB, is sized for the worst case) between records, one pool
// per channel count, so that a cache hit allocates little.
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

// decode decodes d's next chunk into the end of out (see
// PhraseDecoder.decodeChunk).
func (w *chunkDecoder) decode(d *PhraseDecoder, out []int16) error {
	dst := out[len(out)-d.nextChunk():]
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
	// A mono chunk after the first is restored in place: its history is
	// right before it.
	inPlace := w.channels == 1 && len(out)-len(dst) >= phraseMaxOrder
	for c, x := range w.x {
		if inPlace {
			x = out[len(out)-len(dst)-phraseMaxOrder:]
		}
		for bi := range nb {
			b := &blocks[c*nb+bi]
			n := min(phraseBlockFrames, frames-bi*phraseBlockFrames)
			if b.pred == 0 && n == phraseBlockFrames && silentBlock(&b.ks, q) {
				// Digital silence (sentences end in it): every residual, and
				// so every sample, is zero.
				clear(x[phraseMaxOrder+bi*phraseBlockFrames:][:n])
				q = q[phraseBlockFrames/2:]
				continue
			}
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
	switch {
	case inPlace:
		// The history of the next chunk, in case it is not in place.
		copy(w.x[0][:phraseMaxOrder], out[len(out)-phraseMaxOrder:])
		return nil
	case w.channels == 1:
		copy(dst, w.x[0][phraseMaxOrder:])
	default:
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

// silentBlock reports whether a whole block's residuals are all zero: no
// raw bits, and every quotient nibble phraseBias.
func silentBlock(ks *[phraseBlockFrames / phrasePartFrames]uint8, q []byte) bool {
	const zeros = phraseBias * 0x1111111111111111
	if len(q) < phraseBlockFrames/2 || binary.LittleEndian.Uint64(ks[:8])|binary.LittleEndian.Uint64(ks[8:]) != 0 {
		return false
	}
	for i := 0; i < phraseBlockFrames/2; i += 8 {
		if binary.LittleEndian.Uint64(q[i:]) != zeros {
			return false
		}
	}
	return true
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
// copy: a partition's reads (8 bytes from at most byte 63, also when the
// index is masked for the compiler) stay inside a fixed-size array view,
// so the hot loop needs no bounds checks.
const rawPad = 72

// fastMaxK is the largest split position fullPartition handles: four
// samples of raw bits (at most 64, from a nibble boundary) come from one
// 64-bit load.
const fastMaxK = 16

// biasTable[k][n] is the high part of a residual whose quotient nibble is n
// and split position k: (n - phraseBias) << k. A table look-up replaces a
// variable shift and a subtraction per sample. It has 32 rows, so that
// k&31 indexes it without a bounds check.
var biasTable = func() (t [32][16]int32) {
	for k := range t {
		for n := range t[k] {
			t[k][n] = int32(n-phraseBias) << k
		}
	}
	return t
}()

// decodeResidual rebuilds len(res) residuals from quotient nibbles, raw
// bits (followed by rawPad bytes) and escapes, and returns what is left of
// each. With restore it is the decoder's hot loop.
func decodeResidual(res []int32, ks []uint8, q, raw, esc []byte) ([]byte, []byte, []byte, error) {
	// Whole partitions first, by offset into q and raw: a partition of
	// phrasePartFrames samples takes 16 quotient bytes and 4k raw bytes.
	full := len(res) / phrasePartFrames
	qo, ro := 0, 0
	for j := 0; j < full; j++ {
		k := uint(ks[j])
		if qo+phrasePartFrames/2 > len(q) || ro+rawPad > len(raw) {
			return nil, nil, nil, corruptErr("truncated residual")
		}
		rp := (*[phrasePartFrames]int32)(res[j*phrasePartFrames:])
		qp := (*[phrasePartFrames / 2]byte)(q[qo:])
		if k <= fastMaxK && !hasEscape(qp) {
			fullPartition(rp, qp, (*[rawPad]byte)(raw[ro:]), k)
		} else {
			var err error
			if esc, err = partition(rp[:], qp[:], raw[ro:], k, esc); err != nil {
				return nil, nil, nil, err
			}
		}
		qo += phrasePartFrames / 2
		ro += int(k) * phrasePartFrames / 8
	}
	q, raw = q[qo:], raw[ro:]
	if p := full * phrasePartFrames; p < len(res) {
		// The last block of a record may end in a partial partition.
		k := uint(ks[full])
		m := len(res) - p
		qn, rn := (m+1)/2, (int(k)*m+7)/8
		if qn > len(q) || rn+8 > len(raw) {
			return nil, nil, nil, corruptErr("truncated residual")
		}
		var err error
		if esc, err = partition(res[p:], q[:qn], raw[:rn+8], k, esc); err != nil {
			return nil, nil, nil, err
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

// fullPartitionGo decodes a whole partition without escapes and with k <=
// fastMaxK: the common case (fullPartition, in the build-tagged files,
// chooses it or the assembly). Eight samples take k bytes of raw bits, so
// every group of eight starts on a byte; its second half starts k/2 bytes
// further, on a byte for even k and half a byte later for odd k, which is
// why there are two copies of the loop (with a constant shift, so that k
// stays in the shift-count register). The nibbles are read one byte at a
// time after the previous store, which keeps the compiler from loading
// them all up front and running out of registers.
func fullPartitionGo(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	switch {
	case k == 0: // silence and near silence: no raw bits
		t := &biasTable[0]
		for i, b := range q {
			res[2*i&31], res[(2*i+1)&31] = t[b&15], t[b>>4]
		}
	case k&1 == 0:
		unpackEven(res, q, raw, k)
	default:
		unpackOdd(res, q, raw, k)
	}
}

func unpackEven(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	k &= 31
	mask := uint64(1)<<k - 1
	tab := &biasTable[k]
	for g := uint(0); g < phrasePartFrames/8; g++ {
		base := g * k
		r := (*[8]int32)(res[8*g&31:])
		n := (*[4]byte)(q[4*g&15:])
		w := binary.LittleEndian.Uint64(raw[base&63:])
		r[0] = tab[n[0]&15] + int32(w&mask)
		w >>= k
		r[1] = tab[n[0]>>4] + int32(w&mask)
		w >>= k
		r[2] = tab[n[1]&15] + int32(w&mask)
		w >>= k
		r[3] = tab[n[1]>>4] + int32(w&mask)
		w = binary.LittleEndian.Uint64(raw[(base+k/2)&63:])
		r[4] = tab[n[2]&15] + int32(w&mask)
		w >>= k
		r[5] = tab[n[2]>>4] + int32(w&mask)
		w >>= k
		r[6] = tab[n[3]&15] + int32(w&mask)
		w >>= k
		r[7] = tab[n[3]>>4] + int32(w&mask)
	}
}

func unpackOdd(res *[phrasePartFrames]int32, q *[phrasePartFrames / 2]byte, raw *[rawPad]byte, k uint) {
	k &= 31
	mask := uint64(1)<<k - 1
	tab := &biasTable[k]
	for g := uint(0); g < phrasePartFrames/8; g++ {
		base := g * k
		r := (*[8]int32)(res[8*g&31:])
		n := (*[4]byte)(q[4*g&15:])
		w := binary.LittleEndian.Uint64(raw[base&63:])
		r[0] = tab[n[0]&15] + int32(w&mask)
		w >>= k
		r[1] = tab[n[0]>>4] + int32(w&mask)
		w >>= k
		r[2] = tab[n[1]&15] + int32(w&mask)
		w >>= k
		r[3] = tab[n[1]>>4] + int32(w&mask)
		w = binary.LittleEndian.Uint64(raw[(base+k/2)&63:]) >> 4
		r[4] = tab[n[2]&15] + int32(w&mask)
		w >>= k
		r[5] = tab[n[2]>>4] + int32(w&mask)
		w >>= k
		r[6] = tab[n[3]&15] + int32(w&mask)
		w >>= k
		r[7] = tab[n[3]>>4] + int32(w&mask)
	}
}

// partition decodes a partition in the general case: escapes, k over
// fastMaxK, or fewer samples than phrasePartFrames.
func partition(res []int32, q, raw []byte, k uint, esc []byte) ([]byte, error) {
	k &= 31
	mask := uint64(1)<<k - 1
	for i := range res {
		bp := uint(i) * k
		low := binary.LittleEndian.Uint64(raw[bp>>3:]) >> (bp & 7) & mask
		high := int64(q[i/2]>>(4*(i&1))&15) - phraseBias
		if high == phraseEscape-phraseBias {
			x, m := binary.Uvarint(esc)
			if m <= 0 {
				return nil, corruptErr("truncated escape")
			}
			esc = esc[m:]
			if x > 2*phraseMaxResidual+1 {
				return nil, corruptErr("escaped residual over the limit")
			}
			high = int64(x>>1) ^ -int64(x&1)
		}
		// Only an escape or k over fastMaxK can exceed the limit.
		r := high<<k | int64(low)
		if r < -phraseMaxResidual || r > phraseMaxResidual {
			return nil, corruptErr("residual %d over the limit", r)
		}
		res[i] = int32(r)
	}
	return esc, nil
}
