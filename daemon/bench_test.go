package daemon

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

func BenchmarkDecodeSay(b *testing.B) {
	for _, bc := range []struct{ name, payload string }{
		{"plain", "The washing machine has finished."},
		{"json", `{"id":"wm-1","text":"The washing machine has finished.","voice":"en_US-lessac-medium","priority":"alert","volume":0.8,"rate":1.1,"ttl":30}`},
	} {
		b.Run(bc.name, func(b *testing.B) {
			p := []byte(bc.payload)
			b.ReportAllocs()
			b.SetBytes(int64(len(p)))
			for b.Loop() {
				if _, err := DecodeSay(p, t0, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSayToFirstAudio measures the daemon's own share of "publish →
// first PCM at the sink": from the MQTT handler call to the sink's first
// Write, with an engine and a sink that take no time. It reports the
// median and 99th percentile.
func BenchmarkSayToFirstAudio(b *testing.B) {
	pcm := audio.PCM{Rate: 22050, Channels: 1, Samples: make([]int16, 22050/2)}
	written := make(chan time.Time, 1)
	eng := &fakeEngine{
		VoicesFunc: func() []string { return []string{"v"} },
		SpeakFunc: func(ctx context.Context, s Speech, emit func(Chunk) error) error {
			return emit(Chunk{PCM: pcm, Last: true})
		},
	}
	first := true // only the worker goroutine touches it
	sink := &fakeSink{
		WriteFunc: func(ctx context.Context, p audio.PCM) error {
			if first {
				written <- time.Now()
				first = false
			}
			return nil
		},
		DrainFunc: func(ctx context.Context) error { first = true; return nil },
		AbortFunc: func() error { return nil },
	}
	subscribed := make(chan func(Message), 1)
	tr := &fakeTransport{
		SubscribeFunc: func(_ []string, h func(Message)) error { subscribed <- h; return nil },
		PublishFunc:   func(context.Context, string, []byte, bool) error { return nil },
	}
	d, err := New(&Options{Transport: tr, Engine: eng, Sink: sink, StateInterval: time.Hour})
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- d.Run(ctx) }()
	handle := <-subscribed
	var lat []time.Duration
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		start := time.Now()
		handle(Message{Topic: "mynah/mynah/say", Payload: fmt.Appendf(nil, `{"id":"b%d","text":"Hello."}`, i)})
		lat = append(lat, (<-written).Sub(start))
	}
	b.StopTimer()
	cancel()
	if err := <-done; err != nil {
		b.Fatal(err)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
