package cache

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"

	bolt "go.etcd.io/bbolt"
	"golang.org/x/text/unicode/norm"
)

// PhraseKey identifies the audio of one sentence: the SHA-256 of a
// PhraseSpec's canonical encoding.
type PhraseKey [32]byte

// String returns the key in hex.
func (k PhraseKey) String() string { return hex.EncodeToString(k[:]) }

// PhraseSpec is everything that decides a sentence's audio. Two specs that
// would give different audio must give different keys; two that give the
// same audio should give the same key.
type PhraseSpec struct {
	// ModelDigest is the voice model's content digest (hex SHA-256 of the
	// model files), so re-quantizing or replacing a model misses.
	ModelDigest string
	// Voice is the voice's id as the daemon names it.
	Voice string
	// Speaker is the speaker's name or id in a multi-speaker model, or the
	// digest of a speaker embedding; empty for a single-speaker voice.
	Speaker string
	// Params are the numeric synthesis parameters that change the audio
	// (length_scale, noise_scale, noise_w, volume if applied before
	// caching, ...). Values are compared at float32 precision, the
	// precision the models take them in, so 0.667 and float32(0.667) are
	// the same parameter; -0 and 0 are the same too.
	Params map[string]float64
	// Settings are the other settings that change the audio (phonemizer
	// language, text front-end version, ...).
	Settings map[string]string
	// SampleRate is the rate of the stored audio, in Hz.
	SampleRate int
	// Text is the sentence; Key normalizes it with NormalizeSentence.
	Text string
}

// phraseKeyDomain starts every encoding so that no other hash in mynah can
// collide with a phrase key by construction; bump it to invalidate every
// cached phrase after a change of meaning.
const phraseKeyDomain = "mynah phrase key v1"

// Key returns the spec's phrase key. The encoding is canonical: every
// string is length-prefixed (so no two field splits give the same bytes),
// maps are written sorted by name, and floats are formatted with
// strconv.FormatFloat(v, 'g', -1, 32).
func (p PhraseSpec) Key() PhraseKey {
	text := NormalizeSentence(p.Text)
	b := make([]byte, 0, 128+len(text))
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(phraseKeyDomain)
	str(p.ModelDigest)
	str(p.Voice)
	str(p.Speaker)
	b = binary.AppendUvarint(b, uint64(len(p.Params)))
	for _, name := range slices.Sorted(maps.Keys(p.Params)) {
		v := p.Params[name]
		if v == 0 {
			v = 0 // -0 → 0
		}
		str(name)
		str(strconv.FormatFloat(v, 'g', -1, 32))
	}
	b = binary.AppendUvarint(b, uint64(len(p.Settings)))
	for _, name := range slices.Sorted(maps.Keys(p.Settings)) {
		str(name)
		str(p.Settings[name])
	}
	str(strconv.Itoa(p.SampleRate))
	str(text)
	return sha256.Sum256(b)
}

// NormalizeSentence is the form of a sentence that goes into its key:
// Unicode NFC, every run of white space folded to one space, trimmed.
// Case and punctuation are kept: they change prosody ("Hello." and
// "hello?" are said differently). Invalid UTF-8 becomes U+FFFD.
func NormalizeSentence(s string) string {
	s = norm.NFC.String(s)
	var b strings.Builder
	b.Grow(len(s))
	space := false
	for _, r := range s {
		if unicode.IsSpace(r) {
			space = b.Len() > 0
			continue
		}
		if space {
			b.WriteByte(' ')
			space = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// GetPhrase returns a copy of the phrase's value. A miss is (nil, false,
// nil). A hit moves the phrase to the front of the LRU in memory; the new
// last-use time reaches the file at the next flush, so a hit costs one
// read transaction and no write.
func (s *Store) GetPhrase(key PhraseKey) ([]byte, bool, error) {
	data, _, ok, err := s.GetPhraseStamp(key)
	return data, ok, err
}

// GetPhraseStamp is GetPhrase, and the stamp of the record it read: a
// number no other record under any key has had or will have in this
// Store. A caller that keeps a phrase's audio decoded in memory checks
// with PhraseStamp that the record it came from is still the one there.
func (s *Store) GetPhraseStamp(key PhraseKey) ([]byte, uint64, bool, error) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil, 0, false, ErrClosed
	}
	e := s.st.phrases[key]
	now := s.opts.Now().UnixNano()
	expired := e != nil && s.expiredLocked(e, now)
	if e == nil || expired {
		s.count.misses++
		s.countDirty = true
		s.mu.Unlock()
		if expired {
			s.submitAsync(&writeOp{apply: func(tx *bolt.Tx) error { return s.expireLocked(tx, key) }})
		}
		return nil, 0, false, nil
	}
	size, stamp := e.rec.size, e.stamp
	if !s.readOnly {
		e.rec.lastUse = now
		s.st.lru.MoveToFront(e.elem)
		s.dirty[key] = struct{}{}
	}
	s.mu.Unlock()

	var out []byte
	err := s.view(func(tx *bolt.Tx) error {
		// A value missing or of another size was replaced or evicted
		// between the lookup and this transaction: a miss.
		if v := tx.Bucket(bucketPhrases).Get(key[:]); v != nil && int64(len(v)) == size {
			out = make([]byte, len(v))
			copy(out, v)
		}
		return nil
	})
	s.mu.Lock()
	if out != nil {
		s.count.hits++
	} else {
		s.count.misses++
	}
	s.countDirty = true
	s.mu.Unlock()
	if err != nil {
		return nil, 0, false, fmt.Errorf("get phrase: %w", err)
	}
	return out, stamp, out != nil, nil
}

// PhraseStamp is a GetPhrase that reads no value: for a phrase in the
// cache (a hit, counted, and moved to the front of the LRU as GetPhrase
// does) it returns the stamp of its record (GetPhraseStamp). A miss is
// (0, false), counted as one.
func (s *Store) PhraseStamp(key PhraseKey) (uint64, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return 0, false
	}
	e := s.st.phrases[key]
	now := s.opts.Now().UnixNano()
	s.countDirty = true
	if e == nil || s.expiredLocked(e, now) {
		s.count.misses++
		return 0, false
	}
	s.count.hits++
	if !s.readOnly {
		e.rec.lastUse = now
		s.st.lru.MoveToFront(e.elem)
		s.dirty[key] = struct{}{}
	}
	return e.stamp, true
}

