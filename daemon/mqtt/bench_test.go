package mqtt_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

// benchRoundTrip measures publish → handler latency on loopback: one
// Client publishes at QoS 1 and another receives, one message at a time.
// Run with -benchtime=1000x (at least 200) for stable percentiles.
func benchRoundTrip(b *testing.B, url string) {
	node := uniq()
	topic := "mynah/" + node + "/say"
	recvAt := make(chan time.Time, 1)
	rx := connectClient(b, url, node, nil)
	if err := rx.Subscribe([]string{topic}, func(daemon.Message) { recvAt <- time.Now() }, nil); err != nil {
		b.Fatal(err)
	}
	rx.waitConnected(b)
	tx := connectClient(b, url, node+"-tx", nil)
	payload := []byte("hello from the benchmark")
	ctx := context.Background()

	lat := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		if err := tx.Publish(ctx, topic, payload, false); err != nil {
			b.Fatal(err)
		}
		select {
		case at := <-recvAt:
			lat = append(lat, at.Sub(start))
		case <-time.After(wait):
			b.Fatalf("message not received within %v", wait)
		}
	}
	b.StopTimer()
	slices.Sort(lat)
	pct := func(p float64) float64 {
		return float64(lat[int(p*float64(len(lat)-1))]) / float64(time.Millisecond)
	}
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(float64(len(lat)), "samples")
}

func BenchmarkRoundTripMosquitto(b *testing.B) {
	benchRoundTrip(b, mqtttest.StartMosquittoWith(b, &mqtttest.MosquittoOptions{NoAutosave: true}).URL())
}

func BenchmarkRoundTripEmbedded(b *testing.B) {
	benchRoundTrip(b, mqtttest.StartEmbedded(b).URL())
}
