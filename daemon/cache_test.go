package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// fakeCache is a PhraseCache made of function fields.
type fakeCache struct {
	CacheStatsFunc func() CacheStats
	PurgeFunc      func(scope string) (int, error)
}

func (f *fakeCache) CacheStats() CacheStats          { return f.CacheStatsFunc() }
func (f *fakeCache) Purge(scope string) (int, error) { return f.PurgeFunc(scope) }

var _ PhraseCache = (*fakeCache)(nil)

// cacheRec records purges and reports fixed figures.
type cacheRec struct {
	mu     sync.Mutex
	scopes []string
	fake   fakeCache
}

func newCacheRec() *cacheRec {
	c := &cacheRec{}
	c.fake.CacheStatsFunc = func() CacheStats {
		return CacheStats{Entries: 12, Bytes: 345678, MaxBytes: 64 << 20, Hits: 3, Misses: 1}
	}
	c.fake.PurgeFunc = func(scope string) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.scopes = append(c.scopes, scope)
		switch {
		case scope == "phrases":
			return 12, nil
		case strings.HasPrefix(scope, "voice="):
			return 5, nil
		case scope == "broken":
			return 0, errors.New("disk on fire")
		}
		return 0, fmt.Errorf("%w: %q", ErrInvalidScope, scope)
	}
	return c
}

func TestCachePurgeCommand(t *testing.T) {
	c := newCacheRec()
	h := newHarness(t, func(o *Options) { o.Cache = &c.fake }).start()
	for _, tc := range []struct {
		payload, state, reason, scope string
		removed                       int
	}{
		{"", EventDone, "", "phrases", 12}, // Home Assistant's button
		{" voice=alice\n", EventDone, "", "voice=alice", 5},
		{`{"scope":"voice=bob"}`, EventDone, "", "voice=bob", 5},
		{`{"scope":""}`, EventDone, "", "phrases", 12},
		{"sideways", EventFailed, ReasonBadScope, "", 0},
		{`{"scope":1}`, EventFailed, ReasonBadScope, "", 0},
		{`{"other":"x"}`, EventFailed, ReasonBadScope, "", 0},
		{strings.Repeat("x", maxScopeBytes+1), EventFailed, ReasonBadScope, "", 0},
		{"broken", EventFailed, ReasonCache, "", 0},
	} {
		before := len(h.events())
		h.send("cache/purge", tc.payload)
		waitFor(t, "purge event", func() bool { return len(h.events()) > before })
		e := h.events()[before]
		if e.State != tc.state || e.Reason != tc.reason || e.Command != "cache/purge" {
			t.Errorf("%q: event %+v, want %s %s", tc.payload, e, tc.state, tc.reason)
			continue
		}
		if tc.state == EventDone && (e.Scope != tc.scope || e.Removed == nil || *e.Removed != tc.removed) {
			t.Errorf("%q: scope %q removed %v, want %q %d", tc.payload, e.Scope, e.Removed, tc.scope, tc.removed)
		}
		if tc.state == EventFailed && e.Error == "" {
			t.Errorf("%q: failed event without an error text", tc.payload)
		}
	}
}

func TestCacheStatsInState(t *testing.T) {
	c := newCacheRec()
	h := newHarness(t, func(o *Options) { o.Cache = &c.fake }).start()
	waitFor(t, "state", func() bool { return h.lastState().Cache != nil })
	got := *h.lastState().Cache
	want := CacheStats{Entries: 12, Bytes: 345678, MaxBytes: 64 << 20, Hits: 3, Misses: 1, HitRatio: 0.75, Available: true}
	if got != want {
		t.Errorf("state cache %+v, want %+v", got, want)
	}

	plain := newHarness(t, nil).start()
	waitFor(t, "state", func() bool { return len(plain.tr.on("mynah/test/state")) > 0 })
	raw := plain.tr.on("mynah/test/state")[0].payload
	if strings.Contains(string(raw), `"cache"`) {
		t.Errorf("state without a cache has a cache object: %s", raw)
	}
}

