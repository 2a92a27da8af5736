package daemon

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func TestDecodeSayAccepts(t *testing.T) {
	vol := func(v float64) *float64 { return &v }
	tests := []struct {
		name    string
		payload string
		want    Request // ID "" means: expect a generated one
	}{
		{"plain", "Hello world.", Request{Text: "Hello world.", Priority: PriorityNormal, Rate: 1}},
		{"plain trimmed", "  \n hi \t", Request{Text: "hi", Priority: PriorityNormal, Rate: 1}},
		{"plain starting with bracket", `["a"]`, Request{Text: `["a"]`, Priority: PriorityNormal, Rate: 1}},
		{"markup is just text", "<break time='100000s'/>", Request{Text: "<break time='100000s'/>", Priority: PriorityNormal, Rate: 1}},
		{"BOM before plain text", "\ufeffHello.", Request{Text: "Hello.", Priority: PriorityNormal, Rate: 1}},
		{"BOM before JSON", "\ufeff{\"id\":\"b1\",\"text\":\"hi\"}", Request{ID: "b1", Text: "hi", Priority: PriorityNormal, Rate: 1}},
		{"space, BOMs, space before JSON", " \ufeff\ufeff\n{\"id\":\"b2\",\"text\":\"hi\"}", Request{ID: "b2", Text: "hi", Priority: PriorityNormal, Rate: 1}},
		// Only a valid JSON object is the JSON form; a text that starts
		// with { is read aloud, as Home Assistant's notify sends it.
		{"brace text", "{name} is at the door", Request{Text: "{name} is at the door", Priority: PriorityNormal, Rate: 1}},
		{"not json", "{not json", Request{Text: "{not json", Priority: PriorityNormal, Rate: 1}},
		// A JSON object is a command only when it names its text.
		{"JSON without text is text", `{"temperature": 21}`, Request{Text: `{"temperature": 21}`, Priority: PriorityNormal, Rate: 1}},
		{"JSON with only options is text", `{"voice":"a"}`, Request{Text: `{"voice":"a"}`, Priority: PriorityNormal, Rate: 1}},
		{"broken JSON is text", `{"text":`, Request{Text: `{"text":`, Priority: PriorityNormal, Rate: 1}},
		{"trailing garbage is text", `{"text":"a"} x`, Request{Text: `{"text":"a"} x`, Priority: PriorityNormal, Rate: 1}},
		{"two objects are text", `{"text":"a"}{"text":"b"}`, Request{Text: `{"text":"a"}{"text":"b"}`, Priority: PriorityNormal, Rate: 1}},
		{"NaN rate is not JSON", `{"text":"a","rate":NaN}`, Request{Text: `{"text":"a","rate":NaN}`, Priority: PriorityNormal, Rate: 1}},
		{"brackets in strings do not count", `{"text":"` + strings.Repeat("[", 100) + `"`, Request{Text: `{"text":"` + strings.Repeat("[", 100) + `"`, Priority: PriorityNormal, Rate: 1}},
		{"cjk", "你好。", Request{Text: "你好。", Priority: PriorityNormal, Rate: 1}},
		{"json minimal", `{"text":"hi"}`, Request{Text: "hi", Priority: PriorityNormal, Rate: 1}},
		{"chime off", `{"text":"hi","chime":false}`, Request{Text: "hi", Priority: PriorityNormal, Rate: 1, Chime: ChimeNone}},
		{"chime on", `{"text":"hi","chime":true}`, Request{Text: "hi", Priority: PriorityNormal, Rate: 1, Chime: ChimeDefault}},
		{"chime named", `{"text":"hi","chime":"doorbell"}`, Request{Text: "hi", Priority: PriorityNormal, Rate: 1, Chime: "doorbell"}},
		{"json all fields", `{"text":" hi ","voice":"en_US-lessac-medium","speaker":"Ann 2","id":"req.1",
			"priority":"alert","interrupt":true,"volume":0.25,"rate":1.5,"ttl":2.5,"session":"s-1","cache":false}`,
			Request{ID: "req.1", Text: "hi", Voice: "en_US-lessac-medium", Speaker: "Ann 2", Priority: PriorityAlert,
				Interrupt: true, Volume: vol(0.25), Rate: 1.5, TTL: 2500 * time.Millisecond, Session: "s-1", NoCache: true}},
		{"normalize off", `{"text":"8:05 PM","normalize":false}`, Request{Text: "8:05 PM", Priority: PriorityNormal, Rate: 1, NoNormalize: true}},
		{"normalize on", `{"text":"8:05 PM","normalize":true}`, Request{Text: "8:05 PM", Priority: PriorityNormal, Rate: 1}},
		{"message alias", `{"message":"from HA"}`, Request{Text: "from HA", Priority: PriorityNormal, Rate: 1}},
		{"text wins over message", `{"text":"t","message":"m"}`, Request{Text: "t", Priority: PriorityNormal, Rate: 1}},
		{"empty text falls back to message", `{"text":"","message":"m"}`, Request{Text: "m", Priority: PriorityNormal, Rate: 1}},
		{"unknown fields ignored", `{"text":"a","title":{"x":[1,2]},"extra":null}`, Request{Text: "a", Priority: PriorityNormal, Rate: 1}},
		{"null is absent", `{"text":"a","voice":null,"rate":null}`, Request{Text: "a", Priority: PriorityNormal, Rate: 1}},
		{"priority any case", `{"text":"a","priority":"LOW"}`, Request{Text: "a", Priority: PriorityLow, Rate: 1}},
		{"volume bounds", `{"text":"a","volume":0}`, Request{Text: "a", Priority: PriorityNormal, Rate: 1, Volume: vol(0)}},
		{"rate bounds", `{"text":"a","rate":4}`, Request{Text: "a", Priority: PriorityNormal, Rate: 4}},
		{"escaped text", `{"text":"a\nb \u00e9"}`, Request{Text: "a\nb é", Priority: PriorityNormal, Rate: 1}},
		{"depth at limit", `{"text":"a","x":[[[[[[[1]]]]]]]}`, Request{Text: "a", Priority: PriorityNormal, Rate: 1}},
		{"play_at", fmt.Sprintf(`{"text":"a","play_at":%d}`, t0.UnixMilli()+500), Request{Text: "a", Priority: PriorityNormal, Rate: 1, PlayAt: time.UnixMicro(t0.UnixMicro() + 500_000)}},
		{"play_at fractional ms", fmt.Sprintf(`{"text":"a","play_at":%d.25}`, t0.UnixMilli()+500), Request{Text: "a", Priority: PriorityNormal, Rate: 1, PlayAt: time.UnixMicro(t0.UnixMicro() + 500_250)}},
		// In the past is not a decoding matter: the daemon says late.
		{"play_at in the past", fmt.Sprintf(`{"text":"a","play_at":%d}`, t0.UnixMilli()-3000), Request{Text: "a", Priority: PriorityNormal, Rate: 1, PlayAt: time.UnixMicro(t0.UnixMicro() - 3_000_000)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := DecodeSay([]byte(tt.payload), t0, nil)
			if err != nil {
				t.Fatalf("DecodeSay: %v", err)
			}
			if tt.want.ID == "" {
				if len(got.ID) != 16 || !got.idGenerated {
					t.Errorf("id %q (generated %v), want 16 generated hex digits", got.ID, got.idGenerated)
				}
				tt.want.ID, tt.want.idGenerated = got.ID, true
			}
			tt.want.Received = t0
			if !sameRequest(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func sameRequest(a, b Request) bool {
	if (a.Volume == nil) != (b.Volume == nil) || a.Volume != nil && *a.Volume != *b.Volume {
		return false
	}
	a.Volume, b.Volume = nil, nil
	return a == b
}

func TestDecodeSayGeneratesDistinctIDs(t *testing.T) {
	a, _ := DecodeSay([]byte("x"), t0, nil)
	b, _ := DecodeSay([]byte("x"), t0, nil)
	if a.ID == b.ID {
		t.Fatalf("two generated ids are both %q", a.ID)
	}
}

// TestDecodeSayRejects covers REFERENCE.md's "Inputs that have broken
// peers" that apply to a payload.
func TestDecodeSayRejects(t *testing.T) {
	deep := strings.Repeat("[", 9) + strings.Repeat("]", 9)
	tests := []struct {
		name    string
		payload []byte
		reason  string
		field   string
		wantID  string // the id the error still reports, if any
	}{
		{"zero bytes", nil, ReasonEmpty, "", ""},
		{"whitespace only", []byte(" \n\t "), ReasonEmpty, "", ""},
		{"one megabyte", bytes.Repeat([]byte("a"), 1<<20), ReasonTooLarge, "", ""},
		{"one megabyte of JSON", append([]byte(`{"text":"`), bytes.Repeat([]byte("a"), 1<<20)...), ReasonTooLarge, "", ""},
		{"invalid utf-8", []byte("caf\xe9"), ReasonInvalidUTF8, "", ""},
		{"overlong utf-8", []byte("\xc0\xaf"), ReasonInvalidUTF8, "", ""},
		{"nul byte", []byte("a\x00b"), ReasonNULByte, "", ""},
		{"escaped nul", []byte(`{"id":"n1","text":"a\u0000b"}`), ReasonNULByte, "text", "n1"},
		{"text over limit", []byte(strings.Repeat("é", 5001)), ReasonTextTooLong, "", ""},
		{"text without punctuation over limit", []byte(strings.Repeat("word ", 10000)), ReasonTextTooLong, "", ""},
		{"deep JSON", []byte(`{"id":"d","text":"a","x":` + deep + `}`), ReasonTooDeep, "", "d"},
		{"very deep JSON", []byte(strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)), ReasonTooDeep, "", ""},
		{"1e309 rate", []byte(`{"id":"r","text":"a","rate":1e309}`), ReasonBadRate, "rate", "r"},
		{"BOM, then a bad rate", []byte("\ufeff{\"id\":\"bom\",\"rate\":99,\"text\":\"a\"}"), ReasonBadRate, "rate", "bom"},
		{"BOM only", []byte("\ufeff \ufeff"), ReasonEmpty, "", ""},
		{"BOM before blank JSON text", []byte("\ufeff{\"text\":\" \"}"), ReasonEmpty, "text", ""},
		// Refused before the fields are read, yet the event names the request.
		{"one megabyte with an id", append([]byte(`{"id":"big","text":"`), bytes.Repeat([]byte("a"), 1<<20)...), ReasonTooLarge, "", "big"},
		{"id after a megabyte", []byte(`{"text":"` + strings.Repeat("a", 1<<20) + `","id":"late"}`), ReasonTooLarge, "", "late"},
		{"invalid utf-8 with an id", []byte("{\"id\":\"u\",\"text\":\"caf\xe9\"}"), ReasonInvalidUTF8, "", "u"},
		{"raw nul with an id", []byte("{\"id\":\"n\",\"text\":\"a\x00\"}"), ReasonNULByte, "", "n"},
		{"negative rate", []byte(`{"text":"a","rate":-1}`), ReasonBadRate, "rate", ""},
		{"zero rate", []byte(`{"text":"a","rate":0}`), ReasonBadRate, "rate", ""},
		{"huge rate", []byte(`{"text":"a","rate":4.01}`), ReasonBadRate, "rate", ""},
		{"rate as string", []byte(`{"text":"a","rate":"fast"}`), ReasonBadField, "rate", ""},
		{"text as number", []byte(`{"text":5}`), ReasonBadField, "text", ""},
		{"text as array", []byte(`{"text":["a"]}`), ReasonBadField, "text", ""},
		{"voice as object", []byte(`{"text":"a","voice":{}}`), ReasonBadField, "voice", ""},
		{"interrupt as string", []byte(`{"text":"a","interrupt":"yes"}`), ReasonBadField, "interrupt", ""},
		{"cache as number", []byte(`{"text":"a","cache":1}`), ReasonBadField, "cache", ""},
		{"normalize as string", []byte(`{"text":"a","normalize":"no"}`), ReasonBadField, "normalize", ""},
		{"id as number", []byte(`{"id":7,"text":"a"}`), ReasonBadField, "id", ""},
		{"volume above 1", []byte(`{"text":"a","volume":1.5}`), ReasonBadVolume, "volume", ""},
		{"volume 1e309", []byte(`{"text":"a","volume":-1e309}`), ReasonBadVolume, "volume", ""},
		{"ttl zero", []byte(`{"text":"a","ttl":0}`), ReasonBadTTL, "ttl", ""},
		{"play_at a string", []byte(`{"text":"a","play_at":"soon"}`), ReasonBadField, "play_at", ""},
		{"play_at NaN", []byte(`{"text":"a","play_at":1e999}`), ReasonBadPlayAt, "play_at", ""},
		{"play_at zero", []byte(`{"text":"a","play_at":0}`), ReasonBadPlayAt, "play_at", ""},
		{"play_at negative", []byte(`{"text":"a","play_at":-5}`), ReasonBadPlayAt, "play_at", ""},
		{"play_at in seconds, not ms", []byte(fmt.Sprintf(`{"text":"a","play_at":%d}`, t0.Unix())), ReasonBadPlayAt, "play_at", ""},
		{"play_at an hour ahead", []byte(fmt.Sprintf(`{"text":"a","play_at":%d}`, t0.Add(time.Hour).UnixMilli())), ReasonBadPlayAt, "play_at", ""},
		{"play_at in microseconds", []byte(fmt.Sprintf(`{"text":"a","play_at":%d}`, t0.UnixMicro())), ReasonBadPlayAt, "play_at", ""},
		{"ttl a year", []byte(`{"text":"a","ttl":31536000}`), ReasonBadTTL, "ttl", ""},
		{"priority unknown", []byte(`{"text":"a","priority":"urgent"}`), ReasonBadPriority, "priority", ""},
		{"chime a number", []byte(`{"text":"a","chime":1}`), ReasonBadField, "chime", ""},
		{"chime empty", []byte(`{"text":"a","chime":""}`), ReasonBadField, "chime", ""},
		{"chime a path", []byte(`{"text":"a","chime":"../x"}`), ReasonBadName, "chime", ""},
		{"null text", []byte(`{"voice":"a","text":null}`), ReasonEmpty, "text", ""},
		{"blank text", []byte(`{"text":"  "}`), ReasonEmpty, "text", ""},
		{"blank text and message", []byte(`{"text":"","message":" "}`), ReasonEmpty, "text", ""},
		{"message as number", []byte(`{"message":1}`), ReasonBadField, "message", ""},
		{"message nul", []byte(`{"message":"a\u0000"}`), ReasonNULByte, "message", ""},
		{"voice climbs", []byte(`{"text":"a","voice":"../etc/passwd"}`), ReasonBadName, "voice", ""},
		{"voice dots inside", []byte(`{"text":"a","voice":"a..b"}`), ReasonBadName, "voice", ""},
		{"voice absolute", []byte(`{"text":"a","voice":"/etc/passwd"}`), ReasonBadName, "voice", ""},
		{"voice wildcard +", []byte(`{"text":"a","voice":"a+b"}`), ReasonBadName, "voice", ""},
		{"voice wildcard #", []byte(`{"text":"a","voice":"#"}`), ReasonBadName, "voice", ""},
		{"voice nul", []byte(`{"text":"a","voice":"a\u0000"}`), ReasonBadName, "voice", ""},
		{"speaker 4 KB", []byte(`{"text":"a","speaker":"` + strings.Repeat("s", 4096) + `"}`), ReasonBadName, "speaker", ""},
		{"speaker non-ascii", []byte(`{"text":"a","speaker":"Zoë"}`), ReasonBadName, "speaker", ""},
		{"session backslash", []byte(`{"text":"a","session":"a\\b"}`), ReasonBadName, "session", ""},
		{"id with slash", []byte(`{"id":"a/b","text":"a"}`), ReasonBadName, "id", ""},
		{"id ending in space", []byte(`{"id":"a ","text":"a"}`), ReasonBadName, "id", ""},
		{"id starting with dot", []byte(`{"id":".a","text":"a"}`), ReasonBadName, "id", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := DecodeSay(tt.payload, t0, nil)
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a *DecodeError", err)
			}
			if !errors.Is(err, ErrInvalidRequest) {
				t.Errorf("errors.Is(err, ErrInvalidRequest) = false")
			}
			if de.Reason != tt.reason || de.Field != tt.field {
				t.Errorf("reason %q field %q, want %q %q (err: %v)", de.Reason, de.Field, tt.reason, tt.field, err)
			}
			if len(err.Error()) > 300 {
				t.Errorf("error message is %d bytes: outside input must be cut short", len(err.Error()))
			}
			if tt.wantID != "" && r.ID != tt.wantID {
				t.Errorf("id %q, want %q", r.ID, tt.wantID)
			}
			if r.ID == "" {
				t.Errorf("a failed request has no id for its event")
			}
		})
	}
}

func TestDecodeSaySpeakable(t *testing.T) {
	// mynahd passes audio/text's rule; this one stands for it.
	noMarkup := func(s string) bool {
		return strings.TrimSpace(strings.NewReplacer("<speak>", "", "</speak>", "", "<break time='100000s'/>", "").Replace(s)) != ""
	}
	opts := &DecodeOptions{Speakable: noMarkup}
	for _, tc := range []struct {
		payload, id, field string
	}{
		{"<speak><break time='100000s'/></speak>", "", ""},
		{`{"id":"m","text":"<speak><break time='100000s'/></speak>"}`, "m", "text"},
		{`{"id":"m2","message":"<break time='100000s'/>"}`, "m2", "message"},
		{"\ufeff<break time='100000s'/>", "", ""},
	} {
		r, err := DecodeSay([]byte(tc.payload), t0, opts)
		var de *DecodeError
		if !errors.As(err, &de) || de.Reason != ReasonEmpty || de.Field != tc.field {
			t.Errorf("%q: %v, want reason empty, field %q", tc.payload, err, tc.field)
			continue
		}
		if tc.id != "" && r.ID != tc.id {
			t.Errorf("%q: id %q, want %q", tc.payload, r.ID, tc.id)
		}
	}
	if r, err := DecodeSay([]byte("<speak>Hello.</speak>"), t0, opts); err != nil || r.Text != "<speak>Hello.</speak>" {
		t.Errorf("text with words in markup: %+v, %v", r, err)
	}
	// Without the rule, markup is text for the engine to judge.
	if _, err := DecodeSay([]byte("<break time='100000s'/>"), t0, nil); err != nil {
		t.Errorf("no Speakable: %v", err)
	}
}

func TestPeekID(t *testing.T) {
	for _, tc := range []struct {
		payload, want string
	}{
		{`{"id":"a"}`, "a"},
		{` {"text":"x","id":"b"} `, "b"},
		{"\ufeff{\"id\":\"bom\"}", "bom"},
		{`{"text":"x \" \\","n":[1,{"id":"inner"}],"o":{"id":"inner"},"t":true,"z":null,"f":-1.5e3,"id":"c"}`, "c"},
		{`{"\u0069d":"escaped"}`, "escaped"},
		{`{"id":"first","id":"second"}`, "first"},
		{`{"id":"ok","text":` + strings.Repeat("[", 100), "ok"}, // breaks after the id
		{"{\"id\":\"ok\",\"text\":\"caf\xe9\"}", "ok"},
		{`{"id" : "spaced" }`, "spaced"},
		{`{"ID":"case"}`, ""},
		{`{"ids":"no"}`, ""},
		{`{"id":7}`, ""},
		{`{"id":"../x"}`, ""},
		{`{"id":"` + strings.Repeat("n", MaxNameBytes+1) + `"}`, ""},
		{`{"text":"x"`, ""},
		{`{"text":"x",}`, ""},
		{`{"text":}`, ""},
		{`{"text" "x","id":"a"}`, ""},
		{`{"text":"unterminated,"id":"a"}`, ""},
		{`{}`, ""},
		{`["id","a"]`, ""},
		{`id=a`, ""},
		{"", ""},
	} {
		if got := peekID([]byte(tc.payload)); got != tc.want {
			t.Errorf("peekID(%.60q) = %q, want %q", tc.payload, got, tc.want)
		}
	}
}

// FuzzPeekID: on a valid JSON object, peekID finds what a JSON decoder
// walking the top level finds first; on anything else, a valid name or
// nothing.
func FuzzPeekID(f *testing.F) {
	for _, s := range []string{
		`{"id":"a"}`, `{"text":"x","id":"b"}`, "\ufeff{\"id\":\"bom\",\"rate\":99}", `{"\u0069d":"e"}`,
		`{"a":[{"id":"x"}],"id":"y"}`, `{"id":"first","id":"second"}`, `{"id":1}`, `{"id":"a/b"}`,
		`{"text":"` + strings.Repeat("[", 20) + `","id":"s"}`, "{\"id\":\"u\",\"t\":\"\xe9\"}", `{"id":"ok","x":`,
		`{not json`, `{}`, `[]`, "",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got := peekID(payload)
		if got != "" && ValidateName(got) != nil {
			t.Fatalf("peekID = %q, not a valid name", got)
		}
		b := trimPayload(payload)
		if !isJSONObject(b) {
			return
		}
		if want := firstID(b); got != want {
			t.Fatalf("peekID = %q, a decoder finds %q", got, want)
		}
	})
}

// firstID is peekID's oracle: the first top-level "id" as encoding/json's
// decoder reads it, if it is a valid name.
func firstID(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil {
		return ""
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return ""
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return ""
		}
		if key == "id" {
			var id string
			if json.Unmarshal(v, &id) != nil || ValidateName(id) != nil {
				return ""
			}
			return id
		}
	}
	return ""
}