// PutPhrase stores value under key and returns once it is committed.
// voice (at most 255 bytes) is recorded for Purge by voice. The least
// recently used unpinned phrases are evicted to stay under MaxBytes.
// Replacing a phrase keeps its pin. value is not retained.
//
// Errors wrap ErrBudget (value larger than MaxPhraseBytes, or pinned
// phrases leave no room), ErrWriteFailed (disk full, MaxFileBytes, I/O),
// ErrInvalid, ErrReadOnly or ErrClosed; the first two are counted in
// Stats.WriteErrors. The caller goes on without the cache.
func (s *Store) PutPhrase(key PhraseKey, voice string, value []byte) error {
	if s.readOnly {
		return ErrReadOnly
	}
	if len(voice) > maxVoiceLen {
		return fmt.Errorf("put phrase: %w: voice name of %d bytes exceeds the %d-byte limit", ErrInvalid, len(voice), maxVoiceLen)
	}
	size := int64(len(value))
	if size > s.opts.MaxPhraseBytes {
		err := fmt.Errorf("put phrase: %w: %d bytes exceed Options.MaxPhraseBytes (%d)", ErrBudget, size, s.opts.MaxPhraseBytes)
		s.noteFailure(err)
		return err
	}
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		return s.putLocked(tx, key, voice, value)
	}})
	if err != nil {
		return fmt.Errorf("put phrase: %w", err)
	}
	return nil
}

func (s *Store) putLocked(tx *bolt.Tx, key PhraseKey, voice string, value []byte) error {
	st := s.st
	size := int64(len(value))
	old := st.phrases[key]
	need := st.bytes + size
	if old != nil {
		need -= old.rec.size
	}
	// Choose the victims before changing anything, so that a refusal
	// leaves the cache as it was.
	var victims []*phraseEntry
	for el := st.lru.Back(); el != nil && need > s.opts.MaxBytes; el = el.Prev() {
		e := el.Value.(*phraseEntry)
		if e.rec.pinned || e == old {
			continue
		}
		victims = append(victims, e)
		need -= e.rec.size
	}
	if need > s.opts.MaxBytes {
		return fmt.Errorf("%w: %d bytes do not fit in Options.MaxBytes (%d) beside %d bytes of pinned phrases",
			ErrBudget, size, s.opts.MaxBytes, st.pinnedBytes)
	}
	for _, e := range victims {
		if err := deletePhrase(tx, e.key); err != nil {
			return err
		}
		st.remove(e)
		delete(s.dirty, e.key)
		s.count.evictions++
		s.countDirty = true
	}
	now := s.opts.Now().UnixNano()
	rec := indexRecord{size: size, created: now, lastUse: now, pinned: old != nil && old.rec.pinned, voice: voice}
	if err := tx.Bucket(bucketPhrases).Put(key[:], value); err != nil {
		return abort(err)
	}
	if err := tx.Bucket(bucketIndex).Put(key[:], rec.append(nil)); err != nil {
		return abort(err)
	}
	if old != nil {
		st.remove(old)
	}
	e := &phraseEntry{key: key, rec: rec}
	st.add(e)
	e.elem = st.lru.PushFront(e)
	delete(s.dirty, key)
	return nil
}

