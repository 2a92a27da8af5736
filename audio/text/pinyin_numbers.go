package text

// Numbers inside Mandarin text are rewritten into Han numerals before the
// pinyin lookup, so that "3个" is read 三个 and not skipped. Normalize's
// Mandarin rules (normalize_zh.go) read numbers in full before that; this
// is the reading left for text that skipped Normalize, and the cardinal
// reader both share.

var hanDigits = []rune("零一二三四五六七八九")

// pinyinCardinalDigits is the longest digit run the pinyin front end reads
// as a cardinal number; longer runs (phone numbers, codes) are read digit
// by digit. Normalize decides this by context instead.
const pinyinCardinalDigits = 4

// maxHanCardinal is the largest number appendCardinal reads: 16 digits,
// up to 九千九百九十九万亿…, which still fits an int.
const maxHanCardinal = 1e16 - 1

func hanDigitValue(r rune) (int, bool) {
	switch {
	case r >= '0' && r <= '9':
		return int(r - '0'), true
	case r >= '０' && r <= '９':
		return int(r - '０'), true
	}
	return 0, false
}

// spellNumbers returns rs with every run of digits replaced by Han numerals.
func spellNumbers(rs []rune) []rune {
	out := make([]rune, 0, len(rs))
	for i := 0; i < len(rs); {
		if _, ok := hanDigitValue(rs[i]); !ok {
			out = append(out, rs[i])
			i++
			continue
		}
		intEnd := digitRunEnd(rs, i)
		end := intEnd
		fracStart := -1
		if intEnd+1 < len(rs) && (rs[intEnd] == '.' || rs[intEnd] == '．') {
			if _, ok := hanDigitValue(rs[intEnd+1]); ok {
				fracStart = intEnd + 1
				end = digitRunEnd(rs, fracStart)
			}
		}
		percent := end < len(rs) && (rs[end] == '%' || rs[end] == '％')
		if percent {
			out = append(out, []rune("百分之")...)
		}
		out = appendInteger(out, rs[i:intEnd])
		if fracStart >= 0 {
			out = append(out, '点')
			out = appendDigits(out, rs[fracStart:end])
		}
		i = end
		if percent {
			i++
		}
	}
	return out
}

func digitRunEnd(rs []rune, i int) int {
	for i < len(rs) {
		if _, ok := hanDigitValue(rs[i]); !ok {
			break
		}
		i++
	}
	return i
}

func appendDigits(out, digits []rune) []rune {
	for _, r := range digits {
		d, _ := hanDigitValue(r)
		out = append(out, hanDigits[d])
	}
	return out
}

// appendInteger appends a whole number: a cardinal when it has at most
// pinyinCardinalDigits digits and no leading zero, digit by digit otherwise.
func appendInteger(out, digits []rune) []rune {
	if len(digits) > pinyinCardinalDigits || (len(digits) > 1 && (digits[0] == '0' || digits[0] == '０')) {
		return appendDigits(out, digits)
	}
	n := 0
	for _, r := range digits {
		d, _ := hanDigitValue(r)
		n = n*10 + d
	}
	return appendCardinal(out, n)
}

// appendCardinal appends 0 <= n <= maxHanCardinal the way it is said,
// grouped in 万 and 亿: 10 → 十, 15 → 十五, 105 → 一百零五, 1010 →
// 一千零一十, 100001 → 十万零一, 2000 → 两千, 20000 → 两万. A leading 2
// before 百, 千, 万 or 亿 is 两; every other 2 is 二 (二十, 一万二千).
// Larger n are clamped.
func appendCardinal(out []rune, n int) []rune {
	return appendHanCardinal(out, n, true)
}

// appendHanCardinal is appendCardinal with the leading 两 as a choice:
// ordinals and digits of dates say 第二百, not 第两百.
func appendHanCardinal(out []rune, n int, liang bool) []rune {
	switch {
	case n <= 0:
		return append(out, '零')
	case n > maxHanCardinal:
		n = maxHanCardinal
	}
	return appendGrouped(out, n, liang, true)
}

// appendGrouped appends n > 0 in groups of four digits. lead says n starts
// the number: only there is 一十 said 十 and a 2 said 两.
func appendGrouped(out []rune, n int, liang, lead bool) []rune {
	for _, g := range [...]struct {
		size int
		name rune
	}{{1e8, '亿'}, {1e4, '万'}} {
		if n < g.size {
			continue
		}
		high, rest := n/g.size, n%g.size
		if liang && lead && high == 2 {
			out = append(out, '两')
		} else {
			out = appendGrouped(out, high, liang, lead)
		}
		out = append(out, g.name)
		if rest == 0 {
			return out
		}
		if rest < g.size/10 {
			out = append(out, '零') // 一万零五, 一亿零五十万
		}
		return appendGrouped(out, rest, false, false)
	}
	return appendSection(out, n, liang, lead)
}

// appendSection appends 0 < n <= 9999.
func appendSection(out []rune, n int, liang, lead bool) []rune {
	units := [...]struct {
		value int
		name  rune
	}{{1000, '千'}, {100, '百'}, {10, '十'}, {1, 0}}
	started, gap := false, false
	for _, u := range units {
		d := n / u.value % 10
		if d == 0 {
			gap = started
			continue
		}
		if gap {
			out = append(out, '零')
			gap = false
		}
		switch {
		case u.value == 10 && d == 1 && !started && lead:
			// 十五, not 一十五, when the number starts with the tens
		case d == 2 && !started && lead && liang && u.value >= 100:
			out = append(out, '两')
		default:
			out = append(out, hanDigits[d])
		}
		if u.name != 0 {
			out = append(out, u.name)
		}
		started = true
	}
	return out
}
