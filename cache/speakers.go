package cache

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/mynah-tts/mynah/quant/vecpack"
)

// Limits of a speaker record. PutSpeaker refuses larger values with an
// error wrapping ErrInvalid that names the limit.
const (
	// MaxSpeakersLimit is the most speakers Options.MaxSpeakers may keep.
	MaxSpeakersLimit = 64
	// MaxSpeakerNameLen bounds a speaker's name and owner, in bytes.
	MaxSpeakerNameLen = 64
	// MaxEmbeddingDims bounds a speaker embedding's length.
	MaxEmbeddingDims = 4096
	// MaxPromptIDs bounds a speaker's prompt, in token ids.
	MaxPromptIDs = 4096
	// MaxEncoderDigestLen bounds Speaker.EncoderDigest, in bytes.
	MaxEncoderDigestLen = 255
)

// Speaker precisions: how Options.SpeakerPrecision stores embeddings.
const (
	PrecisionFP16 = "fp16" // IEEE binary16, 2 bytes a value (the default)
	PrecisionInt8 = "int8" // one float32 scale and 1 byte a value
)

// Speaker is an enrolled voice: the embedding the voice's speaker encoder
// made from a reference recording (which is never stored), and the token
// ids of the speaker's prompt for autoregressive decoders.
type Speaker struct {
	// Owner is the household member in whose MQTT topic the speaker was
	// enrolled; "" is a shared speaker. Same rules as Name, but may be
	// empty.
	Owner string
	// Name is 1 to MaxSpeakerNameLen bytes of A–Z a–z 0–9 _ . - without
	// "..", and not ".".
	Name string
	// Embedding is 1 to MaxEmbeddingDims finite values, not all zero. What
	// GetSpeaker returns is the stored (fp16 or int8) value, not the
	// original.
	Embedding []float32
	// Prompt is at most MaxPromptIDs token ids; it may be empty.
	Prompt []int64
	// EncoderDigest names the speaker encoder that made Embedding (1 to
	// MaxEncoderDigestLen bytes; mynah uses the model's hex SHA-256). An
	// embedding is meaningless to another encoder: see CheckEncoder.
	EncoderDigest string
	// Created and Used are set by the store: when PutSpeaker stored it and
	// when it was last stored or got. Their values in PutSpeaker's
	// argument are ignored.
	Created, Used time.Time
}

// SpeakerRef names a speaker.
type SpeakerRef struct {
	Owner, Name string
}

// String is "owner/name", or "name" for a shared speaker.
func (r SpeakerRef) String() string {
	if r.Owner == "" {
		return r.Name
	}
	return r.Owner + "/" + r.Name
}

// Validate checks the name and owner rules of Speaker and returns an error
// wrapping ErrInvalid. The daemon checks names from MQTT with it before it
// spends time on an embedding.
func (r SpeakerRef) Validate() error {
	if err := checkSpeakerName("owner", r.Owner, true); err != nil {
		return err
	}
	return checkSpeakerName("speaker name", r.Name, false)
}

func checkSpeakerName(what, s string, mayBeEmpty bool) error {
	switch {
	case s == "" && mayBeEmpty:
		return nil
	case s == "" || len(s) > MaxSpeakerNameLen:
		return fmt.Errorf("%w: %s of %d bytes, want 1 to %d (MaxSpeakerNameLen)", ErrInvalid, what, len(s), MaxSpeakerNameLen)
	case s == "." || strings.Contains(s, ".."):
		return fmt.Errorf("%w: %s %q: \".\" and \"..\" are not names", ErrInvalid, what, s)
	}
	for i := range len(s) {
		if c := s[i]; !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-') {
			return fmt.Errorf("%w: %s %q: byte %#02x at %d is not one of A-Z a-z 0-9 _ . -", ErrInvalid, what, s, c, i)
		}
	}
	return nil
}

// key is the bbolt key: "owner/name" ("/name" when shared); neither part
// can hold a slash.
func (r SpeakerRef) key() string { return r.Owner + "/" + r.Name }

