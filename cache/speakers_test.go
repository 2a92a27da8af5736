package cache

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

const testEncoder = "3f1c0d5e9a7b2c4d6e8f0a1b2c3d4e5f6a7b8c9d0e1f2a3b4c5d6e7f8a9b0c1d"

// unitVector is a random direction: the shape of a speaker embedding.
func unitVector(rng *rand.Rand, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for i := range v {
		x := rng.NormFloat64()
		v[i], n = float32(x), n+x*x
	}
	for i := range v {
		v[i] = float32(float64(v[i]) / math.Sqrt(n))
	}
	return v
}

// testSpeaker makes a speaker whose embedding and prompt follow from its
// name and a version, so a reader can tell which put it sees.
func testSpeaker(owner, name string, version int) Speaker {
	seed := uint64(len(owner))<<32 | uint64(version)
	for _, c := range owner + "/" + name {
		seed = seed*31 + uint64(c)
	}
	rng := rand.New(rand.NewPCG(seed, 42))
	prompt := make([]int64, 20+version%7)
	for i := range prompt {
		prompt[i] = rng.Int64N(5000) - 10
	}
	return Speaker{Owner: owner, Name: name, Embedding: unitVector(rng, 192), Prompt: prompt, EncoderDigest: testEncoder}
}

func mustPutSpeaker(t testing.TB, s *Store, sp Speaker) []SpeakerRef {
	t.Helper()
	ev, err := s.PutSpeaker(sp)
	if err != nil {
		t.Fatalf("put speaker %s/%s: %v", sp.Owner, sp.Name, err)
	}
	return ev
}

func mustGetSpeaker(t testing.TB, s *Store, owner, name string) Speaker {
	t.Helper()
	sp, ok, err := s.GetSpeaker(owner, name)
	if err != nil || !ok {
		t.Fatalf("get speaker %s/%s: ok=%v err=%v, want a hit", owner, name, ok, err)
	}
	return sp
}

func mustMissSpeaker(t testing.TB, s *Store, owner, name string) {
	t.Helper()
	if _, ok, err := s.GetSpeaker(owner, name); ok || err != nil {
		t.Fatalf("get speaker %s/%s: ok=%v err=%v, want a miss", owner, name, ok, err)
	}
}

// names lists ListSpeakers as "owner/name" (or "name"), most recent first.
func names(s *Store) string {
	var out []string
	for _, i := range s.ListSpeakers() {
		out = append(out, SpeakerRef{i.Owner, i.Name}.String())
	}
	return strings.Join(out, " ")
}

func TestSpeakerPrecision(t *testing.T) {
	for _, c := range []struct {
		precision string
		minCos    float64
		bytesPer  int
	}{{PrecisionFP16, 0.9995, 2}, {PrecisionInt8, 0.999, 1}} {
		for _, dim := range []int{128, 256} {
			t.Run(fmt.Sprint(c.precision, dim), func(t *testing.T) {
				s := openTemp(t, &Options{SpeakerPrecision: c.precision, MaxSpeakers: MaxSpeakersLimit})
				rng := rand.New(rand.NewPCG(uint64(dim), 1))
				var sumCos, sumRel float64
				for i := range MaxSpeakersLimit {
					sp := Speaker{Name: fmt.Sprint("s", i), Embedding: unitVector(rng, dim), EncoderDigest: testEncoder}
					mustPutSpeaker(t, s, sp)
					got := mustGetSpeaker(t, s, "", sp.Name)
					cos, rel := vecpack.Cosine(sp.Embedding, got.Embedding), vecpack.RelativeL2(sp.Embedding, got.Embedding)
					if cos < c.minCos {
						t.Errorf("%s: cosine %.7f below %v", sp.Name, cos, c.minCos)
					}
					sumCos, sumRel = sumCos+cos, sumRel+rel
				}
				n := float64(MaxSpeakersLimit)
				st := s.Stats()
				t.Logf("%s dim %d: mean 1-cosine %.2e, relative L2 %.2e", c.precision, dim, 1-st.SpeakerCosine, st.SpeakerRelativeL2)
				if st.Speakers != MaxSpeakersLimit || st.SpeakerPrecision != c.precision ||
					math.Abs(st.SpeakerCosine-sumCos/n) > 1e-12 || math.Abs(st.SpeakerRelativeL2-sumRel/n) > 1e-12 {
					t.Errorf("stats %+v; measured mean cosine %v, relative L2 %v", st, sumCos/n, sumRel/n)
				}
				for _, info := range s.ListSpeakers() {
					if info.Precision != c.precision || info.Dims != dim || info.PromptIDs != 0 ||
						info.Bytes < c.bytesPer*dim || info.Bytes > c.bytesPer*dim+64+len(testEncoder) {
						t.Fatalf("info %+v", info)
					}
				}
			})
		}
	}
}

