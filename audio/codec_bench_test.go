package audio

import (
	"io"
	"testing"
)

// BenchmarkPhraseCodec measures the codec on testdata/codec/speech.wav:
// encode-MB/s and decode-MB/s (of PCM, one goroutine) and sizes relative
// to the PCM, to plain zstd at the codec's level (ratio-vs-zstd), and to
// FLAC (ratio-vs-flac: sox's default, which is -8; sizes recorded in
// speech.flac-size.txt, TestPhraseCodecVsSoxFLAC measures them live).
func BenchmarkPhraseCodec(b *testing.B) {
	p := speechPCM(b)
	rec, err := EncodePhrase(p)
	if err != nil {
		b.Fatal(err)
	}
	flac := flacSizes(b)
	ratios := func(b *testing.B) {
		n := float64(len(rec))
		b.ReportMetric(n/float64(2*len(p.Samples)), "ratio-vs-pcm")
		b.ReportMetric(n/float64(plainZstd(b, p)), "ratio-vs-zstd")
		b.ReportMetric(n/float64(flac["default"]), "ratio-vs-flac")
		b.ReportMetric(n/float64(flac["C8"]), "ratio-vs-flac8")
		b.ReportMetric(n/float64(flac["C5"]), "ratio-vs-flac5")
	}
	// mbPerSec is PCM bytes per second of the loop just run, reported under
	// its own name (not SetBytes' MB/s) so that encode and decode speed
	// stay apart in benchstat and in scripts that grep the output.
	mbPerSec := func(b *testing.B) float64 {
		return float64(2*len(p.Samples)) * float64(b.N) / b.Elapsed().Seconds() / 1e6
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := EncodePhrase(p); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(mbPerSec(b), "encode-MB/s")
		ratios(b)
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := DecodePhrase(rec); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(mbPerSec(b), "decode-MB/s")
		ratios(b)
	})
	b.Run("stream", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(2 * len(p.Samples)))
		for b.Loop() {
			d, err := NewPhraseDecoder(rec)
			if err != nil {
				b.Fatal(err)
			}
			for {
				if _, err := d.Next(0); err == io.EOF {
					break
				} else if err != nil {
					b.Fatal(err)
				}
			}
		}
	})
}

// BenchmarkPhraseFirstChunk measures the time from a record to its first
// decoded chunk, which is what a cache hit adds before the sink gets audio:
// for a typical 3 s sentence and for the whole 20 s speech file (the record
// CRC, checked up front, grows with the record).
func BenchmarkPhraseFirstChunk(b *testing.B) {
	p := speechPCM(b)
	for _, tc := range []struct {
		name    string
		samples []int16
	}{{"3s", p.Samples[:3*p.Rate]}, {"20s", p.Samples}} {
		rec, err := EncodePhrase(PCM{Rate: p.Rate, Channels: 1, Samples: tc.samples})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, err := NewPhraseDecoder(rec)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := d.Next(0); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
