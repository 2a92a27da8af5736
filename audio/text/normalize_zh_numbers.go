package text

// Numbers for the Mandarin rules: how a number is written (zhNumber), what
// stands before it (zhPrefix) and after it (zhSuffix), and how the three
// together are said.

import "unicode/utf8"

// zhNumber is a number as written at rs[start:end].
type zhNumber struct {
	start, end int
	sign       rune   // 0, '-' or '+'
	whole      []rune // ASCII digits, thousands separators dropped
	grouped    bool   // written with thousands separators: 1,234
	frac       []rune // digits after the decimal point; nil when none
	vulgar     string // a vulgar fraction after the whole part: 1½
}

func (n zhNumber) isInteger() bool { return n.frac == nil && n.vulgar == "" }

// isTwo reports whether n is exactly 2, the number said 两 or 二.
func (n zhNumber) isTwo() bool { return n.isInteger() && len(n.whole) == 1 && n.whole[0] == '2' }

func (z *zhReader) digitsEnd(i int) int {
	for z.isDigit(i) {
		i++
	}
	return i
}

// parseNumber reads a number with an optional sign at rs[i].
func (z *zhReader) parseNumber(i int) (zhNumber, bool) {
	n := zhNumber{start: i}
	if r := z.at(i); isZhMinus(r) || r == '+' {
		n.sign = '+'
		if r != '+' {
			n.sign = '-'
		}
		i++
	}
	if !z.isDigit(i) {
		return n, false
	}
	j := z.digitsEnd(i)
	n.whole = z.rs[i:j]
	if j-i <= 3 && z.groupAt(j) {
		whole := append(make([]rune, 0, 16), n.whole...)
		for z.groupAt(j) {
			whole = append(whole, z.rs[j+1:j+4]...)
			j += 4
		}
		n.whole, n.grouped = whole, true
	}
	if isZhDot(z.at(j)) && z.isDigit(j+1) {
		k := z.digitsEnd(j + 1)
		n.frac = z.rs[j+1 : k]
		j = k
	} else if f := vulgarFraction(z.at(j)); f != "" {
		n.vulgar = f
		j++
	}
	n.end = j
	return n, true
}

// groupAt reports whether rs[j] is a thousands separator: a comma and
// exactly three digits.
func (z *zhReader) groupAt(j int) bool {
	return z.at(j) == ',' && z.isDigit(j+1) && z.isDigit(j+2) && z.isDigit(j+3) && !z.isDigit(j+4)
}

func isZhDot(r rune) bool   { return r == '.' || r == '．' }
func isZhColon(r rune) bool { return r == ':' || r == '：' }

// number reads the number that starts at rs[i] (a digit or a sign) with
// whatever belongs to it, and returns the index after all of it.
func (z *zhReader) number(i int) int {
	j := i
	if z.isDigit(i) {
		if j = z.dateTime(i); j == i {
			if j = z.clock(i); j == i {
				if j = z.dotted(i); j == i {
					j = z.phone(i)
				}
			}
		}
	}
	if j > i {
		z.lastNum = j
		return j
	}
	n, _ := z.parseNumber(i)
	if j = z.rangeFrom(n); j == n.start {
		if j = z.fraction(n); j == n.start {
			s := z.suffix(n)
			z.emit(n, s, z.prefix(n.start))
			j = z.finish(s)
		}
	}
	z.lastNum = j
	return j
}

// rangeFrom reads n and a second number after a dash, tilde, 至 or 到:
// 5-10 → 五到十, -5~3°C → 零下五到三摄氏度.
func (z *zhReader) rangeFrom(n zhNumber) int {
	sep := z.at(n.end)
	switch sep {
	case '-', '–', '—', '~', '～', '〜', '至', '到':
	default:
		return n.start
	}
	m, ok := z.parseNumber(n.end + 1)
	if !ok || (m.sign != 0 && sep == '-') {
		return n.start
	}
	s := z.suffix(m)
	if s.kind == sufYear && len(n.whole) != 4 {
		s.kind = sufNone
	}
	z.emit(n, s, z.prefix(n.start))
	if sep == '至' || sep == '到' {
		z.out = append(z.out, sep)
	} else {
		z.out = append(z.out, '到')
	}
	z.emit(m, s, zhPrefixNone)
	return z.finish(s)
}

// fraction reads n/d for whole numbers: 1/2 → 二分之一.
func (z *zhReader) fraction(n zhNumber) int {
	if z.at(n.end) != '/' || !n.isInteger() || n.grouped || !z.isDigit(n.end+1) {
		return n.start
	}
	k := z.digitsEnd(n.end + 1)
	if z.at(k) == '/' || isZhDot(z.at(k)) {
		return n.start // a date or a decimal: leave the slash
	}
	z.writeSign(n.sign, false)
	z.cardinal(z.rs[n.end+1:k], false, false)
	z.write("分之")
	z.cardinal(n.whole, false, false)
	return k
}

