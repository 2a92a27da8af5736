package text

import (
	"strings"
	"unicode"
)

// Units, measure words, keywords and symbols of the Mandarin rules.

// zhUnits are the unit symbols Home Assistant writes after a number
// (homeassistant/const.py: the UnitOf* enums, CONCENTRATION_*, LIGHT_LUX,
// SIGNAL_STRENGTH_*, REVOLUTIONS_PER_MINUTE, UV_INDEX, DEGREE; "%" is read
// in suffix), a few ASCII spellings of them ("m2", "kph", "Mbps"), and
// currency codes. Both micro signs are matched, see zhUnitsByFirst.
var zhUnits = map[string]string{
	// UnitOfTemperature, DEGREE (zhTemperatureUnits)
	"°C": "摄氏度", "ºC": "摄氏度", "℃": "摄氏度", "°F": "华氏度", "ºF": "华氏度", "℉": "华氏度",
	"°": "度", "º": "度", "K": "开尔文",
	// UnitOfPower, UnitOfApparentPower, UnitOfReactivePower
	"mW": "毫瓦", "W": "瓦", "kW": "千瓦", "MW": "兆瓦", "GW": "吉瓦", "TW": "太瓦",
	"BTU/h": "英热单位每小时", "VA": "伏安", "kVA": "千伏安", "var": "乏", "kvar": "千乏",
	// UnitOfEnergy, UnitOfReactiveEnergy, UnitOfEnergyDistance
	"mWh": "毫瓦时", "Wh": "瓦时", "kWh": "千瓦时", "MWh": "兆瓦时", "GWh": "吉瓦时", "TWh": "太瓦时",
	"J": "焦耳", "kJ": "千焦", "MJ": "兆焦", "GJ": "吉焦",
	"cal": "卡", "kcal": "千卡", "Mcal": "兆卡", "Gcal": "吉卡",
	"varh": "乏时", "kvarh": "千乏时", "mAh": "毫安时", "Ah": "安时",
	"kWh/100km": "千瓦时每百公里", "mi/kWh": "英里每千瓦时", "km/kWh": "公里每千瓦时",
	// UnitOfElectricCurrent, UnitOfElectricPotential
	"µA": "微安", "mA": "毫安", "A": "安", "µV": "微伏", "mV": "毫伏", "V": "伏", "kV": "千伏", "MV": "兆伏",
	// UnitOfTime
	"µs": "微秒", "ms": "毫秒", "s": "秒", "sec": "秒", "min": "分钟", "h": "小时", "hr": "小时", "d": "天",
	// UnitOfLength, UnitOfPrecipitationDepth
	"µm": "微米", "mm": "毫米", "cm": "厘米", "m": "米", "km": "公里",
	"in": "英寸", "ft": "英尺", "yd": "码", "mi": "英里", "nmi": "海里",
	// UnitOfFrequency
	"Hz": "赫兹", "kHz": "千赫兹", "MHz": "兆赫兹", "GHz": "吉赫兹",
	// UnitOfPressure
	"Pa": "帕", "hPa": "百帕", "kPa": "千帕", "MPa": "兆帕", "bar": "巴", "cbar": "厘巴", "mbar": "毫巴",
	"mmHg": "毫米汞柱", "inHg": "英寸汞柱", "psi": "磅每平方英寸",
	// UnitOfSoundPressure, SIGNAL_STRENGTH_*
	"dB": "分贝", "dBA": "A计权分贝", "dBm": "分贝毫瓦",
	// UnitOfVolume, UnitOfVolumeFlowRate
	"L": "升", "l": "升", "mL": "毫升", "ml": "毫升", "m³": "立方米", "m3": "立方米", "ft³": "立方英尺",
	"CCF": "百立方英尺", "gal": "加仑", "fl. oz.": "液量盎司",
	"m³/h": "立方米每小时", "m³/s": "立方米每秒", "ft³/min": "立方英尺每分钟", "L/h": "升每小时",
	"L/min": "升每分钟", "L/s": "升每秒", "gal/min": "加仑每分钟", "mL/s": "毫升每秒",
	// UnitOfArea
	"m²": "平方米", "m2": "平方米", "cm²": "平方厘米", "mm²": "平方毫米", "km²": "平方公里",
	"in²": "平方英寸", "ft²": "平方英尺", "yd²": "平方码", "mi²": "平方英里", "ac": "英亩", "ha": "公顷",
	// UnitOfMass
	"µg": "微克", "mg": "毫克", "g": "克", "kg": "千克", "oz": "盎司", "lb": "磅", "lbs": "磅",
	// UnitOfConductivity
	"S/cm": "西门子每厘米", "µS/cm": "微西门子每厘米", "mS/cm": "毫西门子每厘米",
	// LIGHT_LUX, REVOLUTIONS_PER_MINUTE, UV_INDEX, UnitOfIrradiance
	"lx": "勒克斯", "lm": "流明", "rpm": "转每分钟", "UV index": "紫外线指数",
	"W/m²": "瓦每平方米", "W/m2": "瓦每平方米",
	// UnitOfVolumetricFlux
	"in/d": "英寸每天", "in/h": "英寸每小时", "mm/d": "毫米每天", "mm/h": "毫米每小时",
	// CONCENTRATION_*, UnitOfBloodGlucoseConcentration (ppm, ppb: zhBeforeUnits)
	"µg/m³": "微克每立方米", "mg/m³": "毫克每立方米", "µg/ft³": "微克每立方英尺", "p/m³": "个每立方米",
	"ppm": "百万分之", "ppb": "十亿分之", "mg/dL": "毫克每分升", "mmol/L": "毫摩尔每升",
	// UnitOfSpeed
	"m/s": "米每秒", "km/h": "公里每小时", "kph": "公里每小时", "mph": "英里每小时", "mm/s": "毫米每秒",
	"ft/s": "英尺每秒", "in/s": "英寸每秒", "kn": "节", "Beaufort": "级",
	// UnitOfInformation, UnitOfDataRate
	"bit": "比特", "kbit": "千比特", "Mbit": "兆比特", "Gbit": "吉比特",
	"B": "字节", "kB": "千字节", "KB": "千字节", "MB": "兆字节", "GB": "吉字节", "TB": "太字节", "PB": "拍字节",
	"KiB": "千字节", "MiB": "兆字节", "GiB": "吉字节", "TiB": "太字节",
	"bit/s": "比特每秒", "kbit/s": "千比特每秒", "Mbit/s": "兆比特每秒", "Gbit/s": "吉比特每秒",
	"B/s": "字节每秒", "kB/s": "千字节每秒", "MB/s": "兆字节每秒", "GB/s": "吉字节每秒",
	"KiB/s": "千字节每秒", "MiB/s": "兆字节每秒", "GiB/s": "吉字节每秒",
	"kbps": "千比特每秒", "Mbps": "兆比特每秒", "Gbps": "吉比特每秒",
	// money after the amount
	"CNY": "元", "RMB": "元", "USD": "美元", "EUR": "欧元", "GBP": "英镑", "JPY": "日元", "HKD": "港元",
}

