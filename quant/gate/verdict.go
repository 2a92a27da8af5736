package gate

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Check names, the Name of a Check.
const (
	CheckSNR                 = "snr"
	CheckAlignedSNR          = "aligned-snr"
	CheckSpectralCorrelation = "spectral-correlation"
	CheckLogMelDistance      = "log-mel-distance"
	CheckLength              = "length"
	CheckCosine              = "cosine"
	CheckRelativeError       = "relative-error"
	CheckMaxAbsError         = "max-abs-error"
	CheckSpeed               = "speed"
)

// Check is one measured quantity against its limit.
type Check struct {
	Name    string // one of the Check* constants
	Subject string // what was measured: "audio", an output name, "runtime"
	// Value is the worst value seen; Limit the threshold it is held to.
	Value, Limit float64
	// AtLeast says Value must be ≥ Limit; otherwise it must be ≤ Limit.
	AtLeast bool
	Pass    bool
	Unit    string // "dB", "" for ratios
	// Where names the input the worst value came from ("sentence 2",
	// "prompt 1 step 7").
	Where string
}

// Excess is how far Value lies on the wrong side of Limit (positive when
// the check failed, negative margin when it passed); NaN stays NaN.
func (c Check) Excess() float64 {
	if c.AtLeast {
		return c.Limit - c.Value
	}
	return c.Value - c.Limit
}

func newCheck(name, subject, unit string, value, limit float64, atLeast bool, where string) Check {
	pass := value <= limit
	if atLeast {
		pass = value >= limit
	}
	// NaN compares false both ways and so fails: a candidate that emits
	// NaN is never good.
	return Check{Name: name, Subject: subject, Unit: unit, Value: value, Limit: limit, AtLeast: atLeast, Pass: pass, Where: where}
}

// Speed is the timing of the two models on the same workload.
type Speed struct {
	Runs int
	// Original and Candidate are the medians of the timed runs.
	Original, Candidate time.Duration
	// Ratio is Candidate / Original: below 1 the candidate is faster.
	Ratio float64
}

// Verdict is the result of a check: Pass is true when every Check passed.
type Verdict struct {
	Pass      bool
	Precision string
	Checks    []Check
	// Speed is set when the speed was measured.
	Speed *Speed
	// OriginalBytes and CandidateBytes are the two model sizes.
	OriginalBytes, CandidateBytes int
}

func (v *Verdict) add(c Check) {
	v.Checks = append(v.Checks, c)
	v.Pass = v.Pass && c.Pass
}

// Failed returns the checks that failed.
func (v *Verdict) Failed() []Check {
	var out []Check
	for _, c := range v.Checks {
		if !c.Pass {
			out = append(out, c)
		}
	}
	return out
}

// Err is nil when the verdict passed, otherwise an error wrapping ErrFailed
// that names each failed check and by how much it missed.
func (v *Verdict) Err() error {
	failed := v.Failed()
	if len(failed) == 0 {
		return nil
	}
	parts := make([]string, len(failed))
	for i, c := range failed {
		cmp := "≤"
		if c.AtLeast {
			cmp = "≥"
		}
		parts[i] = fmt.Sprintf("%s of %s is %s, want %s %s", c.Name, c.Subject, formatValue(c.Value, c.Unit), cmp, formatValue(c.Limit, c.Unit))
		if c.Where != "" {
			parts[i] += " (" + c.Where + ")"
		}
	}
	return fmt.Errorf("%w: %s", ErrFailed, strings.Join(parts, "; "))
}

// String formats the verdict as a table: one row per check with its value,
// limit, how far off it is and where the worst case was, then the sizes,
// the speed and the result.
func (v *Verdict) String() string {
	rows := [][]string{{"check", "subject", "value", "limit", "excess", "worst at", "result"}}
	for _, c := range v.Checks {
		cmp := "≤ "
		if c.AtLeast {
			cmp = "≥ "
		}
		result := "pass"
		if !c.Pass {
			result = "FAIL"
		}
		rows = append(rows, []string{c.Name, c.Subject, formatValue(c.Value, c.Unit), cmp + formatValue(c.Limit, c.Unit),
			formatExcess(c), c.Where, result})
	}
	var b strings.Builder
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, cell := range r {
			widths[i] = max(widths[i], len([]rune(cell)))
		}
	}
	for _, r := range rows {
		for i, cell := range r {
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(cell)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", widths[i]-len([]rune(cell))))
			}
		}
		b.WriteString("\n")
	}
	if v.OriginalBytes > 0 {
		fmt.Fprintf(&b, "size: %d → %d bytes (%.2f×)\n", v.OriginalBytes, v.CandidateBytes,
			float64(v.CandidateBytes)/float64(v.OriginalBytes))
	}
	if s := v.Speed; s != nil {
		fmt.Fprintf(&b, "speed: median of %d runs %v → %v (%.2f×)\n", s.Runs,
			s.Original.Round(time.Microsecond), s.Candidate.Round(time.Microsecond), s.Ratio)
	}
	result := "PASS"
	if !v.Pass {
		result = fmt.Sprintf("FAIL (%d of %d checks)", len(v.Failed()), len(v.Checks))
	}
	prec := ""
	if v.Precision != "" {
		prec = " [" + v.Precision + "]"
	}
	fmt.Fprintf(&b, "gate%s: %s\n", prec, result)
	return b.String()
}

func formatValue(x float64, unit string) string {
	var s string
	switch {
	case math.IsInf(x, 1):
		s = "+inf"
	case math.IsInf(x, -1):
		s = "-inf"
	case math.IsNaN(x):
		s = "NaN"
	default:
		s = strconv.FormatFloat(x, 'g', 5, 64)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func formatExcess(c Check) string {
	e := c.Excess()
	switch {
	case math.IsNaN(e) || math.IsInf(e, 0):
		if c.Pass {
			return ""
		}
		return formatValue(e, "")
	case e <= 0:
		return ""
	}
	return "+" + formatValue(e, c.Unit)
}