// zhPrefix is what the characters before a number say about it.
type zhPrefix int

const (
	zhPrefixNone    zhPrefix = iota
	zhPrefixOrdinal          // 第: 第二, 第二百
	zhPrefixMinute           // after 8点: 八点零五分, 八点二分
	zhPrefixWeekday          // 星期1 → 星期一, 周7 → 周日
	zhPrefixPhone            // 电话, 手机, 房间…: digit by digit, 幺
	zhPrefixCode             // 验证码, 编号…: digit by digit, 一
)

func (z *zhReader) prefix(start int) zhPrefix {
	switch {
	case z.at(start-1) == '第':
		return zhPrefixOrdinal
	case z.at(start-1) == '点' && z.isDigit(start-2):
		return zhPrefixMinute
	case z.endsWith(start, "星期") || z.endsWith(start, "礼拜") || z.at(start-1) == '周':
		return zhPrefixWeekday
	}
	q := z.skipFiller(start)
	for _, w := range zhPhoneWords {
		if z.endsWith(q, w) {
			return zhPrefixPhone
		}
	}
	for _, w := range zhCodeWords {
		if z.endsWith(q, w) {
			return zhPrefixCode
		}
	}
	return zhPrefixNone
}

// skipFiller steps back over at most two of the characters that may
// stand between a keyword and its number: "电话是 138…", "验证码：1234".
func (z *zhReader) skipFiller(i int) int {
	for k := 0; k < 2 && i > 0; k++ {
		switch z.rs[i-1] {
		case ' ', ':', '：', '是', '为':
			i--
			continue
		}
		break
	}
	return i
}

// endsWith reports whether rs[:i] ends with w.
func (z *zhReader) endsWith(i int, w string) bool {
	for k := len(w); k > 0; {
		r, size := utf8.DecodeLastRuneInString(w[:k])
		i--
		if i < 0 || z.rs[i] != r {
			return false
		}
		k -= size
	}
	return true
}

// zhSuffixKind is what follows a number.
type zhSuffixKind int

const (
	sufNone    zhSuffixKind = iota
	sufMeasure              // a measure word or 点: 2 is 两
	sufYear                 // 年 after four digits: digit by digit
	sufRoom                 // 室, 房间, 号房 after three digits or more: 幺
	sufUnit                 // a unit symbol, its name said after the number
	sufBefore               // %, ‰, ppm, ppb: said before the number
)

// zhSuffix is what follows a number and how it changes the reading.
type zhSuffix struct {
	kind  zhSuffixKind
	name  string // the unit's reading, for sufUnit and sufBefore
	liang bool   // a 2 is 两
	temp  bool   // a temperature: signs are 零下 and 零上
	end   int    // index after what the suffix replaces; the number's end if it replaces nothing
}

func (z *zhReader) suffix(n zhNumber) zhSuffix {
	j := n.end
	k := j
	if z.at(k) == ' ' {
		k++
	}
	switch z.at(k) {
	case '%', '％':
		return zhSuffix{kind: sufBefore, name: "百分之", end: k + 1}
	case '‰':
		return zhSuffix{kind: sufBefore, name: "千分之", end: k + 1}
	}
	if u, e, ok := matchZhUnit(z.rs, k, k > j); ok {
		if u.before {
			return zhSuffix{kind: sufBefore, name: u.name, end: e}
		}
		return zhSuffix{kind: sufUnit, name: u.name, liang: !u.temp, temp: u.temp, end: e}
	}
	s := zhSuffix{end: j}
	r := z.at(k)
	switch {
	case r == '年' && len(n.whole) == 4 && n.isInteger() && n.sign == 0 && !n.grouped:
		s.kind = sufYear
	case r == '度':
		s.temp = true
	case isZhMeasure(r, z.at(k+1)):
		s.kind, s.liang = sufMeasure, true
	case (r == '室' || r == '房' || (r == '号' && z.at(k+1) == '房')) && len(n.whole) >= 3 && n.isInteger() && n.sign == 0:
		s.kind = sufRoom
	}
	return s
}

// finish writes a unit's name after its number and returns the index
// after the suffix.
func (z *zhReader) finish(s zhSuffix) int {
	if s.kind == sufUnit {
		z.write(s.name)
	}
	return s.end
}