// zhTemperatureUnits make a sign 零下 or 零上 and a 2 二.
var zhTemperatureUnits = map[string]bool{"°C": true, "ºC": true, "℃": true, "°F": true, "ºF": true, "℉": true, "°": true, "º": true}

// zhBeforeUnits are said before the number, like 百分之.
var zhBeforeUnits = map[string]bool{"ppm": true, "ppb": true}

// zhAmbiguousUnits are also capital letters or English words: after a
// space they are units only where no word follows ("2 A" but not
// "3 A股"); lowercase symbols like "min", "h" and "m" are units there too
// ("3 h 20 min后", "3 m长"). K is ambiguous even right after the number:
// 4K电视 is a resolution, not kelvin. (Stones, "st", are left out: 1st.)
var zhAmbiguousUnits = map[string]bool{
	"A": true, "B": true, "K": true, "L": true, "V": true, "W": true, "J": true,
	"in": true, "ha": true, "ac": true, "kn": true, "mi": true,
}

type zhUnit struct {
	sym          []rune
	name         string
	temp, before bool
	ambiguous    bool
	strict       bool // ambiguous even right after the number: 4K电视
}

// zhUnitsByFirst indexes zhUnits by first rune, longest symbol first.
var zhUnitsByFirst = indexUnits(zhUnits, func(sym []rune, name string) zhUnit {
	k := string(sym)
	return zhUnit{sym: sym, name: name, temp: zhTemperatureUnits[k], before: zhBeforeUnits[k], ambiguous: zhAmbiguousUnits[k], strict: k == "K"}
}, func(u zhUnit) []rune { return u.sym })