func deletePhrase(tx *bolt.Tx, key PhraseKey) error {
	if err := tx.Bucket(bucketPhrases).Delete(key[:]); err != nil {
		return abort(err)
	}
	return abort(tx.Bucket(bucketIndex).Delete(key[:]))
}

// DeletePhrase removes a phrase, pinned or not; the daemon calls it when a
// value fails its own integrity check. Deleting a missing phrase is not an
// error.
func (s *Store) DeletePhrase(key PhraseKey) error {
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		e := s.st.phrases[key]
		if e == nil {
			return nil
		}
		if err := deletePhrase(tx, key); err != nil {
			return err
		}
		s.st.remove(e)
		delete(s.dirty, key)
		return nil
	}})
	if err != nil {
		return fmt.Errorf("delete phrase: %w", err)
	}
	return nil
}

// Pin keeps a cached phrase from eviction, TTL expiry and PurgeOlder; the
// daemon synthesizes its configured pinned phrases at start-up, stores
// them and pins them. Pinned phrases count toward MaxBytes. ErrNotFound if
// the phrase is not cached.
func (s *Store) Pin(key PhraseKey) error { return s.setPin(key, true) }

// Unpin makes a pinned phrase evictable again.
func (s *Store) Unpin(key PhraseKey) error { return s.setPin(key, false) }

func (s *Store) setPin(key PhraseKey, pinned bool) error {
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		e := s.st.phrases[key]
		if e == nil {
			return fmt.Errorf("%w: %s", ErrNotFound, key)
		}
		rec := e.rec
		rec.pinned = pinned
		if err := tx.Bucket(bucketIndex).Put(key[:], rec.append(nil)); err != nil {
			return abort(err)
		}
		s.st.setPinned(e, pinned)
		return nil
	}})
	if err != nil {
		return fmt.Errorf("pin phrase: %w", err)
	}
	return nil
}

// Pinned returns the keys of the pinned phrases, so the daemon can unpin
// those no longer in its configuration.
func (s *Store) Pinned() []PhraseKey {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []PhraseKey
	for k, e := range s.st.phrases {
		if e.rec.pinned {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b PhraseKey) int { return strings.Compare(string(a[:]), string(b[:])) })
	return keys
}

func (s *Store) expiredLocked(e *phraseEntry, now int64) bool {
	return s.opts.TTL > 0 && !e.rec.pinned && now-e.rec.created > int64(s.opts.TTL)
}

func (s *Store) anyExpiredLocked() bool {
	if s.opts.TTL <= 0 {
		return false
	}
	now := s.opts.Now().UnixNano()
	for _, e := range s.st.phrases {
		if s.expiredLocked(e, now) {
			return true
		}
	}
	return false
}

// expireLocked deletes key if it is (still) expired.
func (s *Store) expireLocked(tx *bolt.Tx, key PhraseKey) error {
	e := s.st.phrases[key]
	if e == nil || !s.expiredLocked(e, s.opts.Now().UnixNano()) {
		return nil
	}
	if err := deletePhrase(tx, key); err != nil {
		return err
	}
	s.st.remove(e)
	delete(s.dirty, key)
	s.count.expired++
	s.countDirty = true
	return nil
}

// Purge removes what scope names and returns how many records went.
func (s *Store) Purge(scope PurgeScope) (int, error) {
	if err := scope.validate(); err != nil {
		return 0, err
	}
	var n int
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		n = 0
		switch scope.Kind {
		case PurgeSpeakers:
			n = len(s.st.speakers)
			if err := recreateBucket(tx, bucketSpeaker); err != nil {
				return err
			}
			s.st.speakers = map[string]*speakerEntry{}
			return nil
		case PurgePhrases, PurgeAll:
			n = len(s.st.phrases)
			names := [][]byte{bucketPhrases, bucketIndex}
			if scope.Kind == PurgeAll {
				n += len(s.st.spool) + len(s.st.speakers)
				names = append(names, bucketSpool, bucketSpeaker)
			}
			for _, name := range names {
				if err := recreateBucket(tx, name); err != nil {
					return err
				}
			}
			st := newState()
			if scope.Kind == PurgePhrases {
				st.spool, st.speakers = s.st.spool, s.st.speakers
			}
			s.st = st
			clear(s.dirty)
			return nil
		}
		now := s.opts.Now().UnixNano()
		for _, e := range s.st.phrases {
			var match bool
			switch scope.Kind {
			case PurgeVoice:
				match = e.rec.voice == scope.Voice
			case PurgeOlder:
				match = !e.rec.pinned && now-e.rec.created > int64(scope.Age)
			case PurgeExpired:
				match = s.expiredLocked(e, now)
			}
			if !match {
				continue
			}
			if err := deletePhrase(tx, e.key); err != nil {
				return err
			}
			s.st.remove(e)
			delete(s.dirty, e.key)
			n++
		}
		return nil
	}})
	if err != nil {
		return 0, fmt.Errorf("purge %s: %w", scope, err)
	}
	return n, nil
}

