package clockprobe

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Limits of the messages.
const (
	// MaxPayload bounds a ping or pong; a pong with 64-byte names and
	// every field is under 250 bytes.
	MaxPayload = 512
	// MaxTurnaround bounds t2 − t1, how long an answerer took to answer:
	// a pong held longer says little about the clocks.
	MaxTurnaround = 10 * time.Second
	maxNameLen    = 64
)

// The times a message may carry, in Unix milliseconds: anything outside
// the years 2000 to 2200 is a broken clock or a broken message.
var (
	minTime = float64(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
	maxTime = float64(time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli())
)

// Topic is the clock topic of group, where probers ping.
func Topic(group string) string { return "mynah/group/" + group + "/clock" }

// ReplyTopic is where the members of group answer node's pings.
func ReplyTopic(group, node string) string { return Topic(group) + "/" + node }

// ping asks the members of a group for their time.
type ping struct {
	Node string  `json:"node"` // the prober
	Seq  uint64  `json:"seq"`
	T0   float64 `json:"t0"` // the prober's clock at sending, Unix ms
}

// pong answers one ping.
type pong struct {
	Node string  `json:"node"` // the answerer
	To   string  `json:"to"`   // the prober
	Seq  uint64  `json:"seq"`  // the ping's
	T0   float64 `json:"t0"`   // the ping's
	T1   float64 `json:"t1"`   // the answerer's clock when the ping came
	T2   float64 `json:"t2"`   // the answerer's clock when it sent the pong
}

// decodePing decodes and checks a ping.
func decodePing(payload []byte) (ping, error) {
	var p ping
	if err := decodeJSON(payload, &p); err != nil {
		return ping{}, err
	}
	if err := checkName("node", p.Node); err != nil {
		return ping{}, err
	}
	if p.Seq == 0 {
		return ping{}, fmt.Errorf("%w: seq missing or 0", ErrMalformed)
	}
	if err := checkTime("t0", p.T0); err != nil {
		return ping{}, err
	}
	return p, nil
}

// decodePong decodes and checks a pong.
func decodePong(payload []byte) (pong, error) {
	var p pong
	if err := decodeJSON(payload, &p); err != nil {
		return pong{}, err
	}
	if err := checkName("node", p.Node); err != nil {
		return pong{}, err
	}
	if err := checkName("to", p.To); err != nil {
		return pong{}, err
	}
	if p.Seq == 0 {
		return pong{}, fmt.Errorf("%w: seq missing or 0", ErrMalformed)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"t0", p.T0}, {"t1", p.T1}, {"t2", p.T2}} {
		if err := checkTime(f.name, f.v); err != nil {
			return pong{}, err
		}
	}
	if turn := p.T2 - p.T1; turn < 0 || turn > ms(MaxTurnaround) {
		return pong{}, fmt.Errorf("%w: t2 − t1 is %.3f ms, not 0 to %v", ErrMalformed, turn, MaxTurnaround)
	}
	return p, nil
}

func decodeJSON(payload []byte, v any) error {
	if len(payload) > MaxPayload {
		return fmt.Errorf("%w: %d bytes, over the limit of %d", ErrMalformed, len(payload), MaxPayload)
	}
	if err := json.Unmarshal(payload, v); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformed, err)
	}
	return nil
}

// checkName checks a node name as the daemon does (one MQTT topic level:
// 1..64 bytes of A-Z a-z 0-9 _ -). The package may not import the
// daemon, so the rule is copied here.
func checkName(field, name string) error {
	if name == "" || len(name) > maxNameLen {
		return fmt.Errorf("%w: %s must be 1..%d bytes, not %d", ErrMalformed, field, maxNameLen, len(name))
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %s contains %q: use A-Z a-z 0-9 _ -", ErrMalformed, field, c)
		}
	}
	return nil
}

func checkTime(field string, t float64) error {
	if math.IsNaN(t) || t < minTime || t > maxTime {
		return fmt.Errorf("%w: %s %g is not Unix milliseconds between 2000 and 2200", ErrMalformed, field, t)
	}
	return nil
}

// unixMS is t in Unix milliseconds, to the microsecond (a float64 holds
// times of this century to a quarter of one).
func unixMS(t time.Time) float64 { return float64(t.UnixMicro()) / 1000 }

// ms is d in milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// duration is x milliseconds.
func duration(x float64) time.Duration {
	return time.Duration(math.Round(x * float64(time.Millisecond)))
}