func TestDecodeErrorsNameTheLimit(t *testing.T) {
	_, err := DecodeSay(bytes.Repeat([]byte("a"), 100), t0, &DecodeOptions{MaxPayloadBytes: 10})
	if err == nil || !strings.Contains(err.Error(), "MaxPayloadBytes") || !strings.Contains(err.Error(), "10") {
		t.Errorf("error %v should name MaxPayloadBytes and its value", err)
	}
	_, err = DecodeSay([]byte("abcdef"), t0, &DecodeOptions{MaxTextRunes: 3})
	if err == nil || !strings.Contains(err.Error(), "MaxTextRunes") {
		t.Errorf("error %v should name MaxTextRunes", err)
	}
	_, err = DecodeSay([]byte(`{"text":"a","x":[[1]]}`), t0, &DecodeOptions{MaxDepth: 2})
	if err == nil || !strings.Contains(err.Error(), "MaxDepth") {
		t.Errorf("error %v should name MaxDepth", err)
	}
}

func TestValidateName(t *testing.T) {
	good := []string{"a", "en_US-lessac-medium", "Ann 2", "v1.0", "_x", strings.Repeat("n", MaxNameBytes)}
	for _, s := range good {
		if err := ValidateName(s); err != nil {
			t.Errorf("ValidateName(%q) = %v", s, err)
		}
	}
	bad := []string{"", ".", "..", "../x", "a/../b", "a/b", "/abs", `a\b`, "a+b", "a#", "a\x00", " a", "a ",
		"-rf", "Zoë", "a\tb", strings.Repeat("n", MaxNameBytes+1)}
	for _, s := range bad {
		if err := ValidateName(s); err == nil {
			t.Errorf("ValidateName(%q) = nil, want an error", s)
		}
	}
}

