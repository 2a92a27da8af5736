package audio

import (
	"math"
	"testing"
)

func TestChime(t *testing.T) {
	for _, name := range BuiltinChimes() {
		for _, rate := range []int{16000, 22050, 48000} {
			p, err := Chime(name, rate)
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(); err != nil || p.Rate != rate || p.Channels != 1 {
				t.Fatalf("%s at %d: %+v, %v", name, rate, p.Rate, err)
			}
			peak, last := 0, int(math.Abs(float64(p.Samples[len(p.Samples)-1])))
			for _, s := range p.Samples {
				peak = max(peak, int(math.Abs(float64(s))))
			}
			// Loud enough to hear, never clipping, silent at the end.
			if peak < 8000 || peak > 20000 || last > 100 {
				t.Errorf("%s at %d: peak %d, last sample %d", name, rate, peak, last)
			}
			again, _ := Chime(name, rate)
			for i := range p.Samples {
				if p.Samples[i] != again.Samples[i] {
					t.Fatalf("%s is not the same twice", name)
				}
			}
		}
	}
	if _, err := Chime("fanfare", 22050); err == nil {
		t.Error("an unknown chime made")
	}
	if _, err := Chime(ChimeDing, 100); err == nil {
		t.Error("a chime at 100 Hz made")
	}
}
