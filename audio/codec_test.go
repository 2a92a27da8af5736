package audio

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// speechPCM is testdata/codec/speech.wav: three speakers of the demo voice,
// 20 s at 22.05 kHz (see speech.flac-size.txt for how it was made).
func speechPCM(tb testing.TB) PCM {
	tb.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "codec", "speech.wav"))
	if err != nil {
		tb.Fatal(err)
	}
	p, err := DecodeWAV(b, nil)
	if err != nil {
		tb.Fatal(err)
	}
	return p
}

// speechLike is a more natural test signal than the demo voice: syllables
// of 120-320 ms, voiced (a glottal pulse train at a wandering pitch) or
// unvoiced (noise), through two formant resonators that glide between
// random vowel targets, under a raised-cosine envelope, with pauses, and a
// microphone-like noise floor everywhere (about -66 dBFS) that a synthetic
// voice lacks.
func speechLike(rate int, seconds float64, seed uint64) PCM {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	n := int(seconds * float64(rate))
	out := make([]int16, n)
	fs := float64(rate)
	// resonator is a two-pole band-pass filter at freq with bandwidth bw.
	type resonator struct{ y1, y2 float64 }
	step := func(r *resonator, in, freq, bw float64) float64 {
		rad := math.Exp(-math.Pi * bw / fs)
		y := in + 2*rad*math.Cos(2*math.Pi*freq/fs)*r.y1 - rad*rad*r.y2
		r.y2, r.y1 = r.y1, y
		return y * (1 - rad)
	}
	var f1r, f2r resonator
	f1, f2, f0 := 500.0, 1500.0, 140.0
	phase := 0.0
	for i := 0; i < n; {
		syl := int((0.12 + 0.2*rng.Float64()) * fs)
		voiced := rng.Float64() < 0.75
		t1, t2 := 300+500*rng.Float64(), 900+1600*rng.Float64()
		amp := 2000 + 9000*rng.Float64()
		for j := 0; j < syl && i < n; j, i = j+1, i+1 {
			f1 += (t1 - f1) * 40 / fs
			f2 += (t2 - f2) * 40 / fs
			f0 += (rng.Float64() - 0.5) * 2
			f0 = min(max(f0, 90), 240)
			var src float64
			if voiced {
				phase += f0 / fs
				if phase >= 1 {
					phase--
					src = 60
				}
				src += 0.3 * rng.NormFloat64()
			} else {
				src = 2 * rng.NormFloat64()
			}
			env := 0.5 * (1 - math.Cos(2*math.Pi*float64(j)/float64(syl)))
			v := amp * env * (step(&f1r, src, f1, 90) + 0.6*step(&f2r, src, f2, 150))
			out[i] = clampInt16(v + 16*rng.NormFloat64())
		}
		if rng.Float64() < 0.3 { // a pause between words
			for j := int(fs * 0.15 * rng.Float64()); j > 0 && i < n; j, i = j-1, i+1 {
				out[i] = clampInt16(16 * rng.NormFloat64())
			}
		}
	}
	return PCM{Rate: rate, Channels: 1, Samples: out}
}

// fullScaleNoise is uniformly random int16, both extremes included.
func fullScaleNoise(n int, seed uint64) []int16 {
	rng := rand.New(rand.NewPCG(seed, 1))
	s := make([]int16, n)
	for i := range s {
		s[i] = int16(rng.Uint32())
	}
	s[0], s[n/2] = math.MinInt16, math.MaxInt16
	return s
}

// interleave makes a multichannel PCM from one channel per slice.
func interleave(rate int, chans ...[]int16) PCM {
	p := PCM{Rate: rate, Channels: len(chans), Samples: make([]int16, len(chans[0])*len(chans))}
	for c, s := range chans {
		for f, v := range s {
			p.Samples[f*len(chans)+c] = v
		}
	}
	return p
}

