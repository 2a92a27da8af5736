package daemon

import (
	"bytes"
	"errors"
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
		{"cjk", "你好。", Request{Text: "你好。", Priority: PriorityNormal, Rate: 1}},
		{"json minimal", `{"text":"hi"}`, Request{Text: "hi", Priority: PriorityNormal, Rate: 1}},
		{"json all fields", `{"text":" hi ","voice":"en_US-lessac-medium","speaker":"Ann 2","id":"req.1",
			"priority":"alert","interrupt":true,"volume":0.25,"rate":1.5,"ttl":2.5,"session":"s-1","cache":false}`,
			Request{ID: "req.1", Text: "hi", Voice: "en_US-lessac-medium", Speaker: "Ann 2", Priority: PriorityAlert,
				Interrupt: true, Volume: vol(0.25), Rate: 1.5, TTL: 2500 * time.Millisecond, Session: "s-1", NoCache: true}},
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
		{"deep JSON", []byte(`{"text":"a","x":` + deep + `}`), ReasonTooDeep, "", ""},
		{"very deep JSON", []byte(strings.Repeat(`{"a":`, 5000) + "1" + strings.Repeat("}", 5000)), ReasonTooDeep, "", ""},
		{"brackets in strings do not count", []byte(`{"text":"` + strings.Repeat("[", 100) + `"`), ReasonInvalidJSON, "", ""},
		{"broken JSON", []byte(`{"text":`), ReasonInvalidJSON, "", ""},
		{"trailing garbage", []byte(`{"text":"a"} x`), ReasonInvalidJSON, "", ""},
		{"NaN rate", []byte(`{"text":"a","rate":NaN}`), ReasonInvalidJSON, "", ""},
		{"Infinity rate", []byte(`{"text":"a","rate":Infinity}`), ReasonInvalidJSON, "", ""},
		{"1e309 rate", []byte(`{"id":"r","text":"a","rate":1e309}`), ReasonBadRate, "rate", "r"},
		{"negative rate", []byte(`{"text":"a","rate":-1}`), ReasonBadRate, "rate", ""},
		{"zero rate", []byte(`{"text":"a","rate":0}`), ReasonBadRate, "rate", ""},
		{"huge rate", []byte(`{"text":"a","rate":4.01}`), ReasonBadRate, "rate", ""},
		{"rate as string", []byte(`{"text":"a","rate":"fast"}`), ReasonBadField, "rate", ""},
		{"text as number", []byte(`{"text":5}`), ReasonBadField, "text", ""},
		{"text as array", []byte(`{"text":["a"]}`), ReasonBadField, "text", ""},
		{"voice as object", []byte(`{"text":"a","voice":{}}`), ReasonBadField, "voice", ""},
		{"interrupt as string", []byte(`{"text":"a","interrupt":"yes"}`), ReasonBadField, "interrupt", ""},
		{"cache as number", []byte(`{"text":"a","cache":1}`), ReasonBadField, "cache", ""},
		{"id as number", []byte(`{"id":7,"text":"a"}`), ReasonBadField, "id", ""},
		{"volume above 1", []byte(`{"text":"a","volume":1.5}`), ReasonBadVolume, "volume", ""},
		{"volume 1e309", []byte(`{"text":"a","volume":-1e309}`), ReasonBadVolume, "volume", ""},
		{"ttl zero", []byte(`{"text":"a","ttl":0}`), ReasonBadTTL, "ttl", ""},
		{"ttl a year", []byte(`{"text":"a","ttl":31536000}`), ReasonBadTTL, "ttl", ""},
		{"priority unknown", []byte(`{"text":"a","priority":"urgent"}`), ReasonBadPriority, "priority", ""},
		{"no text", []byte(`{"voice":"a"}`), ReasonEmpty, "text", ""},
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
		{"0%", 0, true}, {"100 %", 1, true},
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
	}
}

func FuzzDecodeSay(f *testing.F) {
	seeds := []string{
		"", "hello", "  {  ", `{"text":"hi"}`, `{"message":"m","priority":"alert","interrupt":true}`,
		`{"text":"a","voice":"../x","rate":1e309}`, `{"text":"a","rate":NaN}`, `{"text":"\u0000"}`,
		`{"text":"a","x":[[[[[[[[[[1]]]]]]]]]]}`, `{"text":"a","ttl":-1,"volume":2}`, "caf\xe9", "a\x00",
		`{"id":"ok","text":"x","volume":0.5,"rate":0.25,"ttl":60,"session":"s","cache":true,"speaker":"a b"}`,
		`{"text":"\"[{"}`, `{"text":"a"}{"text":"b"}`,
	}
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := DecodeSay(payload, t0, &DecodeOptions{MaxPayloadBytes: 4096, MaxTextRunes: 500})
		if r.ID == "" {
			t.Fatal("no id")
		}
		if err != nil {
			var de *DecodeError
			if !errors.As(err, &de) || de.Reason == "" {
				t.Fatalf("error %v has no reason", err)
			}
			return
		}
		switch {
		case r.Text == "" || r.Text != strings.TrimSpace(r.Text):
			t.Fatalf("text %q is empty or untrimmed", r.Text)
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
	for _, s := range []string{"0", "0.5", "1", "50", "50%", "100%", "101", "-1", "NaN", "1e2", "", "%"} {
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
