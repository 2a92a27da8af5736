package clockprobe_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/daemon/clockprobe"
	"github.com/mynah-tts/mynah/daemon/mqtt"
	"github.com/mynah-tts/mynah/daemon/mqtt/mqtttest"
)

const wait = 20 * time.Second

// Three nodes on one machine, against a real Mosquitto (Nagle's
// algorithm on, as it ships), through mynahd's MQTT client: hall shares
// the prober's clock, attic's runs 25 ms ahead. Each offset is found
// within half its round trip, and hall's, where the truth is 0, within a
// few milliseconds. Without the answerers' hold the same is true of the
// bound alone: the log shows how far off the samples then are.
func TestProbeOverMosquitto(t *testing.T) {
	for _, tt := range []struct {
		name string
		hold time.Duration
	}{{"default hold", 0}, {"no hold", time.Microsecond}} {
		t.Run(tt.name, func(t *testing.T) {
			r := probeMosquitto(t, tt.hold)
			if hall := r.Peers[1]; tt.hold == 0 && hall.Offset.Abs() >= 5*time.Millisecond {
				t.Errorf("hall, on the prober's own clock, is %v off", hall.Offset)
			}
		})
	}
}

var trueOffsets = map[string]time.Duration{"hall": 0, "attic": 25 * time.Millisecond}

// probeMosquitto runs one round of kitchen against hall and attic,
// whose answers are held hold (0: the default), checks what must hold
// whatever the timing, and returns the report.
func probeMosquitto(t *testing.T, hold time.Duration) clockprobe.Report {
	url := mqtttest.StartMosquitto(t).URL()
	for node, off := range trueOffsets {
		run(t, url, node, &clockprobe.Options{AnswerDelay: hold, Now: func() time.Time { return time.Now().Add(off) }})
	}
	reports := make(chan clockprobe.Report, 1)
	run(t, url, "kitchen", &clockprobe.Options{Every: time.Hour, Report: func(r clockprobe.Report) { reports <- r }})
	var r clockprobe.Report
	select {
	case r = <-reports:
	case <-time.After(wait):
		t.Fatalf("no report within %v", wait)
	}
	if len(r.Peers) != 2 {
		t.Fatalf("peers %+v, want attic and hall", r.Peers)
	}
	for _, p := range r.Peers {
		t.Logf("%s: offset %.3f ms (true %v), delay %.3f ms, %d samples", p.Node,
			float64(p.Offset)/1e6, trueOffsets[p.Node], float64(p.Delay)/1e6, p.Samples)
		if err := (p.Offset - trueOffsets[p.Node]).Abs(); err > p.Delay/2+time.Microsecond {
			t.Errorf("%s: offset %v is %v from the truth, more than δ/2 (%v)", p.Node, p.Offset, err, p.Delay/2)
		}
		if p.Samples == 0 || p.Samples > clockprobe.DefaultSamples {
			t.Errorf("%s: %d samples, want 1 to %d", p.Node, p.Samples, clockprobe.DefaultSamples)
		}
	}
	t.Logf("group: offset %.3f ms, max %.3f ms, max delay %.3f ms",
		float64(r.Offset)/1e6, float64(r.MaxOffset)/1e6, float64(r.MaxDelay)/1e6)
	return r
}

// run connects node to url and runs a member of group all with opts
// until the test ends; it returns once the member has subscribed.
func run(t *testing.T, url, node string, opts *clockprobe.Options) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := mqtt.Connect(ctx, &mqtt.Options{Broker: url, ClientID: "mynah-clock-" + node,
		StatusTopic: "mynah/" + node + "/status", CleanSession: true, Logger: log})
	if err != nil {
		t.Fatalf("connect %s: %v", node, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), wait)
		defer cancel()
		_ = c.Close(ctx)
	})
	tr := subscribed{Transport: c.ClockTransport(), done: make(chan struct{})}
	opts.Node, opts.Groups, opts.Logger = node, []string{"all"}, log
	rctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- clockprobe.Run(rctx, tr, opts) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run %s: %v", node, err)
		}
	})
	select {
	case <-tr.done:
	case <-time.After(wait):
		t.Fatalf("%s not subscribed within %v", node, wait)
	}
}

// subscribed says when Subscribe has returned: the broker's SUBACK is in.
type subscribed struct {
	clockprobe.Transport
	done chan struct{}
}

func (s subscribed) Subscribe(filters []string, handle func(string, []byte)) error {
	defer close(s.done)
	return s.Transport.Subscribe(filters, handle)
}
