package text

import "strings"

// Money: a currency sign before the amount ("$4.99", "€1,200", "$1.2M")
// or after it ("4,99 €", "50¢", "100 USD"), read in full ("four dollars
// and ninety-nine cents"), with a price per unit ("0,30 €/kWh").

// enCurrency names an amount of money and its hundredth.
type enCurrency struct{ one, many, centOne, centMany string }

var enCurrencies = map[rune]enCurrency{
	'$': {"dollar", "dollars", "cent", "cents"},
	'€': {"euro", "euros", "cent", "cents"},
	'£': {"pound", "pounds", "penny", "pence"},
	'¥': {"yen", "yen", "", ""}, '￥': {"yen", "yen", "", ""},
	'₹': {"rupee", "rupees", "paisa", "paise"},
	'₩': {"won", "won", "", ""},
	'₽': {"ruble", "rubles", "kopeck", "kopecks"},
	'¢': {"cent", "cents", "", ""},
}

var enCurrencyCodes = map[string]rune{"USD": '$', "EUR": '€', "GBP": '£', "JPY": '¥', "INR": '₹'}

func isEnCurrency(c rune) bool {
	_, ok := enCurrencies[c]
	return ok
}

// currencyAfter finds a currency sign or code after an amount that ends
// before token end ("4.99 €", "50¢", "100 USD") and returns it with the
// token past it (0 when there is none).
func (r *enReader) currencyAfter(end int) (enCurrency, int) {
	t := end
	if r.kind(t) == tokSpace {
		t++
	}
	switch r.kind(t) {
	case tokSym:
		if c, ok := enCurrencies[r.first(t)]; ok && !r.isNum(t+1) {
			return c, t + 1
		}
	case tokWord:
		if c, ok := enCurrencyCodes[r.str(t)]; ok {
			return enCurrencies[c], t + 1
		}
	}
	return enCurrency{}, 0
}

// readMoney reads a currency sign before an amount: "$4.99", "€1,200",
// "$1.2M", "$5 million".
func (r *enReader) readMoney(k int) int {
	cur := enCurrencies[r.first(k)]
	if !r.isNum(k + 1) {
		return 0
	}
	a := r.parseAmount(k+1, true)
	end := a.end
	scale := ""
	if r.kind(end) == tokWord {
		if scale = scaleWord(r.str(end), true); scale != "" {
			end++
		}
	} else if r.kind(end) == tokSpace {
		switch w := r.lower(end + 1); w {
		case "thousand", "million", "billion", "trillion":
			scale = w
			end += 2
		}
	}
	r.write(moneyWords(a, cur, scale))
	end = r.perUnit(end)
	r.qEnd = end
	if r.kind(end) == tokWord || r.kind(end) == tokNum {
		r.write(" ")
	}
	return end - k
}

// perUnit reads "/kWh" after an amount of money as "per kilowatt hour"
// and returns the token past what it read.
func (r *enReader) perUnit(end int) int {
	if r.sym(end, '/') {
		if u, e, ok := matchUnit(r.rs, r.runeAt(end+1)); ok {
			if t := r.tokAt(end+1, e); t > 0 {
				r.write(" per " + u.name.one)
				return t
			}
		}
	}
	return end
}

// moneyWords reads an amount of money: "four dollars and ninety-nine
// cents", "fifty cents", "one point two million dollars", "five hundred
// yen".
func moneyWords(a enAmount, c enCurrency, scale string) string {
	unit := func(one bool) string {
		if one {
			return c.one
		}
		return c.many
	}
	switch {
	case scale != "":
		return a.words() + " " + scale + " " + c.many
	case !a.point:
		return cardinalWords(a.digits) + " " + unit(a.one())
	case c.centMany == "" || len(a.frac) > 2:
		return a.words() + " " + c.many
	}
	cents := a.frac
	if len(cents) == 1 {
		cents += "0"
	}
	whole := strings.TrimLeft(a.digits, "0")
	centWords := cardinalWords(cents) + " " + c.centMany
	if cents == "01" {
		centWords = "one " + c.centOne
	}
	switch {
	case whole == "" && cents == "00":
		return "zero " + c.many
	case whole == "":
		return centWords
	case cents == "00":
		return cardinalWords(whole) + " " + unit(whole == "1")
	}
	return cardinalWords(whole) + " " + unit(whole == "1") + " and " + centWords
}
