package render

import (
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"
)

const testKey = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func validRequest() Request {
	return Request{
		ID: "say-1.2", Reply: ReplyPrefix + "kitchen", Voice: "en_US-lessac-medium",
		Speaker: "p 1", Rate: 1, Text: "Dinner is ready.", Normalize: true, Key: testKey,
	}
}

func TestRequestValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(*Request)
		ok     bool
		large  bool
	}{
		{"valid", func(*Request) {}, true, false},
		{"no speaker, no key", func(r *Request) { r.Speaker, r.Key = "", "" }, true, false},
		{"id empty", func(r *Request) { r.ID = "" }, false, false},
		{"id 64 bytes", func(r *Request) { r.ID = strings.Repeat("a", 64) }, true, false},
		{"id 65 bytes", func(r *Request) { r.ID = strings.Repeat("a", 65) }, false, false},
		{"id with slash", func(r *Request) { r.ID = "a/b" }, false, false},
		{"id with plus", func(r *Request) { r.ID = "a+" }, false, false},
		{"id with dot dot", func(r *Request) { r.ID = "a..b" }, false, false},
		{"id starts with dash", func(r *Request) { r.ID = "-a" }, false, false},
		{"id ends with space", func(r *Request) { r.ID = "a " }, false, false},
		{"id not ASCII", func(r *Request) { r.ID = "é" }, false, false},
		{"reply elsewhere", func(r *Request) { r.Reply = "mynah/kitchen/say" }, false, false},
		{"reply no level", func(r *Request) { r.Reply = ReplyPrefix }, false, false},
		{"reply two levels", func(r *Request) { r.Reply = ReplyPrefix + "a/b" }, false, false},
		{"reply plus", func(r *Request) { r.Reply = ReplyPrefix + "+" }, false, false},
		{"reply hash", func(r *Request) { r.Reply = ReplyPrefix + "#" }, false, false},
		{"reply level 65", func(r *Request) { r.Reply = ReplyPrefix + strings.Repeat("n", 65) }, false, false},
		{"voice empty", func(r *Request) { r.Voice = "" }, false, false},
		{"speaker bad", func(r *Request) { r.Speaker = "../x" }, false, false},
		{"rate min", func(r *Request) { r.Rate = MinRate }, true, false},
		{"rate max", func(r *Request) { r.Rate = MaxRate }, true, false},
		{"rate low", func(r *Request) { r.Rate = 0.24 }, false, false},
		{"rate high", func(r *Request) { r.Rate = 4.01 }, false, false},
		{"rate zero", func(r *Request) { r.Rate = 0 }, false, false},
		{"rate NaN", func(r *Request) { r.Rate = math.NaN() }, false, false},
		{"rate Inf", func(r *Request) { r.Rate = math.Inf(1) }, false, false},
		{"text empty", func(r *Request) { r.Text = "" }, false, false},
		{"text NUL", func(r *Request) { r.Text = "a\x00b" }, false, false},
		{"text bad UTF-8", func(r *Request) { r.Text = "a\xffb" }, false, false},
		{"text 5000 runes", func(r *Request) { r.Text = strings.Repeat("é", MaxTextRunes) }, true, false},
		{"text 5001 runes", func(r *Request) { r.Text = strings.Repeat("a", MaxTextRunes+1) }, false, true},
		{"key short", func(r *Request) { r.Key = testKey[1:] }, false, false},
		{"key upper case", func(r *Request) { r.Key = strings.ToUpper(testKey) }, false, false},
		{"key not hex", func(r *Request) { r.Key = "g" + testKey[1:] }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := validRequest()
			tc.change(&r)
			err := r.Validate()
			if (err == nil) != tc.ok {
				t.Fatalf("Validate() = %v, want ok %v", err, tc.ok)
			}
			if err != nil && !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v does not wrap ErrInvalidRequest", err)
			}
			if errors.Is(err, ErrTooLarge) != tc.large {
				t.Fatalf("error %v: wraps ErrTooLarge %v, want %v", err, !tc.large, tc.large)
			}
		})
	}
}

