package voice_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/voice"
)

// FuzzEnroll feeds Enroll what a reference upload can decode to: any
// rate (valid or not), one to three channels, any samples, any length up
// to past the encoder's max_seconds. Enroll must never fail otherwise than
// with ErrReference, and what it accepts must be a usable speaker.
func FuzzEnroll(f *testing.F) {
	p := loadPipeline(f, cloneKit(f, nil), nil)
	voiced := referenceClip(f, "robin", refC)
	raw := make([]byte, 2*len(voiced.Samples))
	for i, s := range voiced.Samples {
		binary.LittleEndian.PutUint16(raw[2*i:], uint16(s))
	}
	f.Add(raw, uint8(3), uint8(0), uint16(25))        // the demo voice, 2.5 s at 22.05 kHz
	f.Add(raw[:4000], uint8(2), uint8(1), uint16(15)) // a snippet looped, stereo
	f.Add([]byte{}, uint8(0), uint8(0), uint16(20))   // silence
	f.Add([]byte{0xff, 0x7f, 0x00, 0x80}, uint8(5), uint8(2), uint16(12))
	f.Add([]byte{1, 2}, uint8(6), uint8(3), uint16(5)) // no rate, no channels
	f.Add(raw[:64], uint8(1), uint8(0), uint16(305))   // over max_seconds
	rates := []int{8000, 11025, 16000, 22050, 44100, 48000, 0, 7999, 200000}
	f.Fuzz(func(t *testing.T, raw []byte, rateSel, chanSel uint8, tenths uint16) {
		pcm := audio.PCM{Rate: rates[int(rateSel)%len(rates)], Channels: int(chanSel % 4)}
		// Up to 12 s, or just around max_seconds (30 s): long clips are
		// slow to run and no different inside.
		t10 := int(tenths % 350)
		if t10 > 120 && t10 < 295 {
			t10 %= 120
		}
		frames := t10 * max(pcm.Rate, 0) / 10
		pcm.Samples = make([]int16, frames*pcm.Channels)
		if n := len(raw) / 2; n > 0 {
			for i := range pcm.Samples {
				pcm.Samples[i] = int16(binary.LittleEndian.Uint16(raw[2*(i%n):]))
			}
		}
		e, err := p.Enroll(context.Background(), pcm)
		if err != nil {
			if !errors.Is(err, voice.ErrReference) {
				t.Fatalf("%d Hz, %d channels, %d frames: %v, want ErrReference", pcm.Rate, pcm.Channels, frames, err)
			}
			return
		}
		if err := p.CheckEmbedding(e); err != nil {
			t.Fatalf("Enroll accepted an embedding CheckEmbedding refuses: %v", err)
		}
	})
}

// FuzzEmbedding runs stored embeddings as a damaged store could hand them
// back: values replaced by arbitrary float32 bits, prompt ids by
// arbitrary 16-bit numbers, either cut short, the encoder digest changed.
// CheckEmbedding must refuse them with its errors or accept them, and
// an accepted one must speak.
func FuzzEmbedding(f *testing.F) {
	p := loadPipeline(f, cloneKit(f, nil), nil)
	base := enroll(f, p, referenceClip(f, "heron", refA))
	f.Add([]byte{}, []byte{}, uint8(0), false)
	f.Add([]byte{0, 0, 0xc0, 0x7f}, []byte{}, uint8(0), false) // NaN
	f.Add([]byte{0, 0, 0x80, 0x3f, 0, 0, 0, 0}, []byte{0xff, 0xff}, uint8(0), false)
	f.Add([]byte{}, []byte{0x10, 0, 0x20, 0}, uint8(3), false)
	f.Add([]byte{}, []byte{}, uint8(0), true)
	f.Fuzz(func(t *testing.T, vec, prompt []byte, cut uint8, otherEncoder bool) {
		e := base.Clone()
		for i := 0; 4*i+4 <= len(vec) && i < len(e.Vector); i++ {
			e.Vector[i] = math.Float32frombits(binary.LittleEndian.Uint32(vec[4*i:]))
		}
		for i := 0; 2*i+2 <= len(prompt) && i < len(e.Prompt); i++ {
			e.Prompt[i] = int64(int16(binary.LittleEndian.Uint16(prompt[2*i:])))
		}
		switch cut % 4 {
		case 1:
			e.Vector = e.Vector[:len(e.Vector)-int(cut)/4%len(e.Vector)]
		case 2:
			e.Prompt = e.Prompt[:len(e.Prompt)-int(cut)/4%len(e.Prompt)]
		}
		if otherEncoder {
			e.EncoderDigest = string(vec)
		}
		if d := e.Digest(); d != e.Clone().Digest() || len(d) != 64 {
			t.Fatalf("digest %q is not stable", d)
		}
		err := p.CheckEmbedding(e)
		if err != nil {
			if !errors.Is(err, voice.ErrInvalidEmbedding) && !errors.Is(err, voice.ErrReenroll) {
				t.Fatalf("CheckEmbedding: %v", err)
			}
			return
		}
		prm, err := p.Resolve(voice.PipelineRequest{Speaker: &e})
		if err != nil {
			t.Fatal(err)
		}
		pcm, _, err := p.SynthesizeSentence(context.Background(), "Hi.", prm)
		if err != nil || pcm.Frames() == 0 {
			t.Fatalf("an accepted embedding does not speak: %d frames, %v", pcm.Frames(), err)
		}
	})
}