func recreateBucket(tx *bolt.Tx, name []byte) error {
	if err := tx.DeleteBucket(name); err != nil {
		return abort(err)
	}
	if _, err := tx.CreateBucket(name); err != nil {
		return abort(err)
	}
	return nil
}

// PurgeKind says what Purge removes.
type PurgeKind int

// Purge scopes. Pinned phrases go only with the scopes that name them.
const (
	PurgePhrases  PurgeKind = iota + 1 // every phrase, pinned ones too
	PurgeAll                           // every phrase, the spool and every speaker
	PurgeVoice                         // the phrases of PurgeScope.Voice, pinned ones too
	PurgeOlder                         // unpinned phrases stored more than PurgeScope.Age ago
	PurgeExpired                       // unpinned phrases past Options.TTL (none without a TTL)
	PurgeSpeakers                      // every stored speaker
)

// PurgeScope is the argument of Purge.
type PurgeScope struct {
	Kind  PurgeKind
	Voice string        // for PurgeVoice
	Age   time.Duration // for PurgeOlder
}

// maxScopeLen bounds the text ParsePurgeScope accepts.
const maxScopeLen = 300

// ParsePurgeScope reads the scope of `mynah cache purge --scope` and of the
// MQTT cache/purge command: "phrases", "speakers", "all", "expired",
// "voice=NAME" or "older=AGE", where AGE is a Go duration ("36h", "90m")
// or whole days ("7d"). At most 300 bytes.
func ParsePurgeScope(text string) (PurgeScope, error) {
	if len(text) > maxScopeLen {
		return PurgeScope{}, fmt.Errorf("%w: purge scope of %d bytes exceeds the %d-byte limit", ErrInvalid, len(text), maxScopeLen)
	}
	name, arg, hasArg := strings.Cut(text, "=")
	var sc PurgeScope
	switch {
	case name == "phrases" && !hasArg:
		sc.Kind = PurgePhrases
	case name == "all" && !hasArg:
		sc.Kind = PurgeAll
	case name == "speakers" && !hasArg:
		sc.Kind = PurgeSpeakers
	case name == "expired" && !hasArg:
		sc.Kind = PurgeExpired
	case name == "voice" && hasArg:
		sc.Kind, sc.Voice = PurgeVoice, arg
	case name == "older" && hasArg:
		age, err := parseAge(arg)
		if err != nil {
			return PurgeScope{}, fmt.Errorf("%w: purge scope %q: %v", ErrInvalid, text, err)
		}
		sc.Kind, sc.Age = PurgeOlder, age
	default:
		return PurgeScope{}, fmt.Errorf("%w: purge scope %q: want phrases, speakers, all, expired, voice=NAME or older=AGE", ErrInvalid, text)
	}
	if err := sc.validate(); err != nil {
		return PurgeScope{}, err
	}
	return sc, nil
}

func parseAge(s string) (time.Duration, error) {
	if days, ok := strings.CutSuffix(s, "d"); ok {
		n, err := strconv.ParseInt(days, 10, 64)
		if err != nil || n <= 0 || n > int64(time.Duration(1<<63-1)/(24*time.Hour)) {
			return 0, fmt.Errorf("age %q is not a positive whole number of days", s)
		}
		return time.Duration(n) * 24 * time.Hour, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, err
	}
	return d, nil
}

func (p PurgeScope) validate() error {
	switch p.Kind {
	case PurgePhrases, PurgeAll, PurgeExpired, PurgeSpeakers:
		return nil
	case PurgeVoice:
		if p.Voice == "" || len(p.Voice) > maxVoiceLen {
			return fmt.Errorf("%w: purge by voice needs a voice name of 1 to %d bytes", ErrInvalid, maxVoiceLen)
		}
		return nil
	case PurgeOlder:
		if p.Age <= 0 {
			return fmt.Errorf("%w: purge by age needs a positive age, not %v", ErrInvalid, p.Age)
		}
		return nil
	}
	return fmt.Errorf("%w: unknown purge kind %d", ErrInvalid, p.Kind)
}

// String is the scope as ParsePurgeScope reads it.
func (p PurgeScope) String() string {
	switch p.Kind {
	case PurgePhrases:
		return "phrases"
	case PurgeAll:
		return "all"
	case PurgeExpired:
		return "expired"
	case PurgeSpeakers:
		return "speakers"
	case PurgeVoice:
		return "voice=" + p.Voice
	case PurgeOlder:
		return "older=" + p.Age.String()
	}
	return fmt.Sprintf("PurgeKind(%d)", int(p.Kind))
}
