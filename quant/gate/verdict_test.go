package gate

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

func TestDefaultThresholds(t *testing.T) {
	tests := []struct {
		precision string
		corr      float64
		snr       float64
	}{
		{"fp16", 0.995, 30}, {"FP16-store", 0.995, 30}, {" fp32 ", 0.995, 30},
		{"int8", 0.98, 0}, {"nbits", 0.98, 0}, {"auto", 0.98, 0},
	}
	for _, tt := range tests {
		th, err := DefaultThresholds(tt.precision)
		if err != nil {
			t.Fatalf("%q: %v", tt.precision, err)
		}
		if th.MinSpectralCorrelation != tt.corr || th.MinSNR != tt.snr || th.MaxSlowdown != 0.05 {
			t.Errorf("%q: %+v", tt.precision, th)
		}
		if tt.snr == 0 && th.MaxLogMelDistance != 1.5 {
			t.Errorf("%q: log-mel bound %v, want the calibrated 1.5 dB", tt.precision, th.MaxLogMelDistance)
		}
	}
	for _, bad := range []string{"", "int4", "fp16x", "float16"} {
		if _, err := DefaultThresholds(bad); !errors.Is(err, ErrUnknownPrecision) {
			t.Errorf("%q: %v, want ErrUnknownPrecision", bad, err)
		}
	}
}

func TestOptionsResolve(t *testing.T) {
	r, err := (*Options)(nil).resolve()
	if err != nil || r.precision != PrecisionInt8 || r.speedRuns != DefaultSpeedRuns || r.th.MinSpectralCorrelation != 0.98 {
		t.Errorf("nil options: %+v, %v", r, err)
	}
	own := &Thresholds{MinCosine: 0.5}
	if r, _ := (&Options{Precision: "fp16", Thresholds: own}).resolve(); r.th != *own {
		t.Errorf("Thresholds must replace the defaults: %+v", r.th)
	}
	for _, o := range []Options{{SpeedRuns: -1}, {SpeedRuns: MaxSpeedRuns + 1}, {Precision: "int3"}} {
		_, err := o.resolve()
		if err == nil || !(errors.Is(err, ErrInvalidOptions) || errors.Is(err, ErrUnknownPrecision)) {
			t.Errorf("%+v: %v, want an error naming the field", o, err)
		}
	}
	_, err = (&Options{SpeedRuns: MaxSpeedRuns + 1}).resolve()
	if err == nil || !strings.Contains(err.Error(), "MaxSpeedRuns") {
		t.Errorf("error %v should name the limit", err)
	}
}

func TestCheckPassAndExcess(t *testing.T) {
	tests := []struct {
		c      Check
		pass   bool
		excess float64
	}{
		{newCheck(CheckSNR, "audio", "dB", 35, 30, true, ""), true, -5},
		{newCheck(CheckSNR, "audio", "dB", 25, 30, true, ""), false, 5},
		{newCheck(CheckLogMelDistance, "audio", "dB", 2, 1.5, false, ""), false, 0.5},
		{newCheck(CheckLogMelDistance, "audio", "dB", 1, 1.5, false, ""), true, -0.5},
		{newCheck(CheckSNR, "audio", "dB", math.Inf(1), 30, true, ""), true, math.Inf(-1)},
		{newCheck(CheckCosine, "y", "", math.NaN(), 0.99, true, ""), false, math.NaN()},
		{newCheck(CheckRelativeError, "y", "", math.NaN(), 0.1, false, ""), false, math.NaN()},
	}
	for i, tt := range tests {
		e := tt.c.Excess()
		if tt.c.Pass != tt.pass || !(e == tt.excess || math.IsNaN(e) && math.IsNaN(tt.excess)) {
			t.Errorf("%d: pass %v excess %v, want %v %v", i, tt.c.Pass, e, tt.pass, tt.excess)
		}
	}
}

func TestVerdictReport(t *testing.T) {
	v := &Verdict{Pass: true, Precision: "int8", OriginalBytes: 4000, CandidateBytes: 1000}
	v.add(newCheck(CheckSpectralCorrelation, "audio", "", 0.97, 0.98, true, "sentence 2"))
	v.add(newCheck(CheckLogMelDistance, "audio", "dB", 0.8, 1.5, false, "sentence 0"))
	v.Speed = &Speed{Runs: 5, Original: 10 * time.Millisecond, Candidate: 12 * time.Millisecond, Ratio: 1.2}
	v.add(newCheck(CheckSpeed, "runtime", "", 0.2, 0.05, false, "median of 5"))
	if v.Pass || len(v.Failed()) != 2 {
		t.Fatalf("pass %v, failed %v", v.Pass, v.Failed())
	}
	s := v.String()
	for _, want := range []string{
		"spectral-correlation", "0.97", "≥ 0.98", "+0.01", "sentence 2", "FAIL",
		"log-mel-distance", "0.8 dB", "≤ 1.5 dB", "pass",
		"size: 4000 → 1000 bytes (0.25×)", "speed: median of 5 runs 10ms → 12ms (1.20×)",
		"gate [int8]: FAIL (2 of 3 checks)",
	} {
		if !strings.Contains(s, want) {
			t.Errorf("report lacks %q:\n%s", want, s)
		}
	}
	err := v.Err()
	if !errors.Is(err, ErrFailed) || !strings.Contains(err.Error(), "spectral-correlation of audio is 0.97, want ≥ 0.98 (sentence 2)") ||
		!strings.Contains(err.Error(), "speed of runtime is 0.2") || strings.Contains(err.Error(), "log-mel") {
		t.Errorf("Err() = %v", err)
	}
	ok := &Verdict{Pass: true}
	ok.add(newCheck(CheckCosine, "y", "", 1, 0.99, true, ""))
	if ok.Err() != nil || !strings.Contains(ok.String(), "gate: PASS") {
		t.Errorf("passing verdict: %v\n%s", ok.Err(), ok.String())
	}
}

func TestWorse(t *testing.T) {
	nan := math.NaN()
	tests := []struct {
		x, cur float64
		higher bool
		want   bool
	}{
		{1, 2, true, true}, {3, 2, true, false}, {3, 2, false, true}, {1, 2, false, false},
		{nan, 2, true, true}, {nan, 2, false, true}, {1, nan, true, false}, {1, nan, false, false},
	}
	for _, tt := range tests {
		if got := worse(tt.x, tt.cur, tt.higher); got != tt.want {
			t.Errorf("worse(%v, %v, %v) = %v", tt.x, tt.cur, tt.higher, got)
		}
	}
}

func TestMedianAndRatio(t *testing.T) {
	ms := time.Millisecond
	if m := median([]time.Duration{5 * ms, 1 * ms, 3 * ms}); m != 3*ms {
		t.Errorf("odd median %v", m)
	}
	if m := median([]time.Duration{4 * ms, 1 * ms, 2 * ms, 3 * ms}); m != 2500*time.Microsecond {
		t.Errorf("even median %v", m)
	}
	if median(nil) != 0 {
		t.Error("empty median")
	}
	if r := SpeedRatio(10*ms, 11*ms); math.Abs(r-1.1) > 1e-12 {
		t.Errorf("ratio %v", r)
	}
	if r := SpeedRatio(0, 5); r != 5 {
		t.Errorf("zero original: %v", r)
	}
}
