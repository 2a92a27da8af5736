package daemon

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mynah-tts/mynah/audio"
)

// fakeSpeakerStore is a SpeakerStore made of function fields.
type fakeSpeakerStore struct {
	EnrollFunc func(ctx context.Context, e Enrollment) (SpeakerInfo, []SpeakerInfo, error)
	ForgetFunc func(owner, name string) (bool, error)
	ListFunc   func() ([]SpeakerInfo, error)
}

func (f *fakeSpeakerStore) Enroll(ctx context.Context, e Enrollment) (SpeakerInfo, []SpeakerInfo, error) {
	return f.EnrollFunc(ctx, e)
}
func (f *fakeSpeakerStore) Forget(owner, name string) (bool, error) { return f.ForgetFunc(owner, name) }
func (f *fakeSpeakerStore) List() ([]SpeakerInfo, error)            { return f.ListFunc() }

var _ SpeakerStore = (*fakeSpeakerStore)(nil)

// speakerRec keeps at most two speakers, in enrollment order, like a tiny
// LRU; a reference shorter than 100 ms is refused as the encoder would.
type speakerRec struct {
	mu       sync.Mutex
	speakers []SpeakerInfo
	got      []Enrollment
	fake     fakeSpeakerStore
}

func newSpeakerRec() *speakerRec {
	s := &speakerRec{}
	s.fake.EnrollFunc = func(ctx context.Context, e Enrollment) (SpeakerInfo, []SpeakerInfo, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.got = append(s.got, e)
		if e.Audio.Duration() < 100*time.Millisecond {
			return SpeakerInfo{}, nil, fmt.Errorf("%w: %v is too short", errBadReference, e.Audio.Duration())
		}
		if e.Voice == "piper-only" {
			return SpeakerInfo{}, nil, fmt.Errorf("%w: piper-only", ErrNoCloning)
		}
		info := SpeakerInfo{Owner: e.Owner, Name: e.Name, Voice: "clone", Created: t0}
		s.speakers = slices.DeleteFunc(s.speakers, func(x SpeakerInfo) bool { return x.Owner == e.Owner && x.Name == e.Name })
		s.speakers = append(s.speakers, info)
		var evicted []SpeakerInfo
		for len(s.speakers) > 2 {
			evicted = append(evicted, s.speakers[0])
			s.speakers = s.speakers[1:]
		}
		return info, evicted, nil
	}
	s.fake.ForgetFunc = func(owner, name string) (bool, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		n := len(s.speakers)
		s.speakers = slices.DeleteFunc(s.speakers, func(x SpeakerInfo) bool { return x.Owner == owner && x.Name == name })
		return len(s.speakers) < n, nil
	}
	s.fake.ListFunc = func() ([]SpeakerInfo, error) {
		s.mu.Lock()
		defer s.mu.Unlock()
		return slices.Clone(s.speakers), nil
	}
	return s
}

// wavBase64 is a WAV of n samples at 16 kHz, in base64.
func wavBase64(n int) string {
	pcm := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, n)}
	for i := range pcm.Samples {
		pcm.Samples[i] = int16(i * 37)
	}
	return base64.StdEncoding.EncodeToString(audio.EncodeWAV(pcm))
}

func enrollJSON(id, name, wav string) string {
	return fmt.Sprintf(`{"id":%q,"name":%q,"audio":%q}`, id, name, wav)
}

