package text

import "strings"

// The English number speller: cardinals, ordinals, digit strings, years
// and the paired reading of room and flight numbers. Every function takes
// ASCII digits as a string, so that a number of any length can be read
// without overflow: groups of three beyond the trillions, and integers of
// more than enMaxCardinalDigits digits, are read digit by digit.

// enMaxCardinalDigits is the longest integer read as a cardinal ("999
// trillion ..."); longer ones are read digit by digit.
const enMaxCardinalDigits = 15

var (
	enOnes = [...]string{"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
		"ten", "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"}
	enTens   = [...]string{"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"}
	enScales = [...]string{"", "thousand", "million", "billion", "trillion"}
)

// cardinalWords reads an integer: "1234" is "one thousand two hundred
// thirty-four". Leading zeros are ignored; "" reads as zero.
func cardinalWords(digits string) string {
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "zero"
	}
	if len(digits) > enMaxCardinalDigits {
		return spellDigits(digits, "zero")
	}
	var b strings.Builder
	groups := (len(digits) + 2) / 3
	first := len(digits) - (groups-1)*3
	for g := 0; g < groups; g++ {
		lo := 0
		if g > 0 {
			lo = first + (g-1)*3
		}
		hi := first + g*3
		n := enAtoi(digits[lo:hi])
		if n == 0 {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		writeUnder1000(&b, n)
		if scale := enScales[groups-1-g]; scale != "" {
			b.WriteByte(' ')
			b.WriteString(scale)
		}
	}
	return b.String()
}

// writeUnder1000 writes 1 ≤ n ≤ 999 in words, American style (no "and").
func writeUnder1000(b *strings.Builder, n int) {
	if n >= 100 {
		b.WriteString(enOnes[n/100])
		b.WriteString(" hundred")
		n %= 100
		if n == 0 {
			return
		}
		b.WriteByte(' ')
	}
	writeUnder100(b, n)
}

// writeUnder100 writes 0 ≤ n ≤ 99: "twenty-one".
func writeUnder100(b *strings.Builder, n int) {
	if n < 20 {
		b.WriteString(enOnes[n])
		return
	}
	b.WriteString(enTens[n/10])
	if n%10 != 0 {
		b.WriteByte('-')
		b.WriteString(enOnes[n%10])
	}
}

func under100Words(n int) string {
	var b strings.Builder
	writeUnder100(&b, n)
	return b.String()
}

// ordinalWords reads an integer as an ordinal: "21" is "twenty-first".
func ordinalWords(digits string) string {
	return ordinalOf(cardinalWords(digits))
}

// ordinalOf turns the last word of a cardinal into its ordinal.
func ordinalOf(cardinal string) string {
	cut := strings.LastIndexAny(cardinal, " -") + 1
	head, last := cardinal[:cut], cardinal[cut:]
	switch last {
	case "one":
		last = "first"
	case "two":
		last = "second"
	case "three":
		last = "third"
	case "five":
		last = "fifth"
	case "eight":
		last = "eighth"
	case "nine":
		last = "ninth"
	case "twelve":
		last = "twelfth"
	default:
		if strings.HasSuffix(last, "y") {
			last = last[:len(last)-1] + "ieth"
		} else {
			last += "th"
		}
	}
	return head + last
}

// pluralOf turns the last word of a number into its plural, for decades:
// "nineteen ninety" becomes "nineteen nineties".
func pluralOf(words string) string {
	if strings.HasSuffix(words, "y") {
		return words[:len(words)-1] + "ies"
	}
	if strings.HasSuffix(words, "x") {
		return words + "es"
	}
	return words + "s"
}

// spellDigits reads each digit on its own, zero as the given word ("zero"
// in codes and phone numbers, "oh" in times and versions).
func spellDigits(digits, zero string) string {
	var b strings.Builder
	b.Grow(len(digits) * 5)
	for i := 0; i < len(digits); i++ {
		if i > 0 {
			b.WriteByte(' ')
		}
		if digits[i] == '0' {
			b.WriteString(zero)
		} else {
			b.WriteString(enOnes[digits[i]-'0'])
		}
	}
	return b.String()
}

// yearWords reads a year of up to four digits as people say it: 2026 is
// "twenty twenty-six", 1905 "nineteen oh five", 1900 "nineteen hundred",
// 2000 "two thousand" and 2005 "two thousand five".
func yearWords(digits string) string {
	digits = strings.TrimLeft(digits, "0")
	if len(digits) != 4 {
		return cardinalWords(digits)
	}
	n := enAtoi(digits)
	hi, lo := n/100, n%100
	switch {
	case n%1000 < 10 && hi%10 == 0:
		return cardinalWords(digits)
	case lo == 0:
		return under100Words(hi) + " hundred"
	case lo < 10:
		return under100Words(hi) + " oh " + enOnes[lo]
	}
	return under100Words(hi) + " " + under100Words(lo)
}

// pairWords reads a three- or four-digit number as a room, flight or
// video mode is read: 101 is "one oh one", 1204 "twelve oh four", 1080
// "ten eighty". Other lengths are read as cardinals.
func pairWords(digits string) string {
	switch {
	case len(digits) == 4 && digits[0] != '0':
		return yearWords(digits)
	case len(digits) == 3 && digits[0] != '0':
		lo := enAtoi(digits[1:])
		switch {
		case lo == 0:
			return cardinalWords(digits)
		case lo < 10:
			return enOnes[digits[0]-'0'] + " oh " + enOnes[lo]
		}
		return enOnes[digits[0]-'0'] + " " + under100Words(lo)
	}
	return cardinalWords(digits)
}

// decimalWords reads "21" and "5" as "twenty-one point five"; the digits
// after the point are read one by one.
func decimalWords(intDigits, frac string) string {
	return cardinalWords(intDigits) + " point " + spellDigits(frac, "zero")
}

// enAtoi converts a short ASCII digit string; callers bound the length.
func enAtoi(s string) int {
	n := 0
	for i := 0; i < len(s) && i < 18; i++ {
		n = n*10 + int(s[i]-'0')
	}
	return n
}