// codecCases are the signals every round-trip test covers.
func codecCases(tb testing.TB) []struct {
	name string
	p    PCM
} {
	speech := speechPCM(tb)
	like := speechLike(22050, 6, 1)
	extremes := make([]int16, 5000)
	for i := range extremes {
		extremes[i] = math.MinInt16
		if i%3 == 1 {
			extremes[i] = math.MaxInt16
		}
	}
	ramp := make([]int16, 70000)
	for i := range ramp {
		ramp[i] = int16(i * 7)
	}
	return []struct {
		name string
		p    PCM
	}{
		{"speech", speech},
		{"speech-like", like},
		{"silence", PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 16000)}},
		{"full-scale noise", PCM{Rate: 48000, Channels: 1, Samples: fullScaleNoise(20000, 2)}},
		{"extremes", PCM{Rate: 8000, Channels: 1, Samples: extremes}},
		{"wrapping ramp", PCM{Rate: 8000, Channels: 1, Samples: ramp}},
		{"dc -32768", PCM{Rate: 8000, Channels: 1, Samples: slices.Repeat([]int16{math.MinInt16}, 3000)}},
		{"sine", sine(24000, 1, 440, 0.9, 30000)},
		{"1 sample", PCM{Rate: 22050, Channels: 1, Samples: []int16{-1234}}},
		{"1 extreme sample", PCM{Rate: 22050, Channels: 1, Samples: []int16{math.MinInt16}}},
		{"empty", PCM{Rate: 22050, Channels: 1}},
		{"empty stereo", PCM{Rate: 44100, Channels: 2}},
		{"first chunk - 1", PCM{Rate: 16000, Channels: 1, Samples: like.Samples[:phraseFirstChunkSamples-1]}},
		{"first chunk", PCM{Rate: 16000, Channels: 1, Samples: like.Samples[:phraseFirstChunkSamples]}},
		{"first chunk + 1", PCM{Rate: 16000, Channels: 1, Samples: like.Samples[:phraseFirstChunkSamples+1]}},
		{"two chunks", PCM{Rate: 16000, Channels: 1, Samples: like.Samples[:phraseFirstChunkSamples+phraseChunkSamples]}},
		{"two chunks + 1", PCM{Rate: 16000, Channels: 1, Samples: like.Samples[:phraseFirstChunkSamples+phraseChunkSamples+1]}},
		{"stereo", interleave(44100, like.Samples[:50001], speech.Samples[:50001])},
		{"stereo noise", interleave(48000, fullScaleNoise(9000, 3), like.Samples[:9000])},
		{"3 channels", interleave(16000, like.Samples[:7001], speech.Samples[:7001], fullScaleNoise(7001, 4))},
		{"8 channels", interleave(8000, like.Samples[:3000], speech.Samples[:3000], make([]int16, 3000), fullScaleNoise(3000, 5),
			like.Samples[3000:6000], speech.Samples[9000:12000], extremes[:3000], ramp[:3000])},
	}
}

func TestPhraseRoundTrip(t *testing.T) {
	for _, tc := range codecCases(t) {
		rec, err := EncodePhrase(tc.p)
		if err != nil {
			t.Fatalf("%s: encode: %v", tc.name, err)
		}
		got, err := DecodePhrase(rec)
		if err != nil {
			t.Fatalf("%s: decode: %v", tc.name, err)
		}
		if got.Rate != tc.p.Rate || got.Channels != tc.p.Channels || !slices.Equal(got.Samples, tc.p.Samples) {
			t.Errorf("%s: round trip differs: rate %d ch %d len %d, want %d %d %d",
				tc.name, got.Rate, got.Channels, len(got.Samples), tc.p.Rate, tc.p.Channels, len(tc.p.Samples))
		}
		t.Logf("%-16s %8d samples -> %8d bytes (%.3f of PCM)", tc.name, len(tc.p.Samples), len(rec),
			float64(len(rec))/float64(max(1, 2*len(tc.p.Samples))))
	}
}

func TestPhraseStreaming(t *testing.T) {
	for _, tc := range codecCases(t) {
		rec, err := EncodePhrase(tc.p)
		if err != nil {
			t.Fatal(err)
		}
		for _, limit := range []int{0, 1, 100, 4096, 1 << 20} {
			limit = limit - limit%tc.p.Channels
			if limit == 0 && tc.p.Channels > 1 {
				continue
			}
			d, err := NewPhraseDecoder(rec)
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if r, c := d.Format(); r != tc.p.Rate || c != tc.p.Channels || d.Len() != len(tc.p.Samples) {
				t.Fatalf("%s: Format %d %d Len %d", tc.name, r, c, d.Len())
			}
			var all []int16
			for {
				s, err := d.Next(limit)
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatalf("%s limit %d: %v", tc.name, limit, err)
				}
				if len(s) == 0 || len(s)%tc.p.Channels != 0 || (limit > 0 && len(s) > limit) {
					t.Fatalf("%s limit %d: Next gave %d samples", tc.name, limit, len(s))
				}
				all = append(all, s...)
			}
			if !slices.Equal(all, tc.p.Samples) {
				t.Errorf("%s limit %d: streamed samples differ from the input", tc.name, limit)
			}
			if _, err := d.Next(limit); err != io.EOF {
				t.Errorf("%s: Next after the end: %v, want io.EOF", tc.name, err)
			}
		}
	}
}