func TestDecodeEnroll(t *testing.T) {
	good := wavBase64(16000)
	// A WAV header that claims 10 hours of audio.
	long := audio.EncodeWAV(audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 16)})
	binary.LittleEndian.PutUint32(long[40:], 10*3600*16000*2)
	binary.LittleEndian.PutUint32(long[4:], 36+10*3600*16000*2)
	// Headers that lie: 0 channels, 0 Hz, a float format tag that is not
	// PCM at 16 bits, a data chunk longer than the file.
	patched := func(off int, v uint32, width int) string {
		w := audio.EncodeWAV(audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 1600)})
		if width == 2 {
			binary.LittleEndian.PutUint16(w[off:], uint16(v))
		} else {
			binary.LittleEndian.PutUint32(w[off:], v)
		}
		return base64.StdEncoding.EncodeToString(w)
	}
	for _, tc := range []struct {
		name, payload, reason, field string
	}{
		{"unsized data chunk before fmt", enrollJSON("e", "dad", base64.StdEncoding.EncodeToString(slices.Concat([]byte("RIFF\xff\xff\xff\xffWAVEdata\xff\xff\xff\xff"), make([]byte, 64)))), ReasonBadAudio, "audio"},
		{"base64 with a stray character", enrollJSON("e", "dad", good[:8]+"*"+good[8:]), ReasonBadAudio, "audio"},
		{"0 channels", enrollJSON("e", "dad", patched(22, 0, 2)), ReasonBadAudio, "audio"},
		{"0 Hz", enrollJSON("e", "dad", patched(24, 0, 4)), ReasonBadAudio, "audio"},
		{"format tag 0x55 (MP3)", enrollJSON("e", "dad", patched(20, 0x55, 2)), ReasonBadAudio, "audio"},
		{"data chunk longer than the file", enrollJSON("e", "dad", patched(40, 1<<30, 4)), ReasonBadAudio, "audio"},
		{"RIFF size lying", enrollJSON("e", "dad", patched(4, 1<<31, 4)), ReasonBadAudio, "audio"},
		{"not JSON", "hello", ReasonInvalidJSON, ""},
		{"broken JSON", `{"name":`, ReasonInvalidJSON, ""},
		{"two objects", `{"name":"a","audio":"` + good + `"}{}`, ReasonInvalidJSON, ""},
		{"name missing", `{"audio":"` + good + `"}`, ReasonBadField, "name"},
		{"name a number", `{"name":5,"audio":"` + good + `"}`, ReasonBadField, "name"},
		{"name with a slash", enrollJSON("e", "a/b", good), ReasonBadName, "name"},
		{"name too long", enrollJSON("e", strings.Repeat("n", MaxNameBytes+1), good), ReasonBadName, "name"},
		{"bad id", enrollJSON("../x", "dad", good), ReasonBadName, "id"},
		{"bad voice", `{"name":"dad","voice":"../v","audio":"` + good + `"}`, ReasonBadName, "voice"},
		{"audio missing", `{"name":"dad"}`, ReasonBadField, "audio"},
		{"audio not base64", enrollJSON("e", "dad", "!!!!"), ReasonBadAudio, "audio"},
		{"audio not a WAV", enrollJSON("e", "dad", base64.StdEncoding.EncodeToString([]byte("RIFF....not a wave file"))), ReasonBadAudio, "audio"},
		{"WAV claiming 10 hours", enrollJSON("e", "dad", base64.StdEncoding.EncodeToString(long)), ReasonBadAudio, "audio"},
		{"WAV of no samples", enrollJSON("e", "dad", wavBase64(0)), ReasonBadAudio, "audio"},
		{"over MaxEnrollBytes", enrollJSON("e", "dad", strings.Repeat("A", MaxEnrollBytes)), ReasonTooLarge, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := DecodeEnroll([]byte(tc.payload))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("error %v is not a *DecodeError", err)
			}
			if de.Reason != tc.reason || de.Field != tc.field {
				t.Errorf("reason %q field %q (%v), want %q %q", de.Reason, de.Field, err, tc.reason, tc.field)
			}
			if want := peekID([]byte(tc.payload)); e.ID != want {
				t.Errorf("id %q, want the payload's %q", e.ID, want)
			}
		})
	}
	// Every failure names the request when the payload has an id, even
	// one refused before its fields were read.
	for _, tc := range []struct {
		name, payload, id string
	}{
		{"too large", enrollJSON("big", "dad", strings.Repeat("A", MaxEnrollBytes)), "big"},
		{"too large, id last", `{"name":"dad","audio":"` + strings.Repeat("A", MaxEnrollBytes) + `","id":"late"}`, "late"},
		{"name a number", `{"id":"n5","name":5,"audio":"` + good + `"}`, "n5"},
		{"broken after the id", `{"id":"br","name":`, "br"},
		{"audio not base64", enrollJSON("nb", "dad", "!!!!"), "nb"},
	} {
		if e, err := DecodeEnroll([]byte(tc.payload)); err == nil || e.ID != tc.id {
			t.Errorf("%s: id %q (%v), want %q", tc.name, e.ID, err, tc.id)
		}
	}

	e, err := DecodeEnroll([]byte(`{"id":"e1","name":"dad","voice":"clone","audio":"` + good + `"}`))
	if err != nil {
		t.Fatal(err)
	}
	if e.ID != "e1" || e.Name != "dad" || e.Voice != "clone" || e.Audio.Rate != 16000 || len(e.Audio.Samples) != 16000 {
		t.Errorf("decoded %+v", e)
	}
	// Wrapped at 76 columns and without padding, as base64 tools write it.
	var wrapped strings.Builder
	raw := strings.TrimRight(good, "=")
	for i := 0; i < len(raw); i += 76 {
		wrapped.WriteString(raw[i:min(i+76, len(raw))] + "\n")
	}
	if _, err := DecodeEnroll([]byte(enrollJSON("e", "dad", wrapped.String()))); err != nil {
		t.Errorf("wrapped base64: %v", err)
	}

	// What recorders and scripts send: a WAV written to a pipe, base64
	// with white space, a byte-order mark.
	ref := audio.PCM{Rate: 16000, Channels: 1, Samples: make([]int16, 1600)}
	for i := range ref.Samples {
		ref.Samples[i] = int16(i * 37)
	}
	unsized := func(riffSize, dataSize uint32) string {
		w := audio.EncodeWAV(ref)
		binary.LittleEndian.PutUint32(w[4:], riffSize)
		binary.LittleEndian.PutUint32(w[40:], dataSize)
		return base64.StdEncoding.EncodeToString(w)
	}
	// Indented lines of 60 with a space and a tab in each, as a script
	// pasting base64 into JSON by hand leaves them.
	var indented strings.Builder
	for i := 0; i < len(good); i += 60 {
		line := good[i:min(i+60, len(good))]
		indented.WriteString("\n    " + line[:len(line)/2] + " \t" + line[len(line)/2:])
	}
	indented.WriteString("\r\n  ")
	for _, tc := range []struct {
		name, payload string
		samples       int
	}{
		{"RIFF and data size 0xFFFFFFFF", enrollJSON("e", "dad", unsized(0xFFFFFFFF, 0xFFFFFFFF)), 1600},
		{"RIFF and data size 0", enrollJSON("e", "dad", unsized(0, 0)), 1600},
		{"sizes 0xFFFFFFFF, the pipe cut mid-sample", enrollJSON("e", "dad", unsizedCut(ref)), 1600},
		{"base64 with spaces, tabs and newlines", enrollJSON("e", "dad", indented.String()), 16000},
		{"base64 with surrounding white space", enrollJSON("e", "dad", " \n"+good+"\n "), 16000},
		{"byte-order mark", "\ufeff" + enrollJSON("e", "dad", good), 16000},
	} {
		e, err := DecodeEnroll([]byte(tc.payload))
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if len(e.Audio.Samples) != tc.samples || e.ID != "e" {
			t.Errorf("%s: %d samples, id %q; want %d, \"e\"", tc.name, len(e.Audio.Samples), e.ID, tc.samples)
		}
	}
}

