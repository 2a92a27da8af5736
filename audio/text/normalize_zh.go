package text

import (
	"unicode"
	"unicode/utf8"
)

// The Mandarin reading rules. normalizeMandarin writes every number, unit,
// time, date, amount of money and symbol of a line in Han characters, so
// that the pinyin front end has a reading for all of it. It is one pass of
// a scanner over runes: at a digit it reads the longest form that starts
// there (ISO date and time, clock time, dotted version, phone number,
// range, fraction, number with its unit) and decides how to say it from
// the few characters around it. Text without digits and without the
// handful of symbols below comes back untouched.
//
// Choices where Mandarin has more than one reading:
//
//   - 两 and 二. A number that is exactly 2 is 两 before a measure word, a
//     clock hour, a unit of measurement or money (两个, 两点, 两千克,
//     两元, 两小时) and 二 everywhere else: in 十二, 二十, 第二, 二月,
//     二号, 二楼, 二度, 百分之二, after 星期, and when digits are read one
//     by one. A leading 2 before 百, 千, 万 or 亿 is 两 (两百, 两千, 两万),
//     except in ordinals (第二百); a 2 inside a number is 二 (一万二千).
//   - 幺 and 一. Phone numbers (an 11-digit number starting with 1, digits
//     joined by hyphens like 010-12345678, any number after 电话, 手机,
//     号码, 热线, 分机) and room numbers (after 房间, 房号, before 室,
//     房间, 号房) are read digit by digit with 1 as 幺. Other digit strings
//     (years, codes after 验证码, 密码, 编号, numbers with a leading zero,
//     more than nine digits without separators) are read with 一.
//   - Years: four digits before 年, and the year of a date, digit by
//     digit with 零 for 0 (二零二六年). Other numbers before 年 are
//     lengths of time (三年, 十年).
//   - Signs: "-5" is 负五, but 零下 before a temperature (°C, ℃, °F, ℉,
//     °, 度), and "+5" is 正五 or 零上.
//   - ppm and ppb are read like percent, before the number: 百万分之四百,
//     十亿分之五. ‰ is 千分之.
//   - Ranges (5-10, 5~10, 5–10) are 五到十; a unit after the second
//     number is said once, at the end, and decides the first number's
//     sign too (-5~3°C → 零下五到三摄氏度); a percent is said before both.
//   - H:MM:SS with hour 0, and any M:SS or H:MM:SS after 剩余, 还剩,
//     剩下, 计时, 倒计时, 用时, 耗时, 时长 or 持续, is a duration (三分十二秒);
//     any other H:MM is a clock time (八点零五分, 十二点). Seconds are read
//     when not zero; fractions of a second and UTC offsets of an ISO time
//     are dropped.
//   - Dates are written year first with dashes or slashes (2026-12-01,
//     2026/4/4); dotted numbers with three or more parts are versions or
//     addresses (Home Assistant 2026.4.0 is a release, not a date): each
//     part of up to two digits as a number, longer parts digit by digit
//     (二零二六点四点零, 一九二点一六八点一点一).
//   - Money: ¥ and ￥ are 元, $ 美元 (also US$), HK$ 港元, NT$ 新台币,
//     € 欧元, £ 英镑, said after the amount; currency codes after it
//     (CNY, USD, EUR, …) too.
//   - Symbols: & is 和 anywhere; between numbers + is 加, × * x 乘, ÷
//     除以, = 等于, ≈ 约等于, : 比 (when not a time), - ~ 到; before a
//     number ~ and ≈ are 约, < > ≤ ≥ 小于, 大于, 小于等于, 大于等于. # before
//     a number is 号 after it (#3 → 三号). / between two whole numbers is
//     a fraction (1/2 → 二分之一, so 12/25 too), inside a unit or after a
//     number and a Han unit 每 (元/度 → 元每度). Superscripts after a
//     number are powers (10² → 十的平方).
//   - Unit symbols that are also capital letters or English words (A, B,
//     V, W, in, …) are units after a space only where no word follows
//     (3 A股 keeps its A); K is kelvin only where no word follows at all
//     (4K电视 is a resolution).
//
// Every rule writes at most four Han characters for each rune it consumes
// (≤ → 小于等于, ⅞ → 八分之七), so the output stays well within
// MaxExpansion whatever the input. Latin words that are not units after a
// number stay as they are.

// normalizeMandarin rewrites one line for a Mandarin voice.
func normalizeMandarin(line string) string {
	if !hasMandarinRule(line) {
		return line
	}
	z := zhReader{rs: asciiDigits([]rune(line)), lastNum: -1}
	z.out = make([]rune, 0, len(z.rs)*2)
	for i := 0; i < len(z.rs); {
		before := len(z.out)
		j := z.step(i)
		if z.opensTag(before) && !(j == i+1 && z.out[before] == z.rs[i]) {
			// "<&x>" must not become the tag "<和x>" that a second pass would strip
			z.out = append(z.out[:before], append([]rune{' '}, z.out[before:]...)...)
		}
		i = j
	}
	return string(z.out)
}

// opensTag reports whether what was written from out[at] on starts with
// a letter right after "<" or "</": text Normalize would take for a tag.
func (z *zhReader) opensTag(at int) bool {
	if at >= len(z.out) || !unicode.IsLetter(z.out[at]) || at == 0 {
		return false
	}
	p := z.out[at-1]
	if (p == '/' || p == '!' || p == '?') && at >= 2 {
		p = z.out[at-2]
	}
	return p == '<'
}

// hasMandarinRule reports whether any rule can apply to s: every rule
// starts at a digit or at one of these symbols.
func hasMandarinRule(s string) bool {
	for _, r := range s {
		if unicode.IsDigit(r) || zhStandalone(r) != "" || superscriptValue(r) >= 0 || subscriptValue(r) >= 0 || vulgarFraction(r) != "" {
			return true
		}
	}
	return false
}