func TestParseVolume(t *testing.T) {
	tests := []struct {
		in   string
		want float64
		ok   bool
	}{
		{"0", 0, true}, {"0.5", 0.5, true}, {"1", 1, true}, {" 0.25\n", 0.25, true},
		{"50", 0.5, true}, {"100", 1, true}, {"50%", 0.5, true}, {"1%", 0.01, true}, {"50.0%", 0.5, true},
		{"0%", 0, true}, {"100 %", 1, true}, {"+0.5", 0.5, true}, {"-0", 0, true}, {".5", 0.5, true},
		{"", 0, false}, {"%", 0, false}, {"101", 0, false}, {"101%", 0, false}, {"-0.5", 0, false},
		{"NaN", 0, false}, {"Inf", 0, false}, {"1e2", 0, false}, {"0x1p-2", 0, false}, {"1.2.3", 0, false},
		{"loud", 0, false}, {strings.Repeat("1", 40), 0, false}, {"5%%", 0, false},
	}
	for _, tt := range tests {
		got, err := ParseVolume([]byte(tt.in))
		if tt.ok != (err == nil) || tt.ok && got != tt.want {
			t.Errorf("ParseVolume(%q) = %v, %v; want %v ok=%v", tt.in, got, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, ErrInvalidRequest) {
			t.Errorf("ParseVolume(%q): %v is not an ErrInvalidRequest", tt.in, err)
		}
		if tt.ok && math.Signbit(got) {
			t.Errorf("ParseVolume(%q) = -0", tt.in)
		}
	}
}

// TestParseVolumeErrors: a refused volume says what was wrong with it, so
// that the Last error sensor tells the user what to send instead: -1 is
// a number, too low; NaN is not one.
func TestParseVolumeErrors(t *testing.T) {
	for in, want := range map[string]string{
		"-1":      "-1 is out of range: send 0..1 or 0..100%",
		"-0.5":    "-0.5 is out of range: send 0..1 or 0..100%",
		"-50%":    "-50% is out of range: send 0..1 or 0..100%",
		"101":     "101 is out of range: send 0..1 or 0..100%",
		"101%":    "101% is out of range: send 0..1 or 0..100%",
		"100.5 %": "100.5% is out of range: send 0..1 or 0..100%",
		"Inf":     "Inf is out of range: send 0..1 or 0..100%",
		"-Inf":    "-Inf is out of range: send 0..1 or 0..100%",
		"NaN":     `"NaN" is not a number: send 0..1 or 0..100%`,
		"nan%":    `"nan%" is not a number: send 0..1 or 0..100%`,
		"loud":    `"loud" is not a number: send 0..1 or 0..100%`,
		"%":       `"%" is not a number: send 0..1 or 0..100%`,
		"5%%":     `"5%%" is not a number: send 0..1 or 0..100%`,
		"1.2.3":   `"1.2.3" is not a number: send 0..1 or 0..100%`,
		"1e2":     `"1e2" is not a plain decimal number: send 0..1 or 0..100%`,
		"0x1p-2":  `"0x1p-2" is not a plain decimal number: send 0..1 or 0..100%`,
		"":        "empty volume: send 0..1 or 0..100%",
		" \n":     "empty volume: send 0..1 or 0..100%",
	} {
		_, err := ParseVolume([]byte(in))
		if de := (*DecodeError)(nil); !errors.As(err, &de) || de.Reason != ReasonBadVolume || de.Err.Error() != want {
			t.Errorf("ParseVolume(%q): %v, want %q (reason %s)", in, err, want, ReasonBadVolume)
		}
	}
}

func FuzzDecodeSay(f *testing.F) {
	seeds := []string{
		"", "hello", "  {  ", `{"text":"hi"}`, `{"message":"m","priority":"alert","interrupt":true}`,
		`{"text":"a","voice":"../x","rate":1e309}`, `{"text":"a","rate":NaN}`, `{"text":"\u0000"}`,
		`{"text":"a","x":[[[[[[[[[[1]]]]]]]]]]}`, `{"text":"a","ttl":-1,"volume":2}`, "caf\xe9", "a\x00",
		`{"id":"ok","text":"x","volume":0.5,"rate":0.25,"ttl":60,"session":"s","cache":true,"speaker":"a b"}`,
		`{"text":"\"[{"}`, `{"text":"a"}{"text":"b"}`,
		"\ufeff{\"id\":\"b\",\"rate\":99}", "\ufeffplain", " \ufeff \ufeff{\"text\":\"x\"}", "{not json", "{name} is here",
		"<speak><break time='100000s'/></speak>", `{"text":"<speak><break time='100000s'/></speak>"}`,
		"{\"id\":\"u\",\"text\":\"\xe9\"}",
		`{"text":"a","chime":false}`, `{"text":"a","chime":"door"}`, `{"text":"a","chime":""}`, `{"text":"a","chime":[1]}`,
		`{"temperature": 21}`,
		`{"text":"a","play_at":1767323045500}`, `{"text":"a","play_at":"now"}`, `{"text":"a","play_at":1e300}`, `{"text":"a","play_at":1767323045}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	// Markup alone stands for what the voices' front end finds empty.
	speakable := func(s string) bool { return strings.Trim(s, "<>/ ") != "" }
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := DecodeSay(payload, t0, &DecodeOptions{MaxPayloadBytes: 4096, MaxTextRunes: 500, Speakable: speakable})
		if r.ID == "" {
			t.Fatal("no id")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error %v has no reason", err)
			}
			if de.Reason == ReasonInvalidJSON {
				t.Fatalf("a say is text or JSON, never invalid JSON: %v", err)
			}
			switch de.Reason {
			case ReasonTooLarge, ReasonInvalidUTF8, ReasonNULByte, ReasonTooDeep:
				// Refused before the fields were read: the id is peeked.
				if id := peekID(payload); id != "" && r.ID != id {
					t.Fatalf("failed with id %q, the payload has %q", r.ID, id)
				}
			}
			return
		}
		if trimmed := trimPayload(payload); !isJSONObject(trimmed) && r.Text != string(trimmed) {
			t.Fatalf("plain text %q became %q", trimmed, r.Text)
		}
		switch {
		case r.Text == "" || r.Text != strings.TrimSpace(r.Text) || strings.HasPrefix(r.Text, "\ufeff"):
			t.Fatalf("text %q is empty or untrimmed", r.Text)
		case !speakable(r.Text):
			t.Fatalf("text %q has nothing to say", r.Text)
		case !utf8.ValidString(r.Text) || strings.IndexByte(r.Text, 0) >= 0:
			t.Fatalf("text %q is not clean UTF-8", r.Text)
		case utf8.RuneCountInString(r.Text) > 500:
			t.Fatalf("text of %d runes passed the limit", utf8.RuneCountInString(r.Text))
		case r.Rate < MinRate || r.Rate > MaxRate:
			t.Fatalf("rate %v out of range", r.Rate)
		case r.Volume != nil && (*r.Volume < 0 || *r.Volume > 1):
			t.Fatalf("volume %v out of range", *r.Volume)
		case r.TTL < 0 || r.TTL > DefaultMaxTTL:
			t.Fatalf("ttl %v out of range", r.TTL)
		case r.Priority < PriorityLow || r.Priority > PriorityAlert:
			t.Fatalf("priority %v", r.Priority)
		}
		for _, n := range []string{r.Voice, r.Speaker, r.Session} {
			if n != "" && ValidateName(n) != nil {
				t.Fatalf("name %q passed but is invalid", n)
			}
		}
		if !r.idGenerated && ValidateName(r.ID) != nil {
			t.Fatalf("id %q passed but is invalid", r.ID)
		}
	})
}

func FuzzParseVolume(f *testing.F) {
	for _, s := range []string{"0", "0.5", "1", "50", "50%", "100%", "101", "-1", "NaN", "1e2", "", "%", "-0", "+Inf", "-50%", "1e400"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		v, err := ParseVolume(payload)
		if err == nil && !(v >= 0 && v <= 1) {
			t.Fatalf("ParseVolume(%q) = %v, outside 0..1", payload, v)
		}
	})
}

func TestQuoteShort(t *testing.T) {
	q := quoteShort(strings.Repeat("é", 100))
	if !strings.HasSuffix(q, "...") || len(q) > 50 || !utf8.ValidString(q) || strings.Contains(q, `\x`) {
		t.Errorf("quoteShort cut badly: %s", q)
	}
	if q := quoteShort("a\x00"); q != `"a\x00"` {
		t.Errorf("quoteShort(NUL) = %s", q)
	}
}
