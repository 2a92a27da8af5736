package text

import (
	"unicode"
)

// Units of measurement, read only after a number. The table holds every
// unit of Home Assistant's homeassistant/const.py (UnitOf* enums and the
// CONCENTRATION_*, LIGHT_LUX, SIGNAL_STRENGTH_*, PERCENTAGE,
// REVOLUTIONS_PER_MINUTE, UV_INDEX and DEGREE constants; "%" and "UV
// index" are handled elsewhere or need nothing), a few ASCII spellings of
// them ("m2", "kph", "Mbps"), and both micro signs, U+00B5 and U+03BC.
//
// A symbol that is also a word or a letter ("in", "A", "m", "s", "W") is
// ambiguous: right after the number ("5in", "10A") it is the unit, but
// after a space only where no ordinary word follows, so that "5 in the
// kitchen" and "plan 2 A new" keep their words while "5 in." and "2 h 30
// min" read units.

// unitName is how a unit is read after exactly one ("kilowatt hour") and
// after any other number ("kilowatt hours").
type unitName struct{ one, many string }

type unitEntry struct {
	sym       []rune
	name      unitName
	ambiguous bool
}

// englishUnits maps a unit symbol to its reading.
var englishUnits = map[string]unitName{
	// UnitOfTemperature, DEGREE
	"°C": {"degree Celsius", "degrees Celsius"}, "ºC": {"degree Celsius", "degrees Celsius"}, "℃": {"degree Celsius", "degrees Celsius"},
	"°F": {"degree Fahrenheit", "degrees Fahrenheit"}, "ºF": {"degree Fahrenheit", "degrees Fahrenheit"}, "℉": {"degree Fahrenheit", "degrees Fahrenheit"},
	"K": {"kelvin", "kelvins"}, "°": {"degree", "degrees"}, "º": {"degree", "degrees"},
	// UnitOfPower, UnitOfApparentPower, UnitOfReactivePower
	"mW": {"milliwatt", "milliwatts"}, "W": {"watt", "watts"}, "kW": {"kilowatt", "kilowatts"},
	"MW": {"megawatt", "megawatts"}, "GW": {"gigawatt", "gigawatts"}, "TW": {"terawatt", "terawatts"},
	"BTU/h": {"BTU per hour", "BTUs per hour"},
	"VA":    {"volt-ampere", "volt-amperes"}, "kVA": {"kilovolt-ampere", "kilovolt-amperes"},
	"var": {"volt-ampere reactive", "volt-amperes reactive"}, "kvar": {"kilovolt-ampere reactive", "kilovolt-amperes reactive"},
	// UnitOfReactiveEnergy, UnitOfEnergy
	"varh": {"volt-ampere reactive hour", "volt-ampere reactive hours"}, "kvarh": {"kilovolt-ampere reactive hour", "kilovolt-ampere reactive hours"},
	"J": {"joule", "joules"}, "kJ": {"kilojoule", "kilojoules"}, "MJ": {"megajoule", "megajoules"}, "GJ": {"gigajoule", "gigajoules"},
	"mWh": {"milliwatt hour", "milliwatt hours"}, "Wh": {"watt hour", "watt hours"}, "kWh": {"kilowatt hour", "kilowatt hours"},
	"MWh": {"megawatt hour", "megawatt hours"}, "GWh": {"gigawatt hour", "gigawatt hours"}, "TWh": {"terawatt hour", "terawatt hours"},
	"cal": {"calorie", "calories"}, "kcal": {"kilocalorie", "kilocalories"}, "Mcal": {"megacalorie", "megacalories"}, "Gcal": {"gigacalorie", "gigacalories"},
	"mAh": {"milliampere hour", "milliampere hours"}, "Ah": {"ampere hour", "ampere hours"},
	// UnitOfEnergyDistance
	"kWh/100km": {"kilowatt hour per hundred kilometers", "kilowatt hours per hundred kilometers"},
	"mi/kWh":    {"mile per kilowatt hour", "miles per kilowatt hour"}, "km/kWh": {"kilometer per kilowatt hour", "kilometers per kilowatt hour"},
	// UnitOfElectricCurrent, UnitOfElectricPotential
	"mA": {"milliampere", "milliamperes"}, "A": {"ampere", "amperes"},
	"µV": {"microvolt", "microvolts"}, "mV": {"millivolt", "millivolts"}, "V": {"volt", "volts"},
	"kV": {"kilovolt", "kilovolts"}, "MV": {"megavolt", "megavolts"},
	// UnitOfTime
	"µs": {"microsecond", "microseconds"}, "ms": {"millisecond", "milliseconds"},
	"s": {"second", "seconds"}, "sec": {"second", "seconds"}, "secs": {"second", "seconds"},
	"min": {"minute", "minutes"}, "mins": {"minute", "minutes"},
	"h": {"hour", "hours"}, "hr": {"hour", "hours"}, "hrs": {"hour", "hours"},
	"d": {"day", "days"}, "w": {"week", "weeks"}, "y": {"year", "years"}, "yr": {"year", "years"}, "yrs": {"year", "years"},
	// UnitOfLength, UnitOfPrecipitationDepth ("m" is also UnitOfTime.MONTHS;
	// a length is far more common, see readUnit for "ago")
	"mm": {"millimeter", "millimeters"}, "cm": {"centimeter", "centimeters"}, "m": {"meter", "meters"},
	"km": {"kilometer", "kilometers"}, "in": {"inch", "inches"}, "ft": {"foot", "feet"},
	"yd": {"yard", "yards"}, "mi": {"mile", "miles"}, "nmi": {"nautical mile", "nautical miles"},
	// UnitOfFrequency
	"Hz": {"hertz", "hertz"}, "kHz": {"kilohertz", "kilohertz"}, "MHz": {"megahertz", "megahertz"}, "GHz": {"gigahertz", "gigahertz"},
	// UnitOfPressure
	"Pa": {"pascal", "pascals"}, "hPa": {"hectopascal", "hectopascals"}, "kPa": {"kilopascal", "kilopascals"},
	"bar": {"bar", "bars"}, "cbar": {"centibar", "centibars"}, "mbar": {"millibar", "millibars"},
	"mmHg": {"millimeter of mercury", "millimeters of mercury"}, "inHg": {"inch of mercury", "inches of mercury"},
	"psi": {"pound per square inch", "pounds per square inch"},
	// UnitOfSoundPressure, SIGNAL_STRENGTH_*
	"dB": {"decibel", "decibels"}, "dBA": {"A-weighted decibel", "A-weighted decibels"}, "dBa": {"A-weighted decibel", "A-weighted decibels"},
	"dBm": {"decibel-milliwatt", "decibel-milliwatts"},
	// UnitOfVolume
	"ft³": {"cubic foot", "cubic feet"}, "CCF": {"hundred cubic feet", "hundred cubic feet"}, "m³": {"cubic meter", "cubic meters"},
	"L": {"liter", "liters"}, "l": {"liter", "liters"}, "mL": {"milliliter", "milliliters"}, "ml": {"milliliter", "milliliters"},
	"gal": {"gallon", "gallons"}, "fl. oz.": {"fluid ounce", "fluid ounces"}, "fl oz": {"fluid ounce", "fluid ounces"},
	"m3": {"cubic meter", "cubic meters"}, "ft3": {"cubic foot", "cubic feet"},
	// UnitOfVolumeFlowRate
	"m³/h": {"cubic meter per hour", "cubic meters per hour"}, "m³/s": {"cubic meter per second", "cubic meters per second"},
	"ft³/min": {"cubic foot per minute", "cubic feet per minute"}, "ft³/m": {"cubic foot per minute", "cubic feet per minute"},
	"L/h": {"liter per hour", "liters per hour"}, "L/min": {"liter per minute", "liters per minute"}, "L/s": {"liter per second", "liters per second"},
	"gal/min": {"gallon per minute", "gallons per minute"}, "mL/s": {"milliliter per second", "milliliters per second"},
	// UnitOfArea
	"m²": {"square meter", "square meters"}, "cm²": {"square centimeter", "square centimeters"}, "km²": {"square kilometer", "square kilometers"},
	"mm²": {"square millimeter", "square millimeters"}, "in²": {"square inch", "square inches"}, "ft²": {"square foot", "square feet"},
	"yd²": {"square yard", "square yards"}, "mi²": {"square mile", "square miles"}, "ac": {"acre", "acres"}, "ha": {"hectare", "hectares"},
	"m2": {"square meter", "square meters"}, "ft2": {"square foot", "square feet"}, "sq ft": {"square foot", "square feet"},
	// UnitOfMass
	"g": {"gram", "grams"}, "kg": {"kilogram", "kilograms"}, "mg": {"milligram", "milligrams"}, "µg": {"microgram", "micrograms"},
	"oz": {"ounce", "ounces"}, "lb": {"pound", "pounds"}, "lbs": {"pound", "pounds"}, "st": {"stone", "stone"},
	// UnitOfConductivity
	"S/cm": {"siemens per centimeter", "siemens per centimeter"}, "µS/cm": {"microsiemens per centimeter", "microsiemens per centimeter"},
	"mS/cm": {"millisiemens per centimeter", "millisiemens per centimeter"},
	// LIGHT_LUX, REVOLUTIONS_PER_MINUTE
	"lx": {"lux", "lux"}, "rpm": {"revolution per minute", "revolutions per minute"},
	// UnitOfIrradiance
	"W/m²": {"watt per square meter", "watts per square meter"}, "W/m2": {"watt per square meter", "watts per square meter"},
	"BTU/(h⋅ft²)": {"BTU per hour per square foot", "BTUs per hour per square foot"},
	"BTU/(h×ft²)": {"BTU per hour per square foot", "BTUs per hour per square foot"},
	"BTU/(h·ft²)": {"BTU per hour per square foot", "BTUs per hour per square foot"},
	// UnitOfVolumetricFlux
	"in/d": {"inch per day", "inches per day"}, "in/h": {"inch per hour", "inches per hour"},
	"mm/d": {"millimeter per day", "millimeters per day"}, "mm/h": {"millimeter per hour", "millimeters per hour"},
	// CONCENTRATION_*, UnitOfBloodGlucoseConcentration
	"µg/m³": {"microgram per cubic meter", "micrograms per cubic meter"}, "mg/m³": {"milligram per cubic meter", "milligrams per cubic meter"},
	"µg/ft³": {"microgram per cubic foot", "micrograms per cubic foot"}, "p/m³": {"part per cubic meter", "parts per cubic meter"},
	"ppm": {"part per million", "parts per million"}, "ppb": {"part per billion", "parts per billion"},
	"mg/dL": {"milligram per deciliter", "milligrams per deciliter"}, "mmol/L": {"millimole per liter", "millimoles per liter"},
	// UnitOfSpeed
	"ft/s": {"foot per second", "feet per second"}, "in/s": {"inch per second", "inches per second"},
	"m/s": {"meter per second", "meters per second"}, "km/h": {"kilometer per hour", "kilometers per hour"}, "kph": {"kilometer per hour", "kilometers per hour"},
	"kn": {"knot", "knots"}, "mph": {"mile per hour", "miles per hour"}, "mm/s": {"millimeter per second", "millimeters per second"},
	"Beaufort": {"Beaufort", "Beaufort"},
	// UnitOfInformation
	"bit": {"bit", "bits"}, "kbit": {"kilobit", "kilobits"}, "Mbit": {"megabit", "megabits"}, "Gbit": {"gigabit", "gigabits"},
	"B": {"byte", "bytes"}, "kB": {"kilobyte", "kilobytes"}, "KB": {"kilobyte", "kilobytes"}, "MB": {"megabyte", "megabytes"},
	"GB": {"gigabyte", "gigabytes"}, "TB": {"terabyte", "terabytes"}, "PB": {"petabyte", "petabytes"}, "EB": {"exabyte", "exabytes"},
	"ZB": {"zettabyte", "zettabytes"}, "YB": {"yottabyte", "yottabytes"},
	"KiB": {"kibibyte", "kibibytes"}, "MiB": {"mebibyte", "mebibytes"}, "GiB": {"gibibyte", "gibibytes"}, "TiB": {"tebibyte", "tebibytes"},
	"PiB": {"pebibyte", "pebibytes"}, "EiB": {"exbibyte", "exbibytes"}, "ZiB": {"zebibyte", "zebibytes"}, "YiB": {"yobibyte", "yobibytes"},
	// UnitOfDataRate
	"bit/s": {"bit per second", "bits per second"}, "kbit/s": {"kilobit per second", "kilobits per second"},
	"Mbit/s": {"megabit per second", "megabits per second"}, "Gbit/s": {"gigabit per second", "gigabits per second"},
	"B/s": {"byte per second", "bytes per second"}, "kB/s": {"kilobyte per second", "kilobytes per second"},
	"MB/s": {"megabyte per second", "megabytes per second"}, "GB/s": {"gigabyte per second", "gigabytes per second"},
	"KiB/s": {"kibibyte per second", "kibibytes per second"}, "MiB/s": {"mebibyte per second", "mebibytes per second"},
	"GiB/s": {"gibibyte per second", "gibibytes per second"},
	"kbps":  {"kilobit per second", "kilobits per second"}, "Mbps": {"megabit per second", "megabits per second"},
	"Gbps": {"gigabit per second", "gigabits per second"},
}

