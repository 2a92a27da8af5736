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
	// watch holds, per key, channels told whether the packet left the
	// store acknowledged (Del after a PUBACK) or given up (true, false).
	watch map[string][]chan bool
}

func newEpochStore(log *slog.Logger) *epochStore {
	return &epochStore{
		Store:   paho.NewMemoryStore(),
		log:     log,
		put:     make(map[string]uint64),
		resends: make(map[string]int),
		watch:   make(map[string][]chan bool),
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
	s.Store.Del(key)
	s.notifyLocked(key, true)
	s.mu.Unlock()
}

func (s *epochStore) Reset() {
	s.mu.Lock()
	clear(s.put)
	clear(s.resends)
	s.Store.Reset()
	for k := range s.watch {
		s.notifyLocked(k, false)
	}
	s.mu.Unlock()
}

// awaitAck is for a publish whose token completed: paho completes the
// token of an unacknowledged message when it takes the message over for
// resending after a reconnect, not only on its PUBACK. If the store still
// holds the message (the same payload, so not a later one under a reused
// id), awaitAck returns a channel told true when its PUBACK removes it
// and false when it is given up; nil means it was acknowledged already.
func (s *epochStore) awaitAck(key string, payload []byte) <-chan bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	p, ok := s.Store.Get(key).(*packets.PublishPacket)
	if !ok || len(payload) == 0 || len(p.Payload) != len(payload) || &p.Payload[0] != &payload[0] {
		return nil
	}
	ch := make(chan bool, 1)
	s.watch[key] = append(s.watch[key], ch)
	return ch
}

// forget removes a watch that is no longer waited for.
func (s *epochStore) forget(key string, ch <-chan bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w := s.watch[key]
	for i, c := range w {
		if c == ch {
			w = append(w[:i], w[i+1:]...)
			break
		}
	}
	if len(w) == 0 {
		delete(s.watch, key)
	} else {
		s.watch[key] = w
	}
}

func (s *epochStore) notifyLocked(key string, acked bool) {
	for _, ch := range s.watch[key] {
		ch <- acked
	}
	delete(s.watch, key)
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
			s.notifyLocked(k, false)
			continue
		}
		out = append(out, k)
	}
	return out
}
