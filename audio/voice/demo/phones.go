package demo

import (
	"math"
	"time"
)

// Phone is what the demo voice aims for when it says one phoneme: the
// formant targets of its steady part and its nominal length. Tests measure
// the model's output against these numbers.
type Phone struct {
	// F1, F2 and F3 are the formant targets in Hz of the phoneme's middle
	// (steady) part for a speaker with FormantScale 1. A speaker's real
	// targets are these times its FormantScale. For consonants they are
	// the loci the neighbouring vowels glide towards.
	F1, F2, F3 float64
	// Duration is the nominal length at length_scale 1, before the
	// lengthening a preceding stress mark gives and before noise_w jitter.
	// Marks (stress, pad, tone digits) last zero.
	Duration time.Duration
	// Voiced reports whether the steady part is voiced.
	Voiced bool
	// Noisy reports whether the phoneme has frication or burst noise.
	Noisy bool
}

// target is one point of a phoneme's formant trajectory.
type target struct {
	f1, f2, f3 float64
	av         float64 // voicing amplitude, 0..1
	nasal      bool    // damps the upper formants the way the nasal cavity does
}

// spec is everything the model knows about one phoneme symbol.
type spec struct {
	sym string
	dur float64 // ms at length_scale 1
	// tr are the start, middle and end targets; the model moves through
	// them piecewise linearly across the phoneme's frames (diphthongs,
	// pinyin finals such as "iang"). Monophthongs repeat one target.
	tr [3]target
	// noise are the amplitudes of the four noise bands (see noiseBands).
	noise [numBands]float64
	// closure is the fraction of the duration that is a stop's closure:
	// silence (or a weak voice bar) before the burst.
	closure  float64
	voicebar float64 // voicing amplitude during the closure, relative to av
	pitch    float64 // f0 factor; 0 means 1
	stress   float64 // what a stress mark gives the phoneme after it
	inherit  bool    // length marks repeat the sound before them
	tone     int     // pinyin tone digit 1..5; 0 for everything else
}

// Noise bands. Each is a fixed table of shaped noise built into the model.
const (
	bandAsp     = iota // aspiration and breath: broad, centred near 1.5 kHz
	bandPalatal        // ʃ ʒ ɕ and velar bursts: 2–5.5 kHz
	bandAlveol         // s z and alveolar bursts: 4–10 kHz
	bandFlat           // f v θ ð and labial bursts: flat and weak
	numBands
)

// Reference targets, male adult values in the spirit of Peterson & Barney
// and Hillenbrand's measurements of American English.
var (
	tI   = target{280, 2250, 2950, 1, false}
	tIh  = target{400, 1950, 2600, 1, false}
	tE   = target{470, 2050, 2650, 1, false}
	tEh  = target{550, 1800, 2550, 1, false}
	tAe  = target{670, 1700, 2450, 1, false}
	tA   = target{750, 1300, 2500, 1, false}
	tAa  = target{730, 1100, 2450, 1, false}
	tO   = target{480, 880, 2450, 1, false}
	tOh  = target{580, 900, 2450, 1, false}
	tUh  = target{440, 1050, 2300, 1, false}
	tU   = target{310, 900, 2250, 1, false}
	tSch = target{500, 1450, 2500, 1, false}
	tY   = target{280, 1800, 2200, 1, false}
	tGam = target{460, 1200, 2500, 1, false} // pinyin e, IPA ɤ
	tEr  = target{480, 1350, 1700, 1, false}
	// silence keeps a neutral tract so that formants do not sweep in and out
	// of pauses.
	tSil = target{500, 1450, 2500, 0, false}
)

func mono(t target) [3]target     { return [3]target{t, t, t} }
func glide(a, b target) [3]target { return [3]target{a, b, b} }
func diph(a, b target) [3]target  { return [3]target{a, a, b} }
func tri(a, b, c target) [3]target {
	return [3]target{a, b, c}
}