func parseSpeakerKey(k []byte) (SpeakerRef, error) {
	owner, name, ok := strings.Cut(string(k), "/")
	r := SpeakerRef{Owner: owner, Name: name}
	if !ok {
		return r, fmt.Errorf("speaker key without a slash")
	}
	return r, r.Validate()
}

// CheckEncoder returns nil if the speaker was enrolled with the encoder
// whose digest is given, and otherwise an error wrapping
// ErrEncoderChanged that tells the user to re-enroll.
func (sp Speaker) CheckEncoder(digest string) error {
	if sp.EncoderDigest == digest {
		return nil
	}
	return fmt.Errorf("speaker %s: %w: enrolled with encoder %s, the installed one is %s; re-enroll it with a new recording",
		SpeakerRef{sp.Owner, sp.Name}, ErrEncoderChanged, shortDigest(sp.EncoderDigest), shortDigest(digest))
}

func shortDigest(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return fmt.Sprintf("%q", d)
}

// SpeakerInfo describes a stored speaker without its vectors.
type SpeakerInfo struct {
	Owner, Name   string
	EncoderDigest string
	Created, Used time.Time
	Precision     string // PrecisionFP16 or PrecisionInt8
	Dims          int    // embedding length
	PromptIDs     int    // prompt length
	Bytes         int    // size of the stored record
	// Cosine and RelativeL2 compare the stored embedding with the one
	// PutSpeaker was given (vecpack.Cosine, vecpack.RelativeL2).
	Cosine, RelativeL2 float64
}

// speakerEntry is a stored speaker in memory: decoded, so that GetSpeaker
// never reads the file, and with its encoded embedding, so that writing a
// new last-use time writes the same embedding bytes again (re-encoding the
// decoded int8 values could move them by a rounding step each time).
type speakerEntry struct {
	ref     SpeakerRef
	rec     speakerRecord
	emb     []float32 // rec.embedding decoded
	size    int       // bytes of the stored record
	touched bool      // used since the record was written
}

// PutSpeaker stores sp (replacing a speaker of the same owner and name)
// and returns once it is committed. Then only the Options.MaxSpeakers most
// recently used speakers are kept: the others are deleted and returned, so
// that the daemon can announce them. sp is not retained.
//
// The embedding is stored in Options.SpeakerPrecision; the cosine and
// relative L2 error of the stored vector against sp.Embedding are kept with
// it (SpeakerInfo, Stats). Errors wrap ErrInvalid (names, limits, NaN,
// infinite or all-zero embeddings, values beyond fp16's ±65504 when
// storing fp16), ErrWriteFailed, ErrReadOnly or ErrClosed.
func (s *Store) PutSpeaker(sp Speaker) (evicted []SpeakerRef, err error) {
	if s.readOnly {
		return nil, ErrReadOnly
	}
	rec, emb, err := s.newSpeakerRecord(sp)
	if err != nil {
		return nil, fmt.Errorf("put speaker: %w", err)
	}
	ref := SpeakerRef{sp.Owner, sp.Name}
	err = s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		evicted = nil // a batch that failed runs each op again alone
		st := s.st
		k := ref.key()
		var others []*speakerEntry
		for _, e := range st.speakers {
			if e.ref != ref {
				others = append(others, e)
			}
		}
		slices.SortFunc(others, func(a, b *speakerEntry) int {
			return cmp.Or(cmp.Compare(a.rec.used, b.rec.used), strings.Compare(a.ref.key(), b.ref.key()))
		})
		victims := others[:max(0, len(others)+1-s.opts.MaxSpeakers)]
		b := tx.Bucket(bucketSpeaker)
		for _, v := range victims {
			if err := b.Delete([]byte(v.ref.key())); err != nil {
				return abort(err)
			}
		}
		r := rec
		r.created = s.nextSpeakerUseLocked()
		r.used = r.created
		raw := r.append(nil, k)
		if err := b.Put([]byte(k), raw); err != nil {
			return abort(err)
		}
		for _, v := range victims {
			delete(st.speakers, v.ref.key())
			evicted = append(evicted, v.ref)
		}
		st.speakers[k] = &speakerEntry{ref: ref, rec: r, emb: emb, size: len(raw)}
		return nil
	}})
	if err != nil {
		return nil, fmt.Errorf("put speaker %s: %w", ref, err)
	}
	if len(evicted) > 0 {
		s.log.Info("speakers evicted", "stored", ref.String(), "evicted", len(evicted), "max_speakers", s.opts.MaxSpeakers)
	}
	return evicted, nil
}

