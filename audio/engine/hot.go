package engine

import (
	"container/list"
	"sync"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/cache"
)

// DefaultHotBytes is what mynahd gives Options.HotBytes when its Wyoming
// server is on: 47 s of 22.05 kHz speech, the sentences of a burst of
// satellites asking at once. Each MiB kept costs about 2 MB of RSS at
// the peak (the Go heap's headroom doubles it), which the memory soak's
// budget has no room for on an MQTT-only node, where requests come one
// at a time anyway.
const DefaultHotBytes = 2 << 20

// hotPhrases keeps the decoded audio of the phrases the cache served
// most recently, so that a phrase asked for again in a burst (ten Wyoming
// satellites saying the same thing) costs no read and no decode; the
// engine lets it go when it is idle (the memory keeper), as it does the
// voices' arenas, so idle RSS stays what the memory budget says. An entry stands only while the phrase cache still
// holds the record it was decoded from (cache.Store.PhraseStamp): a
// purge, an eviction or a replacement there ends it. The audio is
// shared: callers never change a Chunk's samples.
type hotPhrases struct {
	mu    sync.Mutex
	max   int64
	bytes int64
	byKey map[cache.PhraseKey]*list.Element
	lru   list.List // of *hotPhrase, front most recent
	hits  uint64
}

type hotPhrase struct {
	key   cache.PhraseKey
	stamp uint64
	pcm   audio.PCM
	bytes int64
}

func newHotPhrases(max int64) *hotPhrases {
	return &hotPhrases{max: max, byKey: make(map[cache.PhraseKey]*list.Element)}
}

// get returns key's audio if it is kept and store's record is still the
// one it came from; gone says store has no record of key (a miss there,
// counted by store).
func (h *hotPhrases) get(key cache.PhraseKey, store *cache.Store) (pcm audio.PCM, ok, gone bool) {
	if h == nil || h.max <= 0 {
		return audio.PCM{}, false, false
	}
	h.mu.Lock()
	el := h.byKey[key]
	h.mu.Unlock()
	if el == nil {
		return audio.PCM{}, false, false
	}
	stamp, present := store.PhraseStamp(key)
	h.mu.Lock()
	defer h.mu.Unlock()
	e := el.Value.(*hotPhrase)
	if h.byKey[key] != el {
		return audio.PCM{}, false, !present
	}
	if !present || stamp != e.stamp {
		h.removeLocked(el)
		return audio.PCM{}, false, !present
	}
	h.lru.MoveToFront(el)
	h.hits++
	return e.pcm, true, false
}

// put keeps pcm as key's audio, decoded from the record of stamp.
func (h *hotPhrases) put(key cache.PhraseKey, stamp uint64, pcm audio.PCM) {
	if h == nil || h.max <= 0 {
		return
	}
	size := int64(2 * len(pcm.Samples))
	if size > h.max/4 {
		return // one long text would push out every short phrase
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if el := h.byKey[key]; el != nil {
		h.removeLocked(el)
	}
	h.byKey[key] = h.lru.PushFront(&hotPhrase{key: key, stamp: stamp, pcm: pcm, bytes: size})
	h.bytes += size
	for h.bytes > h.max {
		h.removeLocked(h.lru.Back())
	}
}

// clear drops everything (memory pressure).
func (h *hotPhrases) clear() {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byKey = make(map[cache.PhraseKey]*list.Element)
	h.lru.Init()
	h.bytes = 0
}

func (h *hotPhrases) removeLocked(el *list.Element) {
	e := el.Value.(*hotPhrase)
	delete(h.byKey, e.key)
	h.lru.Remove(el)
	h.bytes -= e.bytes
}
