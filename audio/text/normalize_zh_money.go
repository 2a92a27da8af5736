package text

// Amounts of money for the Mandarin rules.

// money reads an amount after its currency sign: ¥35.5 → 三十五点五元,
// $4.99 → 四点九九美元.
func (z *zhReader) money(i int) int {
	name := zhCurrency(z.rs[i])
	if z.rs[i] == '$' {
		for _, p := range zhDollarPrefixes {
			if z.endsWith(i, p.prefix) && !isASCIILetterOrDigit(z.at(i-3)) && z.endsWithOut(p.prefix) {
				z.out = z.out[:len(z.out)-2]
				name = p.name
				break
			}
		}
	}
	k := i + 1
	if z.at(k) == ' ' {
		k++
	}
	n, _ := z.parseNumber(k)
	z.emit(n, zhSuffix{liang: true}, zhPrefixNone)
	j := n.end
	switch z.at(j) {
	case '万', '亿', '千', '百':
		z.out = append(z.out, z.rs[j])
		j++
	}
	z.write(name)
	z.lastNum = j
	return j
}

// zhDollarPrefixes name the dollars other than the US one: HK$ and NT$
// (and US$, which is the plain $).
var zhDollarPrefixes = [...]struct{ prefix, name string }{{"US", "美元"}, {"HK", "港元"}, {"NT", "新台币"}}

// endsWithOut reports whether the output so far ends with the ASCII
// string w.
func (z *zhReader) endsWithOut(w string) bool {
	if len(z.out) < len(w) {
		return false
	}
	return string(z.out[len(z.out)-len(w):]) == w
}

func zhCurrency(r rune) string {
	switch r {
	case '¥', '￥':
		return "元"
	case '$':
		return "美元"
	case '€':
		return "欧元"
	case '£':
		return "英镑"
	}
	return ""
}
