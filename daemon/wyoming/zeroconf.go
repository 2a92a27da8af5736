package wyoming

import (
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"

	"github.com/hashicorp/mdns"
)

// ZeroconfService is the mDNS service type Home Assistant's Wyoming
// integration browses for.
const ZeroconfService = "_wyoming._tcp"

// zone is what Announce answers queries with: instance on port, at ips
// (nil: the host's addresses).
func zone(instance string, port int, ips []net.IP) (*mdns.MDNSService, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = instance
	}
	host = strings.TrimSuffix(strings.Split(host, ".")[0], ".") + ".local."
	svc, err := mdns.NewMDNSService(instance, ZeroconfService, "local.", host, port, ips, []string{"mynah"})
	if err != nil {
		return nil, fmt.Errorf("zeroconf: %w", err)
	}
	return svc, nil
}

// Announce advertises a Wyoming server on port as instance (mDNS,
// ZeroconfService), so that Home Assistant offers to add it, until stop
// is called. It fails where multicast is not available; the server works
// without it (add the integration by host and port).
func Announce(instance string, port int, log *slog.Logger) (stop func() error, err error) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	svc, err := zone(instance, port, nil)
	if err != nil {
		return nil, err
	}
	srv, err := mdns.NewServer(&mdns.Config{Zone: svc, Logger: slog.NewLogLogger(log.Handler(), slog.LevelDebug)})
	if err != nil {
		return nil, fmt.Errorf("zeroconf: %w", err)
	}
	return srv.Shutdown, nil
}