// unsizedCut is ref as ffmpeg writes it to a pipe, cut one byte into a
// sample, in base64.
func unsizedCut(ref audio.PCM) string {
	w := append(audio.EncodeWAV(ref), 0x7f)
	binary.LittleEndian.PutUint32(w[4:], 0xFFFFFFFF)
	binary.LittleEndian.PutUint32(w[40:], 0xFFFFFFFF)
	return base64.StdEncoding.EncodeToString(w)
}

func FuzzDecodeEnroll(f *testing.F) {
	f.Add([]byte(enrollJSON("e", "dad", wavBase64(64))))
	f.Add([]byte(`{"name":"dad","audio":""}`))
	f.Add([]byte(`{"name":"dad","audio":"UklGRg=="}`))
	f.Add([]byte(`not json`))
	f.Add([]byte("\ufeff" + enrollJSON("e", "dad", " UklGRv////9XQVZFZm10IBAAAAABAAEAgD4AAAB9AAACABAAZGF0Yf////8BAAIA\n")))
	f.Add([]byte(enrollJSON("e", "dad", "UklGRgAAAABXQVZF Zm10IBAAAAABAAEAgD4AAAB9AAACABAA\tZGF0YQAAAAABAAIA")))
	f.Add([]byte(`{"id":"i","name":`))
	f.Fuzz(func(t *testing.T, payload []byte) {
		e, err := DecodeEnroll(payload)
		if e.ID != "" && ValidateName(e.ID) != nil {
			t.Fatalf("id %q is not a valid name", e.ID)
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error %v is not a *DecodeError with a reason", err)
			}
			if id := peekID(payload); e.ID == "" && id != "" {
				t.Fatalf("failed without the payload's id %q", id)
			}
			return
		}
		if ValidateName(e.Name) != nil || len(e.Audio.Samples) == 0 || e.Audio.Validate() != nil {
			t.Fatalf("accepted %+v", e)
		}
	})
}

