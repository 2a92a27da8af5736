package cache

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

// withCRC appends the CRC a speaker record stored under key ends with.
func withCRC(key, body []byte) []byte {
	sum := crc32.Update(crc32.Checksum(key, castagnoli), castagnoli, body)
	return binary.BigEndian.AppendUint32(slices.Clone(body), sum)
}

// A speaker record that fails its CRC or its checks is damage bbolt cannot
// see. Check finds it in a running store; a read-only open reports it; a
// read-write open moves the file aside, as for every other damaged record,
// so the speaker is gone and the new file is sound.
func TestDamagedSpeakerRecord(t *testing.T) {
	flip := func(i int) func(k, v []byte) ([]byte, []byte) {
		return func(k, v []byte) ([]byte, []byte) {
			v = slices.Clone(v)
			v[(i+len(v))%len(v)] ^= 0x10
			return k, v
		}
	}
	cases := map[string]func(k, v []byte) ([]byte, []byte){
		"embedding byte flipped":  flip(120),
		"digest byte flipped":     flip(40),
		"CRC byte flipped":        flip(-1),
		"last-use byte flipped":   flip(12),
		"truncated":               func(k, v []byte) ([]byte, []byte) { return k, v[:len(v)-9] },
		"moved to another name":   func(k, v []byte) ([]byte, []byte) { return []byte("/other"), v },
		"key without a slash":     func(k, v []byte) ([]byte, []byte) { return []byte("noslash"), v },
		"key with a path":         func(k, v []byte) ([]byte, []byte) { return []byte("../x"), withCRC([]byte("../x"), v[:len(v)-4]) },
		"sound CRC, version 9":    func(k, v []byte) ([]byte, []byte) { b := slices.Clone(v[:len(v)-4]); b[0] = 9; return k, withCRC(k, b) },
		"sound CRC, cosine NaN":   func(k, v []byte) ([]byte, []byte) { return k, withCRC(k, patch64(v, 18, math.Float64bits(math.NaN()))) },
		"sound CRC, trailing":     func(k, v []byte) ([]byte, []byte) { return k, withCRC(k, append(slices.Clone(v[:len(v)-4]), 0)) },
		"sound CRC, empty record": func(k, v []byte) ([]byte, []byte) { return k, withCRC(k, nil) },
	}
	for name, damage := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "cache.db")
			s, err := Open(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			mustPut(t, s, key("kept?"), "v", []byte("audio"))
			mustPutSpeaker(t, s, testSpeaker("home", "a", 0))
			mustPutSpeaker(t, s, testSpeaker("home", "b", 0))
			if err := s.Check(); err != nil {
				t.Fatalf("check before the damage: %v", err)
			}
			// Damage the file under the running store, as a failing disk
			// would: the store's memory still holds the sound record.
			err = s.db.Update(func(tx *bolt.Tx) error {
				b := tx.Bucket(bucketSpeaker)
				k := []byte(SpeakerRef{"home", "b"}.key())
				nk, nv := damage(k, slices.Clone(b.Get(k)))
				if err := b.Delete(k); err != nil {
					return err
				}
				return b.Put(nk, nv)
			})
			if err != nil {
				t.Fatal(err)
			}
			err = s.Check()
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "speakers/") {
				t.Fatalf("check: %v, want ErrCorrupt naming the speakers bucket", err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			if _, err := Open(path, &Options{ReadOnly: true}); !errors.Is(err, ErrCorrupt) {
				t.Fatalf("read-only open: %v, want ErrCorrupt", err)
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, _ = openDamaged(t, data)
			if r := s.Recovery(); r == nil || !strings.Contains(r.Reason, "damaged record") {
				t.Fatalf("recovery %+v, want one naming the damaged record", r)
			}
			mustMissSpeaker(t, s, "home", "b")
			if st := s.Stats(); st.Speakers != 0 {
				t.Errorf("stats after recovery %+v", st)
			}
			mustPutSpeaker(t, s, testSpeaker("home", "b", 1))
		})
	}
}

func patch64(v []byte, at int, x uint64) []byte {
	b := slices.Clone(v[:len(v)-4])
	binary.BigEndian.PutUint64(b[at:], x)
	return b
}

