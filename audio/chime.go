package audio

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Built-in chimes: mynah can download no sound files, so it makes its own.
const (
	ChimeDing    = "ding"     // one bell-like tone, 0.6 s
	ChimeTwoTone = "two_tone" // a falling pair of tones, 1 s: an alert
)

// chimeNote is one struck tone of a chime.
type chimeNote struct {
	freq  float64       // fundamental, Hz
	start time.Duration // from the chime's start
	decay time.Duration // time constant of the fade
}

var chimes = map[string]struct {
	notes []chimeNote
	len   time.Duration
}{
	ChimeDing:    {[]chimeNote{{1318.5, 0, 150 * time.Millisecond}}, 600 * time.Millisecond},
	ChimeTwoTone: {[]chimeNote{{659.3, 0, 180 * time.Millisecond}, {523.3, 380 * time.Millisecond, 220 * time.Millisecond}}, time.Second},
}

// BuiltinChimes lists the names Chime makes, sorted.
func BuiltinChimes() []string {
	names := make([]string, 0, len(chimes))
	for n := range chimes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// Chime synthesizes a built-in chime at rate, mono, peaking at about half
// of full scale: each note a fundamental with two softer partials (a
// bell's timbre), a 5 ms attack and an exponential fade, and a 20 ms fade
// at the end so it stops without a click.
func Chime(name string, rate int) (PCM, error) {
	c, ok := chimes[name]
	if !ok {
		return PCM{}, fmt.Errorf("no built-in chime %q (there are %v)", name, BuiltinChimes())
	}
	if rate < 8000 || rate > 192000 {
		return PCM{}, fmt.Errorf("chime rate %d Hz out of range (8000 to 192000)", rate)
	}
	n := int(c.len.Seconds() * float64(rate))
	out := make([]float64, n)
	for _, note := range c.notes {
		from := int(note.start.Seconds() * float64(rate))
		for i := from; i < n; i++ {
			t := float64(i-from) / float64(rate)
			env := math.Exp(-t/note.decay.Seconds()) * min(1, t/0.005)
			v := math.Sin(2*math.Pi*note.freq*t) + 0.4*math.Sin(2*math.Pi*2*note.freq*t) + 0.15*math.Sin(2*math.Pi*3.01*note.freq*t)
			out[i] += env * v / 1.55
		}
	}
	pcm := PCM{Rate: rate, Channels: 1, Samples: make([]int16, n)}
	tail := int(0.02 * float64(rate))
	for i, v := range out {
		if left := n - 1 - i; left < tail {
			v *= float64(left) / float64(tail)
		}
		pcm.Samples[i] = int16(math.Round(max(-1, min(1, 0.5*v)) * 32767))
	}
	return pcm, nil
}