func TestSpeakerEvictsLeastRecentlyUsed(t *testing.T) {
	clock := newClock() // never advanced: the store must order puts itself
	s := openTemp(t, &Options{Now: clock.Now})
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		if ev := mustPutSpeaker(t, s, testSpeaker("", n, 0)); len(ev) != 0 {
			t.Fatalf("put %s evicted %v below MaxSpeakers", n, ev)
		}
	}
	ev := mustPutSpeaker(t, s, testSpeaker("", "f", 0))
	if len(ev) != 1 || ev[0] != (SpeakerRef{Name: "a"}) {
		t.Fatalf("6th speaker evicted %v, want [a]", ev)
	}
	mustMissSpeaker(t, s, "", "a")

	// A get makes b recent: c goes next.
	mustGetSpeaker(t, s, "", "b")
	ev = mustPutSpeaker(t, s, testSpeaker("", "g", 0))
	if len(ev) != 1 || ev[0] != (SpeakerRef{Name: "c"}) {
		t.Fatalf("after getting b, a put evicted %v, want [c]", ev)
	}
	// Replacing a stored speaker evicts nobody and makes it recent.
	if ev := mustPutSpeaker(t, s, testSpeaker("", "d", 1)); len(ev) != 0 {
		t.Fatalf("replacing d evicted %v", ev)
	}
	if got := names(s); got != "d g b f e" {
		t.Fatalf("LRU order %q, want %q", got, "d g b f e")
	}
	// The clock stepping back (NTP on a board without a real-time clock)
	// does not make the newest speaker look oldest.
	clock.Advance(-time.Hour)
	mustPutSpeaker(t, s, testSpeaker("", "h", 0))
	if got := names(s); got != "h d g b f" {
		t.Fatalf("after the clock stepped back: order %q, want %q", got, "h d g b f")
	}
}

func TestSpeakerOwners(t *testing.T) {
	s := openTemp(t, nil)
	mustPutSpeaker(t, s, testSpeaker("alice", "mum", 0))
	mustPutSpeaker(t, s, testSpeaker("bob", "mum", 0))
	mustPutSpeaker(t, s, testSpeaker("", "mum", 0))
	for _, owner := range []string{"alice", "bob", ""} {
		got := mustGetSpeaker(t, s, owner, "mum")
		want := testSpeaker(owner, "mum", 0)
		if got.Owner != owner || got.Name != "mum" || !slices.Equal(got.Prompt, want.Prompt) ||
			vecpack.Cosine(got.Embedding, want.Embedding) < 0.9995 {
			t.Errorf("owner %q got another owner's speaker", owner)
		}
	}
	mustMissSpeaker(t, s, "carol", "mum")
	if found, err := s.ForgetSpeaker("alice", "mum"); !found || err != nil {
		t.Fatalf("forget: %v %v", found, err)
	}
	mustMissSpeaker(t, s, "alice", "mum")
	mustGetSpeaker(t, s, "bob", "mum")
	if found, err := s.ForgetSpeaker("alice", "mum"); found || err != nil {
		t.Errorf("forgetting a forgotten speaker: %v %v", found, err)
	}
	if got := names(s); got != "bob/mum mum" {
		t.Errorf("left %q", got)
	}
}

