package audio

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

func TestPCMFramesDuration(t *testing.T) {
	tests := []struct {
		p      PCM
		frames int
		dur    time.Duration
	}{
		{PCM{Rate: 22050, Channels: 1, Samples: make([]int16, 22050)}, 22050, time.Second},
		{PCM{Rate: 48000, Channels: 2, Samples: make([]int16, 48000)}, 24000, 500 * time.Millisecond},
		{PCM{Rate: 8000, Channels: 1, Samples: make([]int16, 1)}, 1, 125 * time.Microsecond},
		{PCM{Rate: 0, Channels: 1, Samples: make([]int16, 10)}, 10, 0},
		{PCM{Rate: 8000, Channels: 0, Samples: make([]int16, 10)}, 0, 0},
	}
	for _, tt := range tests {
		if got := tt.p.Frames(); got != tt.frames {
			t.Errorf("%d Hz %d ch %d samples: Frames = %d, want %d", tt.p.Rate, tt.p.Channels, len(tt.p.Samples), got, tt.frames)
		}
		if got := tt.p.Duration(); got != tt.dur {
			t.Errorf("%d Hz %d ch %d samples: Duration = %v, want %v", tt.p.Rate, tt.p.Channels, len(tt.p.Samples), got, tt.dur)
		}
	}
}

func TestPCMValidate(t *testing.T) {
	tests := []struct {
		name string
		p    PCM
		ok   bool
	}{
		{"mono", PCM{Rate: 22050, Channels: 1, Samples: []int16{1, 2}}, true},
		{"empty", PCM{Rate: 16000, Channels: 1}, true},
		{"lowest rate", PCM{Rate: MinRate, Channels: MaxChannels}, true},
		{"highest rate", PCM{Rate: MaxRate, Channels: 1}, true},
		{"rate 0", PCM{Rate: 0, Channels: 1}, false},
		{"rate below", PCM{Rate: MinRate - 1, Channels: 1}, false},
		{"rate above", PCM{Rate: MaxRate + 1, Channels: 1}, false},
		{"0 channels", PCM{Rate: 16000, Channels: 0}, false},
		{"9 channels", PCM{Rate: 16000, Channels: MaxChannels + 1}, false},
		{"partial frame", PCM{Rate: 16000, Channels: 2, Samples: []int16{1, 2, 3}}, false},
	}
	for _, tt := range tests {
		err := tt.p.Validate()
		if tt.ok && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
		if !tt.ok && !errors.Is(err, ErrInvalidPCM) {
			t.Errorf("%s: err = %v, want ErrInvalidPCM", tt.name, err)
		}
	}
}

func TestPeakNormalize(t *testing.T) {
	g := PeakTarget * math.MaxInt16
	target := int16(math.Round(g))
	got := PeakNormalize([]float32{0.1, -0.2, 0.05, 0})
	want := []int16{int16(math.Round(g / 2)), -target, int16(math.Round(g / 4)), 0}
	if !slices.Equal(got, want) {
		t.Errorf("PeakNormalize = %v, want %v", got, want)
	}
	// A loud buffer is scaled down to the same target.
	if got := PeakNormalize([]float32{3, -1.5}); !slices.Equal(got, []int16{target, -int16(math.Round(g / 2))}) {
		t.Errorf("loud: %v", got)
	}
	// Near-silence is not amplified into hiss: unity gain.
	quiet := []float32{5e-5, -3e-5, 0}
	if got := PeakNormalize(quiet); !slices.Equal(got, []int16{2, -1, 0}) {
		t.Errorf("near-silence: %v, want unity gain [2 -1 0]", got)
	}
	// NaN and Inf neither count toward the peak nor leak into the output.
	bad := []float32{float32(math.NaN()), float32(math.Inf(1)), 0.5, float32(math.Inf(-1))}
	if got := PeakNormalize(bad); !slices.Equal(got, []int16{0, 0, target, 0}) {
		t.Errorf("non-finite: %v", got)
	}
	if got := PeakNormalize(nil); len(got) != 0 {
		t.Errorf("nil: %v", got)
	}
	p := FromFloat32([]float32{1, -1}, 22050)
	if p.Rate != 22050 || p.Channels != 1 || !slices.Equal(p.Samples, []int16{target, -target}) {
		t.Errorf("FromFloat32 = %+v", p)
	}
}

func TestSilence(t *testing.T) {
	p := Silence(22050, 2, 100*time.Millisecond)
	if p.Frames() != 2205 || len(p.Samples) != 4410 || p.Rate != 22050 || p.Channels != 2 {
		t.Fatalf("Silence = %d Hz %d ch %d frames", p.Rate, p.Channels, p.Frames())
	}
	for _, s := range p.Samples {
		if s != 0 {
			t.Fatal("silence is not silent")
		}
	}
	// Rounded to the nearest frame: 1/16000 s is 0.75 frame at 12 kHz.
	if n := Silence(12000, 1, time.Second/16000).Frames(); n != 1 {
		t.Errorf("0.75 frame rounds to %d", n)
	}
	if n := Silence(16000, 1, -time.Second).Frames(); n != 0 {
		t.Errorf("negative duration gives %d frames", n)
	}
}