func vowel(sym string, dur float64, t target) spec {
	return spec{sym: sym, dur: dur, tr: mono(t)}
}

func voiced(f1, f2, f3, av float64) target { return target{f1, f2, f3, av, false} }
func nasalT(f1, f2, f3 float64) target     { return target{f1, f2, f3, 0.6, true} }
func unvoiced(f1, f2, f3 float64) target   { return target{f1, f2, f3, 0, false} }
func noise(asp, pal, alv, flat float64) [4]float64 {
	return [4]float64{asp, pal, alv, flat}
}

// stop returns a plosive: closure, then a burst of noise; voiced ones keep
// a weak voice bar in the closure and voicing after the release.
func stop(sym string, dur float64, locus target, voicedStop bool, burst [4]float64) spec {
	s := spec{sym: sym, dur: dur, tr: mono(locus), noise: burst, closure: 0.65}
	if voicedStop {
		s.tr = mono(voiced(locus.f1, locus.f2, locus.f3, 0.35))
		s.voicebar = 0.3
		s.closure = 0.55
		s.pitch = 0.97
	}
	return s
}

func fric(sym string, dur float64, t target, n [4]float64) spec {
	s := spec{sym: sym, dur: dur, tr: mono(t), noise: n}
	if t.av > 0 {
		s.pitch = 0.97
	}
	return s
}

func silence(sym string, ms float64) spec { return spec{sym: sym, dur: ms, tr: mono(tSil)} }
func mark(sym string) spec                { return spec{sym: sym, tr: mono(tSil)} }

// Loci of the stops by place of articulation.
var (
	locLab = target{350, 900, 2300, 0, false}
	locAlv = target{350, 1750, 2700, 0, false}
	locVel = target{350, 1900, 2400, 0, false}
	locPal = target{350, 2100, 2800, 0, false}
	locRet = target{380, 1500, 1900, 0, false}
)

// The fixed ids of Piper's standard map.
const (
	padID   = 0 // "_", between phonemes
	startID = 1 // "^"
	endID   = 2 // "$"
)

// inventory lists every symbol of the phoneme_id_map in id order. Keys are
// single codepoints after NFD (what Piper's espeak front end emits) except
// the pinyin tokens, which the pinyin front end emits whole.
var inventory = buildInventory()

// Pinyin spells some sounds with letters that mean something else in IPA
// (j, x, z, h, e, v) and uses a, o, i, u, m, n as whole syllable finals.
// The model tells the two apart by itself: a sequence with a tone digit in
// it is pinyin, and in pinyin a symbol with a tone digit after it is a
// final. These rows come after the inventory's (they have no id in the
// phoneme_id_map); the graph switches to them through remap tables.
var (
	pinyinFinals   = pinyinFinalRows()
	pinyinInitials = pinyinInitialRows()
)

// rows is the whole parameter table: the inventory, then the pinyin
// readings.
func rows() []spec {
	r := append([]spec(nil), inventory...)
	r = append(r, pinyinFinals...)
	return append(r, pinyinInitials...)
}

const pinyinFinalMs = 170

func pinyinFinalRows() []spec {
	final := func(sym string, tr [3]target) spec { return spec{sym: sym, dur: pinyinFinalMs, tr: tr} }
	return []spec{
		final("a", mono(tA)),
		final("o", glide(tUh, tOh)),
		final("e", mono(tGam)),
		final("i", mono(tI)),
		final("u", mono(tU)),
		final("m", mono(nasalT(280, 1000, 2200))),
		final("n", mono(nasalT(280, 1600, 2600))),
	}
}

func pinyinInitialRows() []spec {
	return []spec{
		{sym: "j", dur: 85, tr: mono(locPal), noise: noise(0, 0.55, 0.1, 0), closure: 0.5},
		fric("x", 120, unvoiced(380, 2100, 2900), noise(0, 0.55, 0.1, 0)),
		{sym: "z", dur: 85, tr: mono(locAlv), noise: noise(0, 0, 0.5, 0), closure: 0.5},
		fric("h", 90, unvoiced(500, 1300, 2400), noise(0.3, 0.2, 0, 0)),
	}
}