func TestSpeakersPersist(t *testing.T) {
	clock := newClock()
	path := filepath.Join(t.TempDir(), "cache.db")
	opts := &Options{Now: clock.Now, SpeakerPrecision: PrecisionInt8}
	s, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]Speaker{}
	for i, n := range []string{"a", "b", "c", "d"} {
		clock.Advance(time.Minute)
		mustPutSpeaker(t, s, testSpeaker("home", n, i))
		stored[n] = mustGetSpeaker(t, s, "home", n)
	}
	if found, err := s.ForgetSpeaker("home", "c"); !found || err != nil {
		t.Fatal(found, err)
	}
	clock.Advance(time.Minute)
	mustGetSpeaker(t, s, "home", "a") // recency that only a flush writes
	before, beforeStats := s.ListSpeakers(), s.Stats()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.GetSpeaker("home", "a"); !errors.Is(err, ErrClosed) {
		t.Errorf("get after close: %v, want ErrClosed", err)
	}

	// A read-only look (mynah cache stats) sees the same, and changes nothing.
	ro, err := Open(path, &Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := ro.ListSpeakers(); !slices.Equal(got, before) {
		t.Errorf("read-only list:\n got %+v\nwant %+v", got, before)
	}
	mustGetSpeaker(t, ro, "home", "b")
	if got := ro.ListSpeakers(); !slices.Equal(got, before) {
		t.Error("a get on a read-only store changed the last use")
	}
	if _, err := ro.PutSpeaker(testSpeaker("", "x", 0)); !errors.Is(err, ErrReadOnly) {
		t.Errorf("put on read-only: %v", err)
	}
	if _, err := ro.ForgetSpeaker("home", "a"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("forget on read-only: %v", err)
	}
	ro.Close()

	s, err = Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); mustBeSound(t, path) })
	if got := s.ListSpeakers(); !slices.Equal(got, before) {
		t.Errorf("list after reopen:\n got %+v\nwant %+v", got, before)
	}
	after := s.Stats()
	if after.Speakers != 3 || after.SpeakerCosine != beforeStats.SpeakerCosine || after.SpeakerRelativeL2 != beforeStats.SpeakerRelativeL2 {
		t.Errorf("stats after reopen %+v, before %+v", after, beforeStats)
	}
	if got := names(s); got != "home/a home/d home/b" {
		t.Fatalf("order after reopen %q", got)
	}
	mustMissSpeaker(t, s, "home", "c")
	for _, n := range []string{"a", "b", "d"} {
		got, want := mustGetSpeaker(t, s, "home", n), stored[n]
		if !slices.Equal(got.Embedding, want.Embedding) || !slices.Equal(got.Prompt, want.Prompt) ||
			got.EncoderDigest != want.EncoderDigest || !got.Created.Equal(want.Created) {
			t.Errorf("%s changed across reopen", n)
		}
	}
	// The gets above, in the order a, b, d, made a the least recent.
	for _, n := range []string{"e", "f"} {
		if ev := mustPutSpeaker(t, s, testSpeaker("home", n, 0)); len(ev) != 0 {
			t.Fatalf("put %s evicted %v", n, ev)
		}
	}
	if ev := mustPutSpeaker(t, s, testSpeaker("home", "g", 0)); len(ev) != 1 || ev[0].Name != "a" {
		t.Fatalf("evicted %v, want home/a", ev)
	}
}

// Lowering MaxSpeakers keeps the extra speakers until the next put, which
// evicts down to the new bound in one go.
func TestSpeakerBoundLowered(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		mustPutSpeaker(t, s, testSpeaker("", n, 0))
	}
	s.Close()
	s, err = Open(path, &Options{MaxSpeakers: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close(); mustBeSound(t, path) })
	if st := s.Stats(); st.Speakers != 5 || st.MaxSpeakers != 3 {
		t.Fatalf("stats %+v", st)
	}
	ev := mustPutSpeaker(t, s, testSpeaker("", "f", 0))
	if len(ev) != 3 || ev[0].Name != "a" || ev[1].Name != "b" || ev[2].Name != "c" {
		t.Fatalf("evicted %v, want a b c", ev)
	}
	if got := names(s); got != "f e d" {
		t.Errorf("left %q", got)
	}
}

