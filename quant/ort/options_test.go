package ort

import (
	"errors"
	"strings"
	"testing"
)

func TestParseProvider(t *testing.T) {
	tests := []struct {
		in      string
		want    Provider
		wantErr bool
	}{
		{"", ProviderAuto, false},
		{"auto", ProviderAuto, false},
		{" CUDA ", ProviderCUDA, false},
		{"cpu", ProviderCPU, false},
		{"TensorRT", ProviderTensorRT, false},
		{"gpu", "", true},
		{"cuda,cpu", "", true},
		{"\x00", "", true},
	}
	for _, tc := range tests {
		got, err := ParseProvider(tc.in)
		if (err != nil) != tc.wantErr || got != tc.want {
			t.Errorf("ParseProvider(%q) = %q, %v; want %q, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err != nil && (!errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), "provider")) {
			t.Errorf("ParseProvider(%q) error %q should wrap ErrInvalidOptions and say provider", tc.in, err)
		}
	}
}

func TestParseGraphOptimization(t *testing.T) {
	tests := []struct {
		in      string
		want    GraphOptimization
		wantErr bool
	}{
		{"", GraphOptimizationAll, false},
		{"all", GraphOptimizationAll, false},
		{"Extended", GraphOptimizationExtended, false},
		{"basic", GraphOptimizationBasic, false},
		{"disabled", GraphOptimizationDisabled, false},
		{"none", 0, true},
		{"99", 0, true},
	}
	for _, tc := range tests {
		got, err := ParseGraphOptimization(tc.in)
		if (err != nil) != tc.wantErr || (err == nil && got != tc.want) {
			t.Errorf("ParseGraphOptimization(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.wantErr)
		}
		if err == nil && got.String() != strings.ToLower(tc.in) && tc.in != "" {
			t.Errorf("%v.String() = %q, want %q", got, got.String(), strings.ToLower(tc.in))
		}
	}
	if s := GraphOptimization(7).String(); s != "GraphOptimization(7)" {
		t.Errorf("unknown level prints %q", s)
	}
}

func FuzzParseProvider(f *testing.F) {
	for _, s := range []string{"", "auto", "CPU", "cuda ", "tensorrt", "rocm", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParseProvider(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v does not wrap ErrInvalidOptions", err)
			}
			return
		}
		// Whatever parses must parse again to itself and be in the plan.
		again, err := ParseProvider(string(p))
		if err != nil || again != p {
			t.Fatalf("%q parsed to %q, which reparses to %q, %v", s, p, again, err)
		}
		if plan := (SessionOptions{Provider: p}).providerPlan(); plan[len(plan)-1] != ProviderCPU && p != ProviderCUDA && p != ProviderTensorRT {
			t.Fatalf("plan for %q does not end at cpu: %v", p, plan)
		}
	})
}

func FuzzParseGraphOptimization(f *testing.F) {
	for _, s := range []string{"", "all", "BASIC", " extended ", "disabled", "off"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := ParseGraphOptimization(s)
		if err != nil {
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("error %v does not wrap ErrInvalidOptions", err)
			}
			return
		}
		if again, err := ParseGraphOptimization(g.String()); err != nil || again != g {
			t.Fatalf("%q → %v → %v, %v", s, g, again, err)
		}
	})
}

func TestSessionOptionsNormalize(t *testing.T) {
	so, err := (*SessionOptions)(nil).normalize()
	if err != nil || so.Provider != ProviderAuto || so.GraphOptimization != GraphOptimizationAll || so.CPUArena || so.MemoryPattern || so.Spin {
		t.Fatalf("nil options normalize to %+v, %v; want auto provider, all optimizations, no arena, no spinning", so, err)
	}
	bad := []struct {
		opts  SessionOptions
		field string
	}{
		{SessionOptions{IntraOpThreads: -1}, "IntraOpThreads"},
		{SessionOptions{IntraOpThreads: MaxThreads + 1}, "MaxThreads"},
		{SessionOptions{InterOpThreads: -2}, "InterOpThreads"},
		{SessionOptions{GraphOptimization: 9}, "GraphOptimization"},
		{SessionOptions{Provider: "rocm"}, "Provider"},
		{SessionOptions{CUDADevice: -1}, "CUDADevice"},
	}
	for _, tc := range bad {
		_, err := tc.opts.normalize()
		if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(err.Error(), tc.field) {
			t.Errorf("normalize(%+v) = %v; want ErrInvalidOptions naming %s", tc.opts, err, tc.field)
		}
	}
}

func TestProviderPlan(t *testing.T) {
	tests := []struct {
		opts SessionOptions
		want string
	}{
		{SessionOptions{Provider: ProviderAuto}, "cuda cpu"},
		{SessionOptions{Provider: ProviderAuto, TensorRTCacheDir: "/var/cache/mynah/trt"}, "tensorrt cuda cpu"},
		{SessionOptions{Provider: ProviderCPU}, "cpu"},
		{SessionOptions{Provider: ProviderCUDA}, "cuda"},
		{SessionOptions{Provider: ProviderTensorRT}, "tensorrt"},
	}
	for _, tc := range tests {
		var got []string
		for _, p := range tc.opts.providerPlan() {
			got = append(got, string(p))
		}
		if strings.Join(got, " ") != tc.want {
			t.Errorf("plan(%+v) = %v, want %s", tc.opts, got, tc.want)
		}
	}
}