// ambiguousUnits are symbols that are also words, letters or common
// abbreviations ("W", "V" and "L" after a number are units even before a
// word: "5 W LED"); after a space they are units only before a word of
// followingUnitWords, a number, punctuation or the end of the line.
var ambiguousUnits = map[string]bool{
	"in": true, "A": true, "m": true, "h": true, "s": true, "d": true, "w": true, "y": true, "K": true,
	"g": true, "B": true, "l": true, "st": true, "ha": true,
	"ac": true, "kn": true, "bar": true, "var": true, "cal": true, "bit": true, "min": true, "mi": true,
	"ft": true, "lb": true, "oz": true, "Pa": true, "ms": true, "sec": true, "hr": true, "yr": true,
	"Ah": true, "Beaufort": true,
}

// followingUnitWords may follow an ambiguous unit after a space: "5 in of
// rain", "3 m ago", "2 h and 5 min".
var followingUnitWords = map[string]bool{
	"of": true, "and": true, "or": true, "per": true, "ago": true, "left": true, "remaining": true,
	"long": true, "tall": true, "wide": true, "deep": true, "high": true, "away": true, "later": true,
	"each": true, "total": true, "today": true, "yesterday": true, "so": true, "to": true,
}

// unitsByFirst indexes englishUnits by first rune, longest symbol first.
var unitsByFirst = indexUnits(englishUnits, func(sym []rune, name unitName) unitEntry {
	return unitEntry{sym: sym, name: name, ambiguous: ambiguousUnits[string(sym)]}
}, func(u unitEntry) []rune { return u.sym })

// matchUnit finds the longest unit symbol at rs[p] that ends at a word
// boundary, and returns it with the index just past it.
func matchUnit(rs []rune, p int) (unitEntry, int, bool) {
	if p >= len(rs) {
		return unitEntry{}, 0, false
	}
next:
	for _, u := range unitsByFirst[rs[p]] {
		end := p + len(u.sym)
		if end > len(rs) {
			continue
		}
		for i, r := range u.sym {
			if rs[p+i] != r {
				continue next
			}
		}
		if end < len(rs) && (isWordRune(rs[end]) || unicode.IsMark(rs[end]) || isEnSuperscript(rs[end])) {
			continue
		}
		return u, end, true
	}
	return unitEntry{}, 0, false
}