// A file of schema 1 (no speakers bucket) is upgraded in place by a
// read-write open: phrases, pins and the spool stay, the speakers bucket
// appears empty.
func TestSchemaUpgradeFromV1(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cache.db")
	s, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		mustPut(t, s, key(fmt.Sprint("old ", i)), "amy", filler(100+500*i, byte(i)))
	}
	if err := s.Pin(key("old 3")); err != nil {
		t.Fatal(err)
	}
	received := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	if err := s.SpoolPut("req-1", []byte("hello"), received, time.Time{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// Take it back to schema 1's layout: the same buckets but speakers.
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.DeleteBucket(bucketSpeaker); err != nil {
			return err
		}
		return tx.Bucket(bucketMeta).Put(keySchema, binary.BigEndian.AppendUint64(nil, 1))
	})
	db.Close()
	if err != nil {
		t.Fatal(err)
	}
	if v := schemaOf(t, path); v != 1 || schemaVersion() != 2 {
		t.Fatalf("prepared schema %d, build's %d; want 1 and 2", v, schemaVersion())
	}
	if _, err := Open(path, &Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "read-write once to upgrade") {
		t.Errorf("read-only open of a v1 file: %v", err)
	}

	var log logBuffer
	s, err = Open(path, &Options{Logger: log.logger()})
	if err != nil {
		t.Fatal(err)
	}
	if s.Recovery() != nil {
		t.Fatalf("v1 file treated as damaged: %+v", s.Recovery())
	}
	if !strings.Contains(log.String(), "cache schema upgraded") || !strings.Contains(log.String(), "from=1 to=2") {
		t.Errorf("upgrade not logged: %s", log.String())
	}
	for i := range 10 {
		mustHit(t, s, key(fmt.Sprint("old ", i)), filler(100+500*i, byte(i)))
	}
	if p := s.Pinned(); len(p) != 1 || p[0] != key("old 3") {
		t.Errorf("pins after upgrade %v", p)
	}
	if spool, err := s.SpoolList(); err != nil || len(spool) != 1 || spool[0].ID != "req-1" || string(spool[0].Payload) != "hello" {
		t.Errorf("spool after upgrade %+v %v", spool, err)
	}
	if st := s.Stats(); st.Speakers != 0 || st.Entries != 10 || st.SpoolEntries != 1 {
		t.Errorf("stats after upgrade %+v", st)
	}
	mustPutSpeaker(t, s, testSpeaker("", "new", 0))
	if err := s.Check(); err != nil {
		t.Error(err)
	}
	s.Close()
	if v := schemaOf(t, path); v != 2 {
		t.Errorf("schema after upgrade %d, want 2", v)
	}
	mustBeSound(t, path)
}