// newSpeakerRecord checks sp and encodes its embedding; the times are
// filled in by the writer.
func (s *Store) newSpeakerRecord(sp Speaker) (speakerRecord, []float32, error) {
	ref := SpeakerRef{sp.Owner, sp.Name}
	if err := ref.Validate(); err != nil {
		return speakerRecord{}, nil, err
	}
	switch n := len(sp.EncoderDigest); {
	case n == 0 || n > MaxEncoderDigestLen:
		return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: encoder digest of %d bytes, want 1 to %d (MaxEncoderDigestLen)",
			ErrInvalid, ref, n, MaxEncoderDigestLen)
	case len(sp.Embedding) == 0 || len(sp.Embedding) > MaxEmbeddingDims:
		return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: embedding of %d values, want 1 to %d (MaxEmbeddingDims)",
			ErrInvalid, ref, len(sp.Embedding), MaxEmbeddingDims)
	case len(sp.Prompt) > MaxPromptIDs:
		return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: prompt of %d ids exceeds the limit of %d (MaxPromptIDs)",
			ErrInvalid, ref, len(sp.Prompt), MaxPromptIDs)
	}
	zero := true
	for i, x := range sp.Embedding {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: embedding value %d is %v", ErrInvalid, ref, i, x)
		}
		zero = zero && x == 0
	}
	if zero {
		return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: embedding is all zeros", ErrInvalid, ref)
	}
	rec := speakerRecord{digest: sp.EncoderDigest, prompt: slices.Clone(sp.Prompt)}
	if s.opts.SpeakerPrecision == PrecisionInt8 {
		rec.precision, rec.embedding = precisionCodeInt8, vecpack.EncodeInt8(sp.Embedding)
	} else {
		if !vecpack.FitsFP16(sp.Embedding) {
			return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: embedding values beyond fp16's ±%d; normalize it or set Options.SpeakerPrecision to int8",
				ErrInvalid, ref, vecpack.MaxHalf)
		}
		rec.precision, rec.embedding = precisionCodeFP16, vecpack.EncodeFP16(sp.Embedding)
	}
	stored, err := rec.decodeEmbedding()
	if err != nil { // our own encoding: cannot happen
		return speakerRecord{}, nil, fmt.Errorf("speaker %s: %w", ref, err)
	}
	rec.cosine = vecpack.Cosine(sp.Embedding, stored)
	rec.relL2 = vecpack.RelativeL2(sp.Embedding, stored)
	if math.IsNaN(rec.cosine) { // every value vanished below fp16's smallest subnormal
		return speakerRecord{}, nil, fmt.Errorf("%w: speaker %s: embedding values too small to store in %s; normalize it",
			ErrInvalid, ref, s.opts.SpeakerPrecision)
	}
	return rec, stored, nil
}

// nextSpeakerUseLocked returns the time to record as a speaker's last
// use: now, but always later than every recorded one. The LRU order is
// then total even with a coarse clock, and stays right when the clock
// steps back (a board without a real-time clock setting it from NTP).
func (s *Store) nextSpeakerUseLocked() int64 {
	t := s.opts.Now().UnixNano()
	for _, e := range s.st.speakers {
		t = max(t, e.rec.used+1)
	}
	return t
}

