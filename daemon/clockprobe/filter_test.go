package clockprobe

import (
	"math"
	"testing"
	"time"
)

// exchange is a sample of a peer whose clock is offset ms ahead of ours,
// with out and back ms on the legs and 0.2 ms to answer.
func exchange(seq uint64, at, offset, out, back float64) sample {
	s := sample{seq: seq, t0: at}
	s.t1 = s.t0 + offset + out
	s.t2 = s.t1 + 0.2
	s.t3 = s.t2 - offset + back
	return s
}

// NTP's arithmetic: θ is off by half the legs' difference, δ is their sum.
func TestSampleOffsetAndDelay(t *testing.T) {
	for _, tt := range []struct {
		offset, out, back float64
	}{{25, 2, 2}, {25, 8, 2}, {-40, 0.5, 30}, {0, 0, 0}} {
		s := exchange(1, 1767225600000, tt.offset, tt.out, tt.back)
		wantTheta, wantDelta := tt.offset+(tt.out-tt.back)/2, tt.out+tt.back
		if math.Abs(s.offset()-wantTheta) > 1e-6 || math.Abs(s.delay()-wantDelta) > 1e-6 {
			t.Errorf("%+v: θ %.6f δ %.6f, want %.6f %.6f", tt, s.offset(), s.delay(), wantTheta, wantDelta)
		}
		if math.Abs(s.offset()-tt.offset) > s.delay()/2+1e-6 {
			t.Errorf("%+v: θ %.3f further than δ/2 from the true offset", tt, s.offset())
		}
	}
}

// Seven of eight pongs waited 30 ms on the way back (a busy broker): the
// sample of least delay finds the peer's +25 ms within its δ/2, where the
// mean of the samples is pulled 13 ms off.
func TestBestSampleBeatsTheMean(t *testing.T) {
	var samples []sample
	for i := range 8 {
		back := 31.0
		if i == 5 {
			back = 1.5
		}
		samples = append(samples, exchange(uint64(i+1), 1767225600000+float64(i)*75, 25, 1, back))
	}
	b := best(samples)
	if b.seq != 6 {
		t.Fatalf("best is seq %d, want 6 (the one that did not wait)", b.seq)
	}
	var mean float64
	for _, s := range samples {
		mean += s.offset() / float64(len(samples))
	}
	bestErr, meanErr := math.Abs(b.offset()-25), math.Abs(mean-25)
	t.Logf("best: θ %.3f ms (δ %.3f ms); mean θ %.3f ms", b.offset(), b.delay(), mean)
	if bestErr > b.delay()/2 || bestErr >= meanErr || meanErr < 10 {
		t.Errorf("best θ %.3f (error %.3f), mean θ %.3f (error %.3f)", b.offset(), bestErr, mean, meanErr)
	}
}

// The report: one peer per node, sorted, the median of the offsets, the
// offset of largest magnitude with its sign, the largest delay.
func TestReport(t *testing.T) {
	at := time.UnixMilli(1767225601000)
	byPeer := map[string][]sample{
		"hall":    {exchange(1, 1767225600000, 25, 1, 1), exchange(2, 1767225600075, 25, 1, 9)},
		"attic":   {exchange(1, 1767225600000, -40, 2, 2)},
		"kitchen": {exchange(3, 1767225600150, 3, 0.5, 0.5)},
		"porch":   nil,
	}
	r := report(byPeer, at)
	want := []Peer{
		{Node: "attic", Offset: -40 * time.Millisecond, Delay: 4 * time.Millisecond, Samples: 1},
		{Node: "hall", Offset: 25 * time.Millisecond, Delay: 2 * time.Millisecond, Samples: 2},
		{Node: "kitchen", Offset: 3 * time.Millisecond, Delay: time.Millisecond, Samples: 1},
	}
	if len(r.Peers) != len(want) {
		t.Fatalf("peers %+v, want %+v", r.Peers, want)
	}
	for i := range want {
		if r.Peers[i] != want[i] {
			t.Errorf("peer %d: %+v, want %+v", i, r.Peers[i], want[i])
		}
	}
	if r.Offset != 3*time.Millisecond || r.MaxOffset != -40*time.Millisecond || r.MaxDelay != 4*time.Millisecond || !r.At.Equal(at) {
		t.Errorf("offset %v, max offset %v, max delay %v, at %v; want 3ms, -40ms, 4ms, %v", r.Offset, r.MaxOffset, r.MaxDelay, r.At, at)
	}

	delete(byPeer, "kitchen")
	if r := report(byPeer, at); r.Offset != -7500*time.Microsecond {
		t.Errorf("median of -40 and +25 ms is %v, want -7.5ms", r.Offset)
	}
	if r := report(nil, at); len(r.Peers) != 0 || r.Offset != 0 || r.MaxDelay != 0 {
		t.Errorf("report of no pongs %+v, want empty", r)
	}
}
