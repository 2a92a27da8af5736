// Package systemd is mynahd's side of the service manager: sd_notify
// (READY, STOPPING, STATUS, the watchdog) and log lines the journal reads
// with their priority. The unit file and the example config live beside
// it (mynahd.service, mynahd.yaml).
package systemd

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	sd "github.com/coreos/go-systemd/v22/daemon"
)

// A Notifier tells systemd's service manager how the daemon is doing, through
// $NOTIFY_SOCKET (sd_notify(3)). Outside systemd, where NOTIFY_SOCKET is
// not set, every method does nothing and returns nil, so mynahd runs the
// same way in a terminal.
type Notifier struct {
	log *slog.Logger
}

// NewNotifier returns a Notifier that logs to log (nil discards).
func NewNotifier(log *slog.Logger) *Notifier {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Notifier{log: log}
}

func (n *Notifier) send(state string) error {
	// unsetEnvironment=false: the socket is needed for every later
	// message (watchdog pings, STOPPING=1), not just the first.
	if _, err := sd.SdNotify(false, state); err != nil {
		return fmt.Errorf("sd_notify %s: %w", strings.SplitN(state, "=", 2)[0], err)
	}
	return nil
}

// Ready says start-up is finished: the voice is loaded and the broker
// connected. systemd then considers the unit started and arms the watchdog.
func (n *Notifier) Ready() error { return n.send(sd.SdNotifyReady) }

// Stopping says mynahd has begun shutting down, so systemd does not read
// the coming silence as a failure.
func (n *Notifier) Stopping() error { return n.send(sd.SdNotifyStopping) }

// Status sets the one-line status `systemctl status mynahd` shows. Line
// breaks are replaced by spaces: each line of a notification is a separate
// assignment, and text must not turn into one (such as READY=1).
func (n *Notifier) Status(s string) error {
	s = strings.NewReplacer("\n", " ", "\r", " ").Replace(s)
	return n.send("STATUS=" + s)
}

// ExtendTimeout asks systemd for d more time to start or stop (for example
// while the demo voice is built on first start), counted from now.
func (n *Notifier) ExtendTimeout(d time.Duration) error {
	return n.send(fmt.Sprintf("EXTEND_TIMEOUT_USEC=%d", d.Microseconds()))
}

// RunWatchdog keeps systemd's watchdog (WatchdogSec=, seen as
// $WATCHDOG_USEC) fed: every half interval it calls healthy and sends
// WATCHDOG=1 only if healthy returns true. A stuck synthesis or audio write
// makes healthy false, the pings stop, and systemd restarts mynahd.
//
// When the watchdog is not enabled for this process it returns nil at once
// without calling healthy; otherwise it runs until ctx ends and returns nil.
// healthy must not block: it runs on the watchdog's own schedule.
func (n *Notifier) RunWatchdog(ctx context.Context, healthy func() bool) error {
	interval, err := sd.SdWatchdogEnabled(false)
	if err != nil {
		return fmt.Errorf("systemd watchdog: %w", err)
	}
	if interval <= 0 {
		return nil
	}
	tick := time.NewTicker(interval / 2)
	defer tick.Stop()
	n.log.Debug("watchdog on", "interval", interval)
	wasHealthy := true
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		ok := healthy()
		if ok != wasHealthy {
			if ok {
				n.log.Info("watchdog: workers progress again, pings resumed")
			} else {
				n.log.Warn("watchdog: a worker is stuck, pings withheld; systemd restarts mynahd unless it recovers",
					"watchdog_interval", interval)
			}
			wasHealthy = ok
		}
		if !ok {
			continue
		}
		if err := n.send(sd.SdNotifyWatchdog); err != nil {
			// Not fatal: if pings keep failing, systemd restarts us, which
			// is the right outcome.
			n.log.Warn("watchdog ping failed", "err", err)
		}
	}
}