func TestEnrollAndForget(t *testing.T) {
	sp := newSpeakerRec()
	h := newHarness(t, func(o *Options) { o.Speakers = &sp.fake }).start()
	wav := wavBase64(16000)

	h.send("u/anna/speaker/enroll", enrollJSON("e1", "dad", wav))
	if e := h.waitEvent("e1", EventDone); e.Owner != "anna" || e.Speaker != "dad" || e.Command != "speaker/enroll" {
		t.Errorf("enroll event %+v", e)
	}
	h.send("speaker/enroll", enrollJSON("e2", "radio", wav))
	if e := h.waitEvent("e2", EventDone); e.Owner != "" || e.Speaker != "radio" {
		t.Errorf("shared enroll event %+v", e)
	}
	h.send("u/ben/speaker/enroll", enrollJSON("e3", "gran", wav))
	h.waitEvent("e3", EventDone)
	// The store keeps two: anna's dad went.
	waitFor(t, "evicted event", func() bool {
		for _, e := range h.events() {
			if e.State == EventEvicted && e.Owner == "anna" && e.Speaker == "dad" {
				return true
			}
		}
		return false
	})
	waitFor(t, "lists", func() bool {
		return len(h.tr.on("mynah/test/u/anna/speakers")) > 0 && len(h.tr.on("mynah/test/u/ben/speakers")) > 0 &&
			len(h.tr.on("mynah/test/speakers")) > 0
	})
	list := func(topic string) []string {
		msgs := h.tr.on(topic)
		last := msgs[len(msgs)-1]
		if !last.retained {
			t.Errorf("%s not retained", topic)
		}
		var infos []SpeakerInfo
		if err := json.Unmarshal(last.payload, &infos); err != nil {
			t.Fatalf("%s: %v", topic, err)
		}
		var names []string
		for _, i := range infos {
			names = append(names, i.Owner+":"+i.Name)
		}
		return names
	}
	if got := list("mynah/test/u/anna/speakers"); len(got) != 0 {
		t.Errorf("anna's list after the eviction: %v", got)
	}
	if got := list("mynah/test/u/ben/speakers"); !slices.Equal(got, []string{"ben:gran"}) {
		t.Errorf("ben's list: %v (must hold only ben's speakers)", got)
	}
	if got := list("mynah/test/speakers"); !slices.Equal(got, []string{":radio"}) {
		t.Errorf("shared list: %v", got)
	}

	// anna cannot forget ben's speaker; ben can.
	before := len(h.events())
	h.send("u/anna/speaker/forget", "gran")
	waitFor(t, "forget answer", func() bool { return len(h.events()) > before })
	if e := h.events()[before]; e.State != EventFailed || e.Reason != ReasonUnknownSpeaker {
		t.Errorf("forgetting another owner's speaker: %+v", e)
	}
	before = len(h.events())
	h.send("u/ben/speaker/forget", "gran\n")
	waitFor(t, "forget answer", func() bool { return len(h.events()) > before })
	if e := h.events()[before]; e.State != EventDone || e.Speaker != "gran" || e.Owner != "ben" {
		t.Errorf("forget: %+v", e)
	}
}