func TestSpeakerValidation(t *testing.T) {
	s := openTemp(t, nil)
	good := testSpeaker("", "ok", 0)
	with := func(f func(*Speaker)) Speaker {
		sp := good
		sp.Embedding = slices.Clone(good.Embedding)
		f(&sp)
		return sp
	}
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	cases := []struct {
		name    string
		sp      Speaker
		mention string
	}{
		{"empty name", with(func(sp *Speaker) { sp.Name = "" }), "MaxSpeakerNameLen"},
		{"long name", with(func(sp *Speaker) { sp.Name = strings.Repeat("n", 65) }), "MaxSpeakerNameLen"},
		{"long owner", with(func(sp *Speaker) { sp.Owner = strings.Repeat("o", 65) }), "MaxSpeakerNameLen"},
		{"dot dot", with(func(sp *Speaker) { sp.Name = ".." }), `".."`},
		{"dot dot inside", with(func(sp *Speaker) { sp.Name = "a..b" }), `".."`},
		{"dot", with(func(sp *Speaker) { sp.Name = "." }), `".."`},
		{"owner path", with(func(sp *Speaker) { sp.Owner = "../etc" }), `".."`},
		{"slash", with(func(sp *Speaker) { sp.Name = "a/b" }), "A-Z a-z 0-9 _ . -"},
		{"space", with(func(sp *Speaker) { sp.Name = "a b" }), "A-Z a-z 0-9 _ . -"},
		{"NUL", with(func(sp *Speaker) { sp.Name = "a\x00" }), "A-Z a-z 0-9 _ . -"},
		{"MQTT wildcard", with(func(sp *Speaker) { sp.Owner = "+" }), "A-Z a-z 0-9 _ . -"},
		{"non-ASCII", with(func(sp *Speaker) { sp.Name = "zoë" }), "A-Z a-z 0-9 _ . -"},
		{"no embedding", with(func(sp *Speaker) { sp.Embedding = nil }), "MaxEmbeddingDims"},
		{"too many dims", with(func(sp *Speaker) { sp.Embedding = make([]float32, MaxEmbeddingDims+1); sp.Embedding[0] = 1 }), "MaxEmbeddingDims"},
		{"NaN", with(func(sp *Speaker) { sp.Embedding[3] = nan }), "value 3 is NaN"},
		{"Inf", with(func(sp *Speaker) { sp.Embedding[0] = -inf }), "value 0 is -Inf"},
		{"all zero", with(func(sp *Speaker) { sp.Embedding = make([]float32, 16) }), "all zeros"},
		{"beyond fp16", with(func(sp *Speaker) { sp.Embedding[1] = 70000 }), "int8"},
		{"below fp16", with(func(sp *Speaker) { sp.Embedding = []float32{1e-9, -1e-9} }), "too small"},
		{"long prompt", with(func(sp *Speaker) { sp.Prompt = make([]int64, MaxPromptIDs+1) }), "MaxPromptIDs"},
		{"no digest", with(func(sp *Speaker) { sp.EncoderDigest = "" }), "MaxEncoderDigestLen"},
		{"long digest", with(func(sp *Speaker) { sp.EncoderDigest = strings.Repeat("d", 256) }), "MaxEncoderDigestLen"},
	}
	for _, c := range cases {
		_, err := s.PutSpeaker(c.sp)
		if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), c.mention) {
			t.Errorf("%s: %v, want ErrInvalid mentioning %q", c.name, err, c.mention)
		}
	}
	for _, sp := range []Speaker{
		good,
		with(func(sp *Speaker) { sp.Owner, sp.Name = strings.Repeat("o", 64), strings.Repeat("N", 64) }),
		with(func(sp *Speaker) { sp.Name = ".hidden-_.x" }),
		with(func(sp *Speaker) { sp.Embedding = make([]float32, MaxEmbeddingDims); sp.Embedding[7] = -65504 }),
		with(func(sp *Speaker) { sp.Prompt = make([]int64, MaxPromptIDs); sp.Prompt[0] = math.MinInt64 }),
		with(func(sp *Speaker) { sp.Prompt = nil; sp.EncoderDigest = strings.Repeat("d", 255) }),
	} {
		if _, err := s.PutSpeaker(sp); err != nil {
			t.Errorf("put %.20s/%.20s: %v", sp.Owner, sp.Name, err)
		}
	}
	got := mustGetSpeaker(t, s, strings.Repeat("o", 64), strings.Repeat("N", 64))
	if !slices.Equal(got.Prompt, good.Prompt) {
		t.Error("prompt changed")
	}
	for _, ref := range []SpeakerRef{{"", ""}, {"a/b", "c"}, {"", "../x"}} {
		if _, _, err := s.GetSpeaker(ref.Owner, ref.Name); !errors.Is(err, ErrInvalid) {
			t.Errorf("get %q: %v, want ErrInvalid", ref, err)
		}
		if _, err := s.ForgetSpeaker(ref.Owner, ref.Name); !errors.Is(err, ErrInvalid) {
			t.Errorf("forget %q: %v, want ErrInvalid", ref, err)
		}
	}
	// int8 has no fp16 range limit.
	s8 := openTemp(t, &Options{SpeakerPrecision: PrecisionInt8})
	if _, err := s8.PutSpeaker(with(func(sp *Speaker) { sp.Embedding[1] = 70000 })); err != nil {
		t.Errorf("int8 put of a large value: %v", err)
	}
	if st := s.Stats(); st.WriteErrors != 0 {
		t.Errorf("refused arguments counted as write errors: %+v", st)
	}
}