// remap returns, for every id, the row to use instead: the id itself, or
// the row of alt's spec with the same symbol.
func remap(offset int, alt []spec) []int64 {
	m := make([]int64, len(inventory))
	for i := range m {
		m[i] = int64(i)
	}
	for k, s := range alt {
		m[symbolIndex()[s.sym]] = int64(offset + k)
	}
	return m
}

func buildInventory() []spec {
	s := []spec{
		mark("_"),
		silence("^", 25),
		silence("$", 60),

		// Word and clause boundaries. A space is not a pause in connected
		// speech; punctuation is.
		mark(" "),
		silence(",", 180), silence(".", 380), silence("!", 380), silence("?", 380),
		silence(";", 260), silence(":", 260), silence("—", 260), silence("–", 220),
		silence("…", 380), silence("-", 40), silence("(", 120), silence(")", 120),
		mark("'"), mark("\""), mark("«"), mark("»"), mark("¡"), mark("¿"),

		// Stress, length and diacritics. A stress mark lengthens and raises
		// the vowel after it; a length mark holds the sound before it.
		{sym: "ˈ", tr: mono(tSil), stress: 1},
		{sym: "ˌ", tr: mono(tSil), stress: 0.5},
		{sym: "ː", dur: 70, tr: mono(tSil), inherit: true},
		{sym: "ˑ", dur: 35, tr: mono(tSil), inherit: true},
		mark("\u0329"), mark("\u0303"), mark("\u0306"), mark("\u0308"), mark("\u030A"),
		mark("\u032A"), mark("\u032F"), mark("\u0325"), mark("\u02B0"), mark("\u02B2"),
		mark("\u02B7"), mark("\u02DE"), mark("\u203F"),

		// Vowels emitted by espeak-ng en-us, then other common IPA vowels.
		vowel("i", 85, tI), vowel("ɪ", 70, tIh), vowel("e", 80, tE), vowel("ɛ", 75, tEh),
		vowel("æ", 95, tAe), vowel("a", 90, tA), vowel("ɑ", 90, tAa),
		vowel("ɒ", 90, target{620, 950, 2450, 1, false}), vowel("ɔ", 90, tOh),
		vowel("o", 85, tO), vowel("ʊ", 65, tUh), vowel("u", 85, tU),
		vowel("ʌ", 75, target{630, 1200, 2450, 1, false}), vowel("ə", 50, tSch),
		vowel("ɚ", 85, tEr), vowel("ɜ", 90, target{500, 1400, 1750, 1, false}),
		vowel("ɐ", 55, target{620, 1300, 2450, 1, false}),
		vowel("ᵻ", 55, target{400, 1750, 2550, 1, false}),
		vowel("ɨ", 70, target{350, 1600, 2400, 1, false}),
		vowel("ʉ", 70, target{330, 1400, 2300, 1, false}),
		vowel("ʏ", 70, target{380, 1650, 2250, 1, false}),
		vowel("ø", 80, target{420, 1600, 2300, 1, false}),
		vowel("œ", 80, target{550, 1500, 2400, 1, false}),
		vowel("ɵ", 70, target{450, 1300, 2400, 1, false}),
		vowel("ɯ", 80, target{320, 1300, 2400, 1, false}),
		vowel("ɤ", 85, tGam), vowel("ɘ", 60, target{450, 1600, 2500, 1, false}),
		vowel("ɞ", 70, target{550, 1350, 2400, 1, false}),
		vowel("ɶ", 85, target{700, 1400, 2400, 1, false}),

		// Plosives.
		stop("p", 95, locLab, false, noise(0.5, 0, 0, 0.5)),
		stop("b", 70, locLab, true, noise(0, 0, 0, 0.25)),
		stop("t", 90, locAlv, false, noise(0.4, 0, 0.6, 0)),
		stop("d", 65, locAlv, true, noise(0, 0, 0.3, 0)),
		stop("k", 95, locVel, false, noise(0.4, 0.6, 0, 0)),
		stop("ɡ", 70, locVel, true, noise(0, 0.3, 0, 0)),
		stop("ʈ", 90, locRet, false, noise(0.4, 0.4, 0.2, 0)),
		stop("ɖ", 65, locRet, true, noise(0, 0.3, 0, 0)),
		stop("ɟ", 70, locPal, true, noise(0, 0.3, 0, 0)),
		{sym: "ʔ", dur: 45, tr: mono(unvoiced(500, 1450, 2500)), closure: 1},
		{sym: "ɾ", dur: 30, tr: mono(voiced(380, 1700, 2600, 0.45))},

		// Fricatives.
		fric("f", 100, unvoiced(350, 1000, 2300), noise(0, 0, 0, 0.3)),
		fric("v", 70, voiced(350, 1000, 2300, 0.45), noise(0, 0, 0, 0.15)),
		fric("θ", 100, unvoiced(350, 1400, 2600), noise(0, 0, 0.05, 0.25)),
		fric("ð", 50, voiced(350, 1400, 2600, 0.5), noise(0, 0, 0, 0.12)),
		fric("s", 110, unvoiced(350, 1700, 2700), noise(0, 0, 0.6, 0)),
		fric("z", 80, voiced(350, 1700, 2700, 0.4), noise(0, 0, 0.3, 0)),
		fric("ʃ", 115, unvoiced(350, 1900, 2500), noise(0, 0.6, 0, 0)),
		fric("ʒ", 85, voiced(350, 1900, 2500, 0.4), noise(0, 0.3, 0, 0)),
		fric("ɕ", 110, unvoiced(380, 2100, 2900), noise(0, 0.55, 0.1, 0)),
		fric("ʑ", 80, voiced(380, 2100, 2900, 0.4), noise(0, 0.3, 0.05, 0)),
		fric("ʂ", 110, unvoiced(380, 1500, 1900), noise(0.1, 0.5, 0, 0)),
		fric("ʐ", 75, voiced(380, 1400, 1800, 0.5), noise(0, 0.2, 0, 0)),
		fric("ç", 90, unvoiced(350, 2200, 2900), noise(0.1, 0.45, 0.05, 0)),
		fric("ʝ", 70, voiced(300, 2200, 2900, 0.5), noise(0, 0.2, 0, 0)),
		fric("x", 90, unvoiced(400, 1300, 2400), noise(0.25, 0.25, 0, 0)),
		fric("ɣ", 70, voiced(400, 1300, 2400, 0.5), noise(0.1, 0.1, 0, 0)),
		fric("χ", 90, unvoiced(500, 1100, 2400), noise(0.35, 0.1, 0, 0)),
		fric("ʁ", 70, voiced(500, 1100, 2400, 0.5), noise(0.12, 0, 0, 0)),
		fric("ħ", 80, unvoiced(700, 1200, 2500), noise(0.35, 0, 0, 0)),
		fric("β", 70, voiced(350, 900, 2300, 0.5), noise(0, 0, 0, 0.1)),
		fric("ɸ", 90, unvoiced(350, 900, 2300), noise(0, 0, 0, 0.25)),
		fric("ɬ", 90, unvoiced(360, 1300, 2650), noise(0.1, 0.25, 0.2, 0)),
		fric("h", 65, unvoiced(500, 1450, 2500), noise(0.35, 0, 0, 0)),
		fric("ɦ", 65, voiced(500, 1450, 2500, 0.3), noise(0.25, 0, 0, 0)),
		fric("ʍ", 70, unvoiced(300, 700, 2300), noise(0.3, 0, 0, 0.05)),

		// Nasals and approximants.
		{sym: "m", dur: 70, tr: mono(nasalT(280, 1000, 2200))},
		{sym: "n", dur: 65, tr: mono(nasalT(280, 1600, 2600))},
		{sym: "ŋ", dur: 75, tr: mono(nasalT(280, 2000, 2600))},
		{sym: "ɲ", dur: 70, tr: mono(nasalT(280, 2200, 2800))},
		{sym: "ɱ", dur: 70, tr: mono(nasalT(280, 1100, 2200))},
		{sym: "ɳ", dur: 65, tr: mono(nasalT(280, 1500, 1900))},
		{sym: "l", dur: 60, tr: mono(voiced(360, 1050, 2650, 0.7))},
		{sym: "ɫ", dur: 65, tr: mono(voiced(380, 900, 2600, 0.7))},
		{sym: "ʎ", dur: 60, tr: mono(voiced(300, 2000, 2800, 0.7))},
		{sym: "ɭ", dur: 60, tr: mono(voiced(380, 1300, 1900, 0.7))},
		{sym: "ɹ", dur: 60, tr: mono(voiced(350, 1150, 1650, 0.7))},
		{sym: "ɻ", dur: 60, tr: mono(voiced(400, 1300, 1700, 0.7))},
		{sym: "j", dur: 50, tr: mono(voiced(280, 2200, 3000, 0.75))},
		{sym: "w", dur: 50, tr: mono(voiced(300, 700, 2300, 0.75))},
		{sym: "ʋ", dur: 55, tr: mono(voiced(330, 1100, 2300, 0.7))},
		{sym: "ɰ", dur: 55, tr: mono(voiced(330, 1250, 2400, 0.7))},
		{sym: "ɥ", dur: 50, tr: mono(voiced(280, 1800, 2200, 0.75))},
	}
	s = append(s, pinyinSpecs()...)
	return s
}