// The first chunk is handed out after decoding that chunk alone.
func TestPhraseFirstChunkAlone(t *testing.T) {
	p := speechPCM(t)
	rec, err := EncodePhrase(p)
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewPhraseDecoder(rec)
	if err != nil {
		t.Fatal(err)
	}
	first, err := d.Next(0)
	if err != nil {
		t.Fatal(err)
	}
	if d.chunks != 1 || d.done != len(first) {
		t.Errorf("after the first Next: %d chunks and %d samples decoded, want 1 and %d", d.chunks, d.done, len(first))
	}
	if len(first) != phraseFirstChunkSamples || !slices.Equal(first, p.Samples[:len(first)]) {
		t.Errorf("first chunk: %d samples, want the first %d of the input", len(first), phraseFirstChunkSamples)
	}
	// Damage to a later chunk's compressed bytes (with the record CRC made
	// to match) does not stop the first chunk, and stops the stream there.
	_, z1 := chunkSpans(t, rec, 1)
	bad := bytes.Clone(rec)
	bad[z1+len(rec[z1:])/4] ^= 0x55 // inside chunk 1 or later
	fixRecordCRC(bad)
	d, err = NewPhraseDecoder(bad)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := d.Next(0); err != nil || !slices.Equal(s, p.Samples[:len(s)]) {
		t.Fatalf("first chunk of a record damaged later: %v", err)
	}
	for err == nil {
		_, err = d.Next(0)
	}
	if !errors.Is(err, ErrCorruptPhrase) {
		t.Errorf("damaged later chunk: %v, want ErrCorruptPhrase", err)
	}
}

// Encoders and decoders share the zstd coders and scratch pools; run
// this with -race.
func TestPhraseConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := speechLike(16000, 0.7, uint64(100+g))
			if g%2 == 1 {
				p = interleave(16000, p.Samples, fullScaleNoise(len(p.Samples), uint64(g)))
			}
			for range 5 {
				rec, err := EncodePhrase(p)
				if err != nil {
					errs <- err
					return
				}
				d, err := NewPhraseDecoder(rec)
				if err != nil {
					errs <- err
					return
				}
				var all []int16
				for {
					s, err := d.Next(700 - 700%p.Channels)
					if err == io.EOF {
						break
					}
					if err != nil {
						errs <- err
						return
					}
					all = append(all, s...)
				}
				if !slices.Equal(all, p.Samples) {
					errs <- fmt.Errorf("goroutine %d: round trip differs", g)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestPhraseNextMaxBelowFrame(t *testing.T) {
	rec, err := EncodePhrase(interleave(8000, []int16{1, 2, 3}, []int16{4, 5, 6}))
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewPhraseDecoder(rec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Next(1); err == nil {
		t.Error("Next(1) on stereo: no error")
	}
	if s, err := d.Next(3); err != nil || !slices.Equal(s, []int16{1, 4}) {
		t.Errorf("Next(3) on stereo = %v, %v; want one frame", s, err)
	}
}

func TestEncodePhraseErrors(t *testing.T) {
	tests := []struct {
		name string
		p    PCM
		want string
	}{
		{"rate 0", PCM{Channels: 1, Samples: []int16{1}}, "rate 0"},
		{"partial frame", PCM{Rate: 8000, Channels: 2, Samples: []int16{1}}, "whole number"},
		{"too long", PCM{Rate: 48000, Channels: 1, Samples: make([]int16, MaxPhraseSamples+1)}, "MaxPhraseSamples"},
	}
	for _, tt := range tests {
		_, err := EncodePhrase(tt.p)
		if !errors.Is(err, ErrInvalidPCM) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: err = %v, want ErrInvalidPCM saying %q", tt.name, err, tt.want)
		}
	}
	// The limit itself is accepted.
	if _, err := EncodePhrase(PCM{Rate: 48000, Channels: 2, Samples: make([]int16, MaxPhraseSamples)}); err != nil {
		t.Errorf("MaxPhraseSamples: %v", err)
	}
}
