package render

import (
	"context"
	"fmt"
	"testing"
)

// BenchmarkFetch is one Fetch through the in-memory broker: request,
// render (a ready record), chunks, reassembly and the checks. It measures
// the protocol's own cost, not the broker's or the network's.
func BenchmarkFetch(b *testing.B) {
	for _, size := range []int{8 << 10, 600 << 10, MaxRecordBytes} {
		b.Run(fmt.Sprintf("%dKiB", size>>10), func(b *testing.B) {
			record := testRecord(size, 1)
			br := newFakeBroker(b)
			startServer(b, br, "serve", func(context.Context, Request) (string, []byte, error) {
				return testKey, record, nil
			}, nil)
			c := newTestClient(b, br, "kitchen", nil)
			r := testRequest("Hello.")
			chunks := (size + MaxChunkData - 1) / MaxChunkData
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := c.Fetch(context.Background(), r); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(chunks), "messages/answer")
		})
	}
}