func TestApplyVolume(t *testing.T) {
	in := PCM{Rate: 16000, Channels: 1, Samples: []int16{1000, -1000, 32767, -32768, 3}}
	tests := []struct {
		v    float64
		want []int16
	}{
		{1, []int16{1000, -1000, 32767, -32768, 3}},
		{2, []int16{1000, -1000, 32767, -32768, 3}},
		{math.NaN(), []int16{1000, -1000, 32767, -32768, 3}},
		{0.5, []int16{500, -500, 16384, -16384, 2}},
		{0.25, []int16{250, -250, 8192, -8192, 1}},
		{0, []int16{0, 0, 0, 0, 0}},
		{-1, []int16{0, 0, 0, 0, 0}},
	}
	for _, tt := range tests {
		out := ApplyVolume(in, tt.v)
		if !slices.Equal(out.Samples, tt.want) {
			t.Errorf("volume %v: %v, want %v", tt.v, out.Samples, tt.want)
		}
		if out.Rate != in.Rate || out.Channels != in.Channels {
			t.Errorf("volume %v changed the format", tt.v)
		}
		out.Samples[0] = 7
		if in.Samples[0] != 1000 {
			t.Fatalf("volume %v: result shares memory with the input", tt.v)
		}
	}
}

func TestToChannels(t *testing.T) {
	stereo := PCM{Rate: 16000, Channels: 2, Samples: []int16{10, 20, -1, -2, 32767, 32767, -32768, -32768}}
	mono, err := ToChannels(stereo, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(mono.Samples, []int16{15, -2, 32767, -32768}) || mono.Channels != 1 {
		t.Errorf("stereo->mono = %v", mono.Samples)
	}
	back, err := ToChannels(mono, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(back.Samples, []int16{15, 15, -2, -2, 32767, 32767, -32768, -32768}) {
		t.Errorf("mono->stereo = %v", back.Samples)
	}
	quad, err := ToChannels(stereo, 4)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(quad.Samples[:8], []int16{10, 20, 10, 20, -1, -2, -1, -2}) {
		t.Errorf("stereo->quad = %v", quad.Samples[:8])
	}
	same, err := ToChannels(stereo, 2)
	if err != nil || !slices.Equal(same.Samples, stereo.Samples) {
		t.Errorf("stereo->stereo = %v, %v", same.Samples, err)
	}
	same.Samples[0] = 99
	if stereo.Samples[0] != 10 {
		t.Error("same-layout result shares memory with the input")
	}
	for _, ch := range []int{0, MaxChannels + 1} {
		if _, err := ToChannels(stereo, ch); !errors.Is(err, ErrInvalidPCM) {
			t.Errorf("%d channels: err = %v", ch, err)
		}
	}
	if _, err := ToChannels(PCM{Rate: 16000, Channels: 2, Samples: []int16{1}}, 1); !errors.Is(err, ErrInvalidPCM) {
		t.Errorf("partial frame: err = %v", err)
	}
}

func TestConvert(t *testing.T) {
	in := sine(16000, 2, 440, 0.3, 1600)
	out, err := Convert(in, 24000, 1)
	if err != nil {
		t.Fatal(err)
	}
	if out.Rate != 24000 || out.Channels != 1 || out.Frames() != 2400 {
		t.Errorf("Convert = %d Hz %d ch %d frames", out.Rate, out.Channels, out.Frames())
	}
	out, err = Convert(in, 16000, 2)
	if err != nil || !slices.Equal(out.Samples, in.Samples) {
		t.Errorf("identity Convert changed the audio (%v)", err)
	}
}

// TestAppendS16LE checks both ways of writing samples (the CPU's own
// memory on little-endian machines, byte by byte elsewhere) against the
// format's definition: low byte first, two's complement.
func TestAppendS16LE(t *testing.T) {
	long := make([]int16, 1000)
	for i := range long {
		long[i] = int16(i*131 - 32768)
	}
	for _, tt := range []struct {
		name string
		dst  []byte
		s    []int16
	}{
		{"nothing", nil, nil},
		{"nothing onto bytes", []byte("RIFF"), []int16{}},
		{"extremes", nil, []int16{0, 1, -1, 32767, -32768, 256, -256}},
		{"onto bytes", []byte{9, 8, 7}, []int16{0x1234, -2}},
		{"long", make([]byte, 0, 3), long},
	} {
		want := slices.Clone(tt.dst)
		for _, v := range tt.s {
			want = append(want, byte(uint16(v)), byte(uint16(v)>>8))
		}
		for name, f := range map[string]func([]byte, []int16) []byte{"AppendS16LE": AppendS16LE, "bytewise": appendS16LEBytewise} {
			got := f(slices.Clone(tt.dst), tt.s)
			if !slices.Equal(got, want) {
				t.Errorf("%s %s: got % x, want % x", name, tt.name, got, want)
			}
		}
		if got := S16LEView(tt.s); !slices.Equal(got, want[len(tt.dst):]) {
			t.Errorf("S16LEView %s: got % x, want % x", tt.name, got, want[len(tt.dst):])
		}
	}
	// On this CPU's byte order the view is the samples' memory.
	s := []int16{1, 2}
	v := S16LEView(s)
	s[0] = 0x0102
	if shared := v[0] == 2 && v[1] == 1; shared != littleEndian {
		t.Errorf("view % x after the samples changed: shared %v, little-endian CPU %v", v, shared, littleEndian)
	}
}

func BenchmarkAppendS16LE(b *testing.B) {
	s := make([]int16, 44100) // 2 s at 22050 Hz
	for i := range s {
		s[i] = int16(i)
	}
	buf := make([]byte, 0, 2*len(s))
	b.SetBytes(int64(2 * len(s)))
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendS16LE(buf[:0], s)
	}
}