// matchZhUnit finds the longest unit symbol at rs[p] that ends at a word
// boundary and returns it with the index after it. spaced says a space
// stands between the number and rs[p].
func matchZhUnit(rs []rune, p int, spaced bool) (zhUnit, int, bool) {
	if p >= len(rs) {
		return zhUnit{}, 0, false
	}
next:
	for _, u := range zhUnitsByFirst[rs[p]] {
		end := p + len(u.sym)
		if end > len(rs) {
			continue
		}
		for i, r := range u.sym {
			if rs[p+i] != r {
				continue next
			}
		}
		if end < len(rs) {
			r := rs[end]
			if isASCIILetterOrDigit(r) || r == 'µ' || r == 'μ' || superscriptValue(r) >= 0 || r == '/' {
				continue
			}
			if (spaced || u.strict) && u.ambiguous && r != ' ' && !unicode.IsPunct(r) {
				continue
			}
		}
		return u, end, true
	}
	return zhUnit{}, 0, false
}

// isZhMeasure reports whether r (followed by next) is a measure word or
// another word before which a 2 is 两: 两个, 两点, 两小时, 两公里, 两万.
func isZhMeasure(r, next rune) bool {
	switch r {
	case '小':
		return next == '时'
	case '公':
		return next == '里' || next == '斤' || next == '顷' || next == '分'
	case '星':
		return next == '期'
	}
	return strings.ContainsRune(zhMeasureWords, r)
}

// zhMeasureWords are single-character measure words and units; 月, 号,
// 日, 楼, 层, 级, 度, 路 are not among them (二月, 二号, 二楼).
const zhMeasureWords = "个只台次件位条张本块间把辆天岁周年名人头匹盏扇部首遍场份瓶杯双对套颗粒片节盒包箱袋种项座栋户家所处样回趟下分秒元角毛斤亩倍万亿千百点米克吨升"

// Words before a number that make it a phone or room number (幺) or a
// code (一), read digit by digit, and words that make H:MM:SS a duration.
var (
	zhPhoneWords    = []string{"电话", "手机", "号码", "热线", "分机", "座机", "房间", "房号"}
	zhCodeWords     = []string{"验证码", "密码", "编号", "工号", "单号", "尾号", "邮编", "代码", "编码", "序列号", "航班", "车次", "车牌"}
	zhDurationWords = []string{"剩余", "还剩", "剩下", "剩余时间", "计时", "用时", "耗时", "时长", "持续"}
)

// zhBetweenNumbers is how a symbol between two numbers is read.
func zhBetweenNumbers(r rune) string {
	switch r {
	case '+':
		return "加"
	case '−':
		return "减"
	case '×', '*', 'x':
		return "乘"
	case '÷':
		return "除以"
	case '=':
		return "等于"
	case '≈':
		return "约等于"
	case '<':
		return "小于"
	case '>':
		return "大于"
	case '≤':
		return "小于等于"
	case '≥':
		return "大于等于"
	case ':', '：':
		return "比"
	case '-', '–', '—', '~', '～', '〜':
		return "到"
	}
	return ""
}

// zhBeforeNumber is how a symbol before a number, not after one, is read.
func zhBeforeNumber(r rune) string {
	switch r {
	case '~', '～', '〜', '≈':
		return "约"
	case '<':
		return "小于"
	case '>':
		return "大于"
	case '≤':
		return "小于等于"
	case '≥':
		return "大于等于"
	}
	return ""
}

// zhStandalone is how a symbol is read anywhere.
func zhStandalone(r rune) string {
	switch r {
	case '&':
		return "和"
	case '≈':
		return "约"
	case '℃':
		return "摄氏度"
	case '℉':
		return "华氏度"
	}
	return ""
}

// vulgarFraction is how a fraction character is read: ½ → 二分之一.
func vulgarFraction(r rune) string {
	switch r {
	case '½':
		return "二分之一"
	case '⅓':
		return "三分之一"
	case '⅔':
		return "三分之二"
	case '¼':
		return "四分之一"
	case '¾':
		return "四分之三"
	case '⅕':
		return "五分之一"
	case '⅖':
		return "五分之二"
	case '⅗':
		return "五分之三"
	case '⅘':
		return "五分之四"
	case '⅙':
		return "六分之一"
	case '⅚':
		return "六分之五"
	case '⅐':
		return "七分之一"
	case '⅛':
		return "八分之一"
	case '⅜':
		return "八分之三"
	case '⅝':
		return "八分之五"
	case '⅞':
		return "八分之七"
	case '⅑':
		return "九分之一"
	case '⅒':
		return "十分之一"
	}
	return ""
}
