package text

// Dates, clock times and durations for the Mandarin rules.

// zhClock is H:MM or H:MM:SS as written at rs[start:end].
type zhClock struct {
	h, m, s    int // s is -1 when not written
	start, end int
}

// parseClock reads H:MM or H:MM:SS (and a dropped fraction of a second)
// at rs[i], hour of one or two digits, minutes and seconds below 60.
func (z *zhReader) parseClock(i int) (zhClock, bool) {
	c := zhClock{start: i, s: -1}
	j := z.digitsEnd(i)
	if j-i > 2 || !isZhColon(z.at(j)) || !z.twoDigits(j+1) {
		return c, false
	}
	c.h, c.m = atoiRunes(z.rs[i:j]), atoiRunes(z.rs[j+1:j+3])
	k := j + 3
	if isZhColon(z.at(k)) && z.twoDigits(k+1) {
		c.s = atoiRunes(z.rs[k+1 : k+3])
		k += 3
		if isZhDot(z.at(k)) && z.isDigit(k+1) {
			k = z.digitsEnd(k + 1) // 14:30:00.123456: not read
		}
	}
	if c.m > 59 || c.s > 59 || isZhColon(z.at(k)) && z.isDigit(k+1) {
		return c, false
	}
	c.end = k
	return c, true
}

// twoDigits reports whether rs[i:i+2] are digits and rs[i+2] is not.
func (z *zhReader) twoDigits(i int) bool {
	return z.isDigit(i) && z.isDigit(i+1) && !z.isDigit(i+2)
}

// clock reads a time of day or a duration at rs[i], and a second time
// after a dash: 8:00-17:30 → 八点到十七点三十分.
func (z *zhReader) clock(i int) int {
	c, ok := z.parseClock(i)
	if !ok {
		return i
	}
	if z.durationBefore(i) {
		if c.s < 0 {
			c.h, c.m, c.s = 0, c.h, c.m // 剩余05:30 is minutes and seconds
		}
		z.duration(c)
		return c.end
	}
	if c.s >= 0 && c.h == 0 {
		z.duration(c)
		return c.end
	}
	if c.h > 24 {
		return i
	}
	z.timeOfDay(c)
	switch z.at(c.end) {
	case '-', '–', '~', '～', '〜', '至', '到':
		if d, ok := z.parseClock(c.end + 1); ok && d.h <= 24 {
			z.out = append(z.out, '到')
			z.timeOfDay(d)
			return d.end
		}
	}
	return c.end
}

// durationBefore reports whether a word that introduces a duration
// stands before rs[i].
func (z *zhReader) durationBefore(i int) bool {
	q := z.skipFiller(i)
	for _, w := range zhDurationWords {
		if z.endsWith(q, w) {
			return true
		}
	}
	return false
}

// timeOfDay writes 八点零五分, 十二点, 十四点三十分十秒.
func (z *zhReader) timeOfDay(c zhClock) {
	if c.h == 2 {
		z.out = append(z.out, '两')
	} else {
		z.out = appendHanCardinal(z.out, c.h, false)
	}
	z.out = append(z.out, '点')
	switch {
	case c.m == 0 && c.s <= 0:
		return
	case c.m < 10:
		z.out = append(z.out, '零')
		z.out = append(z.out, hanDigits[c.m])
	default:
		z.out = appendHanCardinal(z.out, c.m, false)
	}
	z.out = append(z.out, '分')
	if c.s > 0 {
		z.out = appendHanCardinal(z.out, c.s, false)
		z.out = append(z.out, '秒')
	}
}

// duration writes the parts of c that are not zero: 三分十二秒, 两小时.
func (z *zhReader) duration(c zhClock) {
	wrote := false
	for _, p := range [...]struct {
		v    int
		unit string
	}{{c.h, "小时"}, {c.m, "分"}, {c.s, "秒"}} {
		if p.v <= 0 {
			continue
		}
		if p.v == 2 {
			z.out = append(z.out, '两')
		} else {
			z.out = appendHanCardinal(z.out, p.v, false)
		}
		z.write(p.unit)
		wrote = true
	}
	if !wrote {
		z.write("零秒")
	}
}

// dateTime reads a date written with dashes or slashes, year first,
// and an ISO time after it: 2026-12-01 → 二零二六年十二月一日,
// 2026-04-04T14:30:00.123456+02:00 → 二零二六年四月四日十四点三十分.
// A year and month alone (2026-04) need dashes and a year from 1900 to
// 2199. Dots are left to versions: Home Assistant 2026.4.0 is a release.
func (z *zhReader) dateTime(i int) int {
	j := z.digitsEnd(i)
	sep := z.at(j)
	if j-i != 4 || (sep != '-' && sep != '/') || !z.isDigit(j+1) {
		return i
	}
	year := z.rs[i:j]
	k := z.digitsEnd(j + 1)
	month := atoiRunesLimited(z.rs[j+1 : k])
	if k-j-1 > 2 || month < 1 || month > 12 {
		return i
	}
	day := 0
	if z.at(k) == sep && z.isDigit(k+1) {
		e := z.digitsEnd(k + 1)
		day = atoiRunesLimited(z.rs[k+1 : e])
		if e-k-1 > 2 || day < 1 || day > 31 || (z.at(e) == sep && z.isDigit(e+1)) {
			return i
		}
		k = e
	} else {
		y := atoiRunes(year)
		if sep != '-' || k-j-1 != 2 || y < 1900 || y > 2199 || z.isDigit(k) {
			return i
		}
	}
	z.spell(year, false)
	z.out = append(z.out, '年')
	z.out = appendHanCardinal(z.out, month, false)
	z.out = append(z.out, '月')
	if day == 0 {
		return k
	}
	z.out = appendHanCardinal(z.out, day, false)
	z.out = append(z.out, '日')
	if r := z.at(k); (r == 'T' || r == ' ') && z.isDigit(k+1) {
		if c, ok := z.parseClock(k + 1); ok && c.h <= 24 && c.end-c.start >= 5 {
			z.timeOfDay(c)
			k = z.skipOffset(c.end)
		}
	}
	return k
}

// skipOffset steps over the UTC offset of an ISO time: Z, +02:00, -0500.
func (z *zhReader) skipOffset(k int) int {
	switch r := z.at(k); {
	case r == 'Z' && !isASCIILetterOrDigit(z.at(k+1)):
		return k + 1
	case (r == '+' || r == '-') && z.twoDigits(k+1):
		e := k + 3
		if isZhColon(z.at(e)) && z.twoDigits(e+1) {
			return e + 3
		}
		return e
	case (r == '+' || r == '-') && z.digitsEnd(k+1) == k+5:
		return k + 5
	}
	return k
}

// atoiRunesLimited is atoiRunes for a field that must be short; a long
// one reads as too large.
func atoiRunesLimited(w []rune) int {
	if len(w) > 4 {
		return 1 << 30
	}
	return atoiRunes(w)
}

func isASCIILetterOrDigit(r rune) bool {
	return r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z'
}
