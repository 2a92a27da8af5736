package text

// Numbers inside Mandarin text are rewritten into Han numerals before the
// pinyin lookup, so that "3个" is read 三个 and not skipped.

var hanDigits = []rune("零一二三四五六七八九")

// maxCardinalDigits is the longest digit run read as a cardinal number;
// longer runs (phone numbers, codes) are read digit by digit.
const maxCardinalDigits = 4

func digitValue(r rune) (int, bool) {
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
		if _, ok := digitValue(rs[i]); !ok {
			out = append(out, rs[i])
			i++
			continue
		}
		intEnd := digitRunEnd(rs, i)
		end := intEnd
		fracStart := -1
		if intEnd+1 < len(rs) && (rs[intEnd] == '.' || rs[intEnd] == '．') {
			if _, ok := digitValue(rs[intEnd+1]); ok {
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
		if _, ok := digitValue(rs[i]); !ok {
			break
		}
		i++
	}
	return i
}

func appendDigits(out, digits []rune) []rune {
	for _, r := range digits {
		d, _ := digitValue(r)
		out = append(out, hanDigits[d])
	}
	return out
}

// appendInteger appends a whole number: a cardinal when it has at most four
// digits and no leading zero, digit by digit otherwise.
func appendInteger(out, digits []rune) []rune {
	if len(digits) > maxCardinalDigits || (len(digits) > 1 && (digits[0] == '0' || digits[0] == '０')) {
		return appendDigits(out, digits)
	}
	n := 0
	for _, r := range digits {
		d, _ := digitValue(r)
		n = n*10 + d
	}
	return appendCardinal(out, n)
}

// appendCardinal appends 0 <= n <= 9999 the way it is said: 10 → 十,
// 15 → 十五, 105 → 一百零五, 2000 → 两千, 1010 → 一千零一十.
func appendCardinal(out []rune, n int) []rune {
	if n == 0 {
		return append(out, '零')
	}
	units := []struct {
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
		case u.value == 10 && d == 1 && !started:
			// 十五, not 一十五, when the number starts with the tens
		case d == 2 && !started && u.value >= 100:
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