// GetSpeaker returns a copy of a stored speaker from memory: no disk read.
// A miss is (Speaker{}, false, nil); an invalid owner or name is an error
// wrapping ErrInvalid. A hit makes the speaker the most recently used; the
// new time reaches the file at the next flush (Options.FlushInterval) or
// Close, like a phrase hit's.
//
// A store that broke (see ErrWriteFailed) still answers from memory: the
// reference audio is gone, so a stored speaker cannot be made again.
func (s *Store) GetSpeaker(owner, name string) (Speaker, bool, error) {
	ref := SpeakerRef{owner, name}
	if err := ref.Validate(); err != nil {
		return Speaker{}, false, fmt.Errorf("get speaker: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return Speaker{}, false, ErrClosed
	}
	e := s.st.speakers[ref.key()]
	if e == nil {
		return Speaker{}, false, nil
	}
	if !s.readOnly {
		e.rec.used = s.nextSpeakerUseLocked()
		e.touched = true
	}
	return Speaker{
		Owner:         owner,
		Name:          name,
		Embedding:     slices.Clone(e.emb),
		Prompt:        slices.Clone(e.rec.prompt),
		EncoderDigest: e.rec.digest,
		Created:       time.Unix(0, e.rec.created),
		Used:          time.Unix(0, e.rec.used),
	}, true, nil
}

// ListSpeakers describes the stored speakers, most recently used first.
func (s *Store) ListSpeakers() []SpeakerInfo {
	s.mu.Lock()
	entries := make([]*speakerEntry, 0, len(s.st.speakers))
	for _, e := range s.st.speakers {
		entries = append(entries, e)
	}
	slices.SortFunc(entries, func(a, b *speakerEntry) int {
		return cmp.Or(cmp.Compare(b.rec.used, a.rec.used), strings.Compare(a.ref.key(), b.ref.key()))
	})
	out := make([]SpeakerInfo, len(entries))
	for i, e := range entries {
		out[i] = SpeakerInfo{
			Owner:         e.ref.Owner,
			Name:          e.ref.Name,
			EncoderDigest: e.rec.digest,
			Created:       time.Unix(0, e.rec.created),
			Used:          time.Unix(0, e.rec.used),
			Precision:     e.rec.precisionName(),
			Dims:          len(e.emb),
			PromptIDs:     len(e.rec.prompt),
			Bytes:         e.size,
			Cosine:        e.rec.cosine,
			RelativeL2:    e.rec.relL2,
		}
	}
	s.mu.Unlock()
	return out
}

// ForgetSpeaker deletes a speaker at once and reports whether it was
// stored; it returns after the deletion is committed.
func (s *Store) ForgetSpeaker(owner, name string) (bool, error) {
	ref := SpeakerRef{owner, name}
	if err := ref.Validate(); err != nil {
		return false, fmt.Errorf("forget speaker: %w", err)
	}
	var found bool
	err := s.submit(&writeOp{apply: func(tx *bolt.Tx) error {
		k := ref.key()
		found = s.st.speakers[k] != nil
		if !found {
			return nil
		}
		if err := tx.Bucket(bucketSpeaker).Delete([]byte(k)); err != nil {
			return abort(err)
		}
		delete(s.st.speakers, k)
		return nil
	}})
	if err != nil {
		return false, fmt.Errorf("forget speaker %s: %w", ref, err)
	}
	return found, nil
}

// flushSpeakersLocked writes the last-use times of speakers got since
// their record was written.
func (s *Store) flushSpeakersLocked(tx *bolt.Tx) error {
	b := tx.Bucket(bucketSpeaker)
	for k, e := range s.st.speakers {
		if !e.touched {
			continue
		}
		if err := b.Put([]byte(k), e.rec.append(make([]byte, 0, e.size), k)); err != nil {
			return abort(err)
		}
		e.touched = false
	}
	return nil
}

func (st *state) speakersTouched() bool {
	for _, e := range st.speakers {
		if e.touched {
			return true
		}
	}
	return false
}

// speakerStats fills the speaker figures of Stats.
func (st *state) speakerStats(out *Stats) {
	out.Speakers = len(st.speakers)
	if len(st.speakers) == 0 {
		return
	}
	var cos, rel float64
	for _, e := range st.speakers {
		cos += e.rec.cosine
		rel += e.rec.relL2
	}
	out.SpeakerCosine = cos / float64(len(st.speakers))
	out.SpeakerRelativeL2 = rel / float64(len(st.speakers))
}