func TestSpeakerOptions(t *testing.T) {
	for _, o := range []Options{{MaxSpeakers: -1}, {MaxSpeakers: MaxSpeakersLimit + 1}, {SpeakerPrecision: "bf16"}, {SpeakerPrecision: "FP16"}} {
		_, err := Open(filepath.Join(t.TempDir(), "c.db"), &o)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%+v: %v, want ErrInvalid", o, err)
		}
	}
	st := openTemp(t, nil).Stats()
	if st.MaxSpeakers != DefaultMaxSpeakers || st.SpeakerPrecision != PrecisionFP16 || st.Speakers != 0 || st.SpeakerCosine != 0 {
		t.Errorf("default stats %+v", st)
	}
}

func TestCheckEncoder(t *testing.T) {
	sp := testSpeaker("alice", "mum", 0)
	if err := sp.CheckEncoder(testEncoder); err != nil {
		t.Errorf("same encoder: %v", err)
	}
	err := sp.CheckEncoder("9999aaaabbbbccccdddd")
	if !errors.Is(err, ErrEncoderChanged) {
		t.Fatalf("other encoder: %v, want ErrEncoderChanged", err)
	}
	for _, want := range []string{"alice/mum", "re-enroll", testEncoder[:12], "9999aaaabbbb"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not mention %q", err, want)
		}
	}
}

func TestPurgeSpeakers(t *testing.T) {
	s := openTemp(t, nil)
	fill := func() {
		mustPut(t, s, key("p"), "v", []byte("audio"))
		if err := s.SpoolPut("r", []byte("say"), time.Now(), time.Time{}); err != nil {
			t.Fatal(err)
		}
		mustPutSpeaker(t, s, testSpeaker("", "a", 0))
		mustPutSpeaker(t, s, testSpeaker("x", "b", 0))
	}
	fill()
	if n, err := s.Purge(PurgeScope{Kind: PurgePhrases}); n != 1 || err != nil {
		t.Fatalf("purge phrases: %d %v", n, err)
	}
	if st := s.Stats(); st.Speakers != 2 || st.SpoolEntries != 1 || st.Entries != 0 {
		t.Fatalf("purging phrases touched the speakers or spool: %+v", st)
	}
	mustGetSpeaker(t, s, "x", "b")
	fill()
	if n, err := s.Purge(PurgeScope{Kind: PurgeSpeakers}); n != 2 || err != nil {
		t.Fatalf("purge speakers: %d %v", n, err)
	}
	if st := s.Stats(); st.Speakers != 0 || st.SpoolEntries != 1 || st.Entries != 1 {
		t.Fatalf("purging speakers: %+v", st)
	}
	mustMissSpeaker(t, s, "x", "b")
	fill()
	if n, err := s.Purge(PurgeScope{Kind: PurgeAll}); n != 4 || err != nil {
		t.Fatalf("purge all: %d %v", n, err)
	}
	if st := s.Stats(); st.Speakers != 0 || st.SpoolEntries != 0 || st.Entries != 0 {
		t.Fatalf("after purge all: %+v", st)
	}
	mustPutSpeaker(t, s, testSpeaker("", "after", 0))
}
