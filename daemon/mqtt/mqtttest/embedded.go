package mqtttest

import (
	"testing"

	"github.com/mynah-tts/mynah/daemon/mqtt"
)

// StartEmbedded starts the embedded broker on 127.0.0.1 and a free port
// and closes it when the test ends. Its URL method gives the broker URL.
func StartEmbedded(tb testing.TB) *mqtt.Broker {
	tb.Helper()
	b, err := mqtt.StartBroker(&mqtt.BrokerOptions{Addr: "127.0.0.1:0"})
	if err != nil {
		tb.Fatalf("mqtttest: start embedded broker: %v", err)
	}
	tb.Cleanup(func() { _ = b.Close() })
	return b
}
