package wyoming

import (
	"net"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestZeroconfZone: what Announce answers Home Assistant's browse for
// _wyoming._tcp with, without sending anything on the network.
func TestZeroconfZone(t *testing.T) {
	svc, err := zone("kitchen", 10200, []net.IP{net.IPv4(192, 168, 1, 20)})
	if err != nil {
		t.Fatal(err)
	}
	ptr := svc.Records(dns.Question{Name: ZeroconfService + ".local.", Qtype: dns.TypePTR, Qclass: dns.ClassINET})
	if len(ptr) == 0 || !strings.HasPrefix(ptr[0].(*dns.PTR).Ptr, "kitchen."+ZeroconfService) {
		t.Fatalf("PTR answer %v", ptr)
	}
	srv := svc.Records(dns.Question{Name: "kitchen." + ZeroconfService + ".local.", Qtype: dns.TypeSRV, Qclass: dns.ClassINET})
	var port uint16
	for _, r := range srv {
		if s, ok := r.(*dns.SRV); ok {
			port = s.Port
		}
	}
	if port != 10200 {
		t.Fatalf("SRV answer %v: want port 10200", srv)
	}
	if _, err := zone("kitchen", 0, nil); err == nil {
		t.Error("a zone without a port")
	}
}