func TestRequestRoundTrip(t *testing.T) {
	for _, r := range []Request{
		validRequest(),
		{ID: "x", Reply: ReplyPrefix + "n", Voice: "v", Rate: 0.5, Text: "<b>&\"\\ \u2028 é 中文 🙂"},
	} {
		p, err := EncodeRequest(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeRequest(p)
		if err != nil {
			t.Fatalf("DecodeRequest(%s): %v", p, err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("round trip: got %+v, want %+v", got, r)
		}
	}
}

// A text within MaxTextRunes can still be too big encoded: a request is
// refused before it is sent rather than dropped by every render node.
func TestEncodeRequestTooLarge(t *testing.T) {
	r := validRequest()
	r.Text = strings.Repeat("🙂", MaxTextRunes) // 4 bytes a rune
	_, err := EncodeRequest(r)
	if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrInvalidRequest) {
		t.Fatalf("EncodeRequest = %v, want ErrTooLarge and ErrInvalidRequest", err)
	}
	r.Text = strings.Repeat("\x01", 3000) // \u0001: 6 bytes each
	if _, err := EncodeRequest(r); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("EncodeRequest(control characters) = %v, want ErrTooLarge", err)
	}
}

func TestDecodeRequest(t *testing.T) {
	good := `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"Hi."}`
	for _, tc := range []struct {
		name       string
		payload    string
		ok         bool
		large      bool
		answerable bool // the error can be answered: id and reply decoded
	}{
		{"valid", good, true, false, true},
		{"unknown field ignored", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"Hi.","future":[1,{"x":2}]}`, true, false, true},
		{"white space", " \n" + good + "\n ", true, false, true},
		{"empty", ``, false, false, false},
		{"not JSON", `hello`, false, false, false},
		{"array", `[1,2]`, false, false, false},
		{"null", `null`, false, false, false},
		{"string", `"x"`, false, false, false},
		{"trailing data", good + `{}`, false, false, false},
		{"truncated", good[:len(good)-3], false, false, false},
		{"rate a string", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":"1","text":"Hi."}`, false, false, true},
		{"rate out of range", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":9,"text":"Hi."}`, false, false, true},
		{"rate missing", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","text":"Hi."}`, false, false, true},
		{"id a number", `{"id":1,"reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"Hi."}`, false, false, false},
		{"reply bad", `{"id":"a","reply":"mynah/x","voice":"v","rate":1,"text":"Hi."}`, false, false, false},
		{"reply wildcard", `{"id":"a","reply":"mynah/render/reply/#","voice":"v","rate":1,"text":"Hi."}`, false, false, false},
		{"text missing", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1}`, false, false, true},
		{"text NUL escaped", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"a\u0000"}`, false, false, true},
		{"not UTF-8", "{\"id\":\"a\",\"reply\":\"mynah/render/reply/n\",\"voice\":\"v\",\"rate\":1,\"text\":\"\xff\"}", false, false, false},
		{"deep", strings.Repeat("[", 5000) + strings.Repeat("]", 5000), false, false, false},
		{"too large", `{"id":"a","text":"` + strings.Repeat("a", MaxRequestBytes) + `"}`, false, true, false},
		{"too many runes", `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"` + strings.Repeat("a", MaxTextRunes+1) + `"}`, false, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := DecodeRequest([]byte(tc.payload))
			if (err == nil) != tc.ok {
				t.Fatalf("DecodeRequest = %+v, %v; want ok %v", r, err, tc.ok)
			}
			if err == nil {
				return
			}
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v does not wrap ErrInvalidRequest", err)
			}
			if errors.Is(err, ErrTooLarge) != tc.large {
				t.Fatalf("error %v: ErrTooLarge %v, want %v", err, !tc.large, tc.large)
			}
			if r.answerable() != tc.answerable {
				t.Fatalf("answerable = %v, want %v (request %+v)", !tc.answerable, tc.answerable, r)
			}
		})
	}
}

func FuzzDecodeRequest(f *testing.F) {
	for _, r := range []Request{validRequest(), {ID: "x", Reply: ReplyPrefix + "n", Voice: "v", Rate: 4, Text: "中文"}} {
		p, err := EncodeRequest(r)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(p)
	}
	for _, s := range []string{
		``, `{}`, `null`, `[]`, `{"id":"a","rate":"1"}`, `{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1e400,"text":"x"}`,
		`{"id":"a","reply":"mynah/render/reply/n","voice":"v","rate":1,"text":"\ud800"}`, "{\"text\":\"\xff\"}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		r, err := DecodeRequest(payload)
		if err != nil {
			if !errors.Is(err, ErrInvalidRequest) {
				t.Fatalf("error %v does not wrap ErrInvalidRequest", err)
			}
			return
		}
		if len(payload) > MaxRequestBytes {
			t.Fatalf("accepted %d bytes", len(payload))
		}
		p, err := EncodeRequest(r)
		if errors.Is(err, ErrTooLarge) {
			return // raw U+2028 in the payload is escaped to 6 bytes
		}
		if err != nil {
			t.Fatalf("decoded %+v does not encode: %v", r, err)
		}
		again, err := DecodeRequest(p)
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("round trip: %+v, %v; want %+v", again, err, r)
		}
	})
}