func TestDiscoveryCacheEntities(t *testing.T) {
	c := newCacheRec()
	h := newHarness(t, func(o *Options) { o.Cache = &c.fake }).start()
	waitFor(t, "discovery", func() bool { return len(h.tr.on(discoveryTopic)) == 1 })
	var doc struct {
		Cmps map[string]haComponent `json:"cmps"`
	}
	if err := json.Unmarshal(h.tr.on(discoveryTopic)[0].payload, &doc); err != nil {
		t.Fatal(err)
	}
	for key, tmpl := range map[string]string{
		"cache_hit_ratio": "{{ (value_json.cache.hit_ratio * 100) | round(1) }}",
		"cache_size":      "{{ value_json.cache.bytes }}",
		"cache_entries":   "{{ value_json.cache.entries }}",
	} {
		cmp, ok := doc.Cmps[key]
		if !ok || cmp.Platform != "sensor" || cmp.StateTopic != "mynah/test/state" || cmp.ValueTemplate != tmpl || cmp.EntityCategory != "diagnostic" {
			t.Errorf("%s: %+v", key, cmp)
		}
	}
	purge := doc.Cmps["cache_purge"]
	if purge.Platform != "button" || purge.CommandTopic != "mynah/test/cache/purge" || purge.PayloadPress != "phrases" {
		t.Errorf("purge button %+v", purge)
	}
	// The templates read the state's cache object, so they must match
	// what the state carries.
	waitFor(t, "state", func() bool { return h.lastState().Cache != nil })
	var state map[string]map[string]any
	raw := h.tr.on("mynah/test/state")
	_ = json.Unmarshal(raw[len(raw)-1].payload, &state)
	for _, k := range []string{"hit_ratio", "bytes", "entries"} {
		if _, ok := state["cache"][k]; !ok {
			t.Errorf("state cache object lacks %q", k)
		}
	}
}

func TestWarningEventBeforeRun(t *testing.T) {
	h := newHarness(t, nil)
	h.d.Warn(ReasonCacheCorrupt, errors.New("cache file was damaged: moved to x.corrupt-1"))
	h.start()
	waitFor(t, "warning", func() bool { return len(h.events()) == 1 })
	if e := h.events()[0]; e.State != EventWarning || e.Reason != ReasonCacheCorrupt || !strings.Contains(e.Error, "moved to") {
		t.Errorf("event %+v", e)
	}
}

func TestSentenceDetail(t *testing.T) {
	h := newHarness(t, nil).start()
	h.eng.cached = func(s string) bool { return s == "Two" }
	h.send("say", `{"id":"r","text":"One. Two. Three."}`)
	e := h.waitEvent("r", EventFinished)
	if len(e.SentenceDetail) != 3 {
		t.Fatalf("detail %+v, want 3 sentences", e.SentenceDetail)
	}
	var prev float64
	for i, want := range []string{CacheMiss, CacheHit, CacheMiss} {
		d := e.SentenceDetail[i]
		if d.Cache != want || d.FirstAudioMS == nil || *d.FirstAudioMS <= prev {
			t.Errorf("sentence %d: %+v, want %s after %g ms", i, d, want, prev)
			continue
		}
		prev = *d.FirstAudioMS
	}
	if *e.SentenceDetail[0].FirstAudioMS != *e.FirstAudioMS {
		t.Errorf("first sentence %g ms, request first audio %g ms", *e.SentenceDetail[0].FirstAudioMS, *e.FirstAudioMS)
	}
	if e.Cache != CachePartial {
		t.Errorf("cache %q, want partial", e.Cache)
	}
}

func TestNoCacheReachesTheEngine(t *testing.T) {
	h := newHarness(t, nil).start()
	h.send("say", `{"id":"a","text":"Private.","cache":false}`)
	h.waitEvent("a", EventFinished)
	h.send("say", `{"id":"b","text":"Public."}`)
	h.waitEvent("b", EventFinished)
	h.eng.mu.Lock()
	calls := slices.Clone(h.eng.calls)
	h.eng.mu.Unlock()
	if len(calls) != 2 || !calls[0].NoCache || calls[1].NoCache {
		t.Errorf("engine calls %+v: want NoCache on the first only", calls)
	}
}
