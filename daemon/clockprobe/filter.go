package clockprobe

import (
	"cmp"
	"slices"
	"time"
)

// sample is one ping's exchange with one peer: t0 and t3 on our clock,
// t1 and t2 on the peer's, in Unix milliseconds.
type sample struct {
	seq            uint64
	t0, t1, t2, t3 float64
}

// offset is NTP's θ: how far the peer's clock is ahead of ours, off by
// half the difference of the two legs' times.
func (s sample) offset() float64 { return ((s.t1 - s.t0) + (s.t2 - s.t3)) / 2 }

// delay is NTP's δ: the two legs' times together.
func (s sample) delay() float64 { return (s.t3 - s.t0) - (s.t2 - s.t1) }

// best is the sample of least delay (the first of equals): its legs
// differ least, as the true offset is within delay/2 of its offset.
// Averaging would let every sample that waited on one leg pull the
// offset by half that wait. samples is not empty.
func best(samples []sample) sample {
	return slices.MinFunc(samples, func(a, b sample) int { return cmp.Compare(a.delay(), b.delay()) })
}

// Peer is what a round found out about one other member.
type Peer struct {
	Node string
	// Offset is how far the peer's clock is ahead of this node's (NTP's
	// sign: negative when the peer's is behind), from the sample of least
	// Delay. The true offset lies within Delay/2 of it.
	Offset time.Duration
	// Delay is that sample's round trip, less the time the peer took to
	// answer.
	Delay time.Duration
	// Samples is how many of the round's pings the peer answered.
	Samples int
}

// Report is what one round of pings found.
type Report struct {
	// Peers are the members that answered, sorted by Node; none when no
	// member answered (the offsets then say nothing).
	Peers []Peer
	// Offset is the median of the peers' Offset (the mean of the middle
	// two of an even number): how far the group's clocks are ahead of
	// this node's. A peer whose own clock is off moves it little.
	Offset time.Duration
	// MaxOffset is the peers' Offset of largest magnitude, with its sign.
	MaxOffset time.Duration
	// MaxDelay is the largest of the peers' Delay: each peer's offset is
	// known to within half of it.
	MaxDelay time.Duration
	// At is when the round ended, on this node's clock.
	At time.Time
}

// report sums up the samples of a round, by peer.
func report(byPeer map[string][]sample, at time.Time) Report {
	r := Report{At: at}
	offsets := make([]float64, 0, len(byPeer))
	for node, samples := range byPeer {
		if len(samples) == 0 {
			continue
		}
		s := best(samples)
		p := Peer{Node: node, Offset: duration(s.offset()), Delay: duration(s.delay()), Samples: len(samples)}
		r.Peers = append(r.Peers, p)
		offsets = append(offsets, s.offset())
		if p.Delay > r.MaxDelay {
			r.MaxDelay = p.Delay
		}
		if p.Offset.Abs() > r.MaxOffset.Abs() {
			r.MaxOffset = p.Offset
		}
	}
	slices.SortFunc(r.Peers, func(a, b Peer) int { return cmp.Compare(a.Node, b.Node) })
	if len(offsets) > 0 {
		slices.Sort(offsets)
		m := len(offsets) / 2
		if len(offsets)%2 == 1 {
			r.Offset = duration(offsets[m])
		} else {
			r.Offset = duration((offsets[m-1] + offsets[m]) / 2)
		}
	}
	return r
}