// emit writes n as said before s and after pre; a unit's name is left
// to finish.
func (z *zhReader) emit(n zhNumber, s zhSuffix, pre zhPrefix) {
	if !(n.sign == '-' && s.temp && z.endsWith(n.start, "零下")) { // 零下-5°C
		z.writeSign(n.sign, s.temp)
	}
	if s.kind == sufBefore {
		z.write(s.name)
	}
	w := n.whole
	if n.isInteger() && !n.grouped {
		switch {
		case pre == zhPrefixWeekday && len(w) == 1 && w[0] >= '1' && w[0] <= '7' && s.kind != sufMeasure:
			if w[0] == '7' {
				z.out = append(z.out, '日')
			} else {
				z.out = append(z.out, hanDigits[w[0]-'0'])
			}
			return
		case pre == zhPrefixPhone || s.kind == sufRoom || (len(w) == 11 && w[0] == '1'):
			z.spell(w, true)
			return
		case pre == zhPrefixCode || s.kind == sufYear:
			z.spell(w, false)
			return
		}
	}
	if s.liang && n.isTwo() && pre != zhPrefixOrdinal && pre != zhPrefixMinute {
		z.out = append(z.out, '两')
	} else {
		z.cardinal(w, n.grouped, pre != zhPrefixOrdinal)
	}
	if n.frac != nil {
		z.out = append(z.out, '点')
		z.spell(n.frac, false)
	}
	if n.vulgar != "" {
		z.out = append(z.out, '又')
		z.write(n.vulgar)
	}
}

func (z *zhReader) writeSign(sign rune, temp bool) {
	switch {
	case sign == '-' && temp:
		z.write("零下")
	case sign == '-':
		z.out = append(z.out, '负')
	case sign == '+' && temp:
		z.write("零上")
	case sign == '+':
		z.out = append(z.out, '正')
	}
}

// cardinal writes a whole number as a cardinal; one with a leading zero,
// or longer than nine digits (sixteen with thousands separators), is a
// code and read digit by digit.
func (z *zhReader) cardinal(w []rune, grouped, liang bool) {
	limit := 9
	if grouped {
		limit = 16
	}
	if len(w) > limit || (len(w) > 1 && w[0] == '0') {
		z.spell(w, false)
		return
	}
	z.out = appendHanCardinal(z.out, atoiRunes(w), liang)
}

// spell writes digits one by one, 1 as 幺 when yao is set.
func (z *zhReader) spell(w []rune, yao bool) {
	for _, r := range w {
		if r == '1' && yao {
			z.out = append(z.out, '幺')
		} else {
			z.out = append(z.out, hanDigits[r-'0'])
		}
	}
}

// atoiRunes is the value of up to 16 ASCII digits.
func atoiRunes(w []rune) int {
	n := 0
	for _, r := range w {
		n = n*10 + int(r-'0')
	}
	return n
}

// dotted reads numbers of three or more parts joined by dots, versions
// and addresses: 1.2.3 → 一点二点三.
func (z *zhReader) dotted(i int) int {
	j, parts := z.digitsEnd(i), 1
	for isZhDot(z.at(j)) && z.isDigit(j+1) {
		j = z.digitsEnd(j + 1)
		parts++
	}
	if parts < 3 {
		return i
	}
	for k := i; k < j; {
		e := z.digitsEnd(k)
		if e-k <= 2 {
			z.cardinal(z.rs[k:e], false, false)
		} else {
			z.spell(z.rs[k:e], false)
		}
		if e < j {
			z.out = append(z.out, '点')
		}
		k = e + 1
	}
	return j
}

// phone reads digit groups joined by hyphens as a phone number, digit by
// digit with 幺: 010-12345678, 138-1234-5678, 400-820-8820. Two groups
// are a phone number only with a leading zero or nine digits in all;
// otherwise they are a range.
func (z *zhReader) phone(i int) int {
	j, groups, digits, zero := i, 0, 0, false
	for {
		e := z.digitsEnd(j)
		groups++
		digits += e - j
		zero = zero || (e-j > 1 && z.rs[j] == '0')
		j = e
		if z.at(j) != '-' || !z.isDigit(j+1) {
			break
		}
		j++
	}
	if groups < 2 || (groups == 2 && !zero && digits < 9) || (groups > 2 && digits < 7) {
		return i
	}
	for k := i; k < j; k++ {
		if z.isDigit(k) {
			z.spell(z.rs[k:k+1], true)
		}
	}
	return j
}

// intlPhone reads a phone number with its country code, digit by digit
// with 幺: +86 138 1234 5678 → 加八六幺三八幺二三四五六七八. Groups are
// joined by single spaces or hyphens, seven digits at least after the
// code. It returns i, writing nothing, when rs[i:] is not one.
func (z *zhReader) intlPhone(i int) int {
	e := z.digitsEnd(i + 1)
	if e-i-1 > 3 {
		return i
	}
	j, digits := e, 0
	for (z.at(j) == ' ' || z.at(j) == '-') && z.isDigit(j+1) {
		k := z.digitsEnd(j + 1)
		digits += k - j - 1
		j = k
	}
	if digits < 7 {
		return i
	}
	z.out = append(z.out, '加')
	for k := i + 1; k < j; k++ {
		if z.isDigit(k) {
			z.spell(z.rs[k:k+1], true)
		}
	}
	z.lastNum = j
	return j
}