// asciiDigits maps the decimal digits of every script (fullwidth ones
// included) to ASCII, so the rules below see one kind of digit. Digits
// are always rewritten, so no character the output keeps is changed.
func asciiDigits(rs []rune) []rune {
	for i, r := range rs {
		if r > unicode.MaxASCII && unicode.IsDigit(r) {
			z := r
			for unicode.IsDigit(z - 1) {
				z--
			}
			rs[i] = '0' + (r-z)%10
		}
	}
	return rs
}

// zhReader holds one line while it is read.
type zhReader struct {
	rs  []rune
	out []rune
	// lastNum is the index in rs just past the last number read, for
	// the symbols that are read only between numbers.
	lastNum int
}

func (z *zhReader) at(i int) rune {
	if i < 0 || i >= len(z.rs) {
		return 0
	}
	return z.rs[i]
}

func (z *zhReader) isDigit(i int) bool {
	r := z.at(i)
	return r >= '0' && r <= '9'
}

func (z *zhReader) write(s string) {
	for _, r := range s {
		z.out = append(z.out, r)
	}
}

// afterNumber reports whether rs[i] follows a number, with at most one
// space between.
func (z *zhReader) afterNumber(i int) bool {
	return z.lastNum >= 0 && (z.lastNum == i || (z.lastNum == i-1 && z.at(i-1) == ' '))
}

// beforeNumber reports whether a number follows rs[i], with at most one
// space between.
func (z *zhReader) beforeNumber(i int) bool {
	return z.isDigit(i+1) || (z.at(i+1) == ' ' && z.isDigit(i+2))
}

// step reads what starts at rs[i] and returns the index after it.
func (z *zhReader) step(i int) int {
	r := z.rs[i]
	switch {
	case z.isDigit(i):
		return z.number(i)
	case r == '+' && z.isDigit(i+1):
		if j := z.intlPhone(i); j > i {
			return j
		}
		if z.signAt(i) {
			return z.number(i)
		}
	case isZhMinus(r) && z.isDigit(i+1) && z.signAt(i):
		return z.number(i)
	}
	switch {
	case zhCurrency(r) != "" && z.beforeNumber(i):
		return z.money(i)
	case r == '#' && z.isDigit(i+1):
		j := z.number(i + 1)
		z.out = append(z.out, '号')
		return j
	}
	if between := zhBetweenNumbers(r); between != "" && z.afterNumber(i) && z.beforeNumber(i) {
		if r != 'x' || (z.lastNum == i && z.isDigit(i+1)) { // 1920x1080, not "2 x faster"
			z.write(between)
			return i + 1
		}
	}
	if r == '/' && z.perAt(i) {
		z.out = append(z.out, '每') // 12.5元/度 → 十二点五元每度
		return i + 1
	}
	if before := zhBeforeNumber(r); before != "" && z.beforeNumber(i) {
		z.write(before)
		return i + 1
	}
	if s := zhStandalone(r); s != "" {
		z.write(s)
		return i + 1
	}
	if v := superscriptValue(r); v >= 0 {
		return z.power(i)
	}
	if v := subscriptValue(r); v >= 0 {
		z.out = append(z.out, hanDigits[v])
		return i + 1
	}
	if f := vulgarFraction(r); f != "" {
		z.write(f)
		return i + 1
	}
	z.out = append(z.out, r)
	return i + 1
}

// signAt reports whether the minus or plus at rs[i] is a sign, not a
// hyphen inside a word or code ("Wi-Fi-6", "COVID-19").
func (z *zhReader) signAt(i int) bool {
	if z.afterNumber(i) {
		return false
	}
	p := z.at(i - 1)
	return !(p < utf8.RuneSelf && (unicode.IsLetter(p) || unicode.IsDigit(p) || p == ')' || p == '.' || p == '_' || p == '/'))
}

// perAt reports whether the slash at rs[i] is 每: after a number or a
// number and one Han unit, before a Han unit.
func (z *zhReader) perAt(i int) bool {
	if z.lastNum < 0 || !unicode.Is(unicode.Han, z.at(i+1)) {
		return false
	}
	return z.lastNum == i || (z.lastNum == i-1 && unicode.Is(unicode.Han, z.at(i-1)))
}

func isZhMinus(r rune) bool { return r == '-' || r == '−' || r == '－' }

// power reads a run of superscript digits as an exponent: 10² → 十的平方,
// 10⁶ → 十的六次方; a run of more than four is read digit by digit.
func (z *zhReader) power(i int) int {
	j := i
	for j < len(z.rs) && superscriptValue(z.rs[j]) >= 0 {
		j++
	}
	digits := make([]rune, 0, j-i)
	for _, r := range z.rs[i:j] {
		digits = append(digits, '0'+rune(superscriptValue(r)))
	}
	switch string(digits) {
	case "2":
		z.write("的平方")
	case "3":
		z.write("的立方")
	default:
		z.write("的")
		if len(digits) > 4 {
			z.spell(digits, false)
		} else {
			z.cardinal(digits, false, false)
		}
		z.write("次方")
	}
	return j
}

func superscriptValue(r rune) int {
	switch r {
	case '⁰':
		return 0
	case '¹':
		return 1
	case '²':
		return 2
	case '³':
		return 3
	}
	if r >= '⁴' && r <= '⁹' {
		return int(r-'⁴') + 4
	}
	return -1
}

func subscriptValue(r rune) int {
	if r >= '₀' && r <= '₉' {
		return int(r - '₀')
	}
	return -1
}