// pinyinSpecs are the tokens of the Mandarin front end that the IPA part
// of the inventory does not already cover. c, g, q, r and y never come out
// of espeak-ng's English, so they take pinyin's meaning (IPA's vowel y is
// left out for it). Shared letters keep their IPA row; the model switches
// the ones pinyin reads differently (see pinyinFinals, pinyinInitials).
func pinyinSpecs() []spec {
	asp := func(sym string, loc target, n [4]float64) spec {
		// Aspirated affricates: a short closure, then a long noisy release.
		return spec{sym: sym, dur: 120, tr: mono(loc), noise: n, closure: 0.35}
	}
	affr := func(sym string, loc target, n [4]float64) spec {
		return spec{sym: sym, dur: 85, tr: mono(loc), noise: n, closure: 0.5}
	}
	tN, tNg := nasalT(280, 1600, 2600), nasalT(280, 2000, 2600)
	tW, tJ := voiced(300, 700, 2300, 0.75), voiced(280, 2200, 3000, 0.75)
	final := func(sym string, tr [3]target) spec { return spec{sym: sym, dur: pinyinFinalMs, tr: tr} }
	// Apical vowels after z c s and zh ch sh r.
	tApical := target{380, 1450, 2500, 1, false}
	tRetroV := target{400, 1350, 1800, 1, false}

	s := []spec{
		// Initials not spelled like an IPA symbol with the same sound.
		stop("g", 75, locVel, false, noise(0.15, 0.5, 0, 0)),
		asp("c", locAlv, noise(0.3, 0, 0.6, 0)),
		asp("q", locPal, noise(0.3, 0.6, 0.1, 0)),
		asp("ch", locRet, noise(0.3, 0.5, 0.1, 0)),
		affr("zh", locRet, noise(0, 0.45, 0.1, 0)),
		fric("sh", 110, unvoiced(380, 1500, 1900), noise(0.1, 0.5, 0, 0)),
		{sym: "r", dur: 65, tr: mono(voiced(380, 1400, 1800, 0.6)), noise: noise(0, 0.08, 0, 0)},
		{sym: "y", dur: 50, tr: mono(tJ)},

		// Finals (vowel nuclei with their glides and nasal codas).
		final("ai", diph(tA, tE)),
		final("ei", diph(tE, tI)),
		final("ao", diph(tAa, tU)),
		final("ou", diph(tO, tU)),
		final("an", diph(tA, tN)),
		final("en", diph(tSch, tN)),
		final("ang", diph(tAa, tNg)),
		final("eng", diph(tSch, tNg)),
		final("ong", diph(tUh, tNg)),
		final("er", mono(tEr)),
		final("ia", glide(tI, tA)),
		final("ie", glide(tI, tEh)),
		final("iao", tri(tI, tAa, tU)),
		final("iu", tri(tI, tO, tU)),
		final("iou", tri(tI, tO, tU)),
		final("ian", tri(tI, tEh, tN)),
		final("in", diph(tI, tN)),
		final("iang", tri(tI, tAa, tNg)),
		final("ing", diph(tI, tNg)),
		final("iong", tri(tI, tUh, tNg)),
		final("ua", glide(tW, tA)),
		final("uo", glide(tW, tO)),
		final("uai", tri(tW, tA, tE)),
		final("ui", tri(tW, tE, tI)),
		final("uei", tri(tW, tE, tI)),
		final("uan", tri(tW, tA, tN)),
		final("un", tri(tW, tSch, tN)),
		final("uen", tri(tW, tSch, tN)),
		final("uang", tri(tW, tAa, tNg)),
		final("ueng", tri(tW, tSch, tNg)),
		final("ue", glide(tY, tEh)),
		final("üe", glide(tY, tEh)),
		final("ve", glide(tY, tEh)),
		final("üan", tri(tY, tEh, tN)),
		final("van", tri(tY, tEh, tN)),
		final("ün", diph(tY, tN)),
		final("vn", diph(tY, tN)),
		final("ü", mono(tY)),
		final("ii", mono(tApical)),
		final("iii", mono(tRetroV)),
		final("io", glide(tI, tO)),
		final("ueh", glide(tY, tEh)),
		final("ng", mono(tNg)),
		final("ê", mono(tEh)),

		// Tones: zero-length marks that set the pitch contour of the
		// syllable before them.
		{sym: "1", tr: mono(tSil), tone: 1},
		{sym: "2", tr: mono(tSil), tone: 2},
		{sym: "3", tr: mono(tSil), tone: 3},
		{sym: "4", tr: mono(tSil), tone: 4},
		{sym: "5", tr: mono(tSil), tone: 5},
	}
	return s
}