// Last-use times from gets reach the file at a flush, not before.
func TestSpeakerUseFlushed(t *testing.T) {
	clock := newClock()
	s := openTemp(t, &Options{Now: clock.Now, FlushInterval: time.Hour})
	mustPutSpeaker(t, s, testSpeaker("", "a", 0))
	stored := func() int64 {
		var used int64
		err := s.view(func(tx *bolt.Tx) error {
			k := []byte(SpeakerRef{Name: "a"}.key())
			rec, _, err := decodeSpeakerRecord(k, tx.Bucket(bucketSpeaker).Get(k))
			used = rec.used
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return used
	}
	put := stored()
	clock.Advance(time.Minute)
	got := mustGetSpeaker(t, s, "", "a")
	if got.Used.UnixNano() != put+int64(time.Minute) {
		t.Fatalf("used %v, want a minute after the put", got.Used)
	}
	if stored() != put {
		t.Fatal("a get wrote to the file")
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if stored() != got.Used.UnixNano() {
		t.Fatalf("flushed last use %d, want %d", stored(), got.Used.UnixNano())
	}
}

// Puts, gets, forgets, lists, flushes and purges from many goroutines: run
// with -race. Every speaker read is one that was put, whole.
func TestSpeakersConcurrent(t *testing.T) {
	s := openTemp(t, &Options{FlushInterval: 2 * time.Millisecond})
	speaker := func(owner, name string, version int) Speaker {
		sp := testSpeaker(owner, name, version)
		sp.Prompt[0] = int64(version) // so a reader knows which put it sees
		return sp
	}
	verify := func(sp Speaker) error {
		want := speaker(sp.Owner, sp.Name, int(sp.Prompt[0]))
		if !slices.Equal(sp.Prompt, want.Prompt) || vecpack.Cosine(sp.Embedding, want.Embedding) < 0.9995 {
			return fmt.Errorf("%s/%s version %d is not what was put", sp.Owner, sp.Name, sp.Prompt[0])
		}
		return nil
	}
	owners, names := []string{"", "x"}, []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for g := range 6 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for i := range 150 {
				owner, name := owners[rng.IntN(2)], names[rng.IntN(4)]
				var err error
				switch op := rng.IntN(20); {
				case op < 7:
					var ev []SpeakerRef
					ev, err = s.PutSpeaker(speaker(owner, name, g*1000+i))
					if len(ev) > 1 {
						err = fmt.Errorf("one put evicted %v", ev)
					}
				case op < 15:
					var sp Speaker
					var ok bool
					if sp, ok, err = s.GetSpeaker(owner, name); ok && err == nil {
						err = verify(sp)
					}
				case op < 17:
					_, err = s.ForgetSpeaker(owner, name)
				case op == 17:
					if l := s.ListSpeakers(); len(l) > DefaultMaxSpeakers {
						err = fmt.Errorf("%d speakers listed", len(l))
					}
				case op == 18:
					if st := s.Stats(); st.Speakers > DefaultMaxSpeakers || (st.Speakers > 0 && st.SpeakerCosine < 0.9995) {
						err = fmt.Errorf("stats %+v", st)
					}
				default:
					if rng.IntN(10) == 0 {
						_, err = s.Purge(PurgeScope{Kind: PurgeSpeakers})
					} else {
						err = s.Flush()
					}
				}
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, info := range s.ListSpeakers() {
		if err := verify(mustGetSpeaker(t, s, info.Owner, info.Name)); err != nil {
			t.Error(err)
		}
	}
	if err := s.Check(); err != nil {
		t.Error(err)
	}
}

func FuzzDecodeSpeakerRecord(f *testing.F) {
	seed := func(precision string, sp Speaker) {
		s := &Store{opts: Options{SpeakerPrecision: precision}}
		rec, _, err := s.newSpeakerRecord(sp)
		if err != nil {
			f.Fatal(err)
		}
		rec.created, rec.used = 1, 2
		k := SpeakerRef{sp.Owner, sp.Name}.key()
		v := rec.append(nil, k)
		f.Add([]byte(k), v[:len(v)-4], true)
		f.Add([]byte(k), v, false)
	}
	seed(PrecisionFP16, testSpeaker("home", "a", 0))
	seed(PrecisionInt8, testSpeaker("", "b", 3))
	short := testSpeaker("x", "c", 0)
	short.Embedding, short.Prompt = short.Embedding[:3], []int64{-1, 300, math.MaxInt64}
	seed(PrecisionFP16, short)
	f.Add([]byte("/a"), []byte{1, 1}, true)
	f.Fuzz(func(t *testing.T, key, v []byte, fixCRC bool) {
		if fixCRC { // reach the parser behind the CRC
			v = withCRC(key, v)
		}
		rec, emb, err := decodeSpeakerRecord(key, v)
		if err != nil {
			return
		}
		if len(emb) == 0 || len(emb) > MaxEmbeddingDims || len(rec.prompt) > MaxPromptIDs || rec.digest == "" {
			t.Fatalf("accepted a record outside the limits: %d dims, %d ids", len(emb), len(rec.prompt))
		}
		for _, x := range emb {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatal("accepted a non-finite embedding")
			}
		}
		if back := rec.append(nil, string(key)); !bytes.Equal(back, v) {
			t.Fatalf("accepted %x, which encodes back as %x", v, back)
		}
	})
}

var speakerNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

func FuzzSpeakerRef(f *testing.F) {
	for _, s := range [][2]string{{"", "mum"}, {"alice", "a.b-c_d"}, {"", ".."}, {"x/y", "z"}, {"+", "#"}, {"", "."}, {"a", "é"}, {"", strings.Repeat("n", 65)}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, owner, name string) {
		valid := func(s string) bool {
			return speakerNamePattern.MatchString(s) && s != "." && !strings.Contains(s, "..")
		}
		ref := SpeakerRef{owner, name}
		err := ref.Validate()
		if want := (owner == "" || valid(owner)) && valid(name); want != (err == nil) {
			t.Fatalf("Validate(%q, %q) = %v, want valid=%v", owner, name, err, want)
		}
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("%v does not wrap ErrInvalid", err)
			}
			return
		}
		if back, err := parseSpeakerKey([]byte(ref.key())); err != nil || back != ref {
			t.Fatalf("%+v → %q → %+v, %v", ref, ref.key(), back, err)
		}
	})
}