func TestEnrollFailures(t *testing.T) {
	sp := newSpeakerRec()
	h := newHarness(t, func(o *Options) { o.Speakers = &sp.fake }).start()
	for _, tc := range []struct {
		topic, payload, id, reason string
	}{
		{"u/anna/speaker/enroll", enrollJSON("short", "dad", wavBase64(100)), "short", ReasonBadAudio},
		{"u/anna/speaker/enroll", `{"id":"pv","name":"dad","voice":"piper-only","audio":"` + wavBase64(16000) + `"}`, "pv", ReasonNotSupported},
		{"u/anna/speaker/enroll", `{"id":"nn","audio":"` + wavBase64(16000) + `"}`, "nn", ReasonBadField},
		{"u/../speaker/enroll", enrollJSON("ow", "dad", wavBase64(16000)), "ow", ReasonBadName},
		{"u/anna/speaker/enroll", enrollJSON("big", "dad", strings.Repeat("A", MaxEnrollBytes)), "big", ReasonTooLarge},
		{"u/anna/speaker/enroll", "\ufeff" + enrollJSON("ws", "dad", " "+wavBase64(100)+"\n"), "ws", ReasonBadAudio},
	} {
		before := len(h.events())
		h.send(tc.topic, tc.payload)
		waitFor(t, "answer", func() bool { return len(h.events()) > before })
		if e := h.events()[before]; e.State != EventFailed || e.Reason != tc.reason || e.ID != tc.id {
			t.Errorf("%s %.40s: %+v, want failed %s", tc.topic, tc.payload, e, tc.reason)
		}
	}

	plain := newHarness(t, nil).start()
	plain.send("speaker/enroll", enrollJSON("x", "dad", wavBase64(16000)))
	waitFor(t, "answer", func() bool { return len(plain.events()) == 1 })
	if e := plain.events()[0]; e.Reason != ReasonNotSupported || e.ID != "x" {
		t.Errorf("enroll without a speaker store: %+v", e)
	}
}

func TestOwnerTopics(t *testing.T) {
	tp := newTopics("n", "homeassistant")
	for topic, want := range map[string]string{
		"mynah/n/u/anna/say":            "anna say",
		"mynah/n/u/anna/speaker/enroll": "anna speaker/enroll",
		"mynah/n/u/anna/speaker/forget": "anna speaker/forget",
		"mynah/n/u/anna/stop":           "",
		"mynah/n/u//say":                "",
		"mynah/n/u/anna/b/say":          "",
		"mynah/n/say":                   "",
		"mynah/m/u/anna/say":            "",
	} {
		owner, cmd, ok := tp.owner(topic)
		got := ""
		if ok {
			got = owner + " " + cmd
		}
		if got != want {
			t.Errorf("%s: %q, want %q", topic, got, want)
		}
	}
}

// An engine's own errors, as the speaker encoder's would be: the daemon
// knows them only by the reason they carry.
var (
	errReenroll     = reasoned("speaker must be enrolled again", ReasonReenroll)
	errBadReference = reasoned("unusable reference audio", ReasonBadAudio)
)

func TestSpeakerErrorsReachEvents(t *testing.T) {
	for _, tc := range []struct {
		err    error
		reason string
	}{
		{fmt.Errorf("x: %w", ErrUnknownSpeaker), ReasonUnknownSpeaker},
		{fmt.Errorf("x: %w", errReenroll), ReasonReenroll},
		{fmt.Errorf("x: %w", errBadReference), ReasonBadAudio},
		{fmt.Errorf("x: %w", ErrNoCloning), ReasonNotSupported},
		{fmt.Errorf("x: %w", ErrUnknownVoice), ReasonUnknownVoice},
		{fmt.Errorf("x: %w", ErrNothingToSay), ReasonEmpty},
		{errors.New("model exploded"), ReasonSynthesis},
	} {
		h := newHarness(t, nil)
		h.eng.err = tc.err
		h.start()
		h.send("u/anna/say", `{"id":"r","text":"Hello.","speaker":"dad"}`)
		if e := h.waitEvent("r", EventFailed); e.Reason != tc.reason {
			t.Errorf("%v: reason %q, want %q", tc.err, e.Reason, tc.reason)
		}
		if s := h.eng.last(); s.Owner != "anna" || s.Speaker != "dad" {
			t.Errorf("engine got owner %q speaker %q", s.Owner, s.Speaker)
		}
	}
}