// gains returns the peak levels of the first four formants of t: the level
// a cascade of resonators (F1..F3, F4 at 3.3 kHz, F5 at 4.5 kHz) has at each
// formant, times a −5 dB/octave source and radiation slope. It gives vowels
// their natural balance (open vowels loud, /i/ with a weak F2) without
// hand-tuned numbers per phoneme.
func gains(t target, b [3]float64) [4]float64 {
	fs := [5]float64{t.f1, t.f2, t.f3, f4Hz, 4500}
	bs := [5]float64{b[0], b[1], b[2], b4Hz, 300}
	var g [4]float64
	for i := range g {
		f := fs[i]
		h := 1.0
		for j := range fs {
			fj, bj := fs[j], bs[j]
			h *= fj * fj / math.Hypot(fj*fj-f*f, f*bj)
		}
		g[i] = h * math.Pow(500/f, 0.83)
	}
	if t.nasal {
		// The nasal tract's antiresonances take most of the energy above F1.
		g[0] *= 0.8
		g[1] *= 0.2
		g[2] *= 0.2
		g[3] *= 0.2
	}
	return g
}

// Fixed upper formant of every phoneme, scaled by the speaker like the
// others. It gives the voice some presence above F3.
const (
	f4Hz = 3300
	b4Hz = 250
)

// bandwidths returns B1..B3 for a phoneme. They set how wide each formant's
// harmonic bell is; nasals are broader.
func bandwidths(s spec) [3]float64 {
	b := [3]float64{90, 120, 180}
	if s.tr[1].nasal {
		b = [3]float64{120, 200, 250}
	}
	return b
}
