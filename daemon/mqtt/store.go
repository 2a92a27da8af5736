package mqtt

import (
	"log/slog"
	"sync"

	paho "github.com/eclipse/paho.mqtt.golang"
	"github.com/eclipse/paho.mqtt.golang/packets"
)

// maxResends is how many reconnects an unacknowledged outbound message
// is resent on before it is dropped.
const maxResends = 3

// epochStore is paho's in-memory store with two changes to what All
// lists. paho's resume calls All after every (re)connect and resends what
// it lists.
//
// First, only packets stored before the current connection attempt are
// listed. With a persistent session paho runs resume concurrently with
// the OnConnect handler; a QoS 1 publish made there ("online", the
// daemon's discovery) would be listed too, sent a second time under the
// same message id, and its DUP flag flipped while the writer goroutine
// encodes it: a data race and a lost token (paho issue #703, open at
// v1.5.1). Packets of the current connection are in flight on it already.
//
// Second, a packet is resent on at most maxResends reconnects. A message
// the broker answers by dropping the connection (too large for it, say)
// would otherwise be resent after every reconnect, forever, and the
// client would never stay connected.
type epochStore struct {
	paho.Store
	log *slog.Logger

	mu      sync.Mutex
	epoch   uint64
	put     map[string]uint64 // key -> epoch it was stored in
	resends map[string]int    // key -> times listed for resending
}

func newEpochStore(log *slog.Logger) *epochStore {
	return &epochStore{
		Store:   paho.NewMemoryStore(),
		log:     log,
		put:     make(map[string]uint64),
		resends: make(map[string]int),
	}
}

// newEpoch marks the start of a connection attempt.
func (s *epochStore) newEpoch() {
	s.mu.Lock()
	s.epoch++
	s.mu.Unlock()
}

func (s *epochStore) Put(key string, p packets.ControlPacket) {
	s.mu.Lock()
	s.put[key] = s.epoch
	delete(s.resends, key)
	s.mu.Unlock()
	s.Store.Put(key, p)
}

func (s *epochStore) Del(key string) {
	s.mu.Lock()
	delete(s.put, key)
	delete(s.resends, key)
	s.mu.Unlock()
	s.Store.Del(key)
}

func (s *epochStore) Reset() {
	s.mu.Lock()
	clear(s.put)
	clear(s.resends)
	s.mu.Unlock()
	s.Store.Reset()
}

func (s *epochStore) All() []string {
	keys := s.Store.All()
	s.mu.Lock()
	defer s.mu.Unlock()
	out := keys[:0]
	for _, k := range keys {
		if e, ok := s.put[k]; ok && e >= s.epoch {
			continue // stored during this attempt: in flight already
		}
		s.resends[k]++
		if s.resends[k] > maxResends {
			topic := ""
			if p, ok := s.Store.Get(k).(*packets.PublishPacket); ok {
				topic = p.TopicName
			}
			s.log.Warn("mqtt message dropped: not acknowledged after resending on every reconnect",
				logKeyTopic, truncate(topic), "resends", maxResends)
			delete(s.put, k)
			delete(s.resends, k)
			s.Store.Del(k)
			continue
		}
		out = append(out, k)
	}
	return out
}
