package main

import (
	"context"
	"log/slog"
	"time"

	"github.com/mynah-tts/mynah/cmd/internal/config"
	"github.com/mynah-tts/mynah/daemon"
	"github.com/mynah-tts/mynah/daemon/clockprobe"
)

// probeGroupClocks answers the clock probes of the other members of g's
// groups and, with groups.clock_probe set, probes them every clock_probe,
// handing each round to report (the daemon's ClockOffsetChanged), until
// ctx ends. mynahd runs it on every node with groups, probing or not:
// answering costs a pong per ping, and a node that probes then finds
// every member, whatever their own clock_probe says.
func probeGroupClocks(ctx context.Context, node string, g config.Groups, tr clockprobe.Transport, report func(daemon.ClockOffset), log *slog.Logger) {
	opts := &clockprobe.Options{Node: node, Groups: g.Names, Every: g.ClockProbe, Logger: log}
	if g.ClockProbe > 0 {
		opts.Report = func(r clockprobe.Report) { report(clockOffset(r)) }
	}
	if err := clockprobe.Run(ctx, tr, opts); err != nil {
		log.Warn("clock probe not running: the other members cannot measure their clocks against this one", "err", err)
	}
}

// clockOffset is the state's part of a probe round's report.
func clockOffset(r clockprobe.Report) daemon.ClockOffset {
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return daemon.ClockOffset{OffsetMS: ms(r.Offset), MaxOffsetMS: ms(r.MaxOffset), DelayMS: ms(r.MaxDelay), Peers: len(r.Peers)}
}
