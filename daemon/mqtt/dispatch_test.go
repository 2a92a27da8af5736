package mqtt

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"

	"github.com/mynah-tts/mynah/daemon"
)

// fakeMessage is a paho.Message as the router hands it over.
type fakeMessage struct {
	topic    string
	payload  []byte
	retained bool
}

func (m *fakeMessage) Duplicate() bool   { return false }
func (m *fakeMessage) Qos() byte         { return 1 }
func (m *fakeMessage) Retained() bool    { return m.retained }
func (m *fakeMessage) Topic() string     { return m.topic }
func (m *fakeMessage) MessageID() uint16 { return 1 }
func (m *fakeMessage) Payload() []byte   { return m.payload }
func (m *fakeMessage) Ack()              {}

// offlineClient is a Client whose paho client never connects, for
// exercising the dispatch logic without a broker.
func offlineClient(t *testing.T) *Client {
	t.Helper()
	c := &Client{s: &settings{log: slog.New(slog.DiscardHandler), pubTimeout: time.Second}}
	c.ctx, c.cancel = context.WithCancel(context.Background())
	t.Cleanup(c.cancel)
	c.pc = paho.NewClient(paho.NewClientOptions())
	return c
}

func collect(t *testing.T, c *Client, filters ...string) *[]daemon.Message {
	t.Helper()
	var got []daemon.Message
	if err := c.Subscribe(filters, func(m daemon.Message) { got = append(got, m) }, nil); err != nil {
		t.Fatal(err)
	}
	return &got
}

// TestHeldUntilSubscribe: messages that arrive before a matching
// Subscribe are handed to it in order; others stay held for a later one.
func TestHeldUntilSubscribe(t *testing.T) {
	c := offlineClient(t)
	src := []byte("one")
	c.onMessage(nil, &fakeMessage{topic: "mynah/n/say", payload: src, retained: true})
	c.onMessage(nil, &fakeMessage{topic: "homeassistant/status", payload: []byte("online")})
	c.onMessage(nil, &fakeMessage{topic: "mynah/n/say", payload: []byte("two")})
	src[0] = 'X' // the client must have copied the payload

	say := collect(t, c, "mynah/n/+")
	if len(*say) != 2 || string((*say)[0].Payload) != "one" || !(*say)[0].Retained ||
		string((*say)[1].Payload) != "two" || (*say)[1].Retained {
		t.Fatalf("say handler got %+v", *say)
	}
	ha := collect(t, c, "homeassistant/status")
	if len(*ha) != 1 || string((*ha)[0].Payload) != "online" {
		t.Fatalf("HA handler got %+v", *ha)
	}
	c.onMessage(nil, &fakeMessage{topic: "mynah/n/stop", payload: nil})
	if len(*say) != 3 || (*say)[2].Topic != "mynah/n/stop" || len(*ha) != 1 {
		t.Fatalf("live message: say=%d ha=%d", len(*say), len(*ha))
	}
	if len(c.pending) != 0 || c.pendingBytes != 0 {
		t.Errorf("pending list not empty: %d messages, %d bytes", len(c.pending), c.pendingBytes)
	}
}

// TestHeldBounds: the held list keeps the newest messages within
// MaxPendingMessages and MaxPendingBytes.
func TestHeldBounds(t *testing.T) {
	t.Run("count", func(t *testing.T) {
		c := offlineClient(t)
		for i := range MaxPendingMessages + 10 {
			c.onMessage(nil, &fakeMessage{topic: "a", payload: []byte(fmt.Sprint(i))})
		}
		got := collect(t, c, "a")
		if len(*got) != MaxPendingMessages {
			t.Fatalf("got %d held messages, want %d", len(*got), MaxPendingMessages)
		}
		if first := string((*got)[0].Payload); first != "10" {
			t.Errorf("oldest kept message = %s, want 10", first)
		}
	})
	t.Run("bytes", func(t *testing.T) {
		c := offlineClient(t)
		big := bytes.Repeat([]byte("x"), 1<<20)
		for range 10 {
			c.onMessage(nil, &fakeMessage{topic: "a", payload: big})
		}
		if c.pendingBytes > MaxPendingBytes {
			t.Fatalf("held %d bytes, over MaxPendingBytes", c.pendingBytes)
		}
		got := collect(t, c, "a")
		if want := MaxPendingBytes / len(big); len(*got) != want {
			t.Errorf("got %d held messages of 1 MiB, want %d", len(*got), want)
		}
	})
}

// TestEpochStore: All lists only packets of earlier connection attempts,
// and drops a packet after maxResends listings.
func TestEpochStore(t *testing.T) {
	s := newEpochStore(slog.New(slog.DiscardHandler))
	s.Open()
	pub := func(id uint16) packets.ControlPacket {
		p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
		p.TopicName, p.Qos, p.MessageID = "t", 1, id
		return p
	}
	s.newEpoch()
	s.Put("o.1", pub(1))
	if keys := s.All(); len(keys) != 0 {
		t.Fatalf("All in the same epoch = %v, want none", keys)
	}
	s.newEpoch()
	s.Put("o.2", pub(2)) // published during the new attempt
	if keys := strings.Join(s.All(), ","); keys != "o.1" {
		t.Fatalf("All = %s, want o.1", keys)
	}
	for range maxResends - 1 {
		s.newEpoch()
		s.All()
	}
	s.newEpoch()
	keys := s.All()
	if strings.Contains(strings.Join(keys, ","), "o.1") {
		t.Errorf("o.1 still listed after %d resends: %v", maxResends, keys)
	}
	if s.Get("o.1") != nil {
		t.Error("o.1 still stored after it was dropped")
	}
	s.Del("o.2")
	if keys := s.All(); len(keys) != 0 {
		t.Errorf("All after Del = %v", keys)
	}
}

func TestEpochStoreAwaitAck(t *testing.T) {
	s := newEpochStore(slog.New(slog.DiscardHandler))
	s.Open()
	pub := func(id uint16, payload []byte) packets.ControlPacket {
		p := packets.NewControlPacket(packets.Publish).(*packets.PublishPacket)
		p.TopicName, p.Qos, p.MessageID, p.Payload = "t", 1, id, payload
		return p
	}
	mine, other := []byte("finished"), []byte("finished")
	if s.awaitAck("o.1", mine) != nil {
		t.Fatal("a watch on a message not stored: it was acknowledged already")
	}
	s.Put("o.1", pub(1, other)) // a later message under the same id
	if s.awaitAck("o.1", mine) != nil {
		t.Fatal("a watch on another message's id")
	}
	s.Put("o.1", pub(1, mine))
	ack := s.awaitAck("o.1", mine)
	if ack == nil {
		t.Fatal("no watch on a message paho still holds for resending")
	}
	s.Del("o.1") // its PUBACK
	if acked := <-ack; !acked {
		t.Error("PUBACK reported as given up")
	}

	s.Put("o.2", pub(2, mine))
	ack = s.awaitAck("o.2", mine)
	for range maxResends + 1 {
		s.newEpoch()
		s.All()
	}
	if acked := <-ack; acked {
		t.Error("a message dropped after maxResends reported acknowledged")
	}

	s.Put("o.3", pub(3, mine))
	ack = s.awaitAck("o.3", mine)
	s.forget("o.3", ack)
	s.Del("o.3") // must not block on the forgotten watch
	if len(s.watch) != 0 {
		t.Errorf("watches left: %v", s.watch)
	}
}
