package cpuclass

import (
	"runtime"
	"testing"
)

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		goarch             string
		avxVNNI, avx512VNN bool
		want               Class
	}{
		{"amd64", false, false, AVX2},
		{"amd64", true, false, VNNI},
		{"amd64", false, true, VNNI},
		{"arm64", false, false, ARM64},
		{"riscv64", true, true, AVX2}, // unknown: the class whose format is exact everywhere
	} {
		if got := classify(tc.goarch, tc.avxVNNI, tc.avx512VNN); got != tc.want {
			t.Errorf("classify(%s, %v, %v) = %s, want %s", tc.goarch, tc.avxVNNI, tc.avx512VNN, got, tc.want)
		}
	}
	t.Logf("this CPU (%s): %s", runtime.GOARCH, Host())
}

func TestFormats(t *testing.T) {
	exact := map[Int8Format][]Class{
		FullRange:    {VNNI, ARM64},
		ReducedRange: {VNNI, AVX2, ARM64},
		Unsigned:     {VNNI, AVX2, ARM64},
	}
	for f, want := range exact {
		got := f.ExactClasses()
		if len(got) != len(want) {
			t.Fatalf("%s exact on %v, want %v", f, got, want)
		}
		for i := range got {
			if got[i] != want[i] {
				t.Errorf("%s exact on %v, want %v", f, got, want)
			}
		}
	}
	for _, c := range Classes {
		if f := Int8FormatFor(c); !f.ExactOn(c) {
			t.Errorf("%s gets %s, which is not exact there", c, f)
		}
		if p, err := Parse(string(c)); err != nil || p != c {
			t.Errorf("Parse(%s) = %s, %v", c, p, err)
		}
	}
	for _, f := range Formats {
		if p, err := ParseInt8Format(string(f)); err != nil || p != f {
			t.Errorf("ParseInt8Format(%s) = %s, %v", f, p, err)
		}
	}
	for _, bad := range []string{"", "VNNI", "sse2", "x86"} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if Int8Format("s4").ExactOn(VNNI) {
		t.Error("an unknown format is exact")
	}
}
