// Package clockprobe measures how far this node's clock is from the other
// members of its groups, over the MQTT broker, the way NTP measures a
// server: a group announcement starts at one instant (play_at) of every
// member's own clock, so the members play in step only as closely as
// their clocks agree, and the kernel's NTP state (mynahd's clock_check)
// says only that a clock follows some time server, not that the members
// agree.
//
// The package has no MQTT client of its own: it speaks through the small
// Transport interface, which daemon/mqtt's Client provides
// (Client.ClockTransport). It imports nothing of the daemon.
//
// # Protocol
//
//	mynah/group/<group>/clock           pings (Topic)
//	mynah/group/<group>/clock/<node>    the pongs to one prober (ReplyTopic)
//
// A prober publishes a ping, QoS 1, not retained, on each of its groups'
// clock topics:
//
//	{"node":"kitchen","seq":17,"t0":1767225600123.456}
//
// t0 is the prober's clock when it sent the ping, in Unix milliseconds.
// Every other member (Run answers whether or not it probes itself)
// answers on the prober's reply topic:
//
//	{"node":"hall","to":"kitchen","seq":17,"t0":1767225600123.456,
//	 "t1":1767225600150.001,"t2":1767225600150.240}
//
// t0 is the ping's, echoed; t1 is the answerer's clock when the ping
// came, t2 when it sent the pong, Options.AnswerDelay (50 ms) later: with
// Mosquitto's Nagle's algorithm on, a pong sent at once waits for the
// prober's delayed ACK of its ping's PUBACK (DefaultAnswerDelay says
// more). The prober notes t3, its clock when the pong came, and has NTP's
// offset and round-trip delay of the exchange:
//
//	θ = ((t1 − t0) + (t2 − t3)) / 2    how far the peer's clock is ahead of ours
//	δ = (t3 − t0) − (t2 − t1)          the time both messages spent on the way
//
// Whatever the two legs took, the true offset lies within δ/2 of θ: θ is
// off by half the difference of the legs. The legs differ most when one
// message waited (in the broker, in a busy client, on Wi-Fi), and then δ
// is large, so of a round's samples of a peer the one of least δ is
// taken (NTP's clock filter). A round is Options.Samples pings,
// Options.Spacing apart, so that one burst of queueing does not spoil
// them all. The report gives every peer's offset and delay, and for the
// group the median of the peers' offsets (this node against the group:
// one peer with a bad clock moves it little) and the offset of largest
// magnitude.
//
// # Limits
//
// Pings and pongs are JSON objects of at most MaxPayload bytes; node
// names are 1..64 bytes of A-Z a-z 0-9 _ - (a topic level, as the
// daemon's node names); seq is 1 or more; times are Unix milliseconds
// between the years 2000 and 2200, and t2 follows t1 by at most
// MaxTurnaround. Unknown fields are ignored. A prober takes only pongs
// addressed to it, for a ping of the round in progress (seq and t0 as
// sent: a pong to an earlier process, queued in a persistent session,
// does not match), one per peer and ping, from at most Options.MaxPeers
// peers. Nobody answers its own ping (MQTT 3.1.1 hands a client its own
// messages back). An answerer queues at most answerQueue pongs and drops
// pings beyond: pings that waited in a persistent session while the node
// was away come in a burst, and would be answered too late to be of use.
package clockprobe
