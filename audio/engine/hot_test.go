package engine

import (
	"slices"
	"testing"

	"github.com/mynah-tts/mynah/audio"
	"github.com/mynah-tts/mynah/audio/engine/enginetest"
	"github.com/mynah-tts/mynah/cache"
)

// A phrase asked again comes from the decoded audio kept in memory, the
// same samples; a purge of the phrase cache ends it there too.
func TestHotPhrases(t *testing.T) {
	dir := t.TempDir()
	enginetest.WriteVoices(t, dir, "a")
	vs, store := storeEngine(t, dir, nil)
	vs.hot = newHotPhrases(DefaultHotBytes)
	text := "The door is open."
	made := speakAll(t, vs, text)  // synthesized, stored
	first := speakAll(t, vs, text) // read and decoded, kept
	again := speakAll(t, vs, text) // from memory
	if !first.cached[0] || !again.cached[0] || !slices.Equal(again.samples, made.samples) || !slices.Equal(first.samples, made.samples) {
		t.Fatalf("cached %v %v: want both hits with the synthesized samples", first.cached, again.cached)
	}
	if vs.hot.hits != 1 {
		t.Errorf("%d hits from memory, want 1", vs.hot.hits)
	}
	before := store.Stats().Hits
	speakAll(t, vs, text)
	if got := store.Stats().Hits; got != before+1 {
		t.Errorf("a hit from memory counted %d hits in the cache's stats, want 1", got-before)
	}
	if _, err := store.Purge(cache.PurgeScope{Kind: cache.PurgePhrases}); err != nil {
		t.Fatal(err)
	}
	if after := speakAll(t, vs, text); after.cached[0] {
		t.Error("a purged phrase still played from memory")
	}
}

func TestHotPhrasesBounds(t *testing.T) {
	h := newHotPhrases(1000)
	pcm := func(n int) audio.PCM { return audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, n)} }
	var keys []cache.PhraseKey
	for i := range 6 {
		var k cache.PhraseKey
		k[0] = byte(i)
		keys = append(keys, k)
		h.put(k, uint64(i+1), pcm(100)) // 200 bytes each
	}
	if h.bytes > 1000 || len(h.byKey) != 5 {
		t.Errorf("%d bytes in %d entries, want at most 1000 in 5", h.bytes, len(h.byKey))
	}
	if _, ok := h.byKey[keys[0]]; ok {
		t.Error("the least recent entry was kept")
	}
	h.put(keys[1], 9, pcm(300)) // 600 bytes: over a quarter of the bound
	if el := h.byKey[keys[1]]; el == nil || el.Value.(*hotPhrase).stamp != 2 {
		t.Error("an entry over a quarter of the bound replaced a short one")
	}
	h.clear()
	if h.bytes != 0 || len(h.byKey) != 0 {
		t.Errorf("clear left %d bytes", h.bytes)
	}
	var none *hotPhrases
	none.put(keys[0], 1, pcm(1))
	if _, ok, _ := none.get(keys[0], nil); ok {
		t.Error("a nil hotPhrases served audio")
	}
}
